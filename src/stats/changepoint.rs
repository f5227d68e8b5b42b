//! Change points in a series of measurements: E-divisive means (Matteson
//! and James, "A Nonparametric Approach for Multiple Change Point Analysis
//! of Multivariate Data", JASA 2014), the method Apache Otava (Hunter)
//! applies to benchmark histories.
//!
//! The series is split where the energy distance between the two sides,
//! weighted by their sizes, is largest; the split counts only if a
//! permutation test says so (shuffling the values within each segment
//! rarely gives as large a statistic), and then each side is searched
//! again. The permutation test is what makes it noise-aware: a noisy
//! series needs a larger step to stand out. It assumes nothing about the
//! distribution; the permutations use a fixed seed, so the same series
//! always gives the same answer.

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

/// How [`e_divisive`] decides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePointOptions {
    /// Largest permutation p-value that counts as a change point.
    pub significance: f64,
    /// Permutations per test.
    pub permutations: usize,
    /// Fewest points a segment may have.
    pub min_size: usize,
}

impl Default for ChangePointOptions {
    fn default() -> Self {
        ChangePointOptions {
            significance: 0.05,
            permutations: 999,
            min_size: 3,
        }
    }
}

/// A change point: the series changes from point `index - 1` to `index`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePoint {
    /// The first point after the change.
    pub index: usize,
    /// The permutation test's p-value.
    pub p_value: f64,
}

/// The change points of `xs`, in series order.
pub fn e_divisive(xs: &[f64], opts: &ChangePointOptions) -> Vec<ChangePoint> {
    let mut rng = SmallRng::seed_from_u64(0x6564_6976_6973_6976);
    // Segment boundaries, sorted: segments are bounds[i]..bounds[i + 1].
    let mut bounds = vec![0, xs.len()];
    let mut found = Vec::new();
    while let Some((at, q)) = best_in_segments(xs, &bounds, opts.min_size) {
        // The permutation test: shuffle within each current segment.
        let mut shuffled = xs.to_vec();
        let mut as_large = 0usize;
        for _ in 0..opts.permutations {
            for w in bounds.windows(2) {
                shuffled[w[0]..w[1]].shuffle(&mut rng);
            }
            if best_in_segments(&shuffled, &bounds, opts.min_size).is_some_and(|(_, p)| p >= q) {
                as_large += 1;
            }
            shuffled.copy_from_slice(xs);
        }
        let p_value = (as_large + 1) as f64 / (opts.permutations + 1) as f64;
        if p_value > opts.significance {
            break;
        }
        found.push(ChangePoint { index: at, p_value });
        let pos = bounds.partition_point(|&b| b < at);
        bounds.insert(pos, at);
    }
    found.sort_by_key(|c| c.index);
    found
}

/// The best split over all segments: (index in `xs`, statistic).
fn best_in_segments(xs: &[f64], bounds: &[usize], min_size: usize) -> Option<(usize, f64)> {
    bounds
        .windows(2)
        .filter_map(|w| best_split(&xs[w[0]..w[1]], min_size).map(|(t, q)| (w[0] + t, q)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The split of `xs` with the largest statistic
/// `m·k/(m+k) · (2·E|L−R| − E|L−L'| − E|R−R'|)` (sides of `m` and `k`
/// points, both at least `min_size`, at least 2): (split, statistic).
pub fn best_split(xs: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let n = xs.len();
    let min = min_size.max(2);
    if n < 2 * min {
        return None;
    }
    // prefix[i][j]: sum of |x_a − x_b| over a < i, b < j.
    let w = n + 1;
    let mut prefix = vec![0.0; w * w];
    for i in 0..n {
        for j in 0..n {
            prefix[(i + 1) * w + j + 1] =
                (xs[i] - xs[j]).abs() + prefix[i * w + j + 1] + prefix[(i + 1) * w + j]
                    - prefix[i * w + j];
        }
    }
    let rect = |r0: usize, r1: usize, c0: usize, c1: usize| {
        prefix[r1 * w + c1] - prefix[r0 * w + c1] - prefix[r1 * w + c0] + prefix[r0 * w + c0]
    };
    let pairs = |k: usize| (k * (k - 1)) as f64; // ordered pairs
    (min..=n - min)
        .map(|t| {
            let (m, k) = (t as f64, (n - t) as f64);
            let between = rect(0, t, t, n) / (m * k);
            let left = rect(0, t, 0, t) / pairs(t);
            let right = rect(t, n, t, n) / pairs(n - t);
            (t, m * k / (m + k) * (2.0 * between - left - right))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic wobble of about ±2 % around `level`.
    fn noisy(level: f64, n: usize, phase: usize) -> Vec<f64> {
        (0..n)
            .map(|i| level * (1.0 + 0.02 * (((i + phase) * 7919 % 13) as f64 / 6.0 - 1.0)))
            .collect()
    }

    #[test]
    fn the_statistic_matches_a_hand_computation() {
        // Split 2|2 of [0, 0, 1, 1]: between mean 1, within 0 each side:
        // 2·2/4 · (2·1 − 0 − 0) = 2.
        let (t, q) = best_split(&[0.0, 0.0, 1.0, 1.0], 2).unwrap();
        assert_eq!((t, q), (2, 2.0));
        assert!(best_split(&[1.0, 2.0, 3.0], 2).is_none());
    }

    #[test]
    fn a_planted_step_is_found_where_it_is() {
        let mut xs = noisy(1000.0, 3, 0);
        xs.extend(noisy(700.0, 9, 3));
        let found = e_divisive(&xs, &ChangePointOptions::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 3);
        assert!(found[0].p_value <= 0.05);
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut xs = noisy(1000.0, 12, 0);
        xs.extend(noisy(800.0, 12, 5));
        xs.extend(noisy(1100.0, 12, 2));
        let idx: Vec<usize> = e_divisive(&xs, &ChangePointOptions::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(idx, [12, 24]);
    }

    #[test]
    fn noise_alone_has_no_change_point() {
        assert!(e_divisive(&noisy(1000.0, 30, 0), &ChangePointOptions::default()).is_empty());
        // Too short to test at all.
        assert!(e_divisive(&[1.0, 5.0], &ChangePointOptions::default()).is_empty());
    }
}
