//! Exporting stored runs for use outside tidemark: JSON with everything a
//! run measured, and CSV with one row per step for spreadsheets.
//!
//! The JSON shape is a public format, so it is built from serde structs
//! (fixed key order) rather than maps, and only grows by adding keys. The
//! one exception is a step's `hw` object, whose keys are the hardware
//! summary's column names shared with the CSV ([`super::hw_columns`]),
//! some of which (`%util`, `f/s`) are not Rust identifiers.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;
use serde::ser::SerializeMap;

use super::hw_columns::{HW_NUMERIC, HW_TEXT, numeric_values, text_values};
use super::{RoleRecord, RunRecord, SCHEMA_VERSION, StepRecord, Store, TargetRecord};
use crate::record::{
    ClientResult, Counts, Group, HostFacts, HostSecond, LatencySummary, SecondSample, StepStatus,
};

/// The runs to export: `run`, or all of them, oldest first.
fn load(store: &Store, run: Option<i64>) -> Result<Vec<RunRecord>> {
    match run {
        Some(id) => Ok(vec![store.load_run(id)?]),
        None => store
            .run_ids()?
            .into_iter()
            .map(|id| store.load_run(id))
            .collect(),
    }
}

/// Writes run `run` (or every stored run) as pretty-printed JSON:
/// `{"tidemark_version", "schema_version", "runs": [{…, "targets": [{…,
/// "steps": [{…}]}]}]}`.
pub fn export_json(store: &Store, run: Option<i64>, out: &mut dyn Write) -> Result<()> {
    let runs = load(store, run)?;
    let doc = JsonDoc {
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

impl<'a> From<&'a RunRecord> for JsonRun<'a> {
    fn from(r: &'a RunRecord) -> Self {
        JsonRun {
            id: r.id,
            uuid: &r.uuid,
            origin: r.origin.as_deref(),
            started_at: &r.started_at,
            finished_at: r.finished_at.as_deref(),
            status: &r.status,
            command_line: &r.command_line,
            tidemark_version: &r.tidemark_version,
            profile: &r.profile,
            suite: &r.suite,
            params: &r.params,
            host: &r.host,
            targets: r.targets.iter().map(JsonTarget::from).collect(),
        }
    }
}

impl<'a> From<&'a TargetRecord> for JsonTarget<'a> {
    fn from(t: &'a TargetRecord) -> Self {
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

impl<'a> From<&'a StepRecord> for JsonStep<'a> {
    fn from(s: &'a StepRecord) -> Self {
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
                .map(|h| super::hw_columns::json_object(&h.metrics)),
            host_seconds: s.host.as_ref().map_or(&[], |h| &h.seconds[..]),
            instructions: s.host.as_ref().and_then(|h| h.instructions.as_ref()),
        }
    }
}

/// Columns of the CSV export, in order.
pub const CSV_COLUMNS: [&str; 35] = [
    "run_id",
    "run_started_at",
    "run_status",
    "suite",
    "profile",
    "target_position",
    "target_label",
    "dbms",
    "version_number",
    "config_name",
    "step_seq",
    "step_name",
    "test",
    "range",
    "group",
    "reported",
    "step_status",
    "step_started_at",
    "secs",
    "threads",
    "events",
    "statements",
    "rows",
    "errors",
    "retries",
    "qps",
    "tps",
    "rows_per_sec",
    "lat_avg_us",
    "lat_p50_us",
    "lat_p95_us",
    "lat_p99_us",
    "lat_p999_us",
    "lat_max_us",
    "client_cpu_us_per_query",
];

/// The CSV's instruction-count columns (`run --instructions`; empty for
/// a normal step): whether the step ran under Valgrind (its QPS and
/// latencies are then that mode's wall-clock numbers), the client
/// backends' instructions per statement and per event, the background
/// processes' per statement, the events and statements counted.
pub const INSTRUCTION_COLUMNS: [&str; 6] = [
    "under_valgrind",
    "instr_per_query",
    "instr_per_event",
    "instr_background_per_query",
    "instr_events",
    "instr_statements",
];

/// The CSV header: [`CSV_COLUMNS`], then the hardware summary's columns
/// ([`HW_NUMERIC`], [`HW_TEXT`]), then [`INSTRUCTION_COLUMNS`].
pub fn csv_header() -> Vec<&'static str> {
    CSV_COLUMNS
        .iter()
        .chain(&HW_NUMERIC)
        .chain(&HW_TEXT)
        .chain(&INSTRUCTION_COLUMNS)
        .copied()
        .collect()
}

