//! Cached or IO-bound: how big the buffer pool is relative to the data.
//!
//! The seeds report two kinds of runs: "cached" (the database fits in the
//! buffer pool, so results show CPU costs) and "IO-bound" (the data is
//! several times the buffer pool, so reads and write-back reach storage).
//! Rather than fixed numbers per profile, the buffer pool is sized from the
//! estimated data size and the machine's memory, and the choice is printed
//! and stored, because the same profile on a 16 GB and a 128 GB machine
//! would otherwise measure different things.

use serde::{Deserialize, Serialize};

/// Which kind of run the buffer pool is sized for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sizing {
    /// All of the data fits in the buffer pool, with room to grow.
    #[default]
    Cached,
    /// The data is [`IO_BOUND_RATIO`] times the buffer pool.
    IoBound,
}

/// How many times the buffer pool the data is in an IO-bound run.
pub const IO_BOUND_RATIO: u64 = 4;
/// Headroom of a cached run over the loaded data (inserts grow it).
pub const CACHED_HEADROOM: f64 = 1.5;
/// At most this share of memory goes to the buffer pool (the rest: OS,
/// page cache, clients).
pub const MAX_MEMORY_SHARE: f64 = 0.5;
/// Servers up at once (`--interleave steps`) may take at most this share
/// of memory for their buffer pools together.
pub const TOGETHER_MEMORY_SHARE: f64 = 0.75;
/// Bytes per sysbench row on PostgreSQL: the heap tuple (header, id, k,
/// char(120), char(60), line pointer, fill) is about 225 bytes and the
/// primary key and `k` indexes about 45 more.
pub const SYSBENCH_ROW_BYTES: u64 = 270;
/// The posts' IO-bound shape: their data is about this many times their
/// server's memory (the Insert Benchmark's 1 × 800M rows on 32 GB, 8 ×
/// 250M on 64 GB, 12 × 300M on 128 GB: 4.5–5.6x at
/// [`IBENCH_ROW_BYTES`]). `--server-memory` sizes the tables so.
pub const POSTS_DATA_PER_MEMORY: u64 = 5;
/// The posts' buffer pool as a share of their server's memory
/// (`shared_buffers = 48GB` on the 64 GB servers).
pub const POSTS_BUFFER_POOL_SHARE: f64 = 0.75;
/// The posts' Insert Benchmark IO-bound l.i1 and l.i2 rows per l.i0 row
/// (4M and 1M per 250M): `--server-memory` keeps this proportion.
pub const POSTS_L_I1_PER_LOAD: f64 = 4.0 / 250.0;
pub const POSTS_L_I2_PER_LOAD: f64 = 1.0 / 250.0;
/// Bytes per Insert Benchmark row on PostgreSQL: the heap tuple (header,
/// bigint, timestamp, four ints, a 10–20 byte varchar, line pointer) is
/// about 80 bytes, the primary key about 20 and the three secondary indexes
/// about 25 each.
pub const IBENCH_ROW_BYTES: u64 = 180;

const MB: u64 = 1 << 20;

impl Sizing {
    /// The accepted names.
    pub const NAMES: &'static str = "cached, io-bound";

