//! `sigkit eval`: the main job on embedded defaults. It measures what
//! sigkit measures, in one run and with no server of the user's, and
//! writes the results (SQLite, JSON) and the report into one directory.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;
use sigcomp::Transport;
use sigcomp_compress::Mechanism;
use sigkit_eval::capacity::{ServiceLevel, Strategy};
use sigkit_eval::ran::{study as ran_study, RanRow, THESIS_RATES_KBPS, THESIS_RTT};
use sigkit_eval::report::{html, Plot, Section, Series};
use sigkit_eval::study::{compression, flow_dirs, CompressionStudy};
use sigkit_loadgen::{LoadConfig, Prepared, Role, Summary as LoadSummary};
use sigkit_results::Store;

use sigkit_proxy::config::TransportAddr;
use sigkit_proxy::{ProxyConfig, SipTransport};

use crate::capacity_cmd::{describe, search, CapacityReport, SearchSettings};

use crate::endpoint_args::EndpointArgs;

#[derive(Args)]
pub struct EvalArgs {
    /// The corpus of call flows (one directory per flow).
    #[arg(long, default_value = "corpus")]
    corpus: PathBuf,
    /// Where results.sqlite, summary.json and the report go.
    #[arg(long, short = 'o', default_value = "report")]
    out: PathBuf,
    /// A short run (for CI): LZSS only, shorter load steps, a coarser
    /// capacity search.
    #[arg(long)]
    quick: bool,
    #[command(flatten)]
    endpoint: EndpointArgs,
}

/// What `summary.json` holds: one line per part of the run.
#[derive(Serialize)]
struct Summary {
    seconds: f64,
    compression: Vec<FlowSummary>,
    ran: Vec<RanRow>,
    proxy_load: Option<LoadSummary>,
    capacity: Option<CapacityReport>,
}

#[derive(Serialize)]
struct FlowSummary {
    flow: String,
    algorithm: &'static str,
    /// Ratio (SigComp bytes / SIP bytes) per mechanism.
    basic: f64,
    r#static: f64,
    dynamic: f64,
    shared: f64,
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("sigkit eval: {msg}");
    ExitCode::from(1)
}

