//! SIPp's ways of writing times and numbers in its trace files (SIPp 3.6
//! `CStat::formatTime`, `msToHHMMSS`, `msToHHMMSSus`, and C++'s default
//! stream output of a `double`), so files parse as SIPp's do.

use std::time::{SystemTime, UNIX_EPOCH};

/// A wall-clock time in local time as SIPp's `formatTime` writes it:
/// `2026-11-29 16:39:23.123456` (`with_epoch` true, the message log's), or
/// `2026-11-29<TAB>16:39:23.123456<TAB>1796055563.123456` (false, the
/// statistics file's and the error log's).
pub fn format_time(t: SystemTime, with_epoch: bool) -> String {
    let local: chrono::DateTime<chrono::Local> = t.into();
    if with_epoch {
        local.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
    } else {
        let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        format!("{}\t{:010}.{:06}", local.format("%Y-%m-%d\t%H:%M:%S%.6f"), since.as_secs(), since.subsec_micros())
    }
}

/// Milliseconds as SIPp's `msToHHMMSS`: `HH:MM:SS`, whole seconds.
pub fn hhmmss(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

/// Milliseconds as SIPp's `msToHHMMSSus`: `HH:MM:SS:uuuuuu`, the last field
/// the milliseconds past the second, in microseconds.
pub fn hhmmss_us(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}:{:06}", s / 3600, s % 3600 / 60, s % 60, ms % 1000 * 1000)
}

/// A number as C++'s `ostream << double` writes it by default (printf's
/// `%g`, 6 significant digits): `10`, `9.99001`, `1234.57`, `1e+06`.
pub fn cpp_float(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v.is_infinite() {
            format!("{}inf", if v < 0.0 { "-" } else { "" })
        } else {
            "0".into()
        };
    }
    // The exponent after rounding to 6 significant digits.
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        let fixed = format!("{:.*}", (5 - exp) as usize, v);
        trim_zeros(&fixed).to_string()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim_zeros(mantissa), exp.abs())
    }
}

/// `1.50000` → `1.5`, `2.000` → `2`; text without a point is left alone.
fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn numbers_as_cpp_streams_write_them() {
        for (v, text) in [
            (10.0, "10"),
            (0.0, "0"),
            (9.990_009_99, "9.99001"),
            (1234.5678, "1234.57"),
            (123_456.7, "123457"),
            (1_000_000.0, "1e+06"),
            (0.000_123_456, "0.000123456"),
            (0.000_012_345_6, "1.23456e-05"),
            (-2.5, "-2.5"),
            (999_999.5, "1e+06"),
        ] {
            assert_eq!(cpp_float(v), text, "{v}");
        }
    }

    #[test]
    fn durations_as_sipp_writes_them() {
        assert_eq!(hhmmss(0), "00:00:00");
        assert_eq!(hhmmss(3_723_999), "01:02:03");
        assert_eq!(hhmmss_us(2), "00:00:00:002000");
        assert_eq!(hhmmss_us(61_250), "00:01:01:250000");
    }

    #[test]
    fn times_have_sipps_two_layouts() {
        let t = UNIX_EPOCH + Duration::from_micros(1_796_055_563_123_456);
        let short = format_time(t, true);
        assert_eq!(short.len(), "2026-11-29 16:39:23.123456".len(), "{short}");
        assert!(short.ends_with(".123456") && short.as_bytes()[10] == b' ', "{short}");
        let long = format_time(t, false);
        let fields: Vec<&str> = long.split('\t').collect();
        assert_eq!(fields.len(), 3, "{long}");
        assert_eq!(fields[2], "1796055563.123456");
        assert_eq!(fields[0], &short[..10]);
    }
}
