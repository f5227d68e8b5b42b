//! Per-shard throughput of sharded steps (`--client-hosts`), so an
//! overloaded client host is visible: for each target and step run as
//! shards, each shard's host, clients, events, rate, errors and start lag,
//! read from the `shards` list the step stored with its metrics.

use serde::Serialize;

use super::basis::Column;

/// One shard of one step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShardRow {
    pub shard: u64,
    pub host: String,
    pub threads: u64,
    pub events: u64,
    pub qps: f64,
    pub errors: u64,
    /// How late it started after the published start, ms.
    pub start_lag_ms: Option<f64>,
}

/// A sharded step of one target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShardedStep {
    pub target: String,
    pub step: String,
    pub shards: Vec<ShardRow>,
}

/// Every sharded step of the compared targets, in stored order.
pub fn build(columns: &[Column<'_>]) -> Vec<ShardedStep> {
    let mut out = Vec::new();
    for c in columns {
        for s in &c.target.steps {
            let Some(list) = s
                .metrics
                .as_ref()
                .and_then(|m| m.get("shards"))
                .and_then(|l| l.as_array())
            else {
                continue;
            };
            let int =
                |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
            out.push(ShardedStep {
                target: c.label.to_string(),
                step: s.info.cell_key(),
                shards: list
                    .iter()
                    .map(|v| ShardRow {
                        shard: int(v, "shard"),
                        host: v
                            .get("host")
                            .and_then(|h| h.as_str())
                            .unwrap_or("")
                            .to_string(),
                        threads: int(v, "threads"),
                        events: int(v, "events"),
                        qps: v.get("qps").and_then(|x| x.as_f64()).unwrap_or(0.0),
                        errors: int(v, "errors"),
                        start_lag_ms: v.get("start_lag_ms").and_then(|x| x.as_f64()),
                    })
                    .collect(),
            });
        }
    }
    out
}
