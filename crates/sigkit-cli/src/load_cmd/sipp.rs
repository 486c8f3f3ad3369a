//! `sigkit load` as SIPp users run it: its trace files (`-trace_stat`,
//! `-trace_msg`, `-trace_err`, `-trace_rtt`, `-trace_logs`,
//! `-trace_screen`), a warning for every SIPp flag given that changes
//! nothing here, and the end of a run on SIGINT or SIGTERM with its summary
//! and files, as SIPp ends one.

use std::path::Path;

use sigkit_loadgen::TraceConfig;
use tokio::sync::watch;

use super::LoadArgs;

/// The trace files the flags ask for, named after `scenario_name` (SIPp's
/// `<scenario>`) and this process; None when none is asked for.
pub(super) fn trace_config(args: &LoadArgs) -> Option<TraceConfig> {
    let config = TraceConfig {
        name: scenario_name(args),
        pid: std::process::id(),
        dir: ".".into(),
        stat: args.trace_stat,
        stat_file: args.stat_file.clone(),
        stat_delimiter: args.stat_delimiter.clone().unwrap_or_else(|| ";".into()),
        messages: args.trace_msg,
        errors: args.trace_err,
        rtt: args.trace_rtt,
        rtt_freq: args.rtt_freq.unwrap_or(200).max(1),
        logs: args.trace_logs,
    };
    config.any().then_some(config)
}

/// SIPp's `<scenario>` in file names: the `-sf` file's name without `.xml`,
/// or the `-sn` name.
pub(super) fn scenario_name(args: &LoadArgs) -> String {
    sigkit_loadgen::trace::scenario_file_name(args.scenario_file.as_deref(), &args.scenario)
}

/// `-trace_screen`'s file: `<scenario>_<pid>_screen.log`.
pub(super) fn screen_path(args: &LoadArgs) -> std::path::PathBuf {
    Path::new(".").join(format!("{}_{}_screen.log", scenario_name(args), std::process::id()))
}

/// One line per SIPp flag given that changes nothing here, for stderr:
/// those accepted for compatibility but not implemented, and those that
/// act only with another flag that is absent.
pub(super) fn ignored_flags(args: &LoadArgs) -> Vec<String> {
    let mut lines = Vec::new();
    let mut not_implemented = |given: bool, flag: &str| {
        if given {
            lines.push(format!("sigkit load: {flag} is accepted but not implemented; ignored"));
        }
    };
    not_implemented(args.background, "-bg");
    let mut needs = |given: bool, flag: &str, other: &str| {
        if given {
            lines.push(format!("sigkit load: {flag} does nothing without {other}; ignored"));
        }
    };
    let stepped = args.rate_increase.is_some();
    needs(args.rate_max.is_some() && !stepped, "-rate_max", "-rate_increase");
    needs(args.rate_interval.is_some() && !stepped, "-rate_interval", "-rate_increase");
    needs(args.no_rate_quit && !stepped, "-no_rate_quit", "-rate_increase");
    needs(args.timeout_error && args.timeout.is_none() && args.duration.is_none(), "-timeout_error", "-timeout");
    needs(args.stat_file.is_some() && !args.trace_stat, "-stf", "-trace_stat");
    needs(args.stat_delimiter.is_some() && !args.trace_stat && !args.trace_rtt, "-stat_delimiter", "-trace_stat");
    needs(args.rtt_freq.is_some() && !args.trace_rtt, "-rtt_freq", "-trace_rtt");
    lines
}

/// A channel that turns true on the first SIGINT or SIGTERM, so the run
/// ends as at `-timeout`: its summary printed and its files flushed. A
/// second signal ends the process at once (exit 130 or 143, 128 plus the
/// signal's number, as a shell reports a process killed by it), after
/// leaving the terminal's alternate screen when the live `screen` is on.
///
/// Call it inside the runtime that runs the load.
pub(super) fn stop_on_signals(screen: bool) -> std::io::Result<watch::Receiver<bool>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        eprintln!("sigkit load: {name}: ending the run (a second signal ends it at once)");
        let _ = tx.send(true);
        let code = tokio::select! {
            _ = interrupt.recv() => 130,
            _ = terminate.recv() => 143,
        };
        if screen {
            super::live::leave_alternate_screen();
        }
        std::process::exit(code);
    });
    Ok(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> LoadArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            load: LoadArgs,
        }
        let argv =
            super::super::sipp_style(["sigkit", "load"].into_iter().chain(line.split(' ')).map(String::from).collect());
        <Cli as clap::Parser>::try_parse_from(argv.into_iter().skip(1)).unwrap().load
    }

    #[test]
    fn every_flag_that_changes_nothing_is_named() {
        let lines = ignored_flags(&args("-sn uac -bg -aa -rate_max 50 -rtt_freq 10 -stf s.csv 127.0.0.1:5060"));
        assert_eq!(
            lines,
            [
                "sigkit load: -bg is accepted but not implemented; ignored",
                "sigkit load: -rate_max does nothing without -rate_increase; ignored",
                "sigkit load: -stf does nothing without -trace_stat; ignored",
                "sigkit load: -rtt_freq does nothing without -trace_rtt; ignored",
            ]
        );
        assert!(ignored_flags(&args("-sn uac -trace_stat -stf s.csv -rate_increase 5 -rate_max 50 127.0.0.1:5060"))
            .is_empty());
    }

    #[test]
    fn trace_files_take_sipps_scenario_name() {
        let c = trace_config(&args("-sf dir/my.calls.xml -trace_msg -trace_rtt -rtt_freq 5 127.0.0.1:5060")).unwrap();
        assert_eq!(c.name, "my.calls");
        assert_eq!((c.messages, c.rtt, c.rtt_freq, c.stat), (true, true, 5, false));
        assert_eq!(
            c.path("messages.log"),
            Path::new(".").join(format!("my.calls_{}_messages.log", std::process::id()))
        );
        assert!(trace_config(&args("-sn uas")).is_none());
        let c = trace_config(&args("-sn uas -trace_stat -stat_delimiter ,")).unwrap();
        assert_eq!((c.name.as_str(), c.stat_delimiter.as_str()), ("uas", ","));
    }
}
