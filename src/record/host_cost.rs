//! The hardware cost a step records: one [`HostSecond`] per sampler
//! interval (the `vmstat 1` and `iostat -x 1` columns, plus the server's and
//! the client's CPU) and one [`HostCost`]: the averages over the measured
//! seconds divided by the step's rate, with the reference's names
//! (workloads.md A.7 and C.1). The formulas are here ([`averages`],
//! [`per_op`]); `metrics::summary` builds a step's [`HostCost`] with them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which part of a step a sampler interval belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Connecting and warming up, before the measured interval.
    Warmup,
    /// Inside the measured interval: these rows make the summary.
    #[default]
    Measured,
    /// After the measured interval ended (clients disconnecting).
    After,
}

impl Phase {
    /// Stable identifier, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Measured => "measured",
            Phase::After => "after",
        }
    }

    pub fn parse(s: &str) -> Option<Phase> {
        [Phase::Warmup, Phase::Measured, Phase::After]
            .into_iter()
            .find(|p| p.as_str() == s)
    }
}

/// `iostat -x` columns for one interval, summed over the watched devices
/// (rates and queue sizes add up; waits are per request over all of them;
/// `%util` is the busiest device's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskRates {
    #[serde(rename = "r/s")]
    pub rps: f64,
    #[serde(rename = "rkB/s")]
    pub rkbps: f64,
    /// Milliseconds per read, queueing included.
    pub r_await: f64,
    #[serde(rename = "w/s")]
    pub wps: f64,
    #[serde(rename = "wkB/s")]
    pub wkbps: f64,
    pub w_await: f64,
    /// Discards per second.
    #[serde(rename = "d/s")]
    pub dps: f64,
    #[serde(rename = "dkB/s")]
    pub dkbps: f64,
    pub d_await: f64,
    /// Cache flushes per second (what fsync turns into).
    #[serde(rename = "f/s")]
    pub fps: f64,
    pub f_await: f64,
    /// Average number of requests in flight.
    #[serde(rename = "aqu-sz")]
    pub aqu_sz: f64,
    /// Percent of the interval the device had requests in flight.
    #[serde(rename = "%util")]
    pub util: f64,
}

impl DiskRates {
    /// kB per read request (`rareq-sz`), 0 without reads.
    pub fn rareq_sz(&self) -> f64 {
        ratio(self.rkbps, self.rps)
    }

    /// kB per write request (`wareq-sz`), 0 without writes.
    pub fn wareq_sz(&self) -> f64 {
        ratio(self.wkbps, self.wps)
    }
}

pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// What the host and the processes did during one sampler interval, in
/// `vmstat` and `iostat` units.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSecond {
    /// The runner's second this interval closes (`step_seconds.sec`);
    /// negative during the warm-up, beyond the last second afterwards.
    pub sec: i64,
    pub phase: Phase,
    /// End of the interval, seconds since the sampler started.
    pub end_secs: f64,
    /// Length of the interval, seconds.
    pub secs: f64,
    /// Runnable and blocked tasks at the end (vmstat `r`, `b`).
    pub r: u64,
    pub b: u64,
    /// Memory at the end, KiB (vmstat `swpd`, `free`, `buff`, `cache`).
    pub swpd: u64,
    pub free: u64,
    pub buff: u64,
    pub cache: u64,
    /// Swapped in and out, KiB/s.
    pub si: f64,
    pub so: f64,
    /// Read from and written to block devices, KiB/s (vmstat `bi`, `bo`).
    pub bi: f64,
    pub bo: f64,
    /// Interrupts and context switches per second.
    #[serde(rename = "in")]
    pub intr: f64,
    pub cs: f64,
    /// Percent of all CPUs: user (+nice, −guest), system (+irq +softirq),
    /// idle, I/O wait, stolen, as vmstat splits them.
    pub us: f64,
    pub sy: f64,
    pub id: f64,
    pub wa: f64,
    pub st: f64,
    /// The watched devices; `None` when none could be read.
    pub disk: Option<DiskRates>,
    /// CPU of all server processes, percent of one core; `None` when the
    /// server has no process on this host or it could not be read.
    pub server_cpu_pct: Option<f64>,
    /// Storage reads the server's processes caused (`/proc/PID/io`),
    /// KiB/s: the server's own share of the disk's reads, whatever else
    /// uses the same disk.
    pub server_read_kbps: Option<f64>,
    /// Server memory at the end: the private memory of every server process
    /// plus the largest shared set (shared memory counted once), bytes.
    pub server_rss_bytes: Option<u64>,
    /// Server processes at the end.
    pub server_procs: Option<u32>,
    /// CPU of tidemark's own threads (the sampler excluded), percent of
    /// one core.
    pub client_cpu_pct: f64,
}

