//! What to run, validated before anything starts: targets, the suite, the
//! profile's numbers after overrides, the selected tests. Every problem the
//! user can fix is reported here as one line naming the fix.

pub mod target;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::workload::sysbench::load::ExistingTables;
use crate::workload::sysbench::{SysbenchParams, TestDef, catalog};
pub use target::{TargetSpec, parse_setting};

/// The benchmark suites tidemark can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Suite {
    Sysbench,
}

impl Suite {
    pub fn parse(s: &str) -> Result<Suite, String> {
        match s {
            "sysbench" => Ok(Suite::Sysbench),
            other => Err(format!("unknown suite '{other}': use --suite sysbench")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Suite::Sysbench => "sysbench",
        }
    }
}

/// Named sizes of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// CI-sized: the whole suite in a few minutes on 2 cores.
    Quick,
    /// The seeds' small server: 1 table × 50M rows, 1 client, 600 s / 900 s.
    Small,
    /// The seeds' large servers: 8 tables × 10M rows, many clients.
    Large,
}

impl Profile {
    pub const NAMES: &'static str = "quick, small, large";

    pub fn parse(s: &str) -> Result<Profile, String> {
        match s {
            "quick" => Ok(Profile::Quick),
            "small" => Ok(Profile::Small),
            "large" => Ok(Profile::Large),
            other => Err(format!(
                "unknown profile '{other}': use one of {}",
                Profile::NAMES
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Small => "small",
            Profile::Large => "large",
        }
    }

    /// The profile's sysbench numbers before overrides.
    pub fn sysbench(self) -> SysbenchParams {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        match self {
            Profile::Quick => SysbenchParams {
                tables: 1,
                table_size: 100_000,
                threads: 1,
                read_secs: 5.0,
                write_secs: 5.0,
                warmup_secs: 1.0,
                scan_warm_secs: 5.0,
                postwrite_scale: 0.05,
                seed: 1,
            },
            Profile::Small => SysbenchParams {
                tables: 1,
                table_size: 50_000_000,
                threads: 1,
                read_secs: 600.0,
                write_secs: 900.0,
                warmup_secs: 5.0,
                scan_warm_secs: 60.0,
                postwrite_scale: 1.0,
                seed: 1,
            },
            Profile::Large => SysbenchParams {
                tables: 8,
                table_size: 10_000_000,
                threads: cores.max(2),
                read_secs: 600.0,
                write_secs: 900.0,
                warmup_secs: 5.0,
                scan_warm_secs: 60.0,
                postwrite_scale: 1.0,
                seed: 1,
            },
        }
    }
}

/// Overrides of a profile's numbers, each `None` when not given.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub tables: Option<u32>,
    pub table_size: Option<u64>,
    pub threads: Option<u32>,
    pub read_secs: Option<f64>,
    pub write_secs: Option<f64>,
    pub warmup_secs: Option<f64>,
    pub scan_warm_secs: Option<f64>,
    pub postwrite_scale: Option<f64>,
    pub seed: Option<u64>,
}

/// One target of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetPlan {
    /// As the user wrote it.
    pub spec_text: String,
    pub spec: TargetSpec,
    /// `-c name=value` settings for a managed server, in order.
    pub settings: Vec<(String, String)>,
}

/// Everything `tidemark run` will do, validated.
#[derive(Clone, Debug)]
pub struct Plan {
    pub suite: Suite,
    pub profile: Profile,
    pub targets: Vec<TargetPlan>,
    pub sysbench: SysbenchParams,
    pub tests: Vec<TestDef>,
    pub results_dir: PathBuf,
    pub existing: ExistingTables,
    pub pg_bindir: Option<PathBuf>,
    /// `--mysql-basedir`: where `mariadb@system` / `mysql@system` look first.
    pub mysql_basedir: Option<PathBuf>,
    /// Connection character set of MySQL/MariaDB clients (`latin1`).
    pub mysql_charset: String,
    pub port: Option<u16>,
    /// Keep managed servers' data directories after the run.
    pub keep_datadir: bool,
    pub command_line: String,
}