    /// Parses `cached` or `io-bound`.
    pub fn parse(s: &str) -> Result<Sizing, String> {
        match s {
            "cached" => Ok(Sizing::Cached),
            "io-bound" | "iobound" | "io_bound" => Ok(Sizing::IoBound),
            other => Err(format!(
                "unknown sizing '{other}'{}: use one of {}",
                crate::util::suggest::did_you_mean(other, Sizing::NAMES.split(", ")),
                Sizing::NAMES
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Sizing::Cached => "cached",
            Sizing::IoBound => "io-bound",
        }
    }
}

/// The buffer pool a plan chose and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizingChoice {
    pub sizing: Sizing,
    /// Estimated size of the loaded data.
    pub data_bytes: u64,
    /// The machine's memory (MemTotal); 0 when unknown.
    pub memory_bytes: u64,
    /// The chosen PostgreSQL shared_buffers, MB.
    pub shared_buffers_mb: u64,
    /// What the choice means, one line.
    pub note: String,
    /// `--server-memory`: the memory an IO-bound server is given (its
    /// buffer pool is [`POSTS_BUFFER_POOL_SHARE`] of it and its memory
    /// cgroup holds it to it); `None`: sized from the data.
    #[serde(default)]
    pub server_memory_bytes: Option<u64>,
}

/// Rows per table that make `tables` tables of `row_bytes`-byte rows
/// [`POSTS_DATA_PER_MEMORY`] times `memory`, as the posts' IO-bound runs
/// are (at least one row).
pub fn rows_for_memory(memory: u64, tables: u64, row_bytes: u64) -> u64 {
    (POSTS_DATA_PER_MEMORY * memory / (tables.max(1) * row_bytes)).max(1)
}

/// Sizes an IO-bound server given `server_memory` bytes (`--server-memory`),
/// as the posts size theirs: the buffer pool [`POSTS_BUFFER_POOL_SHARE`] of
/// that memory, whatever the data; the note says how the data compares.
pub fn choose_for_memory(server_memory: u64, data_bytes: u64, memory_bytes: u64) -> SizingChoice {
    let shared_buffers_mb = round_down(
        (server_memory as f64 * POSTS_BUFFER_POOL_SHARE) as u64 / MB,
        16,
    );
    let pool = (shared_buffers_mb * MB) as f64;
    let mut note = format!(
        "server memory {} MiB (--server-memory), the buffer pool {}% of it: the data is {:.1}x \
         the buffer pool and {:.1}x the server's memory (the posts' IO-bound runs: 4.5-5.6x)",
        server_memory / MB,
        (POSTS_BUFFER_POOL_SHARE * 100.0) as u32,
        data_bytes as f64 / pool,
        data_bytes as f64 / server_memory as f64
    );
    if data_bytes < 2 * server_memory {
        note.push_str(
            ": too little data for an IO-bound run, raise the rows or lower --server-memory",
        );
    }
    SizingChoice {
        sizing: Sizing::IoBound,
        data_bytes,
        memory_bytes,
        shared_buffers_mb,
        note,
        server_memory_bytes: Some(server_memory),
    }
}

/// Sizes the buffer pool for `data_bytes` of data on a machine with
/// `memory_bytes` of memory (0: unknown, no cap).
pub fn choose(sizing: Sizing, data_bytes: u64, memory_bytes: u64) -> SizingChoice {
    let cap_mb = if memory_bytes == 0 {
        u64::MAX
    } else {
        ((memory_bytes as f64 * MAX_MEMORY_SHARE) as u64 / MB).max(128)
    };
    let data_mb = data_bytes.div_ceil(MB);
    let (shared_buffers_mb, note) = match sizing {
        Sizing::Cached => {
            let want = round_up((data_bytes as f64 * CACHED_HEADROOM) as u64 / MB, 64).max(128);
            if want > cap_mb {
                (
                    round_down(cap_mb, 64),
                    format!(
                        "the data does not fit: {}% of memory caps the buffer pool, so this run is \
                         partly IO-bound",
                        (MAX_MEMORY_SHARE * 100.0) as u32
                    ),
                )
            } else {
                (want, "all of the data fits in the buffer pool".to_string())
            }
        }
        Sizing::IoBound => {
            let want = round_down(data_mb / IO_BOUND_RATIO, 16).clamp(16, cap_mb);
            let ratio = data_mb as f64 / want as f64;
            let mut note = format!("the data is {ratio:.1}x the buffer pool");
            if ratio < 2.0 {
                note.push_str(": too little data for an IO-bound run, raise --table-size");
            } else if memory_bytes > 0 && data_bytes < memory_bytes {
                note.push_str(
                    " (it fits in the OS page cache: the next line says what keeps managed \
                     servers from reading it from there)",
                );
            }
            (want, note)
        }
    };
    SizingChoice {
        sizing,
        data_bytes,
        memory_bytes,
        shared_buffers_mb,
        note,
        server_memory_bytes: None,
    }
}

fn round_up(v: u64, step: u64) -> u64 {
    v.div_ceil(step) * step
}

fn round_down(v: u64, step: u64) -> u64 {
    (v / step * step).max(step)
}

impl SizingChoice {
    /// Whether `servers` managed servers, each with this buffer pool, fit
    /// in memory at once; the error says how much they would take. Always
    /// fits when the machine's memory is unknown.
    pub fn fit_together(&self, servers: usize) -> Result<(), String> {
        let together_mb = servers as u64 * self.shared_buffers_mb;
        let limit = self.memory_bytes as f64 * TOGETHER_MEMORY_SHARE;
        if self.memory_bytes == 0 || servers < 2 || (together_mb * MB) as f64 <= limit {
            return Ok(());
        }
        Err(format!(
            "{servers} servers up at once with a {}MB buffer pool each take {together_mb}MB, more than {}% of this machine's {}MB",
            self.shared_buffers_mb,
            (TOGETHER_MEMORY_SHARE * 100.0) as u32,
            self.memory_bytes / MB
        ))
    }