/// The rates a step's hardware use is divided by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpRates {
    /// What one operation is: `qps` (statements, sysbench), `ips`
    /// (inserts, load steps), `indexed rows/s` (an index build).
    pub basis: String,
    /// Operations per second.
    pub rate: f64,
    /// Inserts per second, which writes are divided by (`wpi`, `wkbpi`);
    /// sysbench divides writes by its QPS, so it passes the QPS here.
    pub insert_rate: Option<f64>,
}

/// [`OpRates::basis`] of statements or queries per second.
pub const BASIS_QUERIES: &str = "qps";
/// [`OpRates::basis`] of rows inserted per second.
pub const BASIS_INSERTS: &str = "ips";
/// [`OpRates::basis`] of rows indexed per second (an index build).
pub const BASIS_INDEXED_ROWS: &str = "indexed rows/s";

impl OpRates {
    /// Statements per second for reads and writes alike (sysbench, A.7).
    pub fn queries(qps: f64) -> OpRates {
        OpRates {
            basis: BASIS_QUERIES.into(),
            rate: qps,
            insert_rate: Some(qps),
        }
    }

    /// Queries per second, with writes divided by the background insert
    /// rate `ips` (the Insert Benchmark's q steps, C.1).
    pub fn queries_with_inserts(qps: f64, ips: f64) -> OpRates {
        OpRates {
            basis: BASIS_QUERIES.into(),
            rate: qps,
            insert_rate: Some(ips),
        }
    }

    /// Rows inserted per second, for reads and writes alike (load steps).
    pub fn inserts(ips: f64) -> OpRates {
        OpRates {
            basis: BASIS_INSERTS.into(),
            rate: ips,
            insert_rate: Some(ips),
        }
    }

    /// Rows indexed per second (l.x); the reference divides the writes by
    /// this rate too, as its `ips` column holds it.
    pub fn indexed_rows(rows_per_sec: f64) -> OpRates {
        OpRates {
            basis: BASIS_INDEXED_ROWS.into(),
            rate: rows_per_sec,
            insert_rate: Some(rows_per_sec),
        }
    }

    /// What one operation is, in words for a table heading.
    pub fn per_what(basis: &str) -> &'static str {
        match basis {
            BASIS_QUERIES => "per query",
            BASIS_INSERTS => "per inserted row",
            BASIS_INDEXED_ROWS => "per indexed row",
            _ => "per operation",
        }
    }
}

/// Time-weighted averages of a window of [`HostSecond`]s.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostAverages {
    pub secs: f64,
    pub samples: u32,
    pub us: f64,
    pub sy: f64,
    pub id: f64,
    pub wa: f64,
    pub st: f64,
    pub cs: f64,
    pub intr: f64,
    pub bi: f64,
    pub bo: f64,
    pub si: f64,
    pub so: f64,
    pub r: f64,
    pub b: f64,
    pub disk: Option<DiskRates>,
    pub server_cpu_pct: Option<f64>,
    pub server_read_kbps: Option<f64>,
    pub client_cpu_pct: f64,
    /// The last value in the window.
    pub server_rss_bytes: Option<u64>,
}

