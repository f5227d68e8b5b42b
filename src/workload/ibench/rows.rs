//! Insert Benchmark rows (reference B.2): the value ranges and data lengths
//! of iibench's `generate_cols`, written straight into a multi-row INSERT
//! in a reused buffer.
//!
//! Every client draws from its own seeded generator, so a run's rows can be
//! reproduced from the stored seeds; the timestamp is the client's current
//! time, the same for the whole batch, as iibench does.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// `cashregisterid` is uniform in `[0, CASH_REGISTERS)`.
pub const CASH_REGISTERS: i64 = 1_000;
/// `productid` is uniform in `[0, PRODUCTS)`.
pub const PRODUCTS: i64 = 10_000;
/// `customerid` is uniform in `[0, CUSTOMERS)`.
pub const CUSTOMERS: i64 = 100_000;
/// `price` is uniform in `[0, MAX_PRICE)`.
pub const MAX_PRICE: i64 = 500;
/// `data` length is uniform in `[DATA_MIN, DATA_MAX]`.
pub const DATA_MIN: usize = 10;
pub const DATA_MAX: usize = 20;
/// Percent of `data` taken from the random buffer (`data_random_pct`).
pub const DATA_RANDOM_PCT: usize = 50;
/// Size of the buffer random `data` is cut from (4 MiB of base64 text).
pub const RANDOM_BUF_LEN: usize = 4 << 20;

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The random text `data` values are cut from: base64 characters, as
/// iibench's base64-encoded random buffer, made from `seed`. Shared
/// read-only by every client of a run.
pub fn random_buffer(seed: u64) -> Arc<[u8]> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xB64B_64B6_4B64_B64B);
    (0..RANDOM_BUF_LEN)
        .map(|_| BASE64[rng.random_range(0..64usize)])
        .collect()
}

/// Random characters in a `data` value of length `len`: iibench takes
/// `int(len × 0.75 × random_pct / 100)` (0.75 for the base64 overhead).
pub fn random_part(len: usize) -> usize {
    len * 75 * DATA_RANDOM_PCT / 10_000
}

/// One client's row generator.
pub struct RowGen {
    rng: SmallRng,
    random: Arc<[u8]>,
    now_secs: i64,
    now_text: [u8; 19],
}

impl RowGen {
    pub fn new(seed: u64, random: Arc<[u8]>) -> RowGen {
        RowGen {
            rng: SmallRng::seed_from_u64(seed),
            random,
            now_secs: i64::MIN,
            now_text: [b'0'; 19],
        }
    }

    /// `YYYY-MM-DD HH:MM:SS` (UTC) of now, reformatted once a second.
    fn now(&mut self) -> &str {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        if secs != self.now_secs {
            self.now_secs = secs;
            format_timestamp(secs, &mut self.now_text);
        }
        std::str::from_utf8(&self.now_text).unwrap_or("1970-01-01 00:00:00")
    }

    /// Appends `rows` rows `('ts',cash,cust,prod,price,'data')` joined by
    /// commas to `buf` (after the INSERT head).
    pub fn push_rows(&mut self, buf: &mut String, rows: u32) {
        let mut ts = [0u8; 19];
        ts.copy_from_slice(self.now().as_bytes());
        let ts = std::str::from_utf8(&ts).unwrap_or("1970-01-01 00:00:00");
        for i in 0..rows {
            if i > 0 {
                buf.push(',');
            }
            let cash = self.rng.random_range(0..CASH_REGISTERS);
            let product = self.rng.random_range(0..PRODUCTS);
            let customer = self.rng.random_range(0..CUSTOMERS);
            let price = self.rng.random_range(0..MAX_PRICE);
            let _ = write!(buf, "('{ts}',{cash},{customer},{product},{price},'");
            self.push_data(buf);
            buf.push_str("')");
        }
    }