    /// One line for the terminal: the inputs and what was chosen.
    pub fn describe(&self) -> String {
        let memory = if self.memory_bytes == 0 {
            "memory unknown".to_string()
        } else {
            format!("memory {}", human(self.memory_bytes))
        };
        format!(
            "sizing {}: data ≈ {}, {memory} → shared_buffers = {}MB: {}",
            self.sizing.as_str(),
            human(self.data_bytes),
            self.shared_buffers_mb,
            self.note
        )
    }

    /// The postgresql.conf lines (they follow, and so replace, the
    /// profile's own shared_buffers).
    pub fn config_lines(&self) -> String {
        format!(
            "# --- sizing {} (data ≈ {}; replaces the profile's shared_buffers): {} ---\n\
             shared_buffers = {}MB\n",
            self.sizing.as_str(),
            human(self.data_bytes),
            self.note,
            self.shared_buffers_mb
        )
    }
}

/// Bytes as `27 MB`, `13.5 GB`.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else {
        format!("{:.0} MB", (b / 1e6).max(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_up_together_must_fit_in_memory() {
        let gib = 1u64 << 30;
        // 10 GB of data: a 15 GB buffer pool wanted, capped at half of 24 GiB.
        let c = choose(Sizing::Cached, 10 * gib, 24 * gib);
        assert_eq!(c.shared_buffers_mb, 12 * 1024);
        assert_eq!(c.fit_together(1), Ok(()));
        let e = c.fit_together(2).unwrap_err();
        assert!(e.starts_with("2 servers up at once with a 12288MB buffer pool each take 24576MB, more than 75% of this machine's 24576MB"), "{e}");
        let small = choose(Sizing::Cached, 100 << 20, 24 * gib);
        assert_eq!(small.fit_together(8), Ok(()));
        assert_eq!(choose(Sizing::Cached, 10 * gib, 0).fit_together(8), Ok(()));
    }

    const GB: u64 = 1 << 30;

    #[test]
    fn cached_holds_the_data_with_headroom() {
        let c = choose(Sizing::Cached, 27_000_000, 16 * GB);
        assert_eq!(c.shared_buffers_mb, 128);
        let c = choose(Sizing::Cached, 2 * GB, 16 * GB);
        assert_eq!(c.shared_buffers_mb, 3072);
        assert!(c.note.contains("fits"));
        let big = choose(Sizing::Cached, 20 * GB, 16 * GB);
        assert_eq!(big.shared_buffers_mb, 8192);
        assert!(big.note.contains("does not fit"), "{}", big.note);
    }

    #[test]
    fn io_bound_keeps_the_data_several_times_the_pool() {
        let c = choose(Sizing::IoBound, 16 * GB, 64 * GB);
        assert_eq!(c.shared_buffers_mb, 4096);
        assert!(c.note.starts_with("the data is 4.0x"), "{}", c.note);
        assert!(c.note.contains("page cache"));
        let tiny = choose(Sizing::IoBound, 27_000_000, 16 * GB);
        assert_eq!(tiny.shared_buffers_mb, 16);
        assert!(tiny.note.contains("too little data"), "{}", tiny.note);
        assert!(
            tiny.describe()
                .starts_with("sizing io-bound: data ≈ 27 MB, memory 17.2 GB")
        );
        assert!(tiny.config_lines().ends_with("\nshared_buffers = 16MB\n"));
    }

    #[test]
    fn server_memory_gives_the_posts_shape() {
        // 256 MiB: one sysbench table of 5x that, the buffer pool 3/4 of it.
        let rows = rows_for_memory(256 << 20, 1, SYSBENCH_ROW_BYTES);
        assert_eq!(rows, 4_971_026);
        let c = choose_for_memory(256 << 20, rows * SYSBENCH_ROW_BYTES, 24 * GB);
        assert_eq!(c.shared_buffers_mb, 192);
        assert_eq!(c.server_memory_bytes, Some(256 << 20));
        assert!(
            c.note
                .contains("the data is 6.7x the buffer pool and 5.0x the server's memory"),
            "{}",
            c.note
        );
        // Two Insert Benchmark tables share the same data.
        assert_eq!(rows_for_memory(256 << 20, 2, IBENCH_ROW_BYTES), 3_728_270);
        let small = choose_for_memory(1 << 30, 100 << 20, 24 * GB);
        assert!(
            small.note.ends_with("lower --server-memory"),
            "{}",
            small.note
        );
        assert_eq!(rows_for_memory(16 << 20, 1000, 1 << 20), 1);
    }

    #[test]
    fn names_parse() {
        assert_eq!(Sizing::parse("io-bound"), Ok(Sizing::IoBound));
        assert!(
            Sizing::parse("hot")
                .unwrap_err()
                .contains("cached, io-bound")
        );
    }
}
