//! Timestamps as tidemark stores and prints them: RFC 3339 in UTC with whole
//! seconds (`2026-11-20T23:51:04Z`).
//!
//! One fixed, zone-free format keeps stored runs comparable across hosts and
//! sortable as text. The conversion is a few lines of calendar arithmetic
//! (Howard Hinnant's civil-from-days), so no date crate is needed.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub fn now_rfc3339() -> String {
    rfc3339_utc(SystemTime::now())
}

/// `t` as `YYYY-MM-DDTHH:MM:SSZ` (UTC), truncated to whole seconds.
///
/// Times before 1970 are handled too (the clock of a badly set host).
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs: i64 = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        // Before the epoch: round towards negative infinity so that
        // 0.5 s before 1970 is 1969-12-31T23:59:59Z.
        Err(e) => {
            let d = e.duration();
            let whole = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            -whole - i64::from(d.subsec_nanos() > 0)
        }
    };
    format_unix_secs(secs)
}

/// Seconds since the Unix epoch (negative: before it) as RFC 3339 UTC.
fn format_unix_secs(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date (year, month 1–12, day 1–31) of the day that
/// is `z` days after 1970-01-01.
///
/// Howard Hinnant, "chrono-Compatible Low-Level Date Algorithms": shift the
/// year to start in March so the leap day is last, then split into 400-year
/// eras of 146 097 days.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year from March 1, [0, 365]
    let mp = (5 * doy + 2) / 153; // month from March, [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Seconds since the Unix epoch of a `YYYY-MM-DDTHH:MM:SSZ` timestamp as
/// [`rfc3339_utc`] writes it; `None` for any other text.
pub fn parse_rfc3339_utc(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let part = s.get(from..to)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hh, mm, ss) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    Some(days_from_civil(y, m as u32, d as u32) * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// The inverse of [`civil_from_days`]: days from 1970-01-01 to the date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let mp = i64::from((m + 9) % 12); // month from March, [0, 11]
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: i64) -> String {
        let t = if secs >= 0 {
            UNIX_EPOCH + Duration::from_secs(secs as u64)
        } else {
            UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
        };
        rfc3339_utc(t)
    }

    #[test]
    fn known_dates() {
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(1_795_218_664), "2026-11-20T23:51:04Z");
        assert_eq!(at(951_825_600), "2000-02-29T12:00:00Z");
        assert_eq!(at(1_735_689_599), "2024-12-31T23:59:59Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
    }

    #[test]
    fn before_the_epoch() {
        assert_eq!(at(-1), "1969-12-31T23:59:59Z");
        assert_eq!(at(-2_208_988_800), "1900-01-01T00:00:00Z");
        let half_before = UNIX_EPOCH - Duration::from_millis(500);
        assert_eq!(rfc3339_utc(half_before), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn sub_second_part_is_truncated() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_218_664_999);
        assert_eq!(rfc3339_utc(t), "2026-11-20T23:51:04Z");
    }

    #[test]
    fn civil_from_days_matches_a_day_by_day_walk() {
        // Walk forward from 1970-01-01 for 500 years and check every day.
        let (mut y, mut m, mut d) = (1970_i64, 1_u32, 1_u32);
        for z in 0..(500 * 366) {
            assert_eq!(civil_from_days(z), (y, m, d), "day {z}");
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let len = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            d += 1;
            if d > len {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }

    #[test]
    fn parse_inverts_format() {
        for secs in [
            0_i64,
            1_795_218_664,
            951_825_600,
            4_107_542_400,
            -2_208_988_800,
        ] {
            assert_eq!(parse_rfc3339_utc(&format_unix_secs(secs)), Some(secs));
        }
        assert_eq!(parse_rfc3339_utc("2026-11-20 23:51:04Z"), None);
        assert_eq!(parse_rfc3339_utc("2026-13-20T23:51:04Z"), None);
        assert_eq!(parse_rfc3339_utc(""), None);
    }

    #[test]
    fn now_is_well_formed() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'), "{s}");
    }
}
