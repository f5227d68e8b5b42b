//! The JSON export's objects for what the server side recorded over a
//! step: the DBMS's own counters (each value's change over the measured
//! interval, per second and per statement, then every raw reading), the
//! CPU profile (its size, the functions with the most samples of their
//! own, then the folded stacks), and the slices of a sliced step.

use serde::Serialize;

use crate::record::server_counters::{counter_def, self_samples};
use crate::record::{CounterKind, CounterReading, CpuProfile, ServerCounters};

/// Functions listed in a CPU profile's `top`.
pub const TOP_FUNCTIONS: usize = 20;

/// A step's server counters.
#[derive(Serialize)]
pub struct Counters<'a> {
    /// One per value read at least once, in the order the report lists
    /// them.
    pub measured: Vec<CounterSummary>,
    /// Every reading as stored: the first is the baseline before the
    /// step's first interval.
    pub readings: &'a [CounterReading],
}

/// One value over the measured interval.
#[derive(Serialize)]
pub struct CounterSummary {
    pub name: &'static str,
    /// `postgres`, `mysql` or `any`: whose views it comes from.
    pub family: &'static str,
    /// `counter` (only grows) or `gauge` (a level).
    pub kind: &'static str,
    /// What it is, in words.
    pub title: &'static str,
    /// A counter's growth over the measured interval; null for a gauge or
    /// when it was not read at both ends.
    pub growth: Option<f64>,
    /// The measured interval's length, seconds (null with `growth`).
    pub secs: Option<f64>,
    /// `growth` per second.
    pub per_second: Option<f64>,
    /// `growth` per statement the step counted (e.g. WAL bytes per query).
    pub per_statement: Option<f64>,
    /// A gauge's level at the last reading (for a counter: null).
    pub last: Option<f64>,
}

/// The counters of a step that counted `statements`.
pub fn counters(c: &ServerCounters, statements: u64) -> Counters<'_> {
    let measured = c
        .names()
        .into_iter()
        .filter_map(counter_def)
        .map(|d| {
            let counter = d.kind == CounterKind::Counter;
            let grown = if counter {
                c.measured_growth(d.name)
            } else {
                None
            };
            let per = |x: f64, by: f64| (by > 0.0).then(|| x / by);
            CounterSummary {
                name: d.name,
                family: d.family,
                kind: if counter { "counter" } else { "gauge" },
                title: d.title,
                growth: grown.map(|g| g.0),
                secs: grown.map(|g| g.1),
                per_second: grown.and_then(|(g, s)| per(g, s)),
                per_statement: grown.and_then(|(g, _)| per(g, statements as f64)),
                last: if counter {
                    None
                } else {
                    c.first_and_last(d.name).map(|v| v.1)
                },
            }
        })
        .collect();
    Counters {
        measured,
        readings: &c.readings,
    }
}

/// A step's CPU profile.
#[derive(Serialize)]
pub struct Profile<'a> {
    /// Samples per second per CPU.
    pub hz: u32,
    /// How long perf sampled, seconds.
    pub secs: f64,
    /// Samples over all stacks.
    pub samples: u64,
    /// The [`TOP_FUNCTIONS`] functions with the most samples of their own
    /// (leaf frames), most first.
    pub top: Vec<TopFunction>,
    /// The folded stacks as stored (`root;…;leaf COUNT` lines).
    pub folded: &'a str,
}

/// One function's own samples.
#[derive(Serialize)]
pub struct TopFunction {
    pub function: String,
    pub samples: u64,
    /// Its share of all samples, 0–1.
    pub share: f64,
}

/// The export's view of `p`.
pub fn profile(p: &CpuProfile) -> Profile<'_> {
    let mut top: Vec<(String, u64)> = self_samples(&p.folded).into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(TOP_FUNCTIONS);
    let total = p.samples.max(1) as f64;
    Profile {
        hz: p.hz,
        secs: p.secs,
        samples: p.samples,
        top: top
            .into_iter()
            .map(|(function, samples)| TopFunction {
                share: samples as f64 / total,
                function,
                samples,
            })
            .collect(),
        folded: &p.folded,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::record::host_cost::Phase;

    #[test]
    fn counters_give_growth_per_statement_and_gauges_their_level() {
        let reading = |sec, phase, t: f64, wal: f64, dead: f64| CounterReading {
            sec,
            phase,
            end_secs: t,
            values: BTreeMap::from([
                ("wal_bytes".to_string(), wal),
                ("n_dead_tup".to_string(), dead),
            ]),
        };
        let c = ServerCounters {
            readings: vec![
                reading(0, Phase::Warmup, 0.0, 1000.0, 5.0),
                reading(1, Phase::Measured, 1.0, 3000.0, 7.0),
                reading(2, Phase::Measured, 2.0, 5000.0, 9.0),
            ],
        };
        let j = serde_json::to_value(counters(&c, 400)).unwrap();
        let wal = j["measured"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "wal_bytes")
            .unwrap();
        assert_eq!(wal["kind"], "counter");
        assert_eq!(wal["growth"], 4000.0);
        assert_eq!(wal["per_second"], 2000.0);
        assert_eq!(wal["per_statement"], 10.0);
        let dead = j["measured"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "n_dead_tup")
            .unwrap();
        assert_eq!(dead["kind"], "gauge");
        assert_eq!(dead["last"], 9.0);
        assert!(dead["growth"].is_null());
        assert_eq!(j["readings"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn a_profile_lists_its_top_functions_by_own_samples() {
        let p = CpuProfile {
            hz: 99,
            secs: 2.0,
            samples: 10,
            folded: "main;exec;scan 6\nmain;exec 1\nmain;parse 3\n".into(),
        };
        let j = serde_json::to_value(profile(&p)).unwrap();
        assert_eq!(j["top"][0]["function"], "scan");
        assert_eq!(j["top"][0]["samples"], 6);
        assert_eq!(j["top"][0]["share"], 0.6);
        assert_eq!(j["top"][1]["function"], "parse");
        assert_eq!(j["top"].as_array().unwrap().len(), 3);
        assert_eq!(j["folded"], p.folded.as_str());
    }
}
