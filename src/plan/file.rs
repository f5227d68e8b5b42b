//! Plan files: a comparison written down once and run again (`tidemark run
//! --plan FILE`), in TOML.
//!
//! ```toml
//! suite = "sysbench"
//! profile = "quick"
//! sizing = "cached"              # or "io-bound"
//! # server_memory = "256MiB"     # io-bound: the posts' shape against this memory
//! tests = ["point-query", "insert"]
//! repeat = 2                     # A B A B
//! settle_secs = 10
//! interleave = "steps"          # or "servers"
//! min_effect = "3%"
//! config_set = "pg-io-method"    # optional: every target once per config
//! set = { work_mem = "8MB" }     # settings for every managed target
//!
//! [params]                       # profile overrides, as the --flags name them
//! threads = 4
//! read_secs = 30
//!
//! [[target]]
//! spec = "pg@17.10+cx10a"
//!
//! [[target]]
//! spec = "pg@18.4+cx10a"
//! set = { io_method = "worker", io_workers = 4 }
//! ```
//!
//! Any target the command line takes works here (`mariadb@system+z12a`,
//! `mysql@/opt/mysql-8.4.7+bl1_sync1_dwDO`, `sqlite:bench.db+wal`).
//! Values given on the command line win over the file; targets come from
//! one place only. Config files a target names (`+./my.conf`) and relative
//! SQLite database paths are relative to the plan file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::target::{join_target_settings, split_target_settings};
use super::{Overrides, PlanInput};
use crate::server::postgres::named::{is_config_path, relative_to, scalar_text};

/// A plan file as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    pub suite: Option<String>,
    pub profile: Option<String>,
    pub sizing: Option<String>,
    /// With `sizing = "io-bound"`: the server's memory (`"256MiB"`).
    pub server_memory: Option<String>,
    pub tests: Option<Vec<String>>,
    pub repeat: Option<u32>,
    pub settle_secs: Option<f64>,
    /// `steps` or `servers`.
    pub interleave: Option<String>,
    /// The report's minimum effect (`0.03`, `"3%"`).
    pub min_effect: Option<String>,
    /// CPU lists (`"1"`, `"0-1"`).
    pub server_cpus: Option<String>,
    pub client_cpus: Option<String>,
    pub config_set: Option<String>,
    /// Settings for every managed target.
    pub set: Option<toml::Table>,
    pub pg_bindir: Option<PathBuf>,
    /// Where `mariadb@system` / `mysql@system` look first (relative to the file).
    pub mysql_basedir: Option<PathBuf>,
    /// Connection character set of MySQL/MariaDB clients.
    pub mysql_charset: Option<String>,
    pub params: Option<Overrides>,
    /// A workload file (relative to the plan file) or a shipped name;
    /// the suite is then `workload`.
    pub workload: Option<String>,
    #[serde(default)]
    pub target: Vec<TargetEntry>,
}

/// One `[[target]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetEntry {
    pub spec: String,
    /// Settings for this target alone.
    pub set: Option<toml::Table>,
}

/// Reads and parses `path`; the error is one line naming the file, the
/// line and the problem.
pub fn read(path: &Path) -> Result<PlanFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "plan file {} cannot be read ({e}): check the path given to --plan",
            path.display()
        )
    })?;
    parse(&text).map_err(|e| format!("plan file {}: {e}", path.display()))
}

/// The plan a plan file alone describes (files it names are read from
/// `dir`): parse, merge into the defaults, validate, as `tidemark run
/// --plan` does before anything starts. The entry point of the fuzz target
/// `plan_file`; a plan file may come from anyone, so no text may panic it.
pub fn plan_from_text(text: &str, dir: &Path) -> Result<super::Plan, String> {
    let mut input = super::PlanInput {
        suite: "sysbench".into(),
        profile: "quick".into(),
        ..Default::default()
    };
    apply(parse(text)?, dir, &mut input, &|_| false)?;
    super::Plan::build(input)
}

/// Parses plan file text; the error gives the line.
pub fn parse(text: &str) -> Result<PlanFile, String> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let msg = e.message().replace('\n', " ");
        match line {
            Some(l) => format!("line {l}: {}", msg.trim()),
            None => msg.trim().to_string(),
        }
    })
}

fn settings_text(table: &toml::Table, whose: &str) -> Result<Vec<(String, String)>, String> {
    table
        .iter()
        .map(|(k, v)| {
            scalar_text(v)
                .map(|t| (k.clone(), t))
                .ok_or_else(|| format!("{whose}: setting {k} must be a string, number or boolean"))
        })
        .collect()
}

