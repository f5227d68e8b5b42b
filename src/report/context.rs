//! The context block at the top of a report: on what host, with which
//! server versions, configs and settings, which profile and durations, and
//! which tidemark made the numbers.
//!
//! A relative QPS means nothing without it: two runs on different hosts, or
//! with a setting changed, are a different experiment. So the block also
//! spells out what differs between the compared targets.

use serde::Serialize;

use super::basis::Column;
use crate::knobs::{KnobDef, READ_SECS, TABLE_SIZE, TABLES, THREADS, WARMUP_SECS, WRITE_SECS};
use crate::record::HostFacts;
use crate::util::time::parse_rfc3339_utc;

/// Facts about the compared runs and targets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Context {
    /// The runs the targets come from, in order of first use.
    pub runs: Vec<RunContext>,
    /// Whether every run ran on the same kind of host (same hostname, CPU,
    /// cores, memory, kernel and OS).
    pub same_host: bool,
    /// One per compared target, base first.
    pub targets: Vec<TargetContext>,
    /// Non-default settings every target of a DBMS family has with the
    /// same value.
    pub settings_common: Vec<Setting>,
    /// Settings whose value differs between targets of one DBMS family (or
    /// that only some of them set). Settings are only compared within a
    /// family: PostgreSQL's and MariaDB's names mean different things.
    pub settings_differ: Vec<SettingDiff>,
}

/// One stored run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunContext {
    pub id: i64,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Wall time from start to finish, when the run finished.
    pub wall_secs: Option<f64>,
    pub status: String,
    /// The tidemark version that ran it.
    pub tidemark_version: String,
    pub profile: String,
    pub suite: String,
    pub command_line: String,
    pub host: HostFacts,
}

/// One compared target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TargetContext {
    pub label: String,
    pub run_id: i64,
    /// What the server said it is (`SELECT version()`).
    pub version: String,
    pub config_name: Option<String>,
    pub profile: String,
    /// The run's parameters in one line (tables × rows, threads, seconds).
    pub workload: String,
    /// Reported steps stored for it.
    pub reported_steps: usize,
    /// Sum of the measured seconds of its reported steps.
    pub measured_secs: f64,
    /// How many non-default settings it ran with.
    pub settings: usize,
    /// Its DBMS family as stored (`postgres`, `mariadb`, `mysql`, `sqlite`).
    pub dbms: String,
    /// How its server was built, when tidemark built it from source
    /// (flags, compiler, source revision, patches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// The configuration file tidemark wrote for its server (empty for a
    /// server it did not start); the HTML report shows it folded.
    #[serde(skip)]
    pub config_text: String,
}

/// A setting and its value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Setting {
    /// The DBMS family whose targets share it.
    pub dbms: String,
    pub name: String,
    pub value: String,
}

/// A setting that differs: its value per target (base first; `None`: the
/// target ran with the server default, or is of another DBMS family, which
/// [`SettingDiff::dbms`] tells apart).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SettingDiff {
    /// The DBMS family it was compared within.
    pub dbms: String,
    pub name: String,
    pub values: Vec<Option<String>>,
}

