//! The configuration's tests: files that parse, and errors that name
//! their key, line and reason.

use super::*;

#[test]
fn a_full_file_parses() {
    let text = r#"
listen = ["udp:127.0.0.1:5060", "tcp:127.0.0.1:5060"]
upstream = "udp:127.0.0.1:5070"
metrics = "127.0.0.1:9090"
[sigcomp]
dms = 16384
mechanism = "shared"
level = 2
[defence]
messages_per_source_per_s = 50
"#;
    let c = ProxyConfig::from_toml("sigkit.toml", text).unwrap();
    c.validate().unwrap();
    assert_eq!(c.listen.len(), 2);
    assert_eq!(c.listen[1].transport, SipTransport::Tcp);
    assert_eq!(c.compressor().mechanism, Mechanism::Shared);
    assert_eq!(c.compressor().level, Level::new(2).unwrap());
    assert_eq!(c.defence.messages_per_source_per_s, 50);
    assert_eq!(c.defence.cycles_burst, DefenceConfig::default().cycles_burst);
}

#[test]
fn errors_name_the_line_and_the_reason() {
    let text = "listen = [\"udp:127.0.0.1:5060\"]\nupstream = \"udp:127.0.0.1:5070\"\n[sigcomp]\ndmz = 8192\n";
    let e = ProxyConfig::from_toml("sigkit.toml", text).unwrap_err().to_string();
    assert!(e.starts_with("sigkit.toml:4:"), "{e}");
    assert!(e.contains("dmz"), "{e}");
    let text = "listen = [\"sctp:127.0.0.1:5060\"]\n";
    let e = ProxyConfig::from_toml("sigkit.toml", text).unwrap_err().to_string();
    assert!(e.starts_with("sigkit.toml:1:") && e.contains("sctp"), "{e}");
}

/// What only `validate` can judge is reported with the key's line too.
#[test]
fn bad_values_name_their_key_and_line() {
    let head = "listen = [\"udp:127.0.0.1:5060\"]\nupstream = \"udp:127.0.0.1:5070\"\n\n[sigcomp]\n";
    let cases = [
        (format!("{head}sms = 4096\ndms = 3000\n"), "sigkit.toml:6: sigcomp.dms:", "3000"),
        (format!("{head}cpb = 17\n"), "sigkit.toml:5: sigcomp.cpb:", "17"),
        (format!("{head}dms = 4096\n"), "sigkit.toml:5: sigcomp.dms:", "below 8192"),
        (format!("{head}assumed_cpb = 8\n"), "sigkit.toml:5: sigcomp.assumed_cpb:", "8"),
        (
            "sigcomp_id = \"x\"\nlisten = [\"udp:127.0.0.1:5060\"]\nupstream = \"udp:127.0.0.1:5070\"\n".into(),
            "sigkit.toml:1: sigcomp_id:",
            "URN",
        ),
        (
            "listen = [\"udp:127.0.0.1:5060\"]\nmax_flows = 0\nupstream = \"udp:127.0.0.1:5070\"\n".into(),
            "sigkit.toml:2: max_flows:",
            "at least 1",
        ),
        (
            "listen = [\"udp:127.0.0.1:5060\"]\nupstream = \"udp:127.0.0.1:5070\"\nshards = 5000\n".into(),
            "sigkit.toml:3: shards:",
            "at most 1024",
        ),
        (
            "listen = [\"udp:127.0.0.1:5060\"]\nupstream = \"udp:127.0.0.1:5070\"\n[tcp]\nidle_timeout_s = 0\n".into(),
            "sigkit.toml:4: tcp.idle_timeout_s:",
            "at least 1",
        ),
    ];
    for (text, prefix, reason) in cases {
        let e = ProxyConfig::from_toml("sigkit.toml", &text).unwrap().validate().unwrap_err();
        let e = e.to_string();
        assert!(e.starts_with(prefix) && e.contains(reason), "{e}\nfor\n{text}");
    }
    // Built in code, the key alone.
    let mut c = ProxyConfig::from_toml("sigkit.toml", &format!("{head}cpb = 17\n")).unwrap();
    c.source = None;
    assert!(c.validate().unwrap_err().to_string().starts_with("sigcomp.cpb: "));
}

