//! Key and value generators for the workloads: uniform and zipfian keys with
//! sysbench's semantics, and sysbench's `c`/`pad` strings written in place.
//!
//! Every client thread owns one [`KeyGen`] seeded by [`stream_seed`] from
//! the run seed, the test and its client number: each test draws a fresh
//! sequence, every target of a run draws the same one, a run is
//! reproducible from its seed, and the hot path never locks.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// How keys are drawn from `1..=n`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyDist {
    Uniform,
    /// sysbench's `--rand-type=zipfian` with the given exponent
    /// (`--rand-zipfian-exp`, 0.8 by default).
    Zipfian(f64),
}

/// sysbench's default zipfian exponent.
pub const SYSBENCH_ZIPF_EXP: f64 = 0.8;

/// A per-thread random source for keys, table choice and string values.
pub struct KeyGen {
    rng: SmallRng,
    zipf: Option<Zipf>,
}

impl KeyGen {
    /// A generator for keys in `1..=n` with the given distribution.
    pub fn new(seed: u64, dist: KeyDist, n: u64) -> KeyGen {
        let zipf = match dist {
            KeyDist::Uniform => None,
            KeyDist::Zipfian(s) => Some(Zipf::new(n.max(1), s)),
        };
        KeyGen {
            rng: SmallRng::seed_from_u64(seed),
            zipf,
        }
    }

    /// A key in `1..=n` from the configured distribution.
    #[inline]
    pub fn key(&mut self, n: u64) -> i64 {
        match &self.zipf {
            Some(z) => z.sample(&mut self.rng) as i64,
            None => self.uniform(1, n as i64),
        }
    }

    /// A uniform integer in `lo..=hi`.
    #[inline]
    pub fn uniform(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        self.rng.random_range(lo..=hi)
    }

    /// A uniform float in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        self.rng.random()
    }

    /// Overwrites `buf` with sysbench's value format: groups of 11 random
    /// digits joined by `-` (`c` is 119 bytes: 10 groups; `pad` is 59: 5).
    #[inline]
    pub fn fill_digits(&mut self, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = if i % 12 == 11 {
                b'-'
            } else {
                b'0' + self.rng.random_range(0..10u8)
            };
        }
    }
}

/// The seed of one random stream of a run: a 64-bit mix of the run seed,
/// the stream's name (a sysbench test's name, `point-query_range=100`) and
/// the client number. Stable across builds and platforms (FNV-1a over the
/// name, then SplitMix64 finalisers), so the same run seed gives the same
/// keys on every target, repetition and rerun, and different tests (or
/// clients) get unrelated sequences.
pub fn stream_seed(run_seed: u64, stream: &str, client: u32) -> u64 {
    let named = mix64(mix64(run_seed) ^ fnv1a64(stream.as_bytes()));
    mix64(named ^ u64::from(client))
}

