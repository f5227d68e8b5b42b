//! The verdict on one cell — faster, slower or no difference — from its
//! interval and the smallest change the user cares about.

use serde::Serialize;

use super::interval::Interval;

/// The smallest change a verdict reports unless told otherwise: 1 %, the
/// size of the CPU regressions the reference posts could not resolve. The
/// interval, not this floor, keeps noise out: on the 2-vCPU VM with the
/// default placement and `--repeat 3`, three A/A runs of the 22 read tests
/// flagged 1, 0 and 1 of 22 cells at 1 % (0, 0 and 1 at 3 %), while
/// a planted build 2 % slower in time (3 % more instructions per point
/// query) is "no difference" at 3 % and slower at 1 % (`docs/verdicts.md`).
pub const DEFAULT_MIN_EFFECT: f64 = 0.01;

/// What a ratio's interval says. For throughput `Higher` reads "faster";
/// for a cost per operation it reads "higher" (worse).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The whole interval above 1 and the estimate at least `1 + min`.
    Higher,
    /// The whole interval below 1 and the estimate at most `1 − min`.
    Lower,
    /// Anything else: within noise, or smaller than the minimum effect.
    NoDifference,
    /// No interval could be computed (too few measurements, a zero).
    Unknown,
    /// An interval exists but cannot carry a verdict: it comes from one
    /// measurement per side (one server instance each), which cannot see
    /// how two instances of one target differ nor the drift over time (an
    /// A/A run of the same command is flagged far more often than its
    /// level says). Repeat with `--repeat 3`.
    Unverified,
}

impl Verdict {
    /// The word for a throughput ratio (rQPS): faster / slower.
    pub fn for_rate(self) -> &'static str {
        match self {
            Verdict::Higher => "faster",
            Verdict::Lower => "slower",
            Verdict::NoDifference => "no difference",
            Verdict::Unknown => "unknown",
            Verdict::Unverified => NOT_VERIFIED,
        }
    }

    /// The verdict a stored or rendered word names (either reading:
    /// faster/higher, slower/lower); anything else is unknown.
    pub fn parse(word: Option<&str>) -> Verdict {
        match word {
            Some("faster" | "higher") => Verdict::Higher,
            Some("slower" | "lower") => Verdict::Lower,
            Some("no difference") => Verdict::NoDifference,
            Some(NOT_VERIFIED) => Verdict::Unverified,
            _ => Verdict::Unknown,
        }
    }

    /// The word for a cost ratio (CPU per query): higher / lower.
    pub fn for_cost(self) -> &'static str {
        match self {
            Verdict::Higher => "higher",
            Verdict::Lower => "lower",
            Verdict::NoDifference => "no difference",
            Verdict::Unknown => "unknown",
            Verdict::Unverified => NOT_VERIFIED,
        }
    }
}

/// The word of [`Verdict::Unverified`] in every output.
pub const NOT_VERIFIED: &str = "not verified";

/// The verdict of `interval` (none: [`Verdict::Unknown`]) with the minimum
/// effect `min_effect` (a fraction in (0, 1)).
pub fn verdict(interval: Option<&Interval>, min_effect: f64) -> Verdict {
    let Some(iv) = interval else {
        return Verdict::Unknown;
    };
    if !iv.method.verifies() {
        return Verdict::Unverified;
    }
    if iv.lo > 1.0 && iv.estimate >= 1.0 + min_effect {
        Verdict::Higher
    } else if iv.hi < 1.0 && iv.estimate <= 1.0 - min_effect {
        Verdict::Lower
    } else {
        Verdict::NoDifference
    }
}

/// The minimum effect `--min-effect` asks for, or [`DEFAULT_MIN_EFFECT`]
/// when it was not given (`run` and `report` alike).
pub fn min_effect_or_default(text: Option<&str>) -> Result<f64, String> {
    text.map_or(Ok(DEFAULT_MIN_EFFECT), parse_min_effect)
}

/// Parses a minimum effect: a fraction (`0.03`) or a percentage (`3%`),
/// strictly between 0 and 1.
pub fn parse_min_effect(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "--min-effect {s:?}: give a fraction between 0 and 1 (0.03) or a percentage (3%)"
        )),
    }
}

/// How many cells got each verdict, for a group's summary line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VerdictCounts {
    pub higher: u32,
    pub lower: u32,
    pub no_difference: u32,
    pub unknown: u32,
    /// Cells measured once per side: an interval, no verdict.
    pub unverified: u32,
}

impl VerdictCounts {
    /// Counts one verdict.
    pub fn add(&mut self, v: Verdict) {
        match v {
            Verdict::Higher => self.higher += 1,
            Verdict::Lower => self.lower += 1,
            Verdict::NoDifference => self.no_difference += 1,
            Verdict::Unknown => self.unknown += 1,
            Verdict::Unverified => self.unverified += 1,
        }
    }

    /// Cells with a verdict of any kind but unknown.
    pub fn decided(&self) -> u32 {
        self.higher + self.lower + self.no_difference
    }

