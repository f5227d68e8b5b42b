//! The statistics behind every relative number: a 95 % interval on the
//! ratio of two measurements and the verdict it supports.
//!
//! Pure arithmetic on plain numbers, importing nothing of ours, so the
//! report (and anything else) can use it and unit tests can check it
//! against hand-computed cases. The ways to get an interval, chosen by
//! what was measured ([`Method`]):
//! - repetitions paired by their index (each repetition on freshly started
//!   servers, A and B measured next to each other): a t interval on the
//!   mean of the per-pair log ratios, its variance pooled over the tests of
//!   a group ([`Pool`]) when the report has them, else the test's own;
//! - repetitions that cannot be paired: Welch's t interval on the
//!   difference of mean logs;
//! - one measurement each, sliced (`--slices`: A and B alternate in short
//!   slices within each test): a t interval on the mean per-slice log
//!   ratio with its sample size reduced for the ratios' lag-1
//!   autocorrelation;
//! - one measurement each, whole: a moving-block bootstrap of the
//!   per-second series (blocks keep the seconds' autocorrelation),
//!   percentile interval on the log of the ratio of means.
//!
//! The last two compare two server instances, not two targets (two
//! instances of one target differ by a few percent), so they carry no
//! verdict ([`Method::verifies`]).
//!
//! Beside them, [`changepoint`] finds where a series of measurements
//! across runs changes level (E-divisive means with a permutation test).
//!
//! Intervals are built on the log scale and transformed back, so they are
//! asymmetric around the estimate and never reach zero.

mod bootstrap;
pub mod changepoint;
mod interval;
mod verdict;

pub use bootstrap::{block_bootstrap_ratio, block_length};
pub use interval::{
    Interval, MIN_SLICE_PAIRS, Measured, Method, Pool, RepetitionLog, floor_ratio, paired_ratio,
    ratio_interval, repetition_logs, slice_ratio, welch_ratio, widened,
};
pub use verdict::{
    DEFAULT_MIN_EFFECT, NOT_VERIFIED, Verdict, VerdictCounts, min_effect_or_default,
    parse_min_effect, verdict,
};

/// The median of `xs` (the mean of the middle two for an even count);
/// `None` when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The confidence level of every interval tidemark reports.
pub const LEVEL: f64 = 0.95;

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, -1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[3.0, -1.0, 2.0, 0.0]), Some(1.0));
        assert_eq!(median(&[]), None);
    }
}
