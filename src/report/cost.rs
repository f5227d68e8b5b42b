//! Hardware cost per operation: the numbers the seeds use to explain a
//! change ("CPU per query went up"), read from the step summary the host
//! samplers stored with each step (vmstat and iostat equivalents, server
//! CPU, sizes). A metric the store does not hold for a step (an external
//! server's CPU, a disk that could not be watched, a run from before the
//! samplers) is `None` and renders as "n/a", never as zero.

use serde::Serialize;

use crate::record::{HostCost, OpRates};
use crate::store::StoredStep;

/// The host-side metrics of one step, named as the reference names them
/// (workloads.md C.1, A.7). `None`: not measured or not stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepHostMetrics {
    /// What one operation is in the per-operation columns (`qps`, `ips`,
    /// `indexed rows/s`: the stored rate basis).
    pub basis: Option<String>,
    /// Storage reads per second.
    pub rps: Option<f64>,
    /// MB read per second.
    pub rmbps: Option<f64>,
    /// Storage writes per second.
    pub wps: Option<f64>,
    /// MB written per second.
    pub wmbps: Option<f64>,
    /// Storage reads per operation.
    pub rpq: Option<f64>,
    /// KB read per operation.
    pub rkbpq: Option<f64>,
    /// Storage writes per insert.
    pub wpi: Option<f64>,
    /// KB written per insert (per query for sysbench).
    pub wkbpi: Option<f64>,
    /// Context switches per second.
    pub csps: Option<f64>,
    /// Average CPU utilisation, user + system, percent.
    pub cpups: Option<f64>,
    /// Context switches per operation.
    pub cspq: Option<f64>,
    /// Host-wide CPU µs per operation (client included, as vmstat sees it).
    pub cpupq: Option<f64>,
    /// The server processes' CPU µs per operation.
    pub server_cpu_us_per_op: Option<f64>,
    /// Database size, GB (the reference's `dbgb1`).
    pub dbgb: Option<f64>,
    /// The whole data directory's size, GB (`dbgb2`).
    pub dbgb2: Option<f64>,
    /// Server resident memory, GB.
    pub rss_gb: Option<f64>,
}

/// The host metrics stored for `step`, all `None` when it was stored
/// without a hardware summary.
pub fn host_metrics_of(step: &StoredStep) -> StepHostMetrics {
    step.host
        .as_ref()
        .map_or_else(StepHostMetrics::default, |h| host_metrics(&h.metrics))
}

/// The report's columns of a stored hardware summary.
pub fn host_metrics(m: &HostCost) -> StepHostMetrics {
    let avg = m.avg.as_ref();
    let disk = avg.and_then(|a| a.disk.as_ref());
    let p = &m.per_op;
    let gb = |bytes: Option<u64>| bytes.map(|b| b as f64 / GIB);
    StepHostMetrics {
        basis: m.rates.as_ref().map(|r| r.basis.clone()),
        rps: disk.map(|d| d.rps),
        rmbps: disk.map(|d| d.rkbps / 1024.0),
        wps: disk.map(|d| d.wps),
        wmbps: disk.map(|d| d.wkbps / 1024.0),
        rpq: p.rpq,
        rkbpq: p.rkbpq,
        wpi: p.wpi,
        wkbpi: p.wkbpi,
        csps: avg.map(|a| a.cs),
        cpups: avg.map(|a| a.cpups()),
        cspq: p.cspq,
        cpupq: p.cpupq,
        server_cpu_us_per_op: p.scpupq,
        dbgb: gb(m.db_bytes),
        dbgb2: gb(m.datadir_bytes),
        rss_gb: gb(avg.and_then(|a| a.server_rss_bytes)),
    }
}

/// Bytes in a GB as the exports count them (`dbgb1`, `rss`).
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// "per query", "per inserted row", … for a stored basis.
pub fn per_what(basis: Option<&str>) -> &'static str {
    basis.map_or("per operation", OpRates::per_what)
}

/// A per-operation cost column of the sysbench section.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CostColumn {
    /// Short name, as the seeds write it.
    pub key: &'static str,
    /// What it measures.
    pub title: &'static str,
    /// Below this on both sides a ratio means nothing (0.000 vs 0.000
    /// reads per query is not "4× more"): no relative value is shown.
    pub floor: f64,
    /// Read from the whole host (vmstat, iostat), not from the server's
    /// or the client's own processes: with several servers up at once
    /// (`--interleave steps`) it also counts the others' background work.
    pub host_wide: bool,
}