/// Builds the context of `columns` (base first).
pub fn build(columns: &[Column<'_>]) -> Context {
    let mut runs: Vec<RunContext> = Vec::new();
    for c in columns {
        if runs.iter().any(|r| r.id == c.run.id) {
            continue;
        }
        let r = c.run;
        let wall_secs = r.finished_at.as_deref().and_then(|f| {
            let (a, b) = (
                parse_rfc3339_utc(&r.info.started_at)?,
                parse_rfc3339_utc(f)?,
            );
            (b >= a).then(|| (b - a) as f64)
        });
        runs.push(RunContext {
            id: r.id,
            started_at: r.info.started_at.clone(),
            finished_at: r.finished_at.clone(),
            wall_secs,
            status: r.status.clone(),
            tidemark_version: r.info.tidemark_version.clone(),
            profile: r.info.profile.clone(),
            suite: r.info.suite.clone(),
            command_line: r.info.command_line.clone(),
            host: r.info.host.clone(),
        });
    }
    let same_host = runs.windows(2).all(|w| same_host(&w[0].host, &w[1].host));
    let targets = columns
        .iter()
        .map(|c| {
            let reported = c.target.steps.iter().filter(|s| s.info.reported);
            TargetContext {
                label: c.label.to_string(),
                run_id: c.run.id,
                version: c.target.info.version.clone(),
                config_name: c.target.info.config_name.clone(),
                profile: c.run.info.profile.clone(),
                workload: workload_line(&c.run.info.params),
                reported_steps: reported.clone().count(),
                measured_secs: reported.map(|s| s.secs).sum(),
                settings: c.target.info.settings.len(),
                dbms: c.target.info.dbms.clone(),
                build: c.target.info.extra["build"]["summary"]
                    .as_str()
                    .map(str::to_string),
                config_text: c.target.info.config_text.clone(),
            }
        })
        .collect();
    let by_target: Vec<(&str, &[(String, String)])> = columns
        .iter()
        .map(|c| {
            (
                c.target.info.dbms.as_str(),
                c.target.info.settings.as_slice(),
            )
        })
        .collect();
    let (settings_common, settings_differ) = compare_by_family(&by_target);
    Context {
        runs,
        same_host,
        targets,
        settings_common,
        settings_differ,
    }
}

/// A settings-table cell: the target's value, `(default)` when a target of
/// the diff's family did not set it, `—` for targets of other families.
pub fn setting_cell(value: &Option<String>, target: &TargetContext, diff: &SettingDiff) -> String {
    match value {
        Some(v) => v.clone(),
        None if target.dbms == diff.dbms => "(default)".to_string(),
        None => "—".to_string(),
    }
}

/// The shared settings grouped by DBMS family, in the order they appear.
pub fn common_by_family(c: &Context) -> Vec<(&str, Vec<&Setting>)> {
    let mut out: Vec<(&str, Vec<&Setting>)> = Vec::new();
    for s in &c.settings_common {
        match out.iter_mut().find(|(f, _)| *f == s.dbms) {
            Some((_, v)) => v.push(s),
            None => out.push((&s.dbms, vec![s])),
        }
    }
    out
}

/// Who shares a family's common settings: "all targets share" when every
/// target is of that family, else "the postgres targets share" (or "of
/// sqlite3541.wal" for a family with one target).
pub fn shared_by(c: &Context, family: &str) -> String {
    let members: Vec<&TargetContext> = c.targets.iter().filter(|t| t.dbms == family).collect();
    if members.len() == c.targets.len() {
        "all targets share".to_string()
    } else if let [only] = members.as_slice() {
        format!("of {}", only.label)
    } else {
        format!("the {family} targets share")
    }
}

/// Whether the compared targets are of more than one DBMS family.
pub fn mixed_families(c: &Context) -> bool {
    c.targets.windows(2).any(|w| w[0].dbms != w[1].dbms)
}

/// The legend of the settings table.
pub fn settings_legend(c: &Context) -> &'static str {
    if mixed_families(c) {
        "compared within each DBMS family (— marks a target of another family); ports, sockets and paths are left out"
    } else {
        "ports, sockets and paths are left out"
    }
}

/// The sentence shown when no setting differs within any family.
pub fn no_differences(c: &Context) -> String {
    if mixed_families(c) {
        "Settings are compared only between targets of the same DBMS family; no setting differs within one.".to_string()
    } else {
        "All targets ran with the same settings.".to_string()
    }
}

/// Whether two hosts are the same kind of machine (the data directory's
/// path may differ).
fn same_host(a: &HostFacts, b: &HostFacts) -> bool {
    a.hostname == b.hostname
        && a.cores == b.cores
        && a.memory_bytes == b.memory_bytes
        && a.kernel == b.kernel
        && a.os == b.os
        && a.cpu_model == b.cpu_model
}

/// Settings that name where one server instance lives (ports, sockets,
/// paths): they differ between any two servers and say nothing about the
/// experiment, so the context leaves them out.
pub const INSTANCE_SETTINGS: [&str; 13] = [
    "port",
    "unix_socket_directories",
    "data_directory",
    "config_file",
    "hba_file",
    "ident_file",
    "external_pid_file",
    "log_directory",
    "socket",
    "datadir",
    "pid_file",
    "log_error",
    "tmpdir",
];

/// [`compare_settings`] within each DBMS family (in order of first
/// appearance); a diff's values are spread back over all columns, `None`
/// for the columns of other families.
fn compare_by_family(targets: &[(&str, &[(String, String)])]) -> (Vec<Setting>, Vec<SettingDiff>) {
    let mut families: Vec<&str> = Vec::new();
    for (dbms, _) in targets {
        if !families.contains(dbms) {
            families.push(dbms);
        }
    }
    let mut common = Vec::new();
    let mut differ = Vec::new();
    for family in families {
        let members: Vec<usize> = (0..targets.len())
            .filter(|&i| targets[i].0 == family)
            .collect();
        let all: Vec<&[(String, String)]> = members.iter().map(|&i| targets[i].1).collect();
        let (c, d) = compare_settings(family, &all);
        common.extend(c);
        differ.extend(d.into_iter().map(|mut d| {
            let mut values = vec![None; targets.len()];
            for (value, &i) in d.values.drain(..).zip(&members) {
                values[i] = value;
            }
            d.values = values;
            d
        }));
    }
    (common, differ)
}