impl HostAverages {
    /// vmstat `us + sy`: the reference's `cpups`.
    pub fn cpups(&self) -> f64 {
        self.us + self.sy
    }
}

/// The reference's per-operation columns; `None` where the input is
/// missing or the rate is zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerOp {
    /// Reads per operation.
    pub rpq: Option<f64>,
    /// KB read per operation.
    pub rkbpq: Option<f64>,
    /// Writes per insert.
    pub wpi: Option<f64>,
    /// KB written per insert.
    pub wkbpi: Option<f64>,
    /// Context switches per operation.
    pub cspq: Option<f64>,
    /// Host-wide CPU µs per operation (client included).
    pub cpupq: Option<f64>,
    /// Server CPU µs per operation.
    pub scpupq: Option<f64>,
    /// Client CPU µs per operation.
    pub ccpupq: Option<f64>,
    /// KB the server's processes read from storage per operation.
    pub srkbpq: Option<f64>,
}

/// A step's stored hardware summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCost {
    /// CPUs the host-wide percentages are of.
    pub ncpu: u32,
    /// The watched block devices (`iostat` names).
    pub devices: Vec<String>,
    pub rates: Option<OpRates>,
    /// Averages over the measured seconds; `None` when nothing was sampled.
    pub avg: Option<HostAverages>,
    pub per_op: PerOp,
    /// Database size as the DBMS reports it (`pg_database_size`,
    /// information_schema sums, SQLite pages), bytes, after the step.
    pub db_bytes: Option<u64>,
    /// Apparent size of the data directory on disk (`du -bs`), bytes.
    pub datadir_bytes: Option<u64>,
    /// CPU the sampler thread itself used, percent of one core.
    pub sampler_cpu_pct: Option<f64>,
    /// Why a metric group is missing (`disk`, `server`, `db_size`,
    /// `datadir_size`, `per_op`, …): a missing value is never a zero.
    pub missing: BTreeMap<String, String>,
}

/// Everything the samplers stored for one step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepHost {
    /// One row per sampler interval, in order.
    pub seconds: Vec<HostSecond>,
    pub metrics: HostCost,
    /// The server's own counters (`None`: not sampled; why is in
    /// `metrics.missing["server_counters"]`).
    pub server_counters: Option<super::server_counters::ServerCounters>,
    /// The server's CPU profile (`--cpu-profile`; why there is none is in
    /// `metrics.missing["cpu_profile"]`).
    pub cpu_profile: Option<super::server_counters::CpuProfile>,
    /// Instructions counted under Valgrind (`--instructions`; why there
    /// are none is in `metrics.missing["instructions"]`).
    pub instructions: Option<super::instructions::StepInstructions>,
}

impl StepHost {
    /// Whether the step ran under Valgrind (`--instructions`), counted or
    /// not (then `metrics.missing["instructions"]` says why): its QPS and
    /// latencies are that mode's wall-clock numbers.
    pub fn under_valgrind(&self) -> bool {
        self.instructions.is_some() || self.metrics.missing.contains_key("instructions")
    }
}

