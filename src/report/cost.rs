//! Hardware cost per operation: the numbers the seeds use to explain a
//! change ("CPU per query went up"), as far as the store holds them.
//!
//! Today a step stores only the client threads' CPU, so client CPU µs per
//! query is the one cost the report can compute. The host samplers (vmstat
//! and iostat equivalents, server CPU) are being added to the store
//! separately; [`host_metrics_of`] is where the report will read them. Until
//! then every host column is `None` and renders as "n/a", never as zero.

use serde::Serialize;

use crate::store::StepRecord;

/// The host-side metrics of one step, named as the reference names them
/// (workloads.md C.1, A.7). `None`: not measured or not stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct StepHostMetrics {
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
    /// Database size, GB.
    pub dbgb: Option<f64>,
    /// Server resident memory, GB.
    pub rss_gb: Option<f64>,
}

/// EXTENSION POINT for the host samplers' step summary: the host metrics
/// stored for `step`. The store does not hold them yet, so this returns all
/// `None`; once `StepRecord` carries the step summary, fill the fields from
/// it here and every table that shows host costs picks them up.
pub fn host_metrics_of(_step: &StepRecord) -> StepHostMetrics {
    StepHostMetrics::default()
}

/// A per-operation cost column of the sysbench section.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CostColumn {
    /// Short name, as the seeds write it.
    pub key: &'static str,
    /// What it measures.
    pub title: &'static str,
}

/// The sysbench per-query cost columns, in the order they are shown.
pub const SYSBENCH_COST: [CostColumn; 7] = [
    CostColumn {
        key: "cpupq",
        title: "host CPU µs per query (vmstat us+sy, client included)",
    },
    CostColumn {
        key: "cspq",
        title: "context switches per query",
    },
    CostColumn {
        key: "rpq",
        title: "storage reads per query",
    },
    CostColumn {
        key: "rkbpq",
        title: "KB read from storage per query",
    },
    CostColumn {
        key: "wkbpi",
        title: "KB written to storage per query",
    },
    CostColumn {
        key: "server_cpu",
        title: "server CPU µs per query",
    },
    CostColumn {
        key: "client_cpu",
        title: "client CPU µs per query (tidemark's client threads)",
    },
];

/// The cost of one sysbench step, aligned with [`SYSBENCH_COST`].
pub fn sysbench_cost(step: &StepRecord) -> Vec<Option<f64>> {
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