/// Splits the settings of targets of one DBMS family into those all share
/// and those that differ, leaving out [`INSTANCE_SETTINGS`].
pub fn compare_settings(
    dbms: &str,
    all: &[&[(String, String)]],
) -> (Vec<Setting>, Vec<SettingDiff>) {
    let mut names: Vec<&str> = all
        .iter()
        .flat_map(|s| s.iter().map(|(n, _)| n.as_str()))
        .filter(|n| !INSTANCE_SETTINGS.contains(n))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut common = Vec::new();
    let mut differ = Vec::new();
    for name in names {
        let values: Vec<Option<String>> = all
            .iter()
            .map(|s| s.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()))
            .collect();
        match &values[0] {
            Some(v) if values.iter().all(|x| x.as_ref() == Some(v)) => common.push(Setting {
                dbms: dbms.to_string(),
                name: name.to_string(),
                value: v.clone(),
            }),
            _ => differ.push(SettingDiff {
                dbms: dbms.to_string(),
                name: name.to_string(),
                values,
            }),
        }
    }
    (common, differ)
}

/// A run's parameters in one line: the sysbench knobs by name (the stored
/// parameters carry the [`crate::knobs`] names), anything else as
/// `key=value`.
pub fn workload_line(params: &serde_json::Value) -> String {
    let Some(map) = params.as_object() else {
        return String::new();
    };
    let num = |k: KnobDef| map.get(k.name).and_then(|v| v.as_f64());
    let mut parts = Vec::new();
    if let (Some(t), Some(r)) = (num(TABLES), num(TABLE_SIZE)) {
        parts.push(format!(
            "{} × {} rows",
            plural(t, "table"),
            group_thousands(r as u64)
        ));
    }
    if let Some(t) = num(THREADS) {
        parts.push(plural(t, "thread"));
    } else if let Some(serde_json::Value::String(sweep)) = map.get(THREADS.name) {
        parts.push(format!("threads {sweep}"));
    }
    if let (Some(r), Some(w)) = (num(READ_SECS), num(WRITE_SECS)) {
        parts.push(format!("read {} s / write {} s", short(r), short(w)));
    }
    if let Some(w) = num(WARMUP_SECS) {
        parts.push(format!("warm-up {} s", short(w)));
    }
    let known = [
        TABLES,
        TABLE_SIZE,
        THREADS,
        READ_SECS,
        WRITE_SECS,
        WARMUP_SECS,
    ]
    .map(|k| k.name);
    for (k, v) in map {
        if !known.contains(&k.as_str()) {
            parts.push(param_text(k, v));
        }
    }
    parts.join(", ")
}

/// One other parameter as `key=value`; an object (the buffer-pool sizing)
/// as its choice and note instead of raw JSON.
fn param_text(key: &str, value: &serde_json::Value) -> String {
    use serde_json::Value;
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let Value::Object(obj) = value else {
        return format!("{key}={}", text(value));
    };
    let choice = obj.get(key).map(text);
    let note = obj.get("note").map(text);
    let rest: Vec<String> = obj
        .iter()
        .filter(|(k, _)| k.as_str() != key && k.as_str() != "note")
        .map(|(k, v)| format!("{k}={}", text(v)))
        .collect();
    match (choice, note) {
        (Some(c), Some(n)) => format!("{key}={c} ({n})"),
        (Some(c), None) => format!("{key}={c}"),
        (None, Some(n)) => format!("{key}: {n}"),
        (None, None) => format!("{key}: {}", rest.join(" ")),
    }
}

fn plural(n: f64, what: &str) -> String {
    if n == 1.0 {
        format!("1 {what}")
    } else {
        format!("{} {what}s", short(n))
    }
}