/// Merges `file` (read from `dir`) into `input`; `given(id)` says whether
/// the command line set that option (it then wins).
pub fn apply(
    file: PlanFile,
    dir: &Path,
    input: &mut PlanInput,
    given: &dyn Fn(&str) -> bool,
) -> Result<(), String> {
    macro_rules! take {
        ($field:ident, $id:literal) => {
            if let Some(v) = file.$field
                && !given($id)
            {
                input.$field = v.into();
            }
        };
    }
    let file_names_suite = file.suite.is_some();
    take!(suite, "suite");
    take!(profile, "profile");
    take!(sizing, "sizing");
    if let Some(v) = file.server_memory
        && !given("server_memory")
    {
        input.server_memory = Some(v);
    }
    take!(tests, "tests");
    take!(repeat, "repeat");
    take!(settle_secs, "settle_secs");
    take!(interleave, "interleave");
    take!(min_effect, "min_effect");
    take!(server_cpus, "server_cpus");
    take!(client_cpus, "client_cpus");
    take!(config_set, "config_set");
    if let Some(v) = file.pg_bindir
        && !given("pg_bindir")
    {
        input.pg_bindir = Some(dir.join(v));
    }
    if let Some(v) = file.mysql_basedir
        && !given("mysql_basedir")
    {
        input.mysql_basedir = Some(dir.join(v));
    }
    take!(mysql_charset, "mysql_charset");
    if let Some(w) = file.workload
        && !given("workload")
    {
        let shipped = crate::workload::file::SHIPPED.iter().any(|(n, _)| *n == w);
        input.workload = Some(if shipped {
            w
        } else {
            dir.join(w).to_string_lossy().into_owned()
        });
        if !file_names_suite && !given("suite") {
            input.suite = "workload".into();
        }
    }
    if let Some(params) = file.params {
        input.overrides.fill_from(params);
    }
    if let Some(set) = file.set {
        // The file's settings first, so -c on the command line wins.
        let mut settings: Vec<String> = settings_text(&set, "set")?
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        settings.append(&mut input.settings);
        input.settings = settings;
    }
    if !file.target.is_empty() {
        if !input.targets.is_empty() {
            return Err(
                "targets come from both the plan file and --target: name them in one place".into(),
            );
        }
        for (i, t) in file.target.iter().enumerate() {
            input.targets.push(target_text(t, i, dir)?);
        }
    }
    Ok(())
}

