//! CPU profiles in the report (`--cpu-profile`): per step and target the
//! folded stacks perf sampled (the HTML draws them as flamegraphs, and a
//! differential one base → target), and the top functions by CPU µs per
//! operation with their change relative to the base, so "where did the
//! extra 3 µs per query go" has an answer.
//!
//! A function's CPU is its self time: the samples whose stack ends in it,
//! each worth 1/hz s of one CPU, divided by the operations of the profiled
//! interval (the step's rate × how long perf sampled).

use std::collections::BTreeMap;

use serde::Serialize;

use super::basis::{Column, relative};
use super::cost::per_what;
use super::server_counters::{ServerRow, Shown};
use crate::record::CpuProfile;
pub use crate::record::server_counters::self_samples;
use crate::store::StoredStep;

/// Functions the top table lists (the union of each target's top ones).
const TOP: usize = 15;

/// The CPU-profile section: one entry per step any target profiled.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProfileSection {
    pub steps: Vec<ProfileStep>,
    /// Per target: why it has no profile (the first reason stored).
    pub missing: Vec<Option<String>>,
}

/// One step's profiles, targets side by side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileStep {
    pub name: String,
    /// "per query", "per inserted row", …
    pub per: String,
    /// Per target, base first.
    pub profiles: Vec<Option<StepProfile>>,
    pub top: Vec<TopFunction>,
}

/// One target's profile of a step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepProfile {
    pub samples: u64,
    pub secs: f64,
    pub hz: u32,
    /// Operations in the profiled interval (`None`: no rate stored).
    pub ops: Option<f64>,
    /// All sampled server CPU, µs per operation.
    pub us_per_op: Option<f64>,
    pub folded: String,
}

/// One function's self CPU per operation across the targets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopFunction {
    pub function: String,
    pub us_per_op: Vec<Option<f64>>,
    /// Per target: value ÷ base (`None` for the base).
    pub relative: Vec<Option<f64>>,
}

impl TopFunction {
    /// As a table row: the function's name, its values and ratios.
    pub fn as_row(&self) -> ServerRow {
        ServerRow {
            name: self.function.clone(),
            label: self.function.clone(),
            shown: Shown::PerOp,
            values: self.us_per_op.clone(),
            relative: self.relative.clone(),
        }
    }
}

/// The section for `columns`; `None` when no step was profiled and no
/// target says why not.
pub fn build(columns: &[Column<'_>]) -> Option<ProfileSection> {
    let missing: Vec<Option<String>> = columns
        .iter()
        .map(|c| {
            c.target
                .steps
                .iter()
                .find_map(|s| s.host.as_ref()?.metrics.missing.get("cpu_profile").cloned())
        })
        .collect();
    let mut names: Vec<&str> = Vec::new();
    for c in columns {
        for s in c.target.steps.iter().filter(|s| s.info.reported) {
            if profile_of(s).is_some() && !names.contains(&s.info.name.as_str()) {
                names.push(&s.info.name);
            }
        }
    }
    if names.is_empty() && missing.iter().all(Option::is_none) {
        return None;
    }
    let steps = names
        .iter()
        .map(|name| {
            let steps: Vec<Option<&StoredStep>> = columns.iter().map(|c| c.step(name)).collect();
            step(name, &steps)
        })
        .collect();
    Some(ProfileSection { steps, missing })
}

fn profile_of(s: &StoredStep) -> Option<&CpuProfile> {
    s.host.as_ref()?.cpu_profile.as_ref()
}

fn step(name: &str, steps: &[Option<&StoredStep>]) -> ProfileStep {
    let basis = steps.iter().flatten().find_map(|s| {
        let r = s.host.as_ref()?.metrics.rates.as_ref()?;
        Some(r.basis.clone())
    });
    let profiles: Vec<Option<StepProfile>> = steps
        .iter()
        .map(|s| {
            let s = (*s)?;
            let p = profile_of(s)?;
            let rate = s.host.as_ref()?.metrics.rates.as_ref().map(|r| r.rate);
            let ops = rate.filter(|r| *r > 0.0).map(|r| r * p.secs);
            Some(StepProfile {
                samples: p.samples,
                secs: p.secs,
                hz: p.hz,
                ops,
                us_per_op: ops.map(|n| p.samples as f64 / f64::from(p.hz) * 1e6 / n),
                folded: p.folded.clone(),
            })
        })
        .collect();
    let selfs: Vec<Option<BTreeMap<String, f64>>> = profiles
        .iter()
        .map(|p| {
            let p = p.as_ref()?;
            let ops = p.ops?;
            let per_sample = 1e6 / f64::from(p.hz) / ops;
            Some(
                self_samples(&p.folded)
                    .into_iter()
                    .map(|(f, n)| (f, n as f64 * per_sample))
                    .collect(),
            )
        })
        .collect();
    let mut chosen: Vec<String> = Vec::new();
    for m in selfs.iter().flatten() {
        let mut by_cost: Vec<(&String, &f64)> = m.iter().collect();
        by_cost.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
        for (f, _) in by_cost.into_iter().take(TOP) {
            if !chosen.contains(f) {
                chosen.push(f.clone());
            }
        }
    }
    let cost = |m: &Option<BTreeMap<String, f64>>, f: &str| -> Option<f64> {
        m.as_ref().map(|m| m.get(f).copied().unwrap_or(0.0))
    };
    let mut top: Vec<TopFunction> = chosen
        .iter()
        .map(|f| {
            let us: Vec<Option<f64>> = selfs.iter().map(|m| cost(m, f)).collect();
            let base = us[0];
            TopFunction {
                function: f.clone(),
                relative: us
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i > 0).then(|| relative((*v)?, base?)).flatten())
                    .collect(),
                us_per_op: us,
            }
        })
        .collect();
    let most = |t: &TopFunction| t.us_per_op.iter().flatten().fold(0.0f64, |a, b| a.max(*b));
    top.sort_by(|a, b| {
        most(b)
            .total_cmp(&most(a))
            .then(a.function.cmp(&b.function))
    });
    ProfileStep {
        name: name.to_string(),
        per: per_what(basis.as_deref()).to_string(),
        profiles,
        top,
    }
}

/// `folded` with every count multiplied by `factor` (rounded), so two
/// profiles of different lengths and rates compare per operation.
pub fn scaled(folded: &str, factor: f64) -> String {
    let mut out = String::new();
    for line in folded.lines() {
        if let Some((stack, count)) = line.rsplit_once(' ')
            && let Ok(n) = count.parse::<f64>()
        {
            let n = (n * factor).round() as u64;
            if n > 0 {
                out.push_str(stack);
                out.push(' ');
                out.push_str(&n.to_string());
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_time_is_counted_at_the_leaf() {
        let folded =
            "postgres;PostgresMain;ExecScan 5\npostgres;PostgresMain 2\npostgres;x;ExecScan 1\n";
        let s = self_samples(folded);
        assert_eq!(s["ExecScan"], 6);
        assert_eq!(s["PostgresMain"], 2);
        assert_eq!(
            scaled(folded, 0.5),
            "postgres;PostgresMain;ExecScan 3\npostgres;PostgresMain 1\npostgres;x;ExecScan 1\n"
        );
    }
}