/// Averages over `rows`, each weighted by its length: the totals of the
/// window divided by its length. Waits are per request (total wait ÷ total
/// requests). `None` for an empty window.
pub fn averages(rows: &[&HostSecond]) -> Option<HostAverages> {
    let secs: f64 = rows.iter().map(|r| r.secs).sum();
    if rows.is_empty() || secs <= 0.0 {
        return None;
    }
    let mean =
        |f: &dyn Fn(&HostSecond) -> f64| rows.iter().map(|r| f(r) * r.secs).sum::<f64>() / secs;
    let disk_rows: Vec<(&DiskRates, f64)> = rows
        .iter()
        .filter_map(|r| r.disk.as_ref().map(|d| (d, r.secs)))
        .collect();
    let disk = disk_average(&disk_rows);
    // A process metric averages over the rows that have it.
    let where_read = |f: &dyn Fn(&HostSecond) -> Option<f64>| {
        let (mut sum, mut secs) = (0.0, 0.0);
        for r in rows {
            if let Some(v) = f(r) {
                sum += v * r.secs;
                secs += r.secs;
            }
        }
        (secs > 0.0).then(|| sum / secs)
    };
    Some(HostAverages {
        secs,
        samples: rows.len() as u32,
        us: mean(&|r| r.us),
        sy: mean(&|r| r.sy),
        id: mean(&|r| r.id),
        wa: mean(&|r| r.wa),
        st: mean(&|r| r.st),
        cs: mean(&|r| r.cs),
        intr: mean(&|r| r.intr),
        bi: mean(&|r| r.bi),
        bo: mean(&|r| r.bo),
        si: mean(&|r| r.si),
        so: mean(&|r| r.so),
        r: mean(&|r| r.r as f64),
        b: mean(&|r| r.b as f64),
        disk,
        server_cpu_pct: where_read(&|r| r.server_cpu_pct),
        server_read_kbps: where_read(&|r| r.server_read_kbps),
        client_cpu_pct: mean(&|r| r.client_cpu_pct),
        server_rss_bytes: rows.iter().rev().find_map(|r| r.server_rss_bytes),
    })
}

fn disk_average(rows: &[(&DiskRates, f64)]) -> Option<DiskRates> {
    let secs: f64 = rows.iter().map(|r| r.1).sum();
    if rows.is_empty() || secs <= 0.0 {
        return None;
    }
    let total = |f: &dyn Fn(&DiskRates) -> f64| rows.iter().map(|(d, s)| f(d) * s).sum::<f64>();
    let (r, w, d, f) = (
        total(&|d| d.rps),
        total(&|d| d.wps),
        total(&|d| d.dps),
        total(&|d| d.fps),
    );
    Some(DiskRates {
        rps: r / secs,
        rkbps: total(&|d| d.rkbps) / secs,
        r_await: ratio(total(&|d| d.r_await * d.rps), r),
        wps: w / secs,
        wkbps: total(&|d| d.wkbps) / secs,
        w_await: ratio(total(&|d| d.w_await * d.wps), w),
        dps: d / secs,
        dkbps: total(&|d| d.dkbps) / secs,
        d_await: ratio(total(&|d| d.d_await * d.dps), d),
        fps: f / secs,
        f_await: ratio(total(&|d| d.f_await * d.fps), f),
        aqu_sz: total(&|d| d.aqu_sz) / secs,
        util: total(&|d| d.util) / secs,
    })
}

/// Divides the averages by the step's rates (workloads.md C.1).
pub fn per_op(avg: &HostAverages, ncpu: u32, rates: &OpRates) -> PerOp {
    let per = |x: f64, rate: Option<f64>| rate.filter(|r| *r > 0.0).map(|r| x / r);
    let rate = Some(rates.rate);
    let ips = rates.insert_rate;
    let disk = avg.disk.as_ref();
    PerOp {
        rpq: disk.and_then(|d| per(d.rps, rate)),
        rkbpq: disk.and_then(|d| per(d.rkbps, rate)),
        wpi: disk.and_then(|d| per(d.wps, ips)),
        wkbpi: disk.and_then(|d| per(d.wkbps, ips)),
        cspq: per(avg.cs, rate),
        cpupq: per(avg.cpups() / 100.0 * f64::from(ncpu) * 1e6, rate),
        scpupq: avg.server_cpu_pct.and_then(|c| per(c / 100.0 * 1e6, rate)),
        ccpupq: per(avg.client_cpu_pct / 100.0 * 1e6, rate),
        srkbpq: avg.server_read_kbps.and_then(|r| per(r, rate)),
    }
}
