//! How numbers are printed in every rendering of a report, so Markdown,
//! HTML and the generated summaries agree to the digit.

use std::fmt::Write as _;

/// A rate or other measured amount: whole numbers from 100 up, then one,
/// two or three decimals as the value gets smaller.
pub fn amount(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 || a == 0.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// An optional amount; a value that was not measured is "n/a", never 0.
pub fn opt_amount(x: Option<f64>) -> String {
    x.map(amount).unwrap_or_else(|| "n/a".into())
}

/// A relative value, two decimals as the seeds print them.
pub fn rel(x: f64) -> String {
    format!("{x:.2}")
}

/// A relative value with its 95 % interval: `0.94 ±0.03` while the
/// interval is about symmetric around it, its ends `4.04 (2.61–6.25)` once
/// one side is over a quarter longer than the other (intervals of ratios
/// are symmetric on the log scale, so wide ones are not on this one, and a
/// `±` would then claim ends the interval does not have).
pub fn rel_pm(x: f64, interval: Option<&crate::stats::Interval>) -> String {
    match interval {
        Some(iv) => {
            let (below, above) = ((x - iv.lo).max(0.0), (iv.hi - x).max(0.0));
            let (short, long) = (below.min(above), below.max(above));
            if long > 1.25 * short && long - short >= 0.01 {
                format!("{} ({}–{})", rel(x), rel(iv.lo), rel(iv.hi))
            } else {
                format!("{} ±{:.2}", rel(x), (iv.hi - iv.lo) / 2.0)
            }
        }
        None => rel(x),
    }
}

/// An interval's ends, its size and method: `0.91–0.97 (95 %, n=3, paired-t)`.
pub fn interval_text(iv: &crate::stats::Interval) -> String {
    format!(
        "{}–{} (95 %, n={}, {})",
        rel(iv.lo),
        rel(iv.hi),
        iv.n,
        method_name(iv.method)
    )
}

/// An interval method's short name: `paired t`, `paired slices`, …
pub fn method_name(m: crate::stats::Method) -> &'static str {
    match m {
        crate::stats::Method::PairedT => "paired t",
        crate::stats::Method::WelchT => "Welch t",
        crate::stats::Method::BlockBootstrap => "block bootstrap",
        crate::stats::Method::PairedSlices => "paired slices",
        crate::stats::Method::PooledRepetitions => "pooled repetitions",
        crate::stats::Method::InstructionFloor => "A/A floor",
    }
}

/// A change in basis points with its sign: `+3`, `-12`, `0`.
pub fn bp(x: f64) -> String {
    let r = x.round();
    if r > 0.0 {
        format!("+{r:.0}")
    } else if r < 0.0 {
        format!("{r:.0}")
    } else {
        "0".into()
    }
}

/// Seconds for durations: `0.5 s`, `12 s`, `1h 02m 05s`.
pub fn secs(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.1} s")
    } else if x < 60.0 {
        format!("{x:.0} s")
    } else {
        let t = x.round() as u64;
        let (h, m, s) = (t / 3600, t % 3600 / 60, t % 60);
        if h > 0 {
            format!("{h}h {m:02}m {s:02}s")
        } else {
            format!("{m}m {s:02}s")
        }
    }
}

/// Bytes as GiB with one decimal.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// One line about the host a run ran on: name, CPU, cores, memory, OS,
/// kernel and the data directory's device and filesystem; with
/// `disk_kind`, also whether that device is rotational.
pub fn host_line(h: &crate::record::HostFacts, disk_kind: bool) -> String {
    let mut s = format!(
        "{}: {}, {} cores, {} RAM, {}, kernel {}",
        h.hostname,
        h.cpu_model,
        h.cores,
        gib(h.memory_bytes),
        h.os,
        h.kernel
    );
    if let Some(st) = &h.storage {
        let kind = match (disk_kind, st.rotational) {
            (true, Some(true)) => ", rotational",
            (true, Some(false)) => ", SSD/NVMe",
            _ => "",
        };
        let device = if st.device.is_empty() {
            "?"
        } else {
            &st.device
        };
        let _ = write!(s, "; data on {device} ({}{kind})", st.filesystem);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_ratio_interval_is_shown_by_its_ends() {
        let iv = |lo, hi| crate::stats::Interval {
            estimate: 1.0,
            lo,
            hi,
            n: 3,
            method: crate::stats::Method::PairedT,
        };
        assert_eq!(rel_pm(0.94, Some(&iv(0.91, 0.97))), "0.94 ±0.03");
        assert_eq!(rel_pm(4.04, Some(&iv(2.61, 6.25))), "4.04 (2.61–6.25)");
        assert_eq!(rel_pm(1.0, None), "1.00");
    }

    #[test]
    fn amounts_keep_three_significant_digits_or_more() {
        assert_eq!(amount(58862.4), "58862");
        assert_eq!(amount(12.345), "12.3");
        assert_eq!(amount(1.2345), "1.23");
        assert_eq!(amount(0.01234), "0.012");
        assert_eq!(amount(0.0), "0.00");
        assert_eq!(opt_amount(None), "n/a");
    }

    #[test]
    fn basis_points_carry_their_sign() {
        assert_eq!(bp(3.0), "+3");
        assert_eq!(bp(-12.4), "-12");
        assert_eq!(bp(0.2), "0");
        assert_eq!(bp(-0.2), "0");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(secs(0.5), "0.5 s");
        assert_eq!(secs(16.0), "16 s");
        assert_eq!(secs(600.0), "10m 00s");
        assert_eq!(secs(3725.0), "1h 02m 05s");
    }
}
