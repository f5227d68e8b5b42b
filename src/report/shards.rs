//! Per-shard throughput of sharded steps (`--client-hosts`), so an
//! overloaded client host is visible: for each target and step run as
//! shards, each shard's host, clients, events, rate, errors and start lag,
//! read from the `shards` list the step stored with its metrics.

use serde::Serialize;

use super::model::Column;

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

/// The Markdown table of `steps` (nothing when there are none).
pub fn markdown(o: &mut String, steps: &[ShardedStep]) {
    use std::fmt::Write;
    if steps.is_empty() {
        return;
    }
    o.push_str("## Client shards\n\n");
    o.push_str(
        "Steps whose clients ran as shards (`--client-hosts`): each shard's rate, so an \
         overloaded client host shows as a shard behind the others. The step's own numbers \
         are the exact merge of these.\n\n",
    );
    o.push_str(
        "| target | step | shard | host | clients | events | qps | errors | start lag ms |\n",
    );
    o.push_str("|---|---|---:|---|---:|---:|---:|---:|---:|\n");
    for s in steps {
        for r in &s.shards {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {:.0} | {} | {} |",
                s.target,
                s.step,
                r.shard,
                r.host,
                r.threads,
                r.events,
                r.qps,
                r.errors,
                r.start_lag_ms
                    .map_or("n/a".to_string(), |l| format!("{l:.1}"))
            );
        }
    }
    o.push('\n');
}

/// The HTML section of `steps` (nothing when there are none).
pub fn html(o: &mut String, steps: &[ShardedStep]) {
    use super::render::svg::esc;
    use std::fmt::Write;
    if steps.is_empty() {
        return;
    }
    o.push_str("<section id=\"shards\"><h2>Client shards</h2>\n");
    o.push_str(
        "<p class=\"legend\">Steps whose clients ran as shards (--client-hosts): each shard's \
         rate, so an overloaded client host shows as a shard behind the others. The step's own \
         numbers are the exact merge of these.</p>\n<table><tr><th class=\"l\">target</th>\
         <th class=\"l\">step</th><th>shard</th><th class=\"l\">host</th><th>clients</th>\
         <th>events</th><th>qps</th><th>errors</th><th>start lag ms</th></tr>\n",
    );
    for s in steps {
        for r in &s.shards {
            let _ = writeln!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td>\
                 <td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td><td>{}</td></tr>",
                esc(&s.target),
                esc(&s.step),
                r.shard,
                esc(&r.host),
                r.threads,
                r.events,
                r.qps,
                r.errors,
                r.start_lag_ms
                    .map_or("n/a".to_string(), |l| format!("{l:.1}"))
            );
        }
    }
    o.push_str("</table></section>\n");
}