/// A `[[target]]` in the command-line grammar, with a relative config file
/// resolved against the plan file's directory.
fn target_text(t: &TargetEntry, index: usize, dir: &Path) -> Result<String, String> {
    let whose = format!("target {} ({})", index + 1, t.spec);
    let (spec, mut own) = split_target_settings(&t.spec)?;
    let spec = match spec.split_once('+') {
        _ if spec.starts_with("sqlite:") => {
            // The path (and a +config after it) relative to the plan file.
            format!("sqlite:{}", relative_to(dir, &spec["sqlite:".len()..]))
        }
        Some((head, config)) if is_config_path(config) => {
            format!("{head}+{}", relative_to(dir, config))
        }
        _ => spec,
    };
    if let Some(set) = &t.set {
        own.extend(settings_text(set, &whose)?);
    }
    let text = join_target_settings(&spec, &own);
    if split_target_settings(&text)? != (spec, own) {
        return Err(format!(
            "{whose}: a setting value holds ':name=' and cannot be written as a target; use the top-level set"
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
suite = "sysbench"
profile = "quick"
tests = ["point-query", "insert"]
repeat = 2
settle_secs = 3
set = { work_mem = "8MB" }

[params]
threads = 2
read_secs = 1.5

[[target]]
spec = "pg@system+cx10a"

[[target]]
spec = "pg@18.4+./mine.conf:io_method=worker"
set = { io_workers = 4, fsync = false }
"#;

    #[test]
    fn a_plan_file_names_a_workload_file() {
        let mut input = PlanInput {
            suite: "all".into(),
            ..Default::default()
        };
        let file = parse("workload = \"w/kv.toml\"\n").unwrap();
        apply(file, Path::new("/plans"), &mut input, &|_| false).unwrap();
        assert_eq!(
            (input.suite.as_str(), input.workload.as_deref()),
            ("workload", Some("/plans/w/kv.toml"))
        );
        let file = parse("workload = \"tpcb-like\"\n").unwrap();
        apply(file, Path::new("/plans"), &mut input, &|_| false).unwrap();
        assert_eq!(input.workload.as_deref(), Some("tpcb-like"));
    }

    #[test]
    fn a_plan_file_fills_the_inputs() {
        let file = parse(EXAMPLE).unwrap();
        let mut input = PlanInput {
            settings: vec!["work_mem=16MB".into()],
            profile: "small".into(),
            ..Default::default()
        };
        apply(file, Path::new("/plans"), &mut input, &|id| id == "profile").unwrap();
        assert_eq!(input.profile, "small", "the command line wins");
        assert_eq!(input.suite, "sysbench");
        assert_eq!(input.tests, ["point-query", "insert"]);
        assert_eq!((input.repeat, input.settle_secs), (Some(2), Some(3.0)));
        assert_eq!(
            input.overrides.threads,
            Some(crate::knobs::ThreadCounts::one(2))
        );
        assert_eq!(input.overrides.read_secs, Some(1.5));
        assert_eq!(input.settings, ["work_mem=8MB", "work_mem=16MB"]);
        assert_eq!(
            input.targets,
            [
                "pg@system+cx10a",
                "pg@18.4+/plans/./mine.conf:io_method=worker:fsync=off:io_workers=4"
            ]
        );
    }

    #[test]
    fn mysql_mariadb_and_sqlite_targets_are_accepted() {
        let text = r#"
suite = "sysbench"
config_set = "my-flush-method"
mysql_basedir = "mysql-8.4.7"
mysql_charset = "utf8mb4"

[[target]]
spec = "mariadb@system"
set = { innodb_io_capacity = 500 }

[[target]]
spec = "mysql@/opt/mysql-8.4.7:innodb_doublewrite=DETECT_ONLY"
"#;
        let mut input = PlanInput::default();
        apply(
            parse(text).unwrap(),
            Path::new("/plans"),
            &mut input,
            &|_| false,
        )
        .unwrap();
        assert_eq!(
            input.targets,
            [
                "mariadb@system:innodb_io_capacity=500",
                "mysql@/opt/mysql-8.4.7:innodb_doublewrite=DETECT_ONLY"
            ]
        );
        assert_eq!(input.config_set.as_deref(), Some("my-flush-method"));
        assert_eq!(input.mysql_basedir, Some("/plans/mysql-8.4.7".into()));
        assert_eq!(input.mysql_charset.as_deref(), Some("utf8mb4"));
        input.profile = "quick".into();
        input.mysql_basedir = None; // not on this machine
        let plan = super::super::Plan::build(input).unwrap();
        let specs: Vec<&str> = plan.targets.iter().map(|t| t.spec_text.as_str()).collect();
        assert_eq!(
            specs,
            [
                "mariadb@system+z12a:innodb_io_capacity=500",
                "mariadb@system+z12b:innodb_io_capacity=500",
                "mysql@/opt/mysql-8.4.7+z12a:innodb_doublewrite=DETECT_ONLY",
                "mysql@/opt/mysql-8.4.7+z12b:innodb_doublewrite=DETECT_ONLY"
            ]
        );

        let text = "[[target]]\nspec = \"sqlite:bench.db+wal-full\"\nset = { cache_size = -2000 }\n\n\
                    [[target]]\nspec = \"sqlite:/tmp/a.db\"\n\n[[target]]\nspec = \"mariadb@system+binlog\"\n";
        let mut input = PlanInput::default();
        apply(
            parse(text).unwrap(),
            Path::new("/plans"),
            &mut input,
            &|_| false,
        )
        .unwrap();
        assert_eq!(
            input.targets,
            [
                "sqlite:/plans/bench.db+wal-full:cache_size=-2000",
                "sqlite:/tmp/a.db",
                "mariadb@system+binlog"
            ]
        );
        input.profile = "quick".into();
        input.suite = "sysbench".into();
        let plan = super::super::Plan::build(input).unwrap();
        assert!(matches!(
            &plan.targets[0].spec,
            crate::plan::TargetSpec::Sqlite { path, config } if path == Path::new("/plans/bench.db") && config.as_deref() == Some("wal-full")
        ));
        assert_eq!(plan.targets[2].spec.config(), Some("binlog"));
    }

    #[test]
    fn errors_name_the_line_and_the_problem() {
        let e = parse("suite = \"sysbench\"\nprofil = \"quick\"\n").unwrap_err();
        assert!(e.starts_with("line 2: unknown field `profil`"), "{e}");
        assert!(!e.contains('\n'));
        let e = parse("[params]\nthreads = \"four\"\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        let file = parse("[[target]]\nspec = \"pg\"\nset = { a = [1] }\n").unwrap();
        let e = apply(file, Path::new("."), &mut PlanInput::default(), &|_| false).unwrap_err();
        assert!(e.contains("setting a must be a string"), "{e}");
        let file = parse("[[target]]\nspec = \"pg\"\n").unwrap();
        let mut input = PlanInput {
            targets: vec!["pg@system".into()],
            ..Default::default()
        };
        let e = apply(file, Path::new("."), &mut input, &|_| false).unwrap_err();
        assert!(e.contains("both the plan file and --target"), "{e}");
    }
}
