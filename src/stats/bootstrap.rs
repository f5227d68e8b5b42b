//! The moving-block bootstrap of two per-second series: the interval on
//! the ratio of their means when each side was measured once.
//!
//! Per-second rates are autocorrelated (a checkpoint or a vacuum slows
//! several seconds in a row), so resampling single seconds would
//! understate the spread; resampling blocks of consecutive seconds keeps
//! that structure. The random draws use a fixed seed: a report is a pure
//! function of the store and must not change between renderings.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::LEVEL;
use super::interval::{Interval, Method};

/// Replicates per bootstrap.
const REPLICATES: usize = 2000;

/// Fewest seconds per side for a bootstrap interval.
const MIN_SECONDS: usize = 3;

/// The block length for a series of `n` seconds: about the cube root of
/// `n` (the usual rate for the moving-block bootstrap), at least 2 seconds
/// once there are 4 or more, never more than `n`.
pub fn block_length(n: usize) -> usize {
    let l = (n as f64).cbrt().round() as usize;
    let l = if n >= 4 { l.max(2) } else { l.max(1) };
    l.min(n.max(1))
}

/// The mean of one moving-block resample of `x`.
fn resampled_mean(x: &[f64], block: usize, rng: &mut SmallRng) -> f64 {
    let n = x.len();
    let starts = n - block + 1;
    let mut sum = 0.0;
    let mut taken = 0;
    while taken < n {
        let start = rng.random_range(0..starts);
        for v in &x[start..start + block] {
            if taken == n {
                break;
            }
            sum += v;
            taken += 1;
        }
    }
    sum / n as f64
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let pos = p * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    if i + 1 < sorted.len() {
        sorted[i] * (1.0 - frac) + sorted[i + 1] * frac
    } else {
        sorted[i]
    }
}

/// The interval on `other_value / base_value` from the spread of the log
/// ratio of the two series' block-bootstrapped means (percentile method,
/// shifted so the estimate is the measured values' ratio). `None` when a
/// series has fewer than 3 seconds or a mean that is not positive.
pub fn block_bootstrap_ratio(
    base: &[f64],
    other: &[f64],
    base_value: f64,
    other_value: f64,
) -> Option<Interval> {
    if base.len() < MIN_SECONDS || other.len() < MIN_SECONDS {
        return None;
    }
    if !(base_value > 0.0 && other_value > 0.0) {
        return None;
    }
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let (mb, mo) = (mean(base), mean(other));
    if !(mb > 0.0 && mo > 0.0) {
        return None;
    }
    let observed = (mo / mb).ln();
    let (lb, lo_len) = (block_length(base.len()), block_length(other.len()));
    let mut rng = SmallRng::seed_from_u64(0x7469_6465_6d61_726b);
    let mut logs: Vec<f64> = (0..REPLICATES)
        .filter_map(|_| {
            let b = resampled_mean(base, lb, &mut rng);
            let o = resampled_mean(other, lo_len, &mut rng);
            (b > 0.0 && o > 0.0).then(|| (o / b).ln())
        })
        .collect();
    if logs.len() < REPLICATES / 2 {
        return None;
    }
    logs.sort_by(f64::total_cmp);
    let tail = (1.0 - LEVEL) / 2.0;
    let estimate = other_value / base_value;
    Some(Interval {
        estimate,
        lo: estimate * (percentile(&logs, tail) - observed).exp(),
        hi: estimate * (percentile(&logs, 1.0 - tail) - observed).exp(),
        n: base.len().min(other.len()) as u32,
        method: Method::BlockBootstrap,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_length_grows_with_the_cube_root() {
        assert_eq!(block_length(1), 1);
        assert_eq!(block_length(3), 1);
        assert_eq!(block_length(5), 2);
        assert_eq!(block_length(60), 4);
        assert_eq!(block_length(600), 8);
    }

    #[test]
    fn constant_series_give_a_point_interval() {
        let iv = block_bootstrap_ratio(&[10.0; 8], &[12.0; 8], 10.0, 12.0).unwrap();
        assert!((iv.estimate - 1.2).abs() < 1e-12);
        assert!((iv.lo - 1.2).abs() < 1e-12 && (iv.hi - 1.2).abs() < 1e-12);
        assert_eq!(iv.method, Method::BlockBootstrap);
    }

    #[test]
    fn the_interval_covers_the_truth_for_independent_noise() {
        // Two series around 100 with the same deterministic ±10 % pattern,
        // shifted: the ratio of means is 1, and the interval must contain
        // it and be narrower than the per-second spread.
        let base: Vec<f64> = (0..30)
            .map(|i| 100.0 + 10.0 * ((i * 7 % 11) as f64 - 5.0) / 5.0)
            .collect();
        let other: Vec<f64> = (0..30)
            .map(|i| 100.0 + 10.0 * ((i * 5 % 11) as f64 - 5.0) / 5.0)
            .collect();
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        let iv = block_bootstrap_ratio(&base, &other, mean(&base), mean(&other)).unwrap();
        assert!(iv.covers(1.0), "{iv:?}");
        assert!(iv.half_width() < 0.1, "{iv:?}");
        assert!(iv.half_width() > 0.005, "{iv:?}");
    }

    #[test]
    fn too_short_or_empty_series_give_none() {
        assert!(block_bootstrap_ratio(&[1.0, 2.0], &[1.0, 2.0, 3.0], 1.5, 2.0).is_none());
        assert!(block_bootstrap_ratio(&[0.0; 5], &[1.0; 5], 0.0, 1.0).is_none());
    }

    #[test]
    fn the_same_input_gives_the_same_interval() {
        let a = [5.0, 6.0, 7.0, 6.0, 5.0, 8.0];
        let b = [6.0, 6.0, 5.0, 7.0, 7.0, 6.0];
        assert_eq!(
            block_bootstrap_ratio(&a, &b, 6.0, 6.2),
            block_bootstrap_ratio(&a, &b, 6.0, 6.2)
        );
    }
}
