//! The JSON export: every stored run, its targets and their steps with
//! everything the store holds for each.
//!
//! The JSON shape is a public format, so it is built from serde structs
//! (fixed key order) rather than maps, and only grows by adding keys. The
//! one exception is a step's `hw` object, whose keys are the hardware
//! summary's column names shared with the CSV ([`crate::store::hw_columns`]),
//! some of which (`%util`, `f/s`) are not Rust identifiers.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;
use serde::ser::SerializeMap;

use super::server::{self, Counters, Profile};
use super::{FORMAT_VERSION, Store, StoredRun, load};
use crate::record::slices::{self, Slice};
use crate::record::{
    ClientResult, Counts, Group, HostFacts, HostSecond, LatencySummary, SecondSample, StepStatus,
};
use crate::store::{RoleRecord, SCHEMA_VERSION, StoredStep, StoredTarget};

/// Writes run `run` (or every stored run) as pretty-printed JSON:
/// `{"format_version", "tidemark_version", "schema_version", "runs": [{…,
/// "targets": [{…, "steps": [{…}]}]}]}` (docs/export.md).
pub fn export_json(store: &Store, run: Option<i64>, out: &mut dyn Write) -> Result<()> {
    let runs = load(store, run)?;
    let doc = JsonDoc {
        format_version: FORMAT_VERSION,
        tidemark_version: env!("CARGO_PKG_VERSION"),
        schema_version: SCHEMA_VERSION,
        runs: runs.iter().map(JsonRun::from).collect(),
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    out.write_all(b"\n")?;
    Ok(())
}

#[derive(Serialize)]
struct JsonDoc<'a> {
    /// The shape's version ([`FORMAT_VERSION`]).
    format_version: u32,
    /// The build that exported.
    tidemark_version: &'a str,
    schema_version: u32,
    runs: Vec<JsonRun<'a>>,
}

#[derive(Serialize)]
struct JsonRun<'a> {
    id: i64,
    /// The run's identity in every store.
    uuid: &'a str,
    /// The store a copied run came from; null when written here.
    origin: Option<&'a str>,
    started_at: &'a str,
    finished_at: Option<&'a str>,
    status: &'a str,
    command_line: &'a str,
    /// The build that ran it.
    tidemark_version: &'a str,
    profile: &'a str,
    suite: &'a str,
    params: &'a serde_json::Value,
    host: &'a HostFacts,
    targets: Vec<JsonTarget<'a>>,
}

#[derive(Serialize)]
struct JsonTarget<'a> {
    label: &'a str,
    /// 0-based order in the plan; the first is the base of comparisons.
    position: u32,
    /// 0-based pass over the targets (`--repeat`).
    repetition: u32,
    spec: &'a str,
    dbms: &'a str,
    version: &'a str,
    version_number: &'a str,
    config_name: Option<&'a str>,
    config_text: &'a str,
    settings: Settings<'a>,
    managed: bool,
    extra: &'a serde_json::Value,
    status: &'a str,
    failure: Option<&'a str>,
    steps: Vec<JsonStep<'a>>,
}

#[derive(Serialize)]
struct JsonStep<'a> {
    name: &'a str,
    test: &'a str,
    range: Option<u32>,
    /// `Group::as_str` (its serde form spells `range-noagg` differently).
    group: Option<&'static str>,
    reported: bool,
    note: Option<&'a str>,
    params: &'a serde_json::Value,
    started_at: &'a str,
    status: StepStatus,
    failure: Option<&'a str>,
    error_samples: &'a [String],
    secs: f64,
    threads: u32,
    /// The client count of a sweep point; absent outside a sweep.
    #[serde(skip_serializing_if = "Option::is_none")]
    sweep_threads: Option<u32>,
    #[serde(flatten)]
    counts: Counts,
    qps: f64,
    tps: f64,
    rows_per_sec: f64,
    client_cpu_us_per_query: Option<f64>,
    latency_us: &'a LatencySummary,
    per_second: &'a [SecondSample],
    clients: &'a [ClientResult],
    plans: Vec<JsonPlan<'a>>,
    /// Roles of a multi-role step (ibench); absent for other steps.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    roles: &'a [RoleRecord],
    /// Metrics the suite derived (ibench rates, SLA, fairness); absent if none.
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<&'a serde_json::Value>,
    /// A sharded step's shards (`--client-hosts`): host, threads, events,
    /// statements, errors, rate, clock offset and start lag of each;
    /// absent for a step run in one process.
    #[serde(skip_serializing_if = "Option::is_none")]
    shards: Option<&'a serde_json::Value>,
    /// The hardware summary ([`super::hw_columns::json_object`]); null for
    /// steps stored without samplers.
    hw: Option<serde_json::Value>,
    /// The samplers' rows, one per interval (empty without samplers).
    host_seconds: &'a [HostSecond],
    /// Instructions counted under Valgrind (`run --instructions`): this
    /// step's QPS and latencies are wall-clock numbers of that mode, not
    /// comparable with a normal run's. Absent for a normal step.
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a crate::record::StepInstructions>,
    /// The DBMS's own counters over the step ([`server::counters`]);
    /// absent when they were not sampled (`hw.hw_missing` says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    server_counters: Option<Counters<'a>>,
    /// The server's CPU profile (`run --cpu-profile`, [`server::profile`]);
    /// absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu_profile: Option<Profile<'a>>,
    /// A step measured in slices (`--slices`): each slice in the order
    /// measured; absent for a step measured whole.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    slices: Vec<Slice>,
}

