//! Report sections built from sigkit-eval's studies: the compression of
//! corpus flows and the RAN-delay study, so that a report exists without
//! a load run.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sigcomp::Params;
use sigcomp_compress::{Algorithm, Config, Mechanism};
use sigkit_eval::ran::{MeasuredRow, RanCall};
use sigkit_eval::study::{self, CompressionStudy, StudyError};

use crate::{seeds, FlowCompression, RanMessageRow, RanMethod, RanRow, ReportInput, RunMeta};

/// Every flow of `corpus` under each of `algorithms` and `mechanisms`
/// (sigkit-eval's compression study), as the compression section.
pub fn compression(
    corpus: &Path,
    algorithms: &[Algorithm],
    mechanisms: &[Mechanism],
    config: Config,
    params: Params,
) -> Result<Vec<FlowCompression>, StudyError> {
    let flows = study::flow_dirs(corpus)?;
    Ok(from_study(&study::compression(&flows, algorithms, mechanisms, config, params)?))
}

/// The compression section of a study already run.
pub fn from_study(study: &CompressionStudy) -> Vec<FlowCompression> {
    let mut out: Vec<FlowCompression> = Vec::new();
    for m in &study.messages {
        let i =
            match out.iter().position(|f| f.flow == m.flow && f.algorithm == m.algorithm && f.mechanism == m.mechanism)
            {
                Some(i) => i,
                None => {
                    out.push(FlowCompression {
                        flow: m.flow.clone(),
                        algorithm: m.algorithm.to_string(),
                        mechanism: m.mechanism.to_string(),
                        messages: Vec::new(),
                    });
                    out.len() - 1
                }
            };
        out[i].messages.push((m.message.clone(), m.uncompressed as u64, m.sigcomp as u64));
    }
    out
}

/// The RAN-delay section: `call` at each of `rates` by equation 2.1 with
/// `rtt`, per message, the `measured` rows if any, and the SigComp
/// performance thesis's values beside them.
pub fn ran(call: &RanCall, rates: &[f64], rtt: Duration, measured: &[MeasuredRow]) -> ReportInput {
    let rtt_ms = rtt.as_secs_f64() * 1000.0;
    let mut ran: Vec<RanRow> = call
        .study(rates, rtt)
        .iter()
        .map(|r| RanRow {
            kbps: r.kbps,
            method: RanMethod::Calculated,
            rtt_ms,
            messages: r.messages as u32,
            sip_bytes: r.sip_bytes as u64,
            sigcomp_bytes: r.sigcomp_bytes as u64,
            sip_delay_s: r.sip_delay_s,
            sigcomp_delay_s: r.sigcomp_delay_s,
            improvement_s: r.improvement_s,
            improvement_pct: r.improvement_pct,
        })
        .collect();
    let (sip_bytes, sigcomp_bytes) =
        (call.sip_sizes().iter().sum::<usize>() as u64, call.sigcomp_sizes().iter().sum::<usize>() as u64);
    ran.extend(measured.iter().map(|m| RanRow {
        kbps: m.kbps,
        method: RanMethod::Measured,
        rtt_ms,
        messages: m.sip_messages.len() as u32,
        sip_bytes,
        sigcomp_bytes,
        sip_delay_s: m.sip_delay_s,
        sigcomp_delay_s: m.sigcomp_delay_s,
        improvement_s: m.sip_delay_s - m.sigcomp_delay_s,
        improvement_pct: m.improvement_pct,
    }));
    let ran_messages = rates
        .iter()
        .flat_map(|&kbps| {
            call.per_message(kbps, rtt).into_iter().map(move |m| RanMessageRow {
                kbps,
                name: m.name,
                direction: m.direction.to_string(),
                sip_bytes: m.sip_bytes as u64,
                sigcomp_bytes: m.sigcomp_bytes as u64,
                sip_delay_s: m.sip_delay_s,
                sigcomp_delay_s: m.sigcomp_delay_s,
            })
        })
        .collect();
    ReportInput { ran, ran_messages, seed_points: seeds::sigcomp_thesis_ran(rates, rtt), ..ReportInput::default() }
}

/// This machine (host name, CPU model and count), now (UTC) and `command`.
pub fn run_meta(command: &str) -> RunMeta {
    let host = std::fs::read_to_string("/etc/hostname").map(|s| s.trim().to_string()).unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    RunMeta {
        machine: format!("{host} ({cpu}, {cpus} CPUs)").replace("( ", "(").replace("(, ", "("),
        date: utc_now(),
        command: command.to_string(),
        ..RunMeta::default()
    }
}

/// Now as "YYYY-MM-DD HH:MM:SS UTC".
fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem / 60 % 60, rem % 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant,
/// "chrono-Compatible Low-Level Date Algorithms", civil_from_days).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_gregorian() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_416), (2025, 11, 24));
    }
}