/// A name the proxy does not know is refused as the file is read, with
/// its key, its line and the names there are; so is an address.
#[test]
fn bad_names_name_their_key_and_line_and_the_choices() {
    let head = "listen = [\"udp:127.0.0.1:5060\"]\nupstream = \"udp:127.0.0.1:5070\"\n\n[sigcomp]\n";
    let cases = [
        (
            format!("{head}\nalgorithm = \"zstd\"\n"),
            "sigkit.toml:6: sigcomp.algorithm: ",
            "\"zstd\" is not one of lzss",
        ),
        (
            format!("{head}mechanism = \"Shared\"\n"),
            "sigkit.toml:5: sigcomp.mechanism: ",
            "\"Shared\" is not one of basic, static, dynamic, shared",
        ),
        (format!("{head}level = 10\n"), "sigkit.toml:5: sigcomp.level: ", "10 is not a level from 1 to 9"),
        (
            "upstream = \"udp:127.0.0.1\"\n".into(),
            "sigkit.toml:1: upstream: ",
            "\"udp:127.0.0.1\": \"127.0.0.1\": not a host:port",
        ),
    ];
    for (text, prefix, reason) in cases {
        let e = ProxyConfig::from_toml("sigkit.toml", &text).unwrap_err().to_string();
        assert!(e.starts_with(prefix) && e.contains(reason), "{e}\nfor\n{text}");
    }
    let text = format!("{head}algorithm = \"lzss\"\nmechanism = \"basic\"\n");
    let c = ProxyConfig::from_toml("sigkit.toml", &text).unwrap();
    assert_eq!((c.compressor().algorithm, c.compressor().mechanism), (Algorithm::Lzss, Mechanism::Basic));
}

#[test]
fn transport_addresses_say_what_is_wrong() {
    assert_eq!("tcp:[::1]:5060".parse::<TransportAddr>().unwrap().to_string(), "tcp:[::1]:5060");
    assert_eq!("5060".parse::<TransportAddr>(), Err(TransportAddrError::Form("5060".into())));
    let e = "sctp:127.0.0.1:5060".parse::<TransportAddr>().unwrap_err();
    assert_eq!(e, TransportAddrError::Transport { text: "sctp:127.0.0.1:5060".into(), transport: "sctp".into() });
    assert_eq!(e.to_string(), "\"sctp:127.0.0.1:5060\": transport \"sctp\" is not udp or tcp");
    let e = "udp:localhost".parse::<TransportAddr>().unwrap_err();
    assert!(matches!(e, TransportAddrError::Addr { .. }) && !e.is_resolution(), "{e:?}");
    assert_eq!(e.to_string(), "\"udp:localhost\": \"localhost\": not a host:port");
}

/// Names are resolved where the text is read; one the DNS does not
/// know (RFC 6761 §6.4: nothing under `.invalid` resolves) is said to
/// be that, in the file as on the command line.
#[test]
fn names_in_listen_addresses_are_resolved() {
    let a = "udp:localhost:5060".parse::<TransportAddr>().unwrap();
    assert!(a.addr.ip().is_loopback() && a.addr.port() == 5060, "{a}");
    let e = "tcp:sigkit-test.invalid:5060".parse::<TransportAddr>().unwrap_err();
    assert!(e.is_resolution(), "{e:?}");
    assert!(e.to_string().starts_with("\"tcp:sigkit-test.invalid:5060\": cannot resolve sigkit-test.invalid: "));
    let text = "listen = [\"udp:sigkit-test.invalid:5060\"]\nupstream = \"udp:127.0.0.1:5070\"\n";
    let e = ProxyConfig::from_toml("sigkit.toml", text).unwrap_err();
    assert!(e.is_resolution(), "{e:?}");
    assert!(e.to_string().starts_with("sigkit.toml:1: listen: "), "{e}");
    assert!(e.to_string().contains("cannot resolve sigkit-test.invalid: "), "{e}");
}