/// A number without a needless `.0`.
fn short(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// `1234567` as `1,234,567`.
pub fn group_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Warnings the context implies: different hosts, unfinished targets,
/// different tidemark builds or workload parameters.
pub fn notes(columns: &[Column<'_>], ctx: &Context) -> Vec<String> {
    let mut notes = Vec::new();
    if !ctx.same_host {
        notes.push(
            "the targets ran on different hosts (see the context): a difference may come from the hardware"
                .into(),
        );
    }
    for c in columns {
        if c.target.status != "finished" {
            notes.push(format!(
                "target {} is {}{}: its missing steps show as -",
                c.label,
                c.target.status,
                c.target
                    .failure
                    .as_deref()
                    .map(|f| format!(" ({f})"))
                    .unwrap_or_default()
            ));
        }
    }
    let mut versions: Vec<&str> = ctx
        .runs
        .iter()
        .map(|r| r.tidemark_version.as_str())
        .collect();
    versions.sort_unstable();
    versions.dedup();
    if versions.len() > 1 {
        notes.push(format!(
            "the runs were made by different tidemark versions ({})",
            versions.join(", ")
        ));
    }
    if columns.iter().any(Column::measured_at_once) {
        notes.push(
            "measured at once (--interleave together): each slice ran on every target at the same time on shared CPUs, so the rates are a shared machine's, comparable with each other, not with runs measured alone"
                .into(),
        );
    }
    let workloads: Vec<&str> = ctx.targets.iter().map(|t| t.workload.as_str()).collect();
    if workloads.windows(2).any(|w| w[0] != w[1]) {
        notes.push(
            "the targets ran with different workload parameters (see the context): compare with care"
                .into(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn settings_split_into_common_and_differing() {
        let a = s(&[
            ("port", "5432"),
            ("shared_buffers", "128MB"),
            ("work_mem", "4MB"),
        ]);
        let b = s(&[
            ("enable_bitmapscan", "off"),
            ("port", "5433"),
            ("shared_buffers", "128MB"),
            ("work_mem", "8MB"),
        ]);
        let (common, differ) = compare_settings("postgres", &[&a, &b]);
        assert_eq!(common.len(), 1);
        assert_eq!(common[0].name, "shared_buffers");
        assert_eq!(differ.len(), 2);
        assert_eq!(differ[0].name, "enable_bitmapscan");
        assert_eq!(differ[0].values, [None, Some("off".to_string())]);
        assert_eq!(
            differ[1].values,
            [Some("4MB".to_string()), Some("8MB".to_string())]
        );
    }

    #[test]
    fn workload_line_names_the_sysbench_parameters() {
        let p = serde_json::json!({"tables": 1, "table_size": 50000000, "threads": 1,
            "read_secs": 600.0, "write_secs": 900.0, "warmup_secs": 5.0, "seed": 7});
        assert_eq!(
            workload_line(&p),
            "1 table × 50,000,000 rows, 1 thread, read 600 s / write 900 s, warm-up 5 s, seed=7"
        );
    }

    #[test]
    fn settings_are_compared_only_within_a_family() {
        let pg_a = s(&[("shared_buffers", "128MB"), ("jit", "off")]);
        let maria = s(&[("innodb_buffer_pool_size", "268435456")]);
        let pg_b = s(&[("shared_buffers", "1GB"), ("jit", "off")]);
        let (common, differ) = compare_by_family(&[
            ("postgres", &pg_a),
            ("mariadb", &maria),
            ("postgres", &pg_b),
        ]);
        assert_eq!(differ.len(), 1, "{differ:?}");
        assert_eq!(differ[0].name, "shared_buffers");
        assert_eq!(
            differ[0].values,
            [Some("128MB".to_string()), None, Some("1GB".to_string())]
        );
        let shared: Vec<(&str, &str)> = common
            .iter()
            .map(|c| (c.dbms.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(
            shared,
            [("postgres", "jit"), ("mariadb", "innodb_buffer_pool_size")]
        );
        let target = |dbms: &str| TargetContext {
            label: "x".into(),
            run_id: 1,
            version: String::new(),
            config_name: None,
            profile: "quick".into(),
            workload: String::new(),
            reported_steps: 0,
            measured_secs: 0.0,
            settings: 0,
            dbms: dbms.into(),
            build: None,
            config_text: String::new(),
        };
        assert_eq!(setting_cell(&None, &target("mariadb"), &differ[0]), "—");
        assert_eq!(
            setting_cell(&None, &target("postgres"), &differ[0]),
            "(default)"
        );
    }

    #[test]
    fn sizing_reads_as_its_choice_and_note() {
        let p = serde_json::json!({
            "tables": 1, "table_size": 100000,
            "sizing": {"data_bytes": 27000000, "note": "all of the data fits in the buffer pool",
                       "shared_buffers_mb": 128, "sizing": "cached"}
        });
        let line = workload_line(&p);
        assert!(
            line.ends_with("sizing=cached (all of the data fits in the buffer pool)"),
            "{line}"
        );
        assert!(!line.contains('{'), "{line}");
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1000), "1,000");
        assert_eq!(group_thousands(50_000_000), "50,000,000");
    }
}
