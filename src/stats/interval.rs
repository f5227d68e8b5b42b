//! Intervals on a ratio `other / base`: from repetitions (paired or not)
//! or, with one measurement each, from the per-second series.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::LEVEL;
use super::bootstrap::block_bootstrap_ratio;

/// How an interval was computed: named in every legend and export.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// t interval on the mean log ratio of repetitions paired by index.
    PairedT,
    /// Welch's t interval on the difference of mean logs (repetitions
    /// that cannot be paired).
    WelchT,
    /// Moving-block bootstrap of the per-second series of one measurement
    /// each (within-measurement noise only).
    BlockBootstrap,
    /// t interval on the log ratios of slices paired in time (`--slices`:
    /// A and B measured in alternating short slices, A B B A …), its
    /// sample size reduced for the lag-1 autocorrelation of the ratios.
    /// It covers the noise and drift of the two servers measured, not the
    /// difference between two server instances of one target, so with one
    /// measurement each it carries no verdict.
    PairedSlices,
    /// t interval on the mean log ratio of repetitions, each measured on
    /// freshly started servers, with the variance of a repetition's log
    /// ratio pooled over the tests of one group (degrees of freedom: the
    /// sum of each test's repetitions less one), and for a test noisier
    /// inside its repetitions than the group, that test's own noise added
    /// (see [`Pool`]). It covers how two server instances of one target
    /// differ.
    PooledRepetitions,
    /// One instruction count on each side (`run --instructions`): the
    /// ratio ± a floor that A/A runs in that mode justify.
    InstructionFloor,
}

impl Method {
    /// Whether an interval of this method can carry a verdict: not one
    /// from a single measurement per side (the block bootstrap, one
    /// repetition's slices), which cannot see how two server instances
    /// differ nor how the machine drifts between them.
    pub fn verifies(self) -> bool {
        !matches!(self, Method::BlockBootstrap | Method::PairedSlices)
    }

    /// A short phrase for legends.
    pub fn describe(self) -> &'static str {
        match self {
            Method::PairedT => "t interval on the log ratios of repetitions paired in time",
            Method::WelchT => "Welch t interval on log values of unpaired repetitions",
            Method::BlockBootstrap => {
                "moving-block bootstrap of per-second rates within one measurement, \
                 blind to drift between servers and over time, so no verdict \
                 (not verified: repeat with --repeat 3)"
            }
            Method::PairedSlices => {
                "t interval on the log ratios of slices paired in time (A B B A …, or measured at once), \
                 its sample size reduced for their lag-1 autocorrelation; it compares \
                 these two server instances only, and two instances of one target \
                 differ by more, so no verdict (not verified: repeat with --repeat 3)"
            }
            Method::PooledRepetitions => {
                "t interval on the mean log ratio of repetitions, each on freshly \
                 started servers (so it covers how two instances of one target \
                 differ; a sliced read test's repetition: the median of its slice \
                 pairs' ratios), the variance pooled over the group's tests, \
                 widened for a test noisier inside its repetitions than the group"
            }
            Method::InstructionFloor => {
                "instruction counts, one each: the ratio ± a floor from A/A runs in \
                 instruction-count mode"
            }
        }
    }
}

/// A ratio's point estimate and its 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// The ratio `other / base`.
    pub estimate: f64,
    /// Lower end of the interval.
    pub lo: f64,
    /// Upper end of the interval.
    pub hi: f64,
    /// Measurements behind it: repetitions per side (paired: pairs), or
    /// seconds of the shorter series for the bootstrap.
    pub n: u32,
    /// How it was computed.
    pub method: Method,
}

impl Interval {
    /// Half the interval's width relative to the estimate, on the log
    /// scale (`0.03` ≈ ±3 %): the number to compare noise by.
    pub fn half_width(&self) -> f64 {
        (self.hi.ln() - self.lo.ln()) / 2.0
    }

    /// Whether `x` lies inside the interval.
    pub fn covers(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }
}

/// One measurement of a cell: its repetition index, its value (QPS, cost
/// per op), its per-second values (empty when not kept), its per-slice
/// values in the order measured (empty when the step was not sliced), and
/// whether a repetition's ratio may be the median of its slices' ratios
/// (a read test: no stall of the server's own falls on a few slices, so
/// a few far-off slices are the host's, see [`repetition_logs`]).
#[derive(Clone, Copy, Debug)]
pub struct Measured<'a> {
    pub repetition: u32,
    pub value: f64,
    pub seconds: &'a [f64],
    pub slices: &'a [f64],
    pub slice_median: bool,
}