/// A step's [`INSTRUCTION_COLUMNS`] cells.
fn instruction_cells(s: &StepRecord) -> [String; 6] {
    let valgrind = s.host.as_ref().is_some_and(|h| h.under_valgrind());
    let Some(i) = s.host.as_ref().and_then(|h| h.instructions.as_ref()) else {
        return [
            valgrind.to_string(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ];
    };
    let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    [
        "true".to_string(),
        num(i.per_statement()),
        num(i.per_event()),
        num(i.background_per_statement()),
        i.events.to_string(),
        i.statements.to_string(),
    ]
}

/// Writes run `run` (or every stored run) as CSV: a header line
/// ([`csv_header`]), then one row per step. Empty cells mean "none" (for
/// hardware columns: missing; `hw_missing` says why).
pub fn export_csv(store: &Store, run: Option<i64>, out: &mut dyn Write) -> Result<()> {
    write_csv_row(out, csv_header().into_iter().map(String::from))?;
    for r in load(store, run)? {
        for t in &r.targets {
            for s in &t.steps {
                let opt = |v: Option<String>| v.unwrap_or_default();
                let l = &s.latency;
                let row: [String; 35] = [
                    r.id.to_string(),
                    r.started_at.clone(),
                    r.status.clone(),
                    s.info.suite.clone(),
                    r.profile.clone(),
                    t.position.to_string(),
                    t.info.label.clone(),
                    t.info.dbms.clone(),
                    t.info.version_number.clone(),
                    opt(t.info.config_name.clone()),
                    s.seq.to_string(),
                    s.info.name.clone(),
                    s.info.test.clone(),
                    opt(s.info.range.map(|v| v.to_string())),
                    opt(s.info.group.map(|g| g.as_str().to_string())),
                    s.info.reported.to_string(),
                    s.status.as_str().to_string(),
                    s.started_at.clone(),
                    s.secs.to_string(),
                    s.threads.to_string(),
                    s.counts.events.to_string(),
                    s.counts.statements.to_string(),
                    s.counts.rows.to_string(),
                    s.counts.errors.to_string(),
                    s.counts.retries.to_string(),
                    s.qps.to_string(),
                    s.tps.to_string(),
                    s.rows_per_sec.to_string(),
                    l.avg.to_string(),
                    l.p50.to_string(),
                    l.p95.to_string(),
                    l.p99.to_string(),
                    l.p999.to_string(),
                    l.max.to_string(),
                    opt(s.client_cpu_us_per_statement().map(|v| v.to_string())),
                ];
                let (numeric, text) = match &s.host {
                    Some(h) => (numeric_values(&h.metrics), text_values(&h.metrics)),
                    None => (
                        [None; HW_NUMERIC.len()],
                        [
                            String::new(),
                            String::new(),
                            "stored without samplers".to_string(),
                        ],
                    ),
                };
                let hw = numeric
                    .into_iter()
                    .map(|v| opt(v.map(|v| v.to_string())))
                    .chain(text)
                    .chain(instruction_cells(s));
                write_csv_row(out, row.into_iter().chain(hw))?;
            }
        }
    }
    Ok(())
}

fn write_csv_row(out: &mut dyn Write, cells: impl Iterator<Item = String>) -> Result<()> {
    out.write_all(csv_line(cells).as_bytes())?;
    out.write_all(b"\n")?;
    Ok(())
}

/// One CSV line (RFC 4180), without its line break: the cells, each quoted
/// by [`csv_field`], separated by commas. The report's CSV uses it too.
pub fn csv_line<S: AsRef<str>>(cells: impl IntoIterator<Item = S>) -> String {
    let fields: Vec<String> = cells.into_iter().map(|c| csv_field(c.as_ref())).collect();
    fields.join(",")
}

/// One CSV cell (RFC 4180): quoted when it holds a comma, quote, line break
/// or edge whitespace, with quotes doubled.
pub fn csv_field(s: &str) -> String {
    let needs_quotes = s.contains([',', '"', '\n', '\r'])
        || s.starts_with(char::is_whitespace)
        || s.ends_with(char::is_whitespace);
    if needs_quotes {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::tests::write_sample_run;

    #[test]
    fn csv_quoting() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field(""), "");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field(" padded"), "\" padded\"");
        assert_eq!(csv_line(["a,b", "c", ""]), "\"a,b\",c,");
    }

    #[test]
    fn csv_header_has_every_column_once() {
        let mut seen = std::collections::HashSet::new();
        assert!(csv_header().iter().all(|c| seen.insert(*c)));
    }

    fn export(store: &Store, run: Option<i64>, csv: bool) -> String {
        let mut out = Vec::new();
        if csv {
            export_csv(store, run, &mut out).unwrap();
        } else {
            export_json(store, run, &mut out).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    fn keys(v: &serde_json::Value) -> Vec<&str> {
        let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        k.sort();
        k
    }

    fn sorted(mut k: Vec<&str>) -> Vec<&str> {
        k.sort();
        k
    }

    #[test]
    fn json_export_has_the_documented_shape() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let first = write_sample_run(&mut store);
        let second = write_sample_run(&mut store);

        let text = export(&store, None, false);
        let top = text.find("\"tidemark_version\"").unwrap();
        assert!(
            top < text.find("\"schema_version\"").unwrap(),
            "struct key order"
        );
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(keys(&doc), ["runs", "schema_version", "tidemark_version"]);
        assert_eq!(doc["schema_version"], SCHEMA_VERSION);
        let runs = doc["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(
            (runs[0]["id"].as_i64(), runs[1]["id"].as_i64()),
            (Some(first), Some(second))
        );

        let run = &runs[0];
        assert_eq!(
            keys(run),
            sorted(vec![
                "id",
                "uuid",
                "origin",
                "started_at",
                "finished_at",
                "status",
                "command_line",
                "tidemark_version",
                "profile",
                "suite",
                "params",
                "host",
                "targets"
            ])
        );
        assert_eq!(run["params"]["tables"], 8);
        assert_eq!(run["host"]["storage"]["device"], "nvme0n1");
        let target = &run["targets"][0];
        assert_eq!(
            keys(target),
            sorted(vec![
                "label",
                "position",
                "repetition",
                "spec",
                "dbms",
                "version",
                "version_number",
                "config_name",
                "config_text",
                "settings",
                "managed",
                "extra",
                "status",
                "failure",
                "steps"
            ])
        );
        assert_eq!(target["settings"]["shared_buffers"], "1GB");
        let step = &target["steps"][1];
        assert_eq!(
            keys(step),
            sorted(vec![
                "name",
                "test",
                "range",
                "group",
                "reported",
                "note",
                "params",
                "started_at",
                "status",
                "failure",
                "error_samples",
                "secs",
                "threads",
                "sweep_threads",
                "events",
                "statements",
                "rows",
                "errors",
                "retries",
                "qps",
                "tps",
                "rows_per_sec",
                "client_cpu_us_per_query",
                "latency_us",
                "per_second",
                "clients",
                "plans",
                "hw",
                "host_seconds"
            ])
        );
        assert_eq!(step["status"], "errors");
        assert!(step["hw"].is_null(), "stored without samplers");
        assert_eq!(step["host_seconds"], json!([]));
        assert_eq!(step["range"], serde_json::Value::Null);
        assert_eq!(target["steps"][2]["group"], "range-noagg");
        assert_eq!(
            keys(&step["latency_us"]),
            ["avg", "max", "p50", "p95", "p99", "p999"]
        );
        assert_eq!(step["per_second"].as_array().unwrap().len(), 3);
        assert_eq!(step["per_second"][2]["max_latency_us"], 4_002);
        assert_eq!(step["clients"][3]["finish_secs"], 10.625);
        assert_eq!(
            step["plans"][1],
            json!({"statement": "SELECT 1", "plan": "Result"})
        );
        let cpu = step["client_cpu_us_per_query"].as_f64().unwrap();
        assert!((cpu - 87.5).abs() < 1e-9, "{cpu}");

        let one: serde_json::Value =
            serde_json::from_str(&export(&store, Some(second), false)).unwrap();
        assert_eq!(one["runs"].as_array().unwrap().len(), 1);
        assert_eq!(one["runs"][0]["id"].as_i64(), Some(second));
    }

    #[test]
    fn csv_export_has_a_header_and_quotes() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let run = write_sample_run(&mut store);
        let text = export(&store, Some(run), true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], csv_header().join(","));
        assert!(lines[0].starts_with(&CSV_COLUMNS.join(",")));
        assert_eq!(lines.len(), 1 + 6);
        // The label `pg15.quick, "x"` is quoted with its quotes doubled.
        assert!(
            lines[1].contains(",\"pg15.quick, \"\"x\"\"\","),
            "{}",
            lines[1]
        );
        assert!(lines[1].starts_with(&format!(
            "{run},2026-11-20T23:51:04Z,interrupted,sysbench,quick,0,"
        )));
        // The unquoted cells after the label: one per remaining column.
        let after = lines[2].split("\"\"x\"\"\",").nth(1).unwrap();
        assert_eq!(after.split(',').count(), csv_header().len() - 7);
        assert!(
            lines[2].ends_with(",stored without samplers,false,,,,,"),
            "{}",
            lines[2]
        );
    }
}