/// SplitMix64's step: adds the golden-ratio increment, then finalises
/// (Steele, Lea and Flood, 2014). A bijection on `u64`.
pub fn mix64(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 64-bit FNV-1a: a fixed hash of a name, the same in every build (unlike
/// std's randomly keyed `HashMap` hasher).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// Length of the `c` column value (sysbench's `###########-` × 10 minus the trailing dash).
pub const C_LEN: usize = 119;
/// Length of the `pad` column value.
pub const PAD_LEN: usize = 59;

/// The zipfian sampler sysbench uses: rejection-inversion sampling
/// (Hörmann and Derflinger, 1996) over `1..=n` with exponent `s`.
#[derive(Clone, Debug)]
struct Zipf {
    n: f64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    threshold: f64,
}

impl Zipf {
    fn new(n: u64, s: f64) -> Zipf {
        let n = n as f64;
        let h_integral_x1 = h_integral(1.5, s) - 1.0;
        let h_integral_n = h_integral(n + 0.5, s);
        let threshold = 2.0 - h_integral_inv(h_integral(2.5, s) - h(2.0, s), s);
        Zipf {
            n,
            s,
            h_integral_x1,
            h_integral_n,
            threshold,
        }
    }

    fn sample(&self, rng: &mut SmallRng) -> u64 {
        loop {
            let r: f64 = rng.random();
            let u = self.h_integral_n + r * (self.h_integral_x1 - self.h_integral_n);
            let x = h_integral_inv(u, self.s);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.threshold || u >= h_integral(k + 0.5, self.s) - h(k, self.s) {
                return k as u64;
            }
        }
    }
}

/// The (unnormalised) density `x^-s`.
fn h(x: f64, s: f64) -> f64 {
    (-s * x.ln()).exp()
}

/// An antiderivative of `h`: `(x^(1-s) - 1) / (1-s)`, or `ln x` when `s = 1`.
fn h_integral(x: f64, s: f64) -> f64 {
    let log_x = x.ln();
    expm1_over_x((1.0 - s) * log_x) * log_x
}

/// The inverse of [`h_integral`].
fn h_integral_inv(x: f64, s: f64) -> f64 {
    let t = (x * (1.0 - s)).max(-1.0);
    (log1p_over_x(t) * x).exp()
}

/// `(e^x - 1) / x`, continuous at 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// `ln(1 + x) / x`, continuous at 0.
fn log1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_keys_cover_the_range_and_stay_inside_it() {
        let mut g = KeyGen::new(7, KeyDist::Uniform, 10);
        let mut seen = [0u32; 11];
        for _ in 0..10_000 {
            let k = g.key(10);
            assert!((1..=10).contains(&k));
            seen[k as usize] += 1;
        }
        assert!(seen[1..].iter().all(|&c| c > 800), "{seen:?}");
    }

    #[test]
    fn zipfian_keys_are_skewed_like_the_distribution() {
        let n = 1000u64;
        let mut g = KeyGen::new(3, KeyDist::Zipfian(SYSBENCH_ZIPF_EXP), n);
        let draws = 200_000;
        let mut counts = vec![0u64; n as usize + 1];
        for _ in 0..draws {
            let k = g.key(n);
            assert!((1..=n as i64).contains(&k));
            counts[k as usize] += 1;
        }
        // Expected probability of key k is k^-s / sum_j j^-s.
        let norm: f64 = (1..=n).map(|j| (j as f64).powf(-SYSBENCH_ZIPF_EXP)).sum();
        for k in [1usize, 2, 10, 100] {
            let expected = (k as f64).powf(-SYSBENCH_ZIPF_EXP) / norm * draws as f64;
            let got = counts[k] as f64;
            assert!(
                (got - expected).abs() < expected * 0.1 + 30.0,
                "key {k}: got {got}, expected {expected}"
            );
        }
    }

    #[test]
    fn zipf_with_exponent_one_and_zero_works() {
        for s in [0.0, 1.0, 1.5] {
            let mut g = KeyGen::new(1, KeyDist::Zipfian(s), 50);
            for _ in 0..1000 {
                assert!((1..=50).contains(&g.key(50)));
            }
        }
    }

    #[test]
    fn seed_mixing_is_pinned_across_builds() {
        // SplitMix64 from state 0 and FNV-1a's published test values.
        assert_eq!(mix64(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(fnv1a64(b""), 0xCBF2_9CE4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xAF63_DC4C_8601_EC8C);
        // The Insert Benchmark's client seed for (1, step 2, client 3), as
        // its own SplitMix64 code computed it before it used `mix64`.
        assert_eq!(
            crate::workload::ibench::client_seed(1, 2, 3),
            0xA839_1E45_28C2_A97F
        );
        // A stored run seed must give the same keys in every later build.
        assert_eq!(
            stream_seed(1, "point-query_range=100", 0),
            0xDBB2_24A4_73B3_B72B
        );
        assert_eq!(
            stream_seed(42, "random-points_range=10", 3),
            0x0F84_1431_F868_7555
        );
    }

    #[test]
    fn each_test_and_client_gets_its_own_stream_of_the_run_seed() {
        let names = [
            "point-query.pre_range=100",
            "point-query_range=100",
            "scan_range=100",
        ];
        let mut seen = std::collections::HashSet::new();
        for run in [0, 1, 2, u64::MAX] {
            for name in names {
                for client in 0..4 {
                    assert!(seen.insert(stream_seed(run, name, client)));
                }
            }
        }
        assert_eq!(stream_seed(7, names[0], 1), stream_seed(7, names[0], 1));
        // The streams draw different keys, the same stream the same keys.
        let keys = |seed| {
            let mut g = KeyGen::new(seed, KeyDist::Uniform, 100_000);
            (0..20).map(|_| g.key(100_000)).collect::<Vec<_>>()
        };
        let a = keys(stream_seed(7, names[0], 0));
        assert_eq!(a, keys(stream_seed(7, names[0], 0)));
        assert_ne!(a, keys(stream_seed(7, names[1], 0)));
        assert_ne!(a, keys(stream_seed(8, names[0], 0)));
    }

    #[test]
    fn digit_strings_have_sysbench_format() {
        let mut g = KeyGen::new(1, KeyDist::Uniform, 1);
        let mut c = [0u8; C_LEN];
        g.fill_digits(&mut c);
        let s = std::str::from_utf8(&c).unwrap();
        let groups: Vec<&str> = s.split('-').collect();
        assert_eq!(groups.len(), 10);
        assert!(
            groups
                .iter()
                .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit()))
        );
        let mut pad = [0u8; PAD_LEN];
        g.fill_digits(&mut pad);
        assert_eq!(std::str::from_utf8(&pad).unwrap().split('-').count(), 5);
    }
}