/// Fewest slice pairs an interval is built from.
pub const MIN_SLICE_PAIRS: usize = 4;

/// The interval on `other / base` that the measurements allow: with the
/// same two or more repetitions on both sides, the `pool`'s t interval
/// (the variance pooled over a group's tests) or, without one, paired t;
/// Welch's t when they have repetitions that do not pair; with one
/// measurement each, the slices' interval when both were sliced alike,
/// else the block bootstrap of the per-second series (neither carries a
/// verdict). `None` when no interval can be had (a value ≤ 0, too few
/// seconds).
pub fn ratio_interval(
    base: &[Measured<'_>],
    other: &[Measured<'_>],
    pool: Option<&Pool>,
) -> Option<Interval> {
    let values = |m: &[Measured<'_>]| m.iter().map(|x| x.value).collect::<Vec<f64>>();
    if base.is_empty() || other.is_empty() {
        return None;
    }
    if let Some(d) = repetition_logs(base, other) {
        return match pool {
            Some(pool) => pool.interval(&d),
            None => Some(paired_logs(&logs_of(&d))),
        };
    }
    if base.len() == 1 && other.len() == 1 {
        let (b, o) = (&base[0], &other[0]);
        if b.slices.len() == o.slices.len() && !b.slices.is_empty() {
            return slice_ratio(b.slices, o.slices);
        }
        return block_bootstrap_ratio(b.seconds, o.seconds, b.value, o.value);
    }
    welch_ratio(&values(base), &values(other))
}

/// One repetition's log ratio `ln(other/base)` and the variance the noise
/// inside that repetition gives it (0 when it is not the median of slice
/// pairs, whose spread is the only noise inside a repetition measured).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RepetitionLog {
    pub log: f64,
    pub noise: f64,
}

/// The log ratios `ln(other_r / base_r)` of repetitions that pair by
/// index (the same repetitions on both sides, each once, two or more), in
/// repetition order, each from [`repetition_log`]; `None` otherwise or for
/// a value ≤ 0.
pub fn repetition_logs(
    base: &[Measured<'_>],
    other: &[Measured<'_>],
) -> Option<Vec<RepetitionLog>> {
    if base.len() != other.len() || base.len() < 2 {
        return None;
    }
    let mut b: Vec<&Measured<'_>> = base.iter().collect();
    let mut o: Vec<&Measured<'_>> = other.iter().collect();
    b.sort_by_key(|m| m.repetition);
    o.sort_by_key(|m| m.repetition);
    if b.windows(2).any(|w| w[0].repetition == w[1].repetition) {
        return None;
    }
    b.iter()
        .zip(&o)
        .map(|(x, y)| {
            (x.repetition == y.repetition)
                .then(|| repetition_log(x, y))
                .flatten()
        })
        .collect()
}

/// One repetition's log ratio `ln(other/base)`. For a read test cut into
/// the same slices on both sides (`slice_median`, at least
/// [`MIN_SLICE_PAIRS`], all positive), the median of the slice pairs' log
/// ratios: slice `k` of each side ran seconds apart, and a burst of the
/// host's speed (on a shared virtual machine a few seconds 30–80 % faster
/// when a neighbour goes quiet) that falls on a few slices of one side
/// moves the median little, where it moves the sum of the slices by its
/// whole size. A write test keeps the sum: its own stalls (a checkpoint,
/// a flush) fall on a few slices and are part of its rate. A repetition
/// stays one value per fresh pair of servers, so the interval over
/// repetitions still covers how instances differ. Its noise: the
/// variance of a median of the pairs, π/2 σ² / n (the large-sample
/// variance of a median of normal data; five values give about 1.4
/// σ² / n), σ their median absolute deviation × 1.4826 (a scale the
/// bursts a median ignores do not inflate: their standard deviation
/// overstated how much a median varied, 8.4 % against 6.8 % between whole
/// repetitions of an A/A on a noisy host), the pairs counted as
/// `n (1 − r) / (1 + r)` for their lag-1 autocorrelation `r`. Otherwise
/// the log of the two values' ratio, with no noise known. `None` for a
/// value ≤ 0.
fn repetition_log(base: &Measured<'_>, other: &Measured<'_>) -> Option<RepetitionLog> {
    if base.slice_median
        && other.slice_median
        && let Some(d) = slice_log_ratios(base.slices, other.slices)
    {
        let (mean, var) = mean_var(&d);
        let median = super::median(&d)?;
        let deviations: Vec<f64> = d.iter().map(|x| (x - median).abs()).collect();
        let sigma = 1.4826 * super::median(&deviations)?;
        let noise = std::f64::consts::FRAC_PI_2 * sigma * sigma / effective_n(&d, mean, var);
        return Some(RepetitionLog { log: median, noise });
    }
    (base.value > 0.0 && other.value > 0.0)
        .then(|| (other.value / base.value).ln())
        .filter(|d| d.is_finite())
        .map(|log| RepetitionLog { log, noise: 0.0 })
}

/// The variance of one repetition's log ratio, pooled over several tests
/// (the tests of one group): each test's repetitions vary about their own
/// mean, and those deviations are summed over the tests. Three
/// repetitions of one test alone give 2 degrees of freedom (t = 4.30);
/// seven tests of a group give 14 (t = 2.14), so an interval's width no
/// longer hangs on how three numbers happened to fall.
///
/// A repetition varies as server instances differ (alike for the tests
/// of a group) plus the noise inside it, which is a test's own: on a
/// noisy host a test whose rate jumps second to second (hot-points) is
/// far noisier than its group, and the pooled variance alone made its
/// interval too narrow (an A/A flagged 3 of 22 cells so). So a test's
/// variance is the larger of the pooled one and the instances' share of
/// it (the pooled variance less the group's mean noise, at least 0) plus
/// the test's own mean noise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pool {
    /// The pooled variance of a repetition's log ratio.
    pub variance: f64,
    /// Its degrees of freedom: Σ (repetitions − 1).
    pub df: f64,
    /// The noise inside a repetition, averaged over the pooled tests
    /// (each weighted by its repetitions less one).
    pub noise: f64,
}

impl Pool {
    /// The pool of the tests' per-repetition log ratios (one list per
    /// test; lists of fewer than two add nothing); `None` without a
    /// degree of freedom.
    pub fn of<'a>(tests: impl IntoIterator<Item = &'a [RepetitionLog]>) -> Option<Pool> {
        let (mut ss, mut df, mut noise) = (0.0, 0.0, 0.0);
        for d in tests {
            if d.len() < 2 {
                continue;
            }
            let (_, var) = mean_var(&logs_of(d));
            let k = (d.len() - 1) as f64;
            ss += var * k;
            noise += mean_noise(d) * k;
            df += k;
        }
        (df > 0.0).then(|| Pool {
            variance: ss / df,
            df,
            noise: noise / df,
        })
    }

    /// The interval on the mean of one test's log ratios `d` (two or
    /// more): the pooled variance, or the instances' share of it plus the
    /// test's own noise when that is larger.
    pub fn interval(&self, d: &[RepetitionLog]) -> Option<Interval> {
        if d.len() < 2 {
            return None;
        }
        let (mean, _) = mean_var(&logs_of(d));
        let own = (self.variance - self.noise).max(0.0) + mean_noise(d);
        let half = t_quantile(self.df) * (self.variance.max(own) / d.len() as f64).sqrt();
        Some(from_log(mean, half, d.len(), Method::PooledRepetitions))
    }
}

fn logs_of(d: &[RepetitionLog]) -> Vec<f64> {
    d.iter().map(|r| r.log).collect()
}

fn mean_noise(d: &[RepetitionLog]) -> f64 {
    d.iter().map(|r| r.noise).sum::<f64>() / d.len() as f64
}

/// The interval on `other / base` from slices paired in time: `base[k]`
/// and `other[k]` were measured one right after the other, and `k` is
/// their order in time. The mean of `d = ln(other/base)` gets a t interval
/// whose sample size is `n (1 − r) / (1 + r)`, `r` the lag-1
/// autocorrelation of `d` (taken as 0 when negative): neighbouring slices
/// share the machine's slow drift, which a plain paired t would count as
/// independent evidence. Needs [`MIN_SLICE_PAIRS`] pairs of positive values.
pub fn slice_ratio(base: &[f64], other: &[f64]) -> Option<Interval> {
    let d = slice_log_ratios(base, other)?;
    let (mean, var) = mean_var(&d);
    let n_eff = effective_n(&d, mean, var);
    let half = t_quantile(n_eff - 1.0) * (var / n_eff).sqrt();
    Some(from_log(mean, half, d.len(), Method::PairedSlices))
}

/// How many independent values `d` (mean `mean`, variance `var`) are
/// worth: `n (1 − r) / (1 + r)` for its lag-1 autocorrelation `r` (taken
/// as 0 when negative, at most 0.95), at least 2.
fn effective_n(d: &[f64], mean: f64, var: f64) -> f64 {
    let r = lag1_autocorrelation(d, mean, var).clamp(0.0, 0.95);
    (d.len() as f64 * (1.0 - r) / (1.0 + r)).max(2.0)
}

/// The log ratios `ln(other[k] / base[k])` of slices paired in time:
/// `None` unless both sides have the same number of slices, at least
/// [`MIN_SLICE_PAIRS`], all positive.
fn slice_log_ratios(base: &[f64], other: &[f64]) -> Option<Vec<f64>> {
    if base.len() != other.len() || base.len() < MIN_SLICE_PAIRS {
        return None;
    }
    let (b, o) = (logs(base)?, logs(other)?);
    Some(o.iter().zip(&b).map(|(o, b)| o - b).collect())
}

/// The lag-1 autocorrelation of `x` (mean `mean`, variance `var`); 0 when
/// `x` does not vary.
fn lag1_autocorrelation(x: &[f64], mean: f64, var: f64) -> f64 {
    if var <= 0.0 || x.len() < 3 {
        return 0.0;
    }
    let c1: f64 = x.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    c1 / ((x.len() - 1) as f64 * var)
}

/// The `LEVEL` two-sided t quantile with `df` degrees of freedom.
fn t_quantile(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(0.5 + LEVEL / 2.0))
        .unwrap_or(f64::INFINITY)
}

fn logs(values: &[f64]) -> Option<Vec<f64>> {
    values
        .iter()
        .map(|&v| (v > 0.0 && v.is_finite()).then(|| v.ln()))
        .collect()
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = if x.len() > 1 {
        x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

fn from_log(center: f64, half: f64, n: usize, method: Method) -> Interval {
    Interval {
        estimate: center.exp(),
        lo: (center - half).exp(),
        hi: (center + half).exp(),
        n: n as u32,
        method,
    }
}

/// The interval of one instruction count on each side: `other / base`
/// ± `floor` (a fraction, on the log scale). `None` for a count ≤ 0.
pub fn floor_ratio(base: f64, other: f64, floor: f64) -> Option<Interval> {
    if !(base > 0.0 && other > 0.0) {
        return None;
    }
    let center = (other / base).ln();
    Some(from_log(center, floor, 1, Method::InstructionFloor))
}

/// `iv` widened by a floor (a fraction, on the log scale) added in
/// quadrature: `sqrt(half² + floor²)` about the same estimate. For
/// repetitions that ran on the same pair of servers, whose interval cannot
/// see how two servers differ: the floor is that difference as A/A runs
/// measured it.
pub fn widened(iv: Interval, floor: f64) -> Interval {
    let center = iv.estimate.ln();
    let half = (iv.hi.ln() - iv.lo.ln()) / 2.0;
    from_log(center, half.hypot(floor), iv.n as usize, iv.method)
}

/// Paired t interval: `base[i]` and `other[i]` were measured together
/// (repetition `i`); the interval is on the mean of `ln(other/base)`,
/// transformed back. Needs two or more pairs of positive values.
pub fn paired_ratio(base: &[f64], other: &[f64]) -> Option<Interval> {
    if base.len() != other.len() || base.len() < 2 {
        return None;
    }
    let (b, o) = (logs(base)?, logs(other)?);
    let d: Vec<f64> = o.iter().zip(&b).map(|(o, b)| o - b).collect();
    Some(paired_logs(&d))
}

/// The paired t interval on the mean of the log ratios `d` (two or more).
fn paired_logs(d: &[f64]) -> Interval {
    let n = d.len();
    let (mean, var) = mean_var(d);
    let half = t_quantile((n - 1) as f64) * (var / n as f64).sqrt();
    from_log(mean, half, n, Method::PairedT)
}

/// Welch's t interval on `mean(ln other) − mean(ln base)`. With one value
/// on a side, that side borrows the other's variance (a pooled interval
/// with the other side's degrees of freedom). Needs three or more values
/// in all, at least two on one side.
pub fn welch_ratio(base: &[f64], other: &[f64]) -> Option<Interval> {
    let (b, o) = (logs(base)?, logs(other)?);
    if b.is_empty() || o.is_empty() || (b.len() < 2 && o.len() < 2) {
        return None;
    }
    let (mb, vb) = mean_var(&b);
    let (mo, vo) = mean_var(&o);
    let (nb, no) = (b.len() as f64, o.len() as f64);
    let (se2, df) = if b.len() < 2 || o.len() < 2 {
        let (v, df) = if b.len() < 2 {
            (vo, no - 1.0)
        } else {
            (vb, nb - 1.0)
        };
        (v * (1.0 / nb + 1.0 / no), df)
    } else {
        let (qb, qo) = (vb / nb, vo / no);
        let se2 = qb + qo;
        let df = if se2 > 0.0 {
            se2 * se2 / (qb * qb / (nb - 1.0) + qo * qo / (no - 1.0))
        } else {
            nb + no - 2.0
        };
        (se2, df)
    };
    let half = t_quantile(df) * se2.sqrt();
    Some(from_log(
        mo - mb,
        half,
        b.len().min(o.len()),
        Method::WelchT,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widening_adds_the_floor_in_quadrature_about_the_same_estimate() {
        // Two repetitions that agree exactly: the t half-width is 0, the
        // floor alone remains.
        let iv = paired_ratio(&[100.0, 200.0], &[101.0, 202.0]).unwrap();
        let w = widened(iv, 0.002);
        assert!((w.estimate - 1.01).abs() < 1e-12);
        assert!((w.hi.ln() - 1.01f64.ln() - 0.002).abs() < 1e-12);
        // A t half-width of 0.003 and a floor of 0.004 make 0.005.
        let iv = from_log(0.0, 0.003, 3, Method::PairedT);
        let w = widened(iv, 0.004);
        assert!((w.hi.ln() - 0.005).abs() < 1e-12);
        assert!((w.lo.ln() + 0.005).abs() < 1e-12);
        assert_eq!((w.n, w.method), (3, Method::PairedT));
    }

    #[test]
    fn slice_interval_matches_a_hand_computation() {
        // d = ln(other/base) = ln 1.1, ln 1.0, ln 1.2, ln 1.0, ln 1.1, ln 1.0
        let base = [100.0; 6];
        let other = [110.0, 100.0, 120.0, 100.0, 110.0, 100.0];
        let iv = slice_ratio(&base, &other).unwrap();
        assert_eq!(iv.method, Method::PairedSlices);
        assert_eq!(iv.n, 6);
        let d: Vec<f64> = other.iter().map(|o: &f64| (o / 100.0).ln()).collect();
        let mean = d.iter().sum::<f64>() / 6.0;
        let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 5.0;
        // These ratios alternate: their lag-1 autocorrelation is negative,
        // taken as 0, so the interval is the plain paired t with 5 df.
        let r1: f64 = d
            .windows(2)
            .map(|w| (w[0] - mean) * (w[1] - mean))
            .sum::<f64>()
            / (5.0 * var);
        assert!(r1 < 0.0);
        let half = 2.570_581_836 * (var / 6.0).sqrt();
        assert!(close(iv.estimate, mean.exp(), 1e-12));
        assert!(close(iv.lo, (mean - half).exp(), 1e-6), "{iv:?}");
        assert!(close(iv.hi, (mean + half).exp(), 1e-6), "{iv:?}");
    }

    #[test]
    fn correlated_slices_count_as_fewer_pairs() {
        // A slow drift in the ratio: neighbours alike, r > 0, so the
        // interval is wider than a paired t that takes 8 pairs at face value.
        let base = [100.0; 8];
        let other = [101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0];
        let sliced = slice_ratio(&base, &other).unwrap();
        let naive = paired_ratio(&base, &other).unwrap();
        assert!(
            sliced.half_width() > naive.half_width() * 1.5,
            "{sliced:?} {naive:?}"
        );
        assert!(
            slice_ratio(&base[..3], &other[..3]).is_none(),
            "too few pairs"
        );
        assert!(slice_ratio(&[0.0; 4], &[1.0; 4]).is_none());
    }

    #[test]
    fn one_sliced_measurement_each_takes_the_slice_interval_and_repetitions_do_not() {
        let m = |repetition, value, slices: &'static [f64]| Measured {
            repetition,
            value,
            seconds: &[],
            slices,
            slice_median: false,
        };
        static A: [f64; 4] = [10.0, 11.0, 10.5, 10.2];
        static B: [f64; 4] = [9.0, 10.0, 9.4, 9.3];
        let iv = ratio_interval(&[m(0, 10.5, &A)], &[m(0, 9.5, &B)], None).unwrap();
        assert_eq!((iv.method, iv.n), (Method::PairedSlices, 4));
        assert!(!iv.method.verifies());
        // Repetitions (fresh servers each) are compared as repetitions,
        // their slices notwithstanding.
        let iv = ratio_interval(
            &[m(0, 10.5, &A), m(1, 10.5, &A)],
            &[m(0, 9.5, &B), m(1, 9.6, &B)],
            None,
        )
        .unwrap();
        assert_eq!((iv.method, iv.n), (Method::PairedT, 2));
        let pool = Pool::of([quiet(&[0.0, 0.1]).as_slice()]).unwrap();
        let iv = ratio_interval(
            &[m(0, 10.5, &A), m(1, 10.5, &A)],
            &[m(0, 9.5, &B), m(1, 9.6, &B)],
            Some(&pool),
        )
        .unwrap();
        assert_eq!((iv.method, iv.n), (Method::PooledRepetitions, 2));
        assert!(iv.method.verifies());
    }

    #[test]
    fn pooled_interval_matches_a_hand_computation() {
        // Test 1: d = 0.01, 0.03, 0.05 (mean 0.03, SS 0.0008);
        // test 2: d = -0.02, 0.02 (mean 0, SS 0.0008); test 3 has one value
        // and adds nothing. Pooled variance 0.0016 / 3 with 3 df,
        // t(0.975, 3) = 3.1824463; test 1's half-width
        // 3.1824463 · sqrt(0.0016 / 3 / 3) = 0.0424326.
        let d1 = quiet(&[0.01, 0.03, 0.05]);
        let d2 = quiet(&[-0.02, 0.02]);
        let d3 = quiet(&[0.5]);
        let pool = Pool::of([d1.as_slice(), d2.as_slice(), d3.as_slice()]).unwrap();
        assert!(close(pool.variance, 0.0016 / 3.0, 1e-12));
        assert!(close(pool.df, 3.0, 0.0));
        assert_eq!(pool.noise, 0.0);
        let iv = pool.interval(&d1).unwrap();
        assert_eq!((iv.method, iv.n), (Method::PooledRepetitions, 3));
        assert!(close(iv.estimate, 0.03f64.exp(), 1e-12));
        assert!(close(iv.lo, (0.03f64 - 0.0424326).exp(), 1e-6), "{iv:?}");
        assert!(close(iv.hi, (0.03f64 + 0.0424326).exp(), 1e-6), "{iv:?}");
        // One repetition has no interval, and no test with two none at all.
        assert!(pool.interval(&d3).is_none());
        assert!(Pool::of([d3.as_slice()]).is_none());
    }

    #[test]
    fn a_read_tests_repetition_is_the_median_of_its_slice_pairs_and_a_writes_the_sum() {
        // Slice pairs' log ratios: ln 1.0, ln 1.0, ln 1.7 (a burst on the
        // other side's third slice), ln 0.98, ln 1.02: median 0.
        static BASE: [f64; 5] = [100.0, 100.0, 100.0, 100.0, 100.0];
        static OTHER: [f64; 5] = [100.0, 100.0, 170.0, 98.0, 102.0];
        let m = |value, slices: &'static [f64], slice_median| Measured {
            repetition: 0,
            value,
            seconds: &[],
            slices,
            slice_median,
        };
        let read = repetition_log(&m(100.0, &BASE, true), &m(114.0, &OTHER, true)).unwrap();
        assert!(close(read.log, 0.0, 1e-12), "{read:?}");
        // Its noise: the pairs' log ratios are 0, 0, 0.5306283 (ln 1.7),
        // −0.0202027 (ln 0.98), 0.0198026 (ln 1.02); their deviations from
        // the median 0 have median 0.0198026, so σ = 1.4826 · 0.0198026 =
        // 0.0293594 (the burst does not count); their lag-1
        // autocorrelation is negative (−0.34), so five pairs count as five:
        // π/2 · 0.0293594² / 5 = 0.0002708.
        let ln = [0.0, 0.0, 1.7f64.ln(), 0.98f64.ln(), 1.02f64.ln()];
        let mean = ln.iter().sum::<f64>() / 5.0;
        let var = ln.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 4.0;
        assert!(lag1_autocorrelation(&ln, mean, var) < 0.0);
        let noise = 0.0002708;
        assert!(close(read.noise, noise, 1e-7), "{read:?}");
        // Even: the mean of the two middle ones (ln 0.98 and ln 1.0).
        static B4: [f64; 4] = [100.0, 100.0, 100.0, 100.0];
        static O4: [f64; 4] = [98.0, 100.0, 170.0, 90.0];
        let even = repetition_log(&m(100.0, &B4, true), &m(114.5, &O4, true)).unwrap();
        assert!(
            close(even.log, (0.98f64.ln() + 0.0) / 2.0, 1e-12),
            "{even:?}"
        );
        // A write test, one side not a read test, too few slices or
        // slices that differ in number: the ratio of the values.
        // No noise is known for those.
        let write = repetition_log(&m(100.0, &BASE, false), &m(114.0, &OTHER, false)).unwrap();
        assert_eq!(
            write,
            RepetitionLog {
                log: 1.14f64.ln(),
                noise: 0.0
            }
        );
        let mixed = repetition_log(&m(100.0, &BASE, true), &m(114.0, &OTHER, false)).unwrap();
        assert!(close(mixed.log, 1.14f64.ln(), 1e-12));
        let few = repetition_log(&m(100.0, &BASE[..3], true), &m(123.0, &OTHER[..3], true));
        assert!(close(few.unwrap().log, 1.23f64.ln(), 1e-12));
        let unlike = repetition_log(&m(100.0, &BASE, true), &m(110.0, &O4, true)).unwrap();
        assert!(close(unlike.log, 1.1f64.ln(), 1e-12));
        // A slice that measured nothing: the values.
        static ZERO: [f64; 4] = [100.0, 0.0, 100.0, 100.0];
        let zero = repetition_log(&m(75.0, &ZERO, true), &m(150.0, &B4, true)).unwrap();
        assert!(close(zero.log, 2.0f64.ln(), 1e-12));
    }

    #[test]
    fn repetition_logs_pair_by_index_or_not_at_all() {
        let m = |repetition, value| Measured {
            repetition,
            value,
            seconds: &[],
            slices: &[],
            slice_median: false,
        };
        let d = repetition_logs(&[m(1, 10.0), m(0, 20.0)], &[m(0, 22.0), m(1, 9.0)]).unwrap();
        assert!(close(d[0].log, 1.1f64.ln(), 1e-12) && close(d[1].log, 0.9f64.ln(), 1e-12));
        assert!(repetition_logs(&[m(0, 10.0)], &[m(0, 9.0)]).is_none());
        assert!(repetition_logs(&[m(0, 10.0), m(1, 9.0)], &[m(0, 9.0), m(2, 9.0)]).is_none());
        assert!(repetition_logs(&[m(0, 10.0), m(0, 9.0)], &[m(0, 9.0), m(0, 9.0)]).is_none());
        assert!(repetition_logs(&[m(0, 0.0), m(1, 9.0)], &[m(0, 9.0), m(1, 9.0)]).is_none());
    }

    /// Repetition logs with no noise known inside them.
    fn quiet(d: &[f64]) -> Vec<RepetitionLog> {
        d.iter()
            .map(|&log| RepetitionLog { log, noise: 0.0 })
            .collect()
    }

    #[test]
    fn a_test_noisier_inside_its_repetitions_than_its_group_gets_its_own_noise() {
        // Two tests, three repetitions each: test 1 d = 0.00, 0.02, 0.04
        // (SS 0.0008) with noise 0.0001 in each repetition, test 2 d =
        // −0.02, 0.00, 0.02 (SS 0.0008) with noise 0.0009. Pooled variance
        // 0.0016 / 4 = 0.0004 with 4 df; mean noise (0.0001 + 0.0009) / 2 =
        // 0.0005, so instances account for max(0, 0.0004 − 0.0005) = 0.
        let with = |d: &[f64], noise| -> Vec<RepetitionLog> {
            d.iter().map(|&log| RepetitionLog { log, noise }).collect()
        };
        let d1 = with(&[0.0, 0.02, 0.04], 0.0001);
        let d2 = with(&[-0.02, 0.0, 0.02], 0.0009);
        let pool = Pool::of([d1.as_slice(), d2.as_slice()]).unwrap();
        assert!(close(pool.variance, 0.0004, 1e-12) && close(pool.noise, 0.0005, 1e-12));
        // Test 1: own 0 + 0.0001 < 0.0004, the pooled variance stands:
        // t(0.975, 4) = 2.7764451, half 2.7764451 · sqrt(0.0004 / 3).
        let iv = pool.interval(&d1).unwrap();
        assert!(
            close(iv.half_width(), 2.7764451 * (0.0004f64 / 3.0).sqrt(), 1e-6),
            "{iv:?}"
        );
        // Test 2: its own noise 0.0009 is larger: half 2.7764451 · sqrt(0.0009 / 3).
        let iv = pool.interval(&d2).unwrap();
        assert!(
            close(iv.half_width(), 2.7764451 * (0.0009f64 / 3.0).sqrt(), 1e-6),
            "{iv:?}"
        );
        // Instances that differ (pooled 0.0004, noise 0.0001 in both): a
        // test adds its noise to the instances' 0.0003 only where that
        // exceeds the pool, which with equal noise it never does.
        let d3 = with(&[0.0, 0.02, 0.04], 0.0001);
        let pool = Pool::of([d1.as_slice(), d3.as_slice()]).unwrap();
        assert!(close(
            pool.interval(&d1).unwrap().half_width(),
            2.7764451 * (0.0004f64 / 3.0).sqrt(),
            1e-6
        ));
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn paired_interval_matches_a_hand_computation() {
        // Ratios 1.1, 1.0, 0.9: d = ln(1.1), 0, ln(0.9) = 0.0953102, 0, -0.1053605.
        // mean = -0.0033501, sd = 0.1003773 (n−1), se = 0.0579529,
        // t(0.975, 2) = 4.3026527, half = 0.2493510.
        let iv = paired_ratio(&[100.0, 100.0, 100.0], &[110.0, 100.0, 90.0]).unwrap();
        assert_eq!(iv.method, Method::PairedT);
        assert_eq!(iv.n, 3);
        assert!(close(iv.estimate, (-0.0033501f64).exp(), 1e-6));
        assert!(
            close(iv.lo, (-0.0033501f64 - 0.2493510).exp(), 1e-5),
            "{iv:?}"
        );
        assert!(
            close(iv.hi, (-0.0033501f64 + 0.2493510).exp(), 1e-5),
            "{iv:?}"
        );
        assert!(iv.covers(1.0));
    }

    #[test]
    fn paired_interval_is_scale_free_and_pairs_by_index() {
        // Base drifts 2× between repetitions; the ratio stays 0.8 exactly.
        let iv = paired_ratio(&[100.0, 200.0], &[80.0, 160.0]).unwrap();
        assert!(close(iv.estimate, 0.8, 1e-12));
        assert!(close(iv.lo, 0.8, 1e-12) && close(iv.hi, 0.8, 1e-12));
    }

    #[test]
    fn welch_interval_matches_a_hand_computation() {
        // ln values: base ln(100), ln(120); other ln(90), ln(100), ln(110).
        let b = [100f64.ln(), 120f64.ln()];
        let o = [90f64.ln(), 100f64.ln(), 110f64.ln()];
        let (mb, mo) = ((b[0] + b[1]) / 2.0, (o[0] + o[1] + o[2]) / 3.0);
        let vb = ((b[0] - mb).powi(2) + (b[1] - mb).powi(2)) / 1.0;
        let vo = o.iter().map(|x| (x - mo).powi(2)).sum::<f64>() / 2.0;
        let (qb, qo) = (vb / 2.0, vo / 3.0);
        let df = (qb + qo).powi(2) / (qb * qb / 1.0 + qo * qo / 2.0);
        let t = StudentsT::new(0.0, 1.0, df).unwrap().inverse_cdf(0.975);
        let half = t * (qb + qo).sqrt();
        let iv = welch_ratio(&[100.0, 120.0], &[90.0, 100.0, 110.0]).unwrap();
        assert_eq!(iv.method, Method::WelchT);
        assert!(close(iv.estimate, (mo - mb).exp(), 1e-12));
        assert!(close(iv.lo, (mo - mb - half).exp(), 1e-9));
        assert!(close(iv.hi, (mo - mb + half).exp(), 1e-9));
    }

    #[test]
    fn t_quantiles_are_the_textbook_ones() {
        assert!(close(t_quantile(1.0), 12.7062, 1e-3));
        assert!(close(t_quantile(2.0), 4.3027, 1e-3));
        assert!(close(t_quantile(9.0), 2.2622, 1e-3));
    }

    #[test]
    fn dispatch_follows_what_was_measured() {
        let m = |repetition, value| Measured {
            repetition,
            value,
            seconds: &[],
            slices: &[],
            slice_median: false,
        };
        let paired = ratio_interval(&[m(0, 10.0), m(1, 11.0)], &[m(0, 9.0), m(1, 10.0)], None);
        assert_eq!(paired.unwrap().method, Method::PairedT);
        let welch = ratio_interval(&[m(0, 10.0), m(1, 11.0)], &[m(0, 9.0), m(2, 10.0)], None);
        assert_eq!(welch.unwrap().method, Method::WelchT);
        // One measurement each and no seconds: no interval.
        assert!(ratio_interval(&[m(0, 10.0)], &[m(0, 9.0)], None).is_none());
        // A non-positive value has no log: no interval.
        assert!(paired_ratio(&[0.0, 1.0], &[1.0, 1.0]).is_none());
    }
}