    /// The verdicts with a count, each with it, in the order a summary
    /// names them: slower, faster, no difference, unknown, not verified.
    pub fn nonzero_for_rate(&self) -> impl Iterator<Item = (Verdict, u32)> {
        [
            (Verdict::Lower, self.lower),
            (Verdict::Higher, self.higher),
            (Verdict::NoDifference, self.no_difference),
            (Verdict::Unknown, self.unknown),
            (Verdict::Unverified, self.unverified),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
    }

    /// `2 slower, 1 faster, 29 no difference` (zero counts left out, but
    /// never an empty phrase).
    pub fn phrase_for_rate(&self) -> String {
        let parts: Vec<String> = self
            .nonzero_for_rate()
            .map(|(v, n)| format!("{n} {}", v.for_rate()))
            .collect();
        if parts.is_empty() {
            "no cells".to_string()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Method;

    fn iv(estimate: f64, lo: f64, hi: f64) -> Interval {
        Interval {
            estimate,
            lo,
            hi,
            n: 3,
            method: Method::PairedT,
        }
    }

    #[test]
    fn verdicts_need_the_interval_and_the_minimum_effect() {
        let m = 0.03;
        assert_eq!(verdict(Some(&iv(0.90, 0.85, 0.95)), m), Verdict::Lower);
        assert_eq!(verdict(Some(&iv(1.10, 1.05, 1.15)), m), Verdict::Higher);
        // Interval excludes 1 but the change is under 3 %: no difference.
        assert_eq!(
            verdict(Some(&iv(0.99, 0.985, 0.995)), m),
            Verdict::NoDifference
        );
        // The default (1 %) calls a 2 % change whose interval excludes 1.
        assert_eq!(
            verdict(Some(&iv(0.979, 0.970, 0.988)), DEFAULT_MIN_EFFECT),
            Verdict::Lower
        );
        // A large estimate whose interval covers 1: no difference.
        assert_eq!(
            verdict(Some(&iv(0.80, 0.50, 1.30)), m),
            Verdict::NoDifference
        );
        // Exactly at the minimum effect counts.
        assert_eq!(verdict(Some(&iv(0.97, 0.96, 0.98)), m), Verdict::Lower);
        assert_eq!(verdict(None, m), Verdict::Unknown);
        assert_eq!(Verdict::Lower.for_rate(), "slower");
        assert_eq!(Verdict::Higher.for_cost(), "higher");
    }

    #[test]
    fn one_measurement_per_side_gets_no_verdict() {
        // A within-measurement interval far from 1 still says nothing:
        // it cannot see drift between the servers or over time.
        let one = Interval {
            method: Method::BlockBootstrap,
            ..iv(1.34, 1.26, 1.42)
        };
        assert_eq!(verdict(Some(&one), DEFAULT_MIN_EFFECT), Verdict::Unverified);
        // Nor do one measurement's slices: they compare two instances.
        let sliced = Interval {
            method: Method::PairedSlices,
            ..iv(1.08, 1.05, 1.11)
        };
        assert_eq!(
            verdict(Some(&sliced), DEFAULT_MIN_EFFECT),
            Verdict::Unverified
        );
        let pooled = Interval {
            method: Method::PooledRepetitions,
            ..iv(1.08, 1.05, 1.11)
        };
        assert_eq!(verdict(Some(&pooled), DEFAULT_MIN_EFFECT), Verdict::Higher);
        assert_eq!(Verdict::Unverified.for_rate(), "not verified");
        for v in [
            Verdict::Higher,
            Verdict::Lower,
            Verdict::NoDifference,
            Verdict::Unverified,
        ] {
            assert_eq!(Verdict::parse(Some(v.for_rate())), v);
            assert_eq!(Verdict::parse(Some(v.for_cost())), v);
        }
        let mut c = VerdictCounts::default();
        c.add(Verdict::Unverified);
        c.add(Verdict::NoDifference);
        assert_eq!(c.phrase_for_rate(), "1 no difference, 1 not verified");
        assert_eq!(c.decided(), 1);
    }

    #[test]
    fn minimum_effect_parses_fractions_and_percentages() {
        assert_eq!(parse_min_effect("0.05"), Ok(0.05));
        assert_eq!(parse_min_effect("3%"), Ok(0.03));
        for bad in ["0", "1", "-0.1", "150%", "x", ""] {
            let e = parse_min_effect(bad).unwrap_err();
            assert!(e.contains("--min-effect") && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn counts_phrase_like_the_summary_line() {
        let mut c = VerdictCounts::default();
        for v in [Verdict::Lower, Verdict::Lower, Verdict::Higher] {
            c.add(v);
        }
        for _ in 0..29 {
            c.add(Verdict::NoDifference);
        }
        assert_eq!(c.phrase_for_rate(), "2 slower, 1 faster, 29 no difference");
        assert_eq!(c.decided(), 32);
        assert_eq!(VerdictCounts::default().phrase_for_rate(), "no cells");
    }
}