fn summarize(study: &CompressionStudy) -> Vec<FlowSummary> {
    let mut out: Vec<FlowSummary> = Vec::new();
    for row in &study.flows {
        let i = match out.iter().position(|s| s.flow == row.flow && s.algorithm == row.algorithm) {
            Some(i) => i,
            None => {
                out.push(FlowSummary {
                    flow: row.flow.clone(),
                    algorithm: row.algorithm,
                    basic: f64::NAN,
                    r#static: f64::NAN,
                    dynamic: f64::NAN,
                    shared: f64::NAN,
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        match row.mechanism {
            "basic" => s.basic = row.ratio,
            "static" => s.r#static = row.ratio,
            "dynamic" => s.dynamic = row.ratio,
            _ => s.shared = row.ratio,
        }
    }
    out
}

pub fn eval(args: EvalArgs) -> ExitCode {
    let started = Instant::now();
    let (config, params) = match args.endpoint.resolve() {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        return fail(format!("{}: {e}", args.out.display()));
    }
    let db = args.out.join("results.sqlite");
    let mut store = match Store::open(&db) {
        Ok(s) => s,
        Err(e) => return fail(format!("{}: {e}", db.display())),
    };
    let command: Vec<String> = std::env::args().collect();
    let run_config = serde_json::json!({
        "corpus": args.corpus,
        "quick": args.quick,
        "algorithm": config.algorithm.name(),
        "mechanism": config.mechanism.name(),
        "dms": params.dms, "sms": params.sms, "cpb": params.cpb,
    });
    let run = match store.begin_run("eval", &command.join(" "), &run_config) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };

    // 1. Every corpus flow under each mechanism (and each algorithm,
    // except in a quick run).
    eprintln!("sigkit eval: compression of every corpus flow under each mechanism");
    let flows = match flow_dirs(&args.corpus) {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    let algorithms = if args.quick { vec![config.algorithm] } else { sigkit_eval::study::all_algorithms().to_vec() };
    let study = match compression(&flows, &algorithms, &Mechanism::ALL, config, params) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    if let Err(e) = store
        .record_rows(run, "compression_flows", &study.flows)
        .and_then(|_| store.record_rows(run, "compression_messages", &study.messages))
    {
        return fail(e);
    }
    let compression = summarize(&study);
    println!("{:<36} {:<8} {:>7} {:>7} {:>7} {:>7}", "flow", "algo", "basic", "static", "dynamic", "shared");
    for s in &compression {
        println!(
            "{:<36} {:<8} {:>7.3} {:>7.3} {:>7.3} {:>7.3}",
            s.flow, s.algorithm, s.basic, s.r#static, s.dynamic, s.shared
        );
    }

    // 2. The RAN-delay study (the SigComp performance thesis §2.1, §9.10): the 3GPP video
    // call's session establishment (its first 12 messages, without the
    // closing BYE), compressed over a reliable transport as the thesis did.
    eprintln!("sigkit eval: RAN-delay study");
    let call = args.corpus.join("3gpp-video-call");
    let ran = match sigkit_eval::corpus::load_flow(&call) {
        Ok(mut messages) => {
            messages.truncate(12);
            let reliable = sigcomp_compress::Config { transport: Transport::Stream, ..config };
            match sigkit_eval::flow::run(&messages, params, reliable) {
                Ok(r) => {
                    let sip: Vec<usize> = r.messages.iter().map(|m| m.uncompressed).collect();
                    let sigcomp: Vec<usize> = r.messages.iter().map(|m| m.sigcomp).collect();
                    ran_study(&sip, &sigcomp, &THESIS_RATES_KBPS, THESIS_RTT)
                }
                Err(e) => return fail(format!("{}: {e}", call.display())),
            }
        }
        Err(e) => return fail(e),
    };
    println!(
        "\n{:>7} {:>10} {:>12} {:>12} {:>8} {:>14}",
        "kbps", "SIP s", "SigComp s", "saved s", "saved %", "thesis saved"
    );
    for r in &ran {
        println!(
            "{:>7} {:>10.2} {:>12.2} {:>12.2} {:>8.1} {:>14}",
            r.kbps,
            r.sip_delay_s,
            r.sigcomp_delay_s,
            r.improvement_s,
            r.improvement_pct,
            r.thesis_improvement_s.map_or("".into(), |t| format!("{t:.2} s"))
        );
    }
    if let Err(e) = store.record_rows(run, "ran_delay", &ran) {
        return fail(e);
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(e),
    };

    // 3. A short load run through `sigkit proxy` to a built-in UAS.
    eprintln!("sigkit eval: a load run through sigkit proxy");
    let (rate, secs) = if args.quick { (100.0, 2.0) } else { (500.0, 10.0) };
    let proxy_run = runtime.block_on(proxy_load(rate, secs));
    let proxy_load = match proxy_run {
        Ok(report) => {
            let s = &report.summary;
            println!(
                "\nthrough sigkit proxy: {} of {} calls at {rate} calls/s, p95 set-up {:.2} ms, {} failed",
                s.successful_calls, s.attempted_calls, s.setup_ms.p95, s.failed_calls
            );
            if let Err(e) = store.record_rows(run, "proxy_load_intervals", &report.intervals) {
                return fail(e);
            }
            Some(report.summary)
        }
        Err(e) => return fail(format!("load through the proxy: {e}")),
    };

    // 4. A capacity search against the built-in UAS.
    eprintln!("sigkit eval: capacity search against the built-in UAS");
    let settings = SearchSettings {
        target: None,
        through: None,
        repeat: if args.quick { 1 } else { 3 },
        strategy: Strategy::Bisect {
            start: 1000.0,
            growth: 2.0,
            max: 200_000.0,
            resolution: if args.quick { 0.25 } else { 0.05 },
        },
        level: ServiceLevel::default(),
        step_s: if args.quick { 0.5 } else { 2.0 },
    };
    let capacity =
        runtime.block_on(search(&settings, |i, r, served| eprintln!("  search {}: {}", i + 1, describe(r, served))));
    let steps: Vec<serde_json::Value> = capacity
        .searches
        .iter()
        .enumerate()
        .flat_map(|(i, o)| {
            o.steps.iter().map(move |(r, v)| {
                serde_json::json!({"search": i + 1, "offered_cps": r.offered_cps, "attempted": r.attempted,
                    "successful": r.successful, "failed": r.failed, "setup_p95_ms": r.setup_p95_ms,
                    "verdict": format!("{v:?}")})
            })
        })
        .collect();
    if let Err(e) = store.record_rows(run, "capacity_steps", &steps) {
        return fail(e);
    }
    if let Some(e) = &capacity.estimate {
        println!(
            "\ncapacity of the built-in UAS with the generator: {:.0} calls/s over {} searches (±{:.1} %)",
            e.mean_cps,
            e.repetitions,
            e.max_deviation * 100.0
        );
    }

    // 5. The report.
    let page = report_page(&study, &ran, proxy_load.as_ref(), &capacity);
    let index = args.out.join("index.html");
    if let Err(e) = std::fs::write(&index, page) {
        return fail(format!("{}: {e}", index.display()));
    }

    let summary =
        Summary { seconds: started.elapsed().as_secs_f64(), compression, ran, proxy_load, capacity: Some(capacity) };
    if let Err(e) = store.finish_run(run, &summary) {
        return fail(e);
    }
    let json = match serde_json::to_string_pretty(&summary) {
        Ok(j) => j,
        Err(e) => return fail(e),
    };
    if let Err(e) = std::fs::write(args.out.join("summary.json"), json) {
        return fail(e);
    }
    eprintln!(
        "sigkit eval: report in {}, results in {} (run {run}), {:.1} s",
        index.display(),
        db.display(),
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

/// UAC → `sigkit proxy` (plain SIP on the terminal side) → built-in UAS.
async fn proxy_load(rate: f64, secs: f64) -> Result<sigkit_loadgen::RunReport, String> {
    let calls = (rate * secs) as u64;
    let uas = Prepared::bind(LoadConfig {
        role: Role::Uas,
        max_calls: Some(calls),
        duration: Some(Duration::from_secs_f64(secs + 40.0)),
        ..LoadConfig::default()
    })
    .await
    .map_err(|e| e.to_string())?;
    let uas_addr = uas.local_addr();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let uas_task = tokio::spawn(uas.run(Some(stopped)));
    let localhost = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let config = ProxyConfig {
        listen: vec![TransportAddr { transport: SipTransport::Udp, addr: localhost(0) }],
        upstream: Some(TransportAddr { transport: SipTransport::Udp, addr: uas_addr }),
        upstream_local: Some(localhost(0)),
        threads: 1,
        ..ProxyConfig::default()
    };
    let proxy = sigkit_proxy::runtime::start(config).await.map_err(|e| e.to_string())?;
    let proxy_addr = proxy.terminal_addrs[0].1;
    let uac = LoadConfig {
        role: Role::Uac,
        remote: Some(uas_addr),
        next_hop: Some(proxy_addr),
        rate,
        max_calls: Some(calls),
        duration: Some(Duration::from_secs_f64(secs + 10.0)),
        ..LoadConfig::default()
    };
    let report = sigkit_loadgen::run(uac, None).await.map_err(|e| e.to_string());
    let _ = stop.send(true);
    let _ = uas_task.await;
    proxy.stop().await;
    report
}

fn num(v: f64) -> String {
    format!("{v:.2}")
}

fn report_page(
    study: &CompressionStudy,
    ran: &[RanRow],
    load: Option<&LoadSummary>,
    capacity: &CapacityReport,
) -> String {
    let mut sections = Vec::new();
    // Compression per message of the 3GPP video call, per mechanism.
    let flow = "3gpp-video-call";
    let algorithm = study.flows.first().map_or("lzss", |f| f.algorithm);
    let mut series = vec![Series::line(
        "SIP",
        study
            .messages
            .iter()
            .filter(|m| m.flow == flow && m.mechanism == "basic" && m.algorithm == algorithm)
            .map(|m| (m.index as f64, m.uncompressed as f64))
            .collect(),
    )];
    for mech in ["basic", "static", "dynamic", "shared"] {
        series.push(Series::line(
            mech,
            study
                .messages
                .iter()
                .filter(|m| m.flow == flow && m.mechanism == mech && m.algorithm == algorithm)
                .map(|m| (m.index as f64, m.sigcomp as f64))
                .collect(),
        ));
    }
    let rows: Vec<Vec<String>> = study
        .flows
        .iter()
        .map(|f| {
            vec![
                f.flow.clone(),
                f.algorithm.into(),
                f.mechanism.into(),
                f.uncompressed.to_string(),
                f.sigcomp.to_string(),
                format!("{:.3}", f.ratio),
            ]
        })
        .collect();
    sections.push(Section {
        title: "Compression per message".into(),
        text: format!(
            "Every corpus flow under each mechanism, between two in-process SigComp endpoints (UDP, the embedded \
             defaults otherwise). The plot shows the {flow} flow with {algorithm}: SIP bytes and SigComp bytes per message."
        ),
        plots: vec![Plot {
            title: format!("{flow}: bytes per message ({algorithm})"),
            x_label: "message".into(),
            y_label: "bytes".into(),
            series,
            log_x: false,
        }],
        table: Some((
            ["flow", "algorithm", "mechanism", "SIP bytes", "SigComp bytes", "ratio"].map(String::from).to_vec(),
            rows,
        )),
    });
    // RAN delay against bit rate, with the thesis's improvements.
    sections.push(Section {
        title: "RAN delay against bit rate".into(),
        text: "One-way RAN delay of the 3GPP video call's session establishment (12 messages) by the SigComp \
               performance thesis's equation 2.1 (size / bit rate + RTT/2, RTT 70 ms), uncompressed and with SigComp \
               over a reliable transport. Squares: the thesis's Figure 53 improvements (6.9 s at 9.6 kbps, 1.0 s at \
               64 kbps, 0.26 s at 256 kbps)."
            .into(),
        plots: vec![Plot {
            title: "One-way RAN delay of session establishment".into(),
            x_label: "signalling link bit rate, kbps (log)".into(),
            y_label: "seconds".into(),
            series: vec![
                Series::line("SIP", ran.iter().map(|r| (r.kbps, r.sip_delay_s)).collect()),
                Series::line("SigComp", ran.iter().map(|r| (r.kbps, r.sigcomp_delay_s)).collect()),
                Series::line("saved (ours)", ran.iter().map(|r| (r.kbps, r.improvement_s)).collect()),
                Series::markers(
                    "saved (thesis)",
                    ran.iter().filter_map(|r| r.thesis_improvement_s.map(|t| (r.kbps, t))).collect(),
                ),
            ],
            log_x: true,
        }],
        table: Some((
            ["kbps", "SIP s", "SigComp s", "saved s", "saved %", "thesis saved s", "thesis saved %"]
                .map(String::from)
                .to_vec(),
            ran.iter()
                .map(|r| {
                    vec![
                        r.kbps.to_string(),
                        num(r.sip_delay_s),
                        num(r.sigcomp_delay_s),
                        num(r.improvement_s),
                        format!("{:.1}", r.improvement_pct),
                        r.thesis_improvement_s.map_or(String::new(), num),
                        r.thesis_improvement_pct.map_or(String::new(), |p| format!("about {p:.0}")),
                    ]
                })
                .collect(),
        )),
    });
    // Capacity search.
    let steps: Vec<&sigkit_eval::capacity::StepResult> =
        capacity.searches.iter().flat_map(|o| o.steps.iter().map(|(r, _)| r)).collect();
    let mut by_rate: Vec<&sigkit_eval::capacity::StepResult> = steps.clone();
    by_rate.sort_by(|a, b| a.offered_cps.total_cmp(&b.offered_cps));
    sections.push(Section {
        title: "Throughput, failures and set-up delay against offered load".into(),
        text: format!(
            "Capacity search (the framework thesis's service level: at most 10 % failed calls, p95 set-up delay at most 250 ms) of \
             the built-in UAS answering the built-in UAC, the framework thesis's simple call over UDP on 127.0.0.1.{}",
            capacity.estimate.map_or(String::new(), |e| format!(
                " Capacity {:.0} calls/s over {} searches (spread ±{:.1} %).",
                e.mean_cps,
                e.repetitions,
                e.max_deviation * 100.0
            ))
        ),
        plots: vec![
            Plot {
                title: "Successful calls/s and failed calls against offered load".into(),
                x_label: "offered calls/s".into(),
                y_label: "calls/s, or failed %".into(),
                series: vec![
                    Series::line(
                        "successful calls/s",
                        by_rate
                            .iter()
                            .map(|r| (r.offered_cps, r.successful as f64 / (r.attempted.max(1) as f64) * r.offered_cps))
                            .collect(),
                    ),
                    Series::line(
                        "failed % (×100)",
                        by_rate
                            .iter()
                            .map(|r| (r.offered_cps, r.failed as f64 / r.attempted.max(1) as f64 * 1e4))
                            .collect(),
                    ),
                ],
                log_x: false,
            },
            Plot {
                title: "p95 call set-up delay against offered load".into(),
                x_label: "offered calls/s".into(),
                y_label: "ms".into(),
                series: vec![Series::line(
                    "p95 INVITE→200",
                    by_rate.iter().filter_map(|r| r.setup_p95_ms.map(|p| (r.offered_cps, p))).collect(),
                )],
                log_x: false,
            },
        ],
        table: Some((
            ["offered calls/s", "attempted", "successful", "failed", "p95 set-up ms"].map(String::from).to_vec(),
            steps
                .iter()
                .map(|r| {
                    vec![
                        format!("{:.0}", r.offered_cps),
                        r.attempted.to_string(),
                        r.successful.to_string(),
                        r.failed.to_string(),
                        r.setup_p95_ms.map_or("-".into(), num),
                    ]
                })
                .collect(),
        )),
    });
    if let Some(l) = load {
        sections.push(Section {
            title: "A load run through sigkit proxy".into(),
            text: format!(
                "{} of {} calls completed through sigkit proxy at {:.0} calls/s offered; set-up delay p50 {:.2} ms, p95 \
                 {:.2} ms, p99 {:.2} ms; {} failed, {} retransmissions.",
                l.successful_calls,
                l.attempted_calls,
                l.offered_cps,
                l.setup_ms.p50,
                l.setup_ms.p95,
                l.setup_ms.p99,
                l.failed_calls,
                l.retransmissions
            ),
            ..Section::default()
        });
    }
    html(
        "sigkit eval",
        "What sigkit measured on this machine with its embedded defaults: compression of the corpus flows, the RAN \
         delay they add on narrowband links, a load run through the SigComp edge proxy, and a capacity search.",
        &sections,
    )
}