/// Raw inputs of a plan, as the CLI collects them.
#[derive(Clone, Debug, Default)]
pub struct PlanInput {
    pub suite: String,
    pub profile: String,
    pub targets: Vec<String>,
    pub settings: Vec<String>,
    pub tests: Vec<String>,
    pub overrides: Overrides,
    pub results_dir: PathBuf,
    pub reuse_tables: bool,
    pub drop_existing: bool,
    pub pg_bindir: Option<PathBuf>,
    pub mysql_basedir: Option<PathBuf>,
    /// `None`: [`crate::db::mysql::DEFAULT_CHARSET`].
    pub mysql_charset: Option<String>,
    pub port: Option<u16>,
    pub keep_datadir: bool,
    pub command_line: String,
}

/// The default target: a PostgreSQL server tidemark starts from the
/// installed binaries.
pub const DEFAULT_TARGET: &str = "pg@system";

impl Plan {
    /// Validates the inputs; the error is one line naming the fix.
    pub fn build(input: PlanInput) -> Result<Plan, String> {
        let suite = Suite::parse(&input.suite)?;
        let profile = Profile::parse(&input.profile)?;
        let mut p = profile.sysbench();
        let o = &input.overrides;
        macro_rules! set {
            ($f:ident) => {
                if let Some(v) = o.$f {
                    p.$f = v;
                }
            };
        }
        set!(tables);
        set!(table_size);
        set!(threads);
        set!(read_secs);
        set!(write_secs);
        set!(warmup_secs);
        set!(scan_warm_secs);
        set!(postwrite_scale);
        set!(seed);
        if p.tables == 0 {
            return Err("--tables must be at least 1".into());
        }
        if p.table_size == 0 {
            return Err("--table-size must be at least 1".into());
        }
        if p.threads == 0 {
            return Err("--threads must be at least 1".into());
        }
        for (name, v) in [
            ("--read-secs", p.read_secs),
            ("--write-secs", p.write_secs),
            ("--scan-warm-secs", p.scan_warm_secs),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("{name} must be a positive number of seconds"));
            }
        }
        if !(p.warmup_secs >= 0.0 && p.warmup_secs.is_finite()) {
            return Err("--warmup-secs must be zero or a positive number of seconds".into());
        }
        if !(p.postwrite_scale >= 0.0 && p.postwrite_scale.is_finite()) {
            return Err("--postwrite-scale must be zero or a positive factor".into());
        }
        let tests = if input.tests.is_empty() {
            catalog::suite()
        } else {
            catalog::select(&input.tests)?
        };
        if input.reuse_tables && input.drop_existing {
            return Err(
                "--reuse-tables and --drop-existing contradict each other: pass at most one".into(),
            );
        }
        let existing = if input.reuse_tables {
            ExistingTables::Reuse
        } else if input.drop_existing {
            ExistingTables::Drop
        } else {
            ExistingTables::Refuse
        };
        let settings = input
            .settings
            .iter()
            .map(|s| parse_setting(s))
            .collect::<Result<Vec<_>, _>>()?;
        let target_texts = if input.targets.is_empty() {
            vec![DEFAULT_TARGET.to_string()]
        } else {
            input.targets.clone()
        };
        let mut targets = Vec::new();
        for text in target_texts {
            let spec = TargetSpec::parse(&text)?;
            if !settings.is_empty() && !spec.is_managed() {
                return Err(format!(
                    "-c/--set applies to servers tidemark starts, but target '{text}' is external: drop the -c options or change the server's own configuration"
                ));
            }
            targets.push(TargetPlan {
                spec_text: text,
                spec,
                settings: settings.clone(),
            });
        }
        if let Some(dir) = &input.pg_bindir
            && !dir.is_dir()
        {
            return Err(format!(
                "--pg-bindir {} is not a directory: point it at the bin/ directory of a PostgreSQL install or build",
                dir.display()
            ));
        }
        if let Some(dir) = &input.mysql_basedir
            && !dir.is_dir()
        {
            return Err(format!(
                "--mysql-basedir {} is not a directory: point it at an unpacked MySQL or MariaDB release or build (with bin/mysqld or bin/mariadbd)",
                dir.display()
            ));
        }
        let mysql_charset = input
            .mysql_charset
            .clone()
            .unwrap_or_else(|| crate::db::mysql::DEFAULT_CHARSET.to_string())
            .to_ascii_lowercase();
        crate::db::mysql::check_charset(&mysql_charset)
            .map_err(|e| format!("--mysql-charset: {e}"))?;
        Ok(Plan {
            suite,
            profile,
            targets,
            sysbench: p,
            tests,
            results_dir: input.results_dir,
            existing,
            pg_bindir: input.pg_bindir,
            mysql_basedir: input.mysql_basedir,
            mysql_charset,
            port: input.port,
            keep_datadir: input.keep_datadir,
            command_line: input.command_line,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> PlanInput {
        PlanInput {
            suite: "sysbench".into(),
            profile: "quick".into(),
            results_dir: "r".into(),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_run_the_whole_suite_on_the_default_target() {
        let p = Plan::build(input()).unwrap();
        assert_eq!(p.tests.len(), 38);
        assert_eq!(p.targets.len(), 1);
        assert_eq!(p.targets[0].spec_text, DEFAULT_TARGET);
        assert_eq!(p.sysbench.table_size, 100_000);
    }

    #[test]
    fn overrides_replace_profile_numbers() {
        let mut i = input();
        i.overrides.threads = Some(4);
        i.overrides.read_secs = Some(2.5);
        let p = Plan::build(i).unwrap();
        assert_eq!(p.sysbench.threads, 4);
        assert_eq!(p.sysbench.read_secs, 2.5);
    }

    #[test]
    fn bad_input_gives_one_line_errors() {
        type Edit = Box<dyn Fn(&mut PlanInput)>;
        let cases: Vec<(Edit, &str)> = vec![
            (
                Box::new(|i| i.profile = "huge".into()),
                "unknown profile 'huge'",
            ),
            (
                Box::new(|i| i.tests = vec!["nope".into()]),
                "unknown sysbench test 'nope'",
            ),
            (
                Box::new(|i| i.suite = "tpcc".into()),
                "unknown suite 'tpcc'",
            ),
            (
                Box::new(|i| i.overrides.threads = Some(0)),
                "--threads must be",
            ),
            (
                Box::new(|i| i.settings = vec!["work_mem".into()]),
                "-c 'work_mem'",
            ),
            (
                Box::new(|i| {
                    i.reuse_tables = true;
                    i.drop_existing = true
                }),
                "contradict",
            ),
            (
                Box::new(|i| i.pg_bindir = Some("/nonexistent/bin".into())),
                "--pg-bindir /nonexistent/bin is not a directory",
            ),
            (
                Box::new(|i| i.mysql_basedir = Some("/nonexistent/my".into())),
                "--mysql-basedir /nonexistent/my is not a directory",
            ),
            (
                Box::new(|i| i.mysql_charset = Some("klingon".into())),
                "--mysql-charset: MySQL character set 'klingon' is not supported",
            ),
            (
                Box::new(|i| i.targets = vec!["mysql://u@h:x/d".into()]),
                "port in database URL",
            ),
        ];
        for (edit, want) in cases {
            let mut i = input();
            edit(&mut i);
            let e = Plan::build(i).unwrap_err();
            assert!(e.contains(want), "{e:?} should contain {want:?}");
            assert!(!e.contains('\n'), "{e:?} is one line");
        }
    }
}