/// The sysbench per-query cost columns, in the order they are shown.
pub const SYSBENCH_COST: [CostColumn; 7] = [
    CostColumn {
        key: "cpupq",
        title: "host CPU µs per query (vmstat us+sy, client included)",
        floor: 0.01,
        host_wide: true,
    },
    CostColumn {
        key: "cspq",
        title: "context switches per query",
        floor: 0.001,
        host_wide: true,
    },
    CostColumn {
        key: "rpq",
        title: "storage reads per query",
        floor: 0.001,
        host_wide: true,
    },
    CostColumn {
        key: "rkbpq",
        title: "KB read from storage per query",
        floor: 0.001,
        host_wide: true,
    },
    CostColumn {
        key: "wkbpi",
        title: "KB written to storage per query",
        floor: 0.001,
        host_wide: true,
    },
    CostColumn {
        key: "server_cpu",
        title: "server CPU µs per query",
        floor: 0.01,
        host_wide: false,
    },
    CostColumn {
        key: "client_cpu",
        title: "client CPU µs per query (tidemark's client threads)",
        floor: 0.01,
        host_wide: false,
    },
];

/// A cost column's name in the seeds' wide per-operation table
/// (`cpu/o`, `cs/o`, `r/o`, `rKB/o`, `wKB/o`), plus tidemark's own server
/// and client CPU (`srv/o`, `cli/o`, µs per query).
pub fn seed_name(key: &str) -> &'static str {
    match key {
        "cpupq" => "cpu/o",
        "cspq" => "cs/o",
        "rpq" => "r/o",
        "rkbpq" => "rKB/o",
        "wkbpi" => "wKB/o",
        "server_cpu" => "srv/o",
        "client_cpu" => "cli/o",
        _ => "?",
    }
}

/// The columns of the seeds' wide per-operation table for the cost
/// columns `present`: `Some(k)` a cost column, `None` the rate (`o/s`),
/// in the order `cpu/o cs/o r/o rKB/o wKB/o o/s` then server and client
/// CPU. The name of each is [`seed_column_name`].
pub fn seed_columns(columns: &[CostColumn], present: &[bool]) -> Vec<Option<usize>> {
    let shown: Vec<usize> = (0..columns.len()).filter(|&k| present[k]).collect();
    let split = shown
        .iter()
        .position(|&k| columns[k].key == "server_cpu")
        .unwrap_or(shown.len());
    shown[..split]
        .iter()
        .map(|&k| Some(k))
        .chain([None])
        .chain(shown[split..].iter().map(|&k| Some(k)))
        .collect()
}

/// The header of a [`seed_columns`] entry.
pub fn seed_column_name(columns: &[CostColumn], c: Option<usize>) -> &'static str {
    c.map_or("o/s", |k| seed_name(columns[k].key))
}

/// The cost of one sysbench step, aligned with [`SYSBENCH_COST`].
pub fn sysbench_cost(step: &StoredStep) -> Vec<Option<f64>> {
    let h = host_metrics_of(step);
    vec![
        h.cpupq,
        h.cspq,
        h.rpq,
        h.rkbpq,
        h.wkbpi,
        h.server_cpu_us_per_op,
        // A stored 0 means the client CPU was not measured, not that it
        // was free.
        step.client_cpu_us_per_statement().filter(|v| *v > 0.0),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{DiskRates, HostAverages, PerOp};

    #[test]
    fn the_stored_summary_fills_the_columns_and_missing_stays_none() {
        let m = HostCost {
            ncpu: 2,
            rates: Some(OpRates::inserts(500.0)),
            avg: Some(HostAverages {
                us: 30.0,
                sy: 15.0,
                cs: 9_000.0,
                disk: Some(DiskRates {
                    rps: 4.0,
                    rkbps: 2_048.0,
                    wps: 120.0,
                    wkbps: 5_120.0,
                    ..DiskRates::default()
                }),
                server_rss_bytes: Some(512 * 1024 * 1024),
                ..HostAverages::default()
            }),
            per_op: PerOp {
                wpi: Some(0.24),
                cpupq: Some(1_800.0),
                scpupq: None,
                ..PerOp::default()
            },
            db_bytes: Some(2 * 1024 * 1024 * 1024),
            ..HostCost::default()
        };
        let h = host_metrics(&m);
        assert_eq!(h.basis.as_deref(), Some("ips"));
        assert_eq!((h.rps, h.rmbps), (Some(4.0), Some(2.0)));
        assert_eq!((h.wps, h.wmbps), (Some(120.0), Some(5.0)));
        assert_eq!((h.csps, h.cpups), (Some(9_000.0), Some(45.0)));
        assert_eq!((h.wpi, h.cpupq), (Some(0.24), Some(1_800.0)));
        assert_eq!((h.dbgb, h.rss_gb), (Some(2.0), Some(0.5)));
        // Not measured: n/a, never zero.
        assert_eq!((h.server_cpu_us_per_op, h.rpq), (None, None));
        assert_eq!(per_what(h.basis.as_deref()), "per inserted row");
        let bare = host_metrics(&HostCost::default());
        assert_eq!(bare, StepHostMetrics::default());
    }
}
