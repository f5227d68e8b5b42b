//! The server's own counters during a step: PostgreSQL's checkpoints,
//! buffers written by whom, WAL, dead tuples and vacuum; InnoDB's history
//! list, dirty pages, checkpoint age and log writes. A sampler reads them on
//! its own connection once a second; each [`CounterReading`] holds the raw
//! values as the server reports them (cumulative counters and levels), so
//! rates, step totals and the end-of-step debt are all derived here, the
//! same way for the store, the report and the tests.
//!
//! [`COUNTERS`] names every value a sampler may record, with its kind and
//! unit; a value the server does not have (an older version, a disabled
//! InnoDB metric) is simply absent from the readings.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::host_cost::Phase;

/// How a value behaves over time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterKind {
    /// Only grows (WAL bytes, checkpoints): its rate and its growth per
    /// operation are what matter.
    Counter,
    /// A level (dead tuples, history list length): its value at the end of
    /// the step is the debt the step leaves behind.
    Gauge,
}

/// One value a server-counter sampler records.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CounterDef {
    /// Stable name, as stored.
    pub name: &'static str,
    /// `postgres` or `mysql`: the family whose views it comes from.
    pub family: &'static str,
    pub kind: CounterKind,
    /// What it is, for the report.
    pub title: &'static str,
}

const fn def(
    family: &'static str,
    name: &'static str,
    kind: CounterKind,
    title: &'static str,
) -> CounterDef {
    CounterDef {
        name,
        family,
        kind,
        title,
    }
}

use CounterKind::{Counter, Gauge};

/// Every value a sampler records, PostgreSQL's first, in report order.
pub const COUNTERS: &[CounterDef] = &[
    def(
        "postgres",
        "checkpoints_timed",
        Counter,
        "checkpoints started by checkpoint_timeout",
    ),
    def(
        "postgres",
        "checkpoints_req",
        Counter,
        "checkpoints requested (WAL size, CHECKPOINT)",
    ),
    def(
        "postgres",
        "buffers_checkpoint",
        Counter,
        "buffers written by the checkpointer",
    ),
    def(
        "postgres",
        "buffers_clean",
        Counter,
        "buffers written by the background writer",
    ),
    def(
        "postgres",
        "buffers_backend",
        Counter,
        "buffers written by backends themselves",
    ),
    def("postgres", "wal_records", Counter, "WAL records"),
    def("postgres", "wal_fpi", Counter, "WAL full-page images"),
    def("postgres", "wal_bytes", Counter, "WAL bytes"),
    def(
        "postgres",
        "blks_read",
        Counter,
        "blocks read into shared buffers (OS cache or storage)",
    ),
    def(
        "postgres",
        "blks_hit",
        Counter,
        "blocks found in shared buffers",
    ),
    def(
        "postgres",
        "n_live_tup",
        Gauge,
        "live tuples of the benchmark tables",
    ),
    def(
        "postgres",
        "n_dead_tup",
        Gauge,
        "dead tuples of the benchmark tables",
    ),
    def(
        "postgres",
        "autovacuum_count",
        Counter,
        "autovacuum runs on the benchmark tables",
    ),
    def(
        "postgres",
        "autoanalyze_count",
        Counter,
        "autoanalyze runs on the benchmark tables",
    ),
    def(
        "postgres",
        "vacuums_running",
        Gauge,
        "vacuums in progress (pg_stat_progress_vacuum)",
    ),
    def(
        "postgres",
        "vacuum_heap_blks_scanned",
        Gauge,
        "heap blocks the running vacuums scanned",
    ),
    def(
        "mysql",
        "history_list_length",
        Gauge,
        "InnoDB history list length (undo not yet purged)",
    ),
    def("mysql", "pages_dirty", Gauge, "dirty buffer pool pages"),
    def("mysql", "pages_total", Gauge, "buffer pool pages"),
    def(
        "mysql",
        "lsn",
        Counter,
        "log sequence number (redo bytes generated)",
    ),
    def(
        "mysql",
        "checkpoint_age",
        Gauge,
        "checkpoint age, redo bytes",
    ),
    def(
        "mysql",
        "log_bytes_written",
        Counter,
        "redo log bytes written",
    ),
    def(
        "mysql",
        "pages_flushed",
        Counter,
        "buffer pool pages flushed",
    ),
    def(
        "mysql",
        "pool_reads",
        Counter,
        "buffer pool misses read from the OS",
    ),
    def(
        "mysql",
        "pool_read_requests",
        Counter,
        "buffer pool read requests",
    ),
    def("mysql", "row_lock_waits", Counter, "row lock waits"),
    def(
        "mysql",
        "row_lock_time_ms",
        Counter,
        "milliseconds spent waiting for row locks",
    ),
    def(
        "mysql",
        "purge_records",
        Counter,
        "undo records purged (INNODB_METRICS)",
    ),
    def("mysql", "data_fsyncs", Counter, "fsync calls by InnoDB"),
    def(
        "any",
        "read_ms",
        Gauge,
        "milliseconds one reading of these counters took",
    ),
];

/// The definition of the value `name`, if it is one a sampler records.
pub fn counter_def(name: &str) -> Option<&'static CounterDef> {
    COUNTERS.iter().find(|d| d.name == name)
}

