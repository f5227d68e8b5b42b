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
//! Every option of `tidemark run` is a key here, named as its long flag
//! with `_` for `-` (`cpu_profile = true`; repeatable flags are lists:
//! `workload_params = ["scale=10"]`): both read the one definition,
//! [`PlanInput`]. The profile's knobs go in `[params]`, settings in `set`,
//! targets in `[[target]]`.
//! Any target the command line takes works here (`mariadb@system+z12a`,
//! `mysql@/opt/mysql-8.4.7+bl1_sync1_dwDO`, `sqlite:bench.db+wal`).
//! Values given on the command line win over the file; targets come from
//! one place only. Config files a target names (`+./my.conf`) and relative
//! SQLite database paths are relative to the plan file.

use std::path::Path;

use super::PlanInput;
use super::target::{join_target_settings, split_target_settings};
use crate::server::postgres::named::{is_config_path, relative_to, scalar_text};

/// A plan file as read: the options it gives and the keys it wrote them
/// under (so that only those are merged).
#[derive(Clone, Debug, Default)]
pub struct PlanFile {
    pub input: PlanInput,
    keys: Vec<String>,
}

/// Keys of [`PlanInput`] a plan file writes in its own form, and how.
const WRITTEN_OTHERWISE: [(&str, &str); 4] = [
    ("targets", "as [[target]] tables with a spec"),
    ("settings", "as set = { name = value }"),
    ("results_dir", "on the command line (--results)"),
    ("command_line", "nowhere: tidemark records it"),
];

/// Keys [`apply`] merges by hand rather than option by option.
const MERGED_BY_HAND: [&str; 6] = [
    "set",
    "target",
    "params",
    "overrides",
    "pg_bindir",
    "mysql_basedir",
];

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
        suite: Some("sysbench".into()),
        profile: "quick".into(),
        ..Default::default()
    };
    apply(parse(text)?, dir, &mut input, &|_| false)?;
    super::Plan::build(input)
}

/// The line (from 1) of `text` at byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Parses plan file text; the error gives the line.
pub fn parse(text: &str) -> Result<PlanFile, String> {
    let located = |e: toml::de::Error| {
        let msg = e.message().replace('\n', " ");
        match e.span() {
            Some(s) => format!("line {}: {}", line_of(text, s.start), msg.trim()),
            None => msg.trim().to_string(),
        }
    };
    let input: PlanInput = toml::from_str(text).map_err(located)?;
    let table: toml::Table = toml::from_str(text).map_err(located)?;
    let mut keys = Vec::new();
    for key in table.keys().cloned() {
        if let Some((_, how)) = WRITTEN_OTHERWISE.iter().find(|(k, _)| *k == key) {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(key.as_str()))
                .map_or(0, |i| i + 1);
            return Err(format!(
                "line {line}: {key} is written {how} in a plan file"
            ));
        }
        keys.push(key);
    }
    Ok(PlanFile { input, keys })
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
/// the command line set that option (it then wins). Every option the file
/// wrote is taken as written, by the one definition both share
/// ([`PlanInput`]); paths are relative to the file, `[params]` fills the
/// knobs the command line left out, `set` comes before `-c`, and targets
/// come from one place only.
pub fn apply(
    file: PlanFile,
    dir: &Path,
    input: &mut PlanInput,
    given: &dyn Fn(&str) -> bool,
) -> Result<(), String> {
    let wrote = |key: &str| file.keys.iter().any(|k| k == key) && !given(key);
    let json = |i: &PlanInput| serde_json::to_value(i).map_err(|e| format!("plan file: {e}"));
    let mut merged = json(input)?;
    let from_file = json(&file.input)?;
    for key in &file.keys {
        if !MERGED_BY_HAND.contains(&key.as_str()) && !given(key) {
            merged[key.as_str()] = from_file[key.as_str()].clone();
        }
    }
    let store = input.store.take();
    *input = serde_json::from_value(merged).map_err(|e| format!("plan file: {e}"))?;
    input.store = store;
    let file = file.input;
    if wrote("pg_bindir") {
        input.pg_bindir = file.pg_bindir.map(|p| dir.join(p));
    }
    if wrote("mysql_basedir") {
        input.mysql_basedir = file.mysql_basedir.map(|p| dir.join(p));
    }
    if wrote("workload")
        && let Some(w) = &input.workload
        && !crate::workload::file::SHIPPED.iter().any(|(n, _)| n == w)
    {
        input.workload = Some(dir.join(w).to_string_lossy().into_owned());
    }
    input.overrides.fill_from(file.overrides);
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
fn target_text(t: &super::input::TargetEntry, index: usize, dir: &Path) -> Result<String, String> {
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

    /// The inputs `text` alone gives, read from /plans.
    fn applied(text: &str) -> PlanInput {
        let mut input = PlanInput::default();
        apply(
            parse(text).unwrap(),
            Path::new("/plans"),
            &mut input,
            &|_| false,
        )
        .unwrap();
        input
    }

    #[test]
    fn a_plan_file_names_a_workload_file() {
        let mut input = PlanInput::default();
        let file = parse("workload = \"w/kv.toml\"\n").unwrap();
        apply(file, Path::new("/plans"), &mut input, &|_| false).unwrap();
        assert_eq!(
            (input.suite_name(), input.workload.as_deref()),
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
        assert_eq!(input.suite.as_deref(), Some("sysbench"));
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
        let mut input = applied(text);
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
        let mut input = applied(text);
        assert_eq!(
            input.targets,
            [
                "sqlite:/plans/bench.db+wal-full:cache_size=-2000",
                "sqlite:/tmp/a.db",
                "mariadb@system+binlog"
            ]
        );
        input.profile = "quick".into();
        input.suite = Some("sysbench".into());
        let plan = super::super::Plan::build(input).unwrap();
        assert!(matches!(
            &plan.targets[0].spec,
            crate::plan::TargetSpec::Sqlite { path, config } if path == Path::new("/plans/bench.db") && config.as_deref() == Some("wal-full")
        ));
        assert_eq!(plan.targets[2].spec.config(), Some("binlog"));
    }

    #[test]
    fn every_run_option_is_a_plan_file_key() {
        let text = "cpu_profile = true\nworkload_params = [\"scale=3\"]\nevents = 500\n\
                    memory_limit = \"512MiB\"\nmin_effect = \"2%\"\npg_bindir = \"bin\"\n";
        let mut input = PlanInput {
            min_effect: Some("1%".into()),
            profile: "quick".into(),
            ..Default::default()
        };
        let given = |id: &str| id == "min_effect";
        apply(parse(text).unwrap(), Path::new("/p"), &mut input, &given).unwrap();
        assert!(input.cpu_profile);
        assert_eq!(input.workload_params, ["scale=3"]);
        assert_eq!(
            (input.events, input.memory_limit.as_deref()),
            (Some(500), Some("512MiB"))
        );
        assert_eq!(
            input.min_effect.as_deref(),
            Some("1%"),
            "the command line wins"
        );
        assert_eq!(
            input.pg_bindir,
            Some("/p/bin".into()),
            "relative to the file"
        );
        assert_eq!(input.profile, "quick", "what the file leaves out stays");
        let e = parse("repeat = 2\ntargets = [\"pg@system\"]\n").unwrap_err();
        assert_eq!(
            e,
            "line 2: targets is written as [[target]] tables with a spec in a plan file"
        );
        let e = parse("settings = [\"a=b\"]\n").unwrap_err();
        assert!(e.contains("as set = { name = value }"), "{e}");
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