/// The proxy sends to its upstream over UDP only: a TCP upstream is
/// refused rather than silently spoken to over UDP.
#[test]
fn a_tcp_upstream_is_refused() {
    let text = "listen = [\"udp:127.0.0.1:5060\"]\nupstream = \"tcp:127.0.0.1:5070\"\n";
    let e = ProxyConfig::from_toml("sigkit.toml", text).unwrap().validate().unwrap_err().to_string();
    assert!(e.starts_with("sigkit.toml:2: upstream: tcp:127.0.0.1:5070") && e.contains("not supported"), "{e}");
    let text = text.replace("tcp:", "udp:");
    ProxyConfig::from_toml("sigkit.toml", &text).unwrap().validate().unwrap();
}

/// The capture tap's keys: a collector's name is resolved as the file is
/// read, and one that is not a host:port is refused with its line.
#[test]
fn the_capture_keys_parse() {
    let head = "listen = [\"udp:127.0.0.1:5060\"]\nupstream = \"udp:127.0.0.1:5070\"\n";
    let text = format!("{head}hep = \"localhost:9060\"\nhep_id = 7\ncapture = \"x.pcap\"\ncapture_queue = 10\n");
    let c = ProxyConfig::from_toml("sigkit.toml", &text).unwrap();
    c.validate().unwrap();
    assert!(c.hep.is_some_and(|a| a.ip().is_loopback() && a.port() == 9060), "{:?}", c.hep);
    assert_eq!((c.hep_id, c.capture.as_deref(), c.capture_queue), (7, Some(std::path::Path::new("x.pcap")), 10));
    let e = ProxyConfig::from_toml("sigkit.toml", &format!("{head}hep = \"9060\"\n")).unwrap_err().to_string();
    assert!(e.starts_with("sigkit.toml:3: hep: ") && e.contains("not a host:port"), "{e}");
    let e = ProxyConfig::from_toml("sigkit.toml", &format!("{head}capture_queue = 0\n")).unwrap().validate();
    assert!(e.unwrap_err().to_string().starts_with("sigkit.toml:3: capture_queue: "));
}

/// What the configuration lacks is named, with an example of the key.
#[test]
fn a_missing_listen_address_or_upstream_is_named() {
    let e = ProxyConfig::from_toml("sigkit.toml", "upstream = \"udp:127.0.0.1:5070\"\n").unwrap().validate();
    assert_eq!(e, Err(ConfigError::NoListen));
    assert!(ConfigError::NoListen.to_string().starts_with("no listen address (listen = "));
    let e = ProxyConfig::from_toml("sigkit.toml", "listen = [\"udp:127.0.0.1:5060\"]\n").unwrap().validate();
    assert_eq!(e, Err(ConfigError::NoUpstream));
    assert!(ConfigError::NoUpstream.to_string().starts_with("no upstream (upstream = "));
}

mod example_file {
    use super::super::*;