/// The values read at one moment. Reading 0 of a step is the baseline taken
/// before the step's first interval; each later one closes an interval and
/// carries its phase and second number (as the host seconds do).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterReading {
    pub sec: i64,
    pub phase: Phase,
    /// Seconds since the sampler started.
    pub end_secs: f64,
    /// Name → raw value as the server reports it.
    pub values: BTreeMap<String, f64>,
}

/// A CPU profile of the server's processes over the measured part of a
/// step: folded stacks (`frame;frame;leaf COUNT` lines, root first), as
/// `perf record -e cpu-clock -g` sampled them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuProfile {
    /// Samples per second per CPU.
    pub hz: u32,
    /// How long perf sampled, seconds.
    pub secs: f64,
    /// Samples over all stacks.
    pub samples: u64,
    pub folded: String,
}

/// Samples per leaf function of folded stacks (`a;b;leaf COUNT`).
pub fn self_samples(folded: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in folded.lines() {
        let Some((stack, count)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(n) = count.parse::<u64>() else {
            continue;
        };
        let leaf = stack.rsplit(';').next().unwrap_or(stack);
        *out.entry(leaf.to_string()).or_insert(0) += n;
    }
    out
}

/// Everything a server-counter sampler stored for one step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCounters {
    /// In reading order; the first is the baseline.
    pub readings: Vec<CounterReading>,
}

impl ServerCounters {
    /// The readings that bound the measured interval: the one before the
    /// first measured reading and the last measured one.
    fn measured_bounds(&self) -> Option<(&CounterReading, &CounterReading)> {
        let first = self
            .readings
            .iter()
            .position(|r| r.phase == Phase::Measured)?;
        let last = self
            .readings
            .iter()
            .rposition(|r| r.phase == Phase::Measured)?;
        Some((
            &self.readings[first.saturating_sub(1)],
            &self.readings[last],
        ))
    }

    /// How much counter `name` grew over the measured interval, and that
    /// interval's length in seconds; `None` when it was not read at both
    /// ends.
    pub fn measured_growth(&self, name: &str) -> Option<(f64, f64)> {
        let (a, b) = self.measured_bounds()?;
        let (x, y) = (a.values.get(name)?, b.values.get(name)?);
        Some(((y - x).max(0.0), (b.end_secs - a.end_secs).max(0.0)))
    }

    /// How much `name` grew from the first reading to the last (the whole
    /// step, warm-up and the clients' goodbye included).
    pub fn total_growth(&self, name: &str) -> Option<f64> {
        let a = self.readings.first()?.values.get(name)?;
        let b = self.readings.last()?.values.get(name)?;
        Some(b - a)
    }

    /// The value of `name` at the first and at the last reading.
    pub fn first_and_last(&self, name: &str) -> Option<(f64, f64)> {
        let a = self.readings.first()?.values.get(name)?;
        let b = self.readings.last()?.values.get(name)?;
        Some((*a, *b))
    }

    /// Per interval: its second, phase, and the rate of counter `name`
    /// (per second) or the level of gauge `name` at its end.
    pub fn series(&self, name: &str, kind: CounterKind) -> Vec<(i64, Phase, f64)> {
        self.readings
            .windows(2)
            .filter_map(|w| {
                let y = *w[1].values.get(name)?;
                let v = match kind {
                    CounterKind::Gauge => y,
                    CounterKind::Counter => {
                        let x = *w[0].values.get(name)?;
                        let secs = w[1].end_secs - w[0].end_secs;
                        if secs <= 0.0 {
                            return None;
                        }
                        (y - x).max(0.0) / secs
                    }
                };
                Some((w[1].sec, w[1].phase, v))
            })
            .collect()
    }

    /// The names read at least once, in [`COUNTERS`] order.
    pub fn names(&self) -> Vec<&'static str> {
        COUNTERS
            .iter()
            .filter(|d| self.readings.iter().any(|r| r.values.contains_key(d.name)))
            .map(|d| d.name)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(sec: i64, phase: Phase, t: f64, v: f64) -> CounterReading {
        CounterReading {
            sec,
            phase,
            end_secs: t,
            values: BTreeMap::from([("wal_bytes".to_string(), v)]),
        }
    }

    #[test]
    fn growth_covers_the_measured_interval_only() {
        let c = ServerCounters {
            readings: vec![
                reading(-2, Phase::Warmup, 0.0, 100.0),
                reading(-1, Phase::Warmup, 1.0, 150.0),
                reading(0, Phase::Measured, 2.0, 250.0),
                reading(1, Phase::Measured, 3.0, 450.0),
                reading(2, Phase::After, 3.5, 460.0),
            ],
        };
        assert_eq!(c.measured_growth("wal_bytes"), Some((300.0, 2.0)));
        assert_eq!(c.total_growth("wal_bytes"), Some(360.0));
        assert_eq!(c.measured_growth("n_dead_tup"), None);
        let rates: Vec<f64> = c
            .series("wal_bytes", CounterKind::Counter)
            .iter()
            .map(|s| s.2)
            .collect();
        assert_eq!(rates, [50.0, 100.0, 200.0, 20.0]);
        assert_eq!(c.names(), ["wal_bytes"]);
        assert!(COUNTERS.iter().all(|d| counter_def(d.name) == Some(d)));
    }
}