#[derive(Serialize)]
struct JsonPlan<'a> {
    statement: &'a str,
    plan: &'a str,
}

/// Server settings as a JSON object, in the order the server reported them.
struct Settings<'a>(&'a [(String, String)]);

impl Serialize for Settings<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl<'a> From<&'a StoredRun> for JsonRun<'a> {
    fn from(r: &'a StoredRun) -> Self {
        JsonRun {
            id: r.id,
            uuid: &r.uuid,
            origin: r.origin.as_deref(),
            started_at: &r.info.started_at,
            finished_at: r.finished_at.as_deref(),
            status: &r.status,
            command_line: &r.info.command_line,
            tidemark_version: &r.info.tidemark_version,
            profile: &r.info.profile,
            suite: &r.info.suite,
            params: &r.info.params,
            host: &r.info.host,
            targets: r.targets.iter().map(JsonTarget::from).collect(),
        }
    }
}

impl<'a> From<&'a StoredTarget> for JsonTarget<'a> {
    fn from(t: &'a StoredTarget) -> Self {
        let i = &t.info;
        JsonTarget {
            label: &i.label,
            position: t.position,
            repetition: t.repetition,
            spec: &i.spec,
            dbms: &i.dbms,
            version: &i.version,
            version_number: &i.version_number,
            config_name: i.config_name.as_deref(),
            config_text: &i.config_text,
            settings: Settings(&i.settings),
            managed: i.managed,
            extra: &i.extra,
            status: &t.status,
            failure: t.failure.as_deref(),
            steps: t.steps.iter().map(JsonStep::from).collect(),
        }
    }
}

impl<'a> From<&'a StoredStep> for JsonStep<'a> {
    fn from(s: &'a StoredStep) -> Self {
        JsonStep {
            name: &s.info.name,
            test: &s.info.test,
            range: s.info.range,
            group: s.info.group.map(Group::as_str),
            reported: s.info.reported,
            note: s.info.note.as_deref(),
            params: &s.info.params,
            started_at: &s.started_at,
            status: s.status,
            failure: s.failure.as_deref(),
            error_samples: &s.error_samples,
            secs: s.secs,
            threads: s.threads,
            sweep_threads: s.info.sweep_threads,
            counts: s.counts,
            qps: s.qps,
            tps: s.tps,
            rows_per_sec: s.rows_per_sec,
            client_cpu_us_per_query: s.client_cpu_us_per_statement(),
            latency_us: &s.latency,
            per_second: &s.per_second,
            clients: &s.clients,
            plans: s
                .plans
                .iter()
                .map(|(statement, plan)| JsonPlan { statement, plan })
                .collect(),
            roles: &s.roles,
            metrics: s.metrics.as_ref(),
            shards: s.metrics.as_ref().and_then(|m| m.get("shards")),
            hw: s
                .host
                .as_ref()
                .map(|h| crate::store::hw_columns::json_object(&h.metrics)),
            host_seconds: s.host.as_ref().map_or(&[], |h| &h.seconds[..]),
            instructions: s.host.as_ref().and_then(|h| h.instructions.as_ref()),
            server_counters: s
                .host
                .as_ref()
                .and_then(|h| h.server_counters.as_ref())
                .map(|c| server::counters(c, s.counts.statements)),
            cpu_profile: s
                .host
                .as_ref()
                .and_then(|h| h.cpu_profile.as_ref())
                .map(server::profile),
            slices: slices::of_metrics(s.metrics.as_ref()),
        }
    }
}