    /// The documented example parses and holds the defaults it claims.
    #[test]
    fn raising_t1_needs_the_stateful_mode_and_is_refused_with_its_line() {
        let text =
            "listen = [\"udp:127.0.0.1:5060\"]\nupstream = \"udp:127.0.0.1:5070\"\n[overload]\nhandler = \"t1\"\n";
        let c = ProxyConfig::from_toml("sigkit.toml", text).unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("sigkit.toml:4") && e.contains("stateful"), "{e}");
        let c = ProxyConfig::from_toml("sigkit.toml", &format!("stateful = true\n{text}")).unwrap();
        c.validate().unwrap();
        let via = text.replace("handler = \"t1\"", "handler = \"pending_cap\"\ndetector = \"via\"");
        let e = ProxyConfig::from_toml("sigkit.toml", &via).unwrap().validate().unwrap_err().to_string();
        assert!(e.contains("sigkit.toml:5"), "{e}");
    }

    #[test]
    fn the_example_file_is_valid_and_states_the_defaults() {
        let text = include_str!("../../sigkit.example.toml");
        let c = ProxyConfig::from_toml("sigkit.example.toml", text).unwrap();
        c.validate().unwrap();
        let d = ProxyConfig::default();
        assert_eq!(c.sigcomp_id, d.sigcomp_id);
        assert_eq!((c.threads, c.shards), (d.threads, d.shards));
        assert_eq!((c.max_flows, c.flow_idle_timeout_s), (d.max_flows, d.flow_idle_timeout_s));
        assert_eq!(
            (c.max_pending_registers, c.max_pending_registers_per_source, c.max_pending_state_bytes),
            (d.max_pending_registers, d.max_pending_registers_per_source, d.max_pending_state_bytes)
        );
        assert_eq!(c.max_registrations, d.max_registrations);
        assert_eq!((c.hep, c.hep_id, &c.capture, c.capture_queue), (d.hep, d.hep_id, &d.capture, d.capture_queue));
        let (s, t) = (&c.sigcomp, &d.sigcomp);
        assert_eq!(
            (s.dms, s.sms, s.cpb, &s.algorithm, &s.mechanism, s.assumed_dms, s.assumed_sms, s.assumed_cpb),
            (t.dms, t.sms, t.cpb, &t.algorithm, &t.mechanism, t.assumed_dms, t.assumed_sms, t.assumed_cpb)
        );
        assert_eq!(
            (s.max_compartments, s.max_state_bytes, s.idle_timeout_s, s.hot_compartments, s.level),
            (t.max_compartments, t.max_state_bytes, t.idle_timeout_s, t.hot_compartments, t.level)
        );
        assert_eq!(c.stateful, d.stateful);
        let (o, q) = (&c.overload, &d.overload);
        assert_eq!(
            (o.handler, o.detector, o.max_pending, o.delay_detector),
            (q.handler, q.detector, q.max_pending, q.delay_detector)
        );
        assert_eq!(
            (o.delay_threshold_ms, o.delay_window_s, o.t1_ms, o.t1_raised_ms, o.t1_validity_s, o.retry_after_s),
            (q.delay_threshold_ms, q.delay_window_s, q.t1_ms, q.t1_raised_ms, q.t1_validity_s, q.retry_after_s)
        );
        assert_eq!(
            [o.d2_sigma0, o.d2_sigma1, o.d2_alpha, o.d2_beta, o.d2_mu, o.d2_mean_mu0, o.d2_mean_mu1, o.d2_mean_sigma],
            [q.d2_sigma0, q.d2_sigma1, q.d2_alpha, q.d2_beta, q.d2_mu, q.d2_mean_mu0, q.d2_mean_mu1, q.d2_mean_sigma]
        );
        assert_eq!(o.transaction_timeout_s, q.transaction_timeout_s);
        let (t, u) = (&c.tcp, &d.tcp);
        assert_eq!(
            (t.max_connections, t.max_connections_per_source, t.max_buffered_bytes, t.idle_timeout_s),
            (u.max_connections, u.max_connections_per_source, u.max_buffered_bytes, u.idle_timeout_s)
        );
        let (e, f) = (&c.defence, &d.defence);
        assert_eq!(
            (e.cycles_per_source_per_s, e.cycles_burst, e.messages_per_source_per_s, e.messages_burst, e.max_sources),
            (f.cycles_per_source_per_s, f.cycles_burst, f.messages_per_source_per_s, f.messages_burst, f.max_sources)
        );
        assert_eq!(
            (e.charge_ns_per_cycle, e.decompression_ms_per_s, e.decompression_burst_ms, e.unknown_sources_percent),
            (f.charge_ns_per_cycle, f.decompression_ms_per_s, f.decompression_burst_ms, f.unknown_sources_percent)
        );
    }
}