    /// A `data` value: `'a'` × the non-random part, then random characters.
    fn push_data(&mut self, buf: &mut String) {
        let len = self.rng.random_range(DATA_MIN..=DATA_MAX);
        let random = random_part(len);
        for _ in 0..len - random {
            buf.push('a');
        }
        let off = self.rng.random_range(0..self.random.len() - random);
        // The buffer holds only ASCII base64 characters.
        buf.push_str(std::str::from_utf8(&self.random[off..off + random]).unwrap_or(""));
    }

    /// A uniform integer in `lo..hi` from this client's generator.
    #[inline]
    pub fn uniform(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        self.rng.random_range(lo..hi)
    }
}

/// Writes `secs` since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
fn format_timestamp(secs: i64, out: &mut [u8; 19]) {
    let (y, m, d) = crate::util::time::civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    let fields = [
        (y.clamp(0, 9999) as u32, 4),
        (m, 2),
        (d, 2),
        ((rem / 3600) as u32, 2),
        ((rem % 3600 / 60) as u32, 2),
        ((rem % 60) as u32, 2),
    ];
    let seps = [b'-', b'-', b' ', b':', b':'];
    let mut at = 0;
    for (i, (v, width)) in fields.into_iter().enumerate() {
        let mut v = v;
        for k in (0..width).rev() {
            out[at + k] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        at += width;
        if let Some(&s) = seps.get(i) {
            out[at] = s;
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_sql_datetimes() {
        let mut b = [0u8; 19];
        format_timestamp(0, &mut b);
        assert_eq!(&b, b"1970-01-01 00:00:00");
        format_timestamp(1_781_700_000, &mut b);
        assert_eq!(&b, b"2026-06-17 12:40:00");
    }

    #[test]
    fn random_part_matches_iibench() {
        // int(len * 0.75 * 0.5)
        assert_eq!(random_part(10), 3);
        assert_eq!(random_part(15), 5);
        assert_eq!(random_part(20), 7);
    }

    #[test]
    fn rows_have_the_reference_ranges_and_lengths() {
        let random = random_buffer(9);
        assert_eq!(random.len(), RANDOM_BUF_LEN);
        assert!(random.iter().all(|c| BASE64.contains(c)));
        let mut g = RowGen::new(42, random.clone());
        let mut buf = String::new();
        g.push_rows(&mut buf, 2_000);
        let rows: Vec<&str> = buf
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split("),(")
            .collect();
        assert_eq!(rows.len(), 2_000);
        let mut seen_max = [0i64; 4];
        for r in &rows {
            let f: Vec<&str> = r.split(',').collect();
            assert_eq!(f.len(), 6, "{r}");
            assert_eq!(f[0].len(), 21, "quoted timestamp {}", f[0]);
            let ints: Vec<i64> = f[1..5].iter().map(|v| v.parse().unwrap()).collect();
            // Column order: cashregisterid, customerid, productid, price.
            for (i, (v, upper)) in ints
                .iter()
                .zip([CASH_REGISTERS, CUSTOMERS, PRODUCTS, MAX_PRICE])
                .enumerate()
            {
                assert!((0..upper).contains(v), "{v} in [0, {upper})");
                seen_max[i] = seen_max[i].max(*v);
            }
            let data = f[5].trim_matches('\'');
            assert!((DATA_MIN..=DATA_MAX).contains(&data.len()), "{data}");
            let random = random_part(data.len());
            assert!(data[..data.len() - random].bytes().all(|c| c == b'a'));
        }
        // Ranges are covered, not just respected.
        assert!(seen_max[0] > 990 && seen_max[2] > 9_900 && seen_max[3] > 490);
        // The same seed gives the same rows (the timestamp aside).
        let mut again = RowGen::new(42, random);
        let mut buf2 = String::new();
        again.push_rows(&mut buf2, 2_000);
        let strip = |s: &str| s.replace(&s[2..21], "");
        assert_eq!(strip(&buf), strip(&buf2));
    }
}
