//! What to run, validated before anything starts: targets, the suite, the
//! profile's numbers after overrides, the selected tests. Every problem the
//! user can fix is reported here as one line naming the fix.

pub mod target;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::workload::ibench::IbenchParams;
use crate::workload::sysbench::load::ExistingTables;
use crate::workload::sysbench::{SysbenchParams, TestDef, catalog};
pub use target::{TargetSpec, parse_setting};

/// The benchmark suites tidemark can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Suite {
    Sysbench,
    /// The Insert Benchmark.
    Ibench,
    /// sysbench, then the Insert Benchmark, on each target.
    All,
}

impl Suite {
    pub fn parse(s: &str) -> Result<Suite, String> {
        match s {
            "sysbench" => Ok(Suite::Sysbench),
            "ibench" => Ok(Suite::Ibench),
            "all" => Ok(Suite::All),
            other => Err(format!(
                "unknown suite '{other}': use --suite sysbench, ibench or all"
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Suite::Sysbench => "sysbench",
            Suite::Ibench => "ibench",
            Suite::All => "all",
        }
    }

    /// Whether the sysbench suite runs.
    pub fn runs_sysbench(self) -> bool {
        matches!(self, Suite::Sysbench | Suite::All)
    }

    /// Whether the Insert Benchmark runs.
    pub fn runs_ibench(self) -> bool {
        matches!(self, Suite::Ibench | Suite::All)
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
    /// Insert Benchmark with the database cached: 8 clients, 10M/16M/4M rows.
    CpuBound,
    /// Insert Benchmark larger than memory: 8 clients, 250M/4M/1M rows.
    IoBound,
}

impl Profile {
    pub const NAMES: &'static str = "quick, small, large, cpu-bound, io-bound";

    pub fn parse(s: &str) -> Result<Profile, String> {
        match s {
            "quick" => Ok(Profile::Quick),
            "small" => Ok(Profile::Small),
            "large" => Ok(Profile::Large),
            "cpu-bound" => Ok(Profile::CpuBound),
            "io-bound" => Ok(Profile::IoBound),
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
            Profile::CpuBound => "cpu-bound",
            Profile::IoBound => "io-bound",
        }
    }

    /// The size of the server configuration this profile ships with
    /// (`config/postgres/<size>.conf`).
    pub fn server_size(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Small => "small",
            Profile::Large | Profile::CpuBound | Profile::IoBound => "large",
        }
    }

    /// The profile's Insert Benchmark numbers before overrides; `None` for
    /// the sysbench-only profiles. Row counts are per client table (X, Y,
    /// Z in the seeds).
    pub fn ibench(self) -> Option<IbenchParams> {
        let (clients, x, y, z, secs, scale) = match self {
            Profile::Quick => (2, 200_000, 80_000, 20_000, 10.0, 0.05),
            Profile::CpuBound => (8, 10_000_000, 16_000_000, 4_000_000, 1800.0, 1.0),
            Profile::IoBound => (8, 250_000_000, 4_000_000, 1_000_000, 1800.0, 1.0),
            Profile::Small | Profile::Large => return None,
        };
        Some(IbenchParams {
            clients,
            rows_load: x,
            rows_l_i1: y,
            rows_l_i2: z,
            query_secs: secs,
            insert_rates: vec![100, 500, 1000],
            wait_scale: scale,
            one_table: false,
            seed: 1,
        })
    }

    /// Whether the profile has sysbench sizes.
    pub fn has_sysbench(self) -> bool {
        matches!(self, Profile::Quick | Profile::Small | Profile::Large)
    }

    /// The profile's sysbench numbers before overrides (the Insert
    /// Benchmark profiles, which have none, get `large`'s).
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
            Profile::Large | Profile::CpuBound | Profile::IoBound => SysbenchParams {
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
    /// Insert Benchmark: clients (one table each).
    pub clients: Option<u32>,
    /// Insert Benchmark: rows per table in l.i0, l.i1, l.i2.
    pub rows_load: Option<u64>,
    pub rows_l_i1: Option<u64>,
    pub rows_l_i2: Option<u64>,
    /// Insert Benchmark: nominal seconds of each query step.
    pub query_secs: Option<f64>,
    /// Insert Benchmark: background insert rates of the query steps.
    pub insert_rates: Option<Vec<u32>>,
    /// Insert Benchmark: fraction of the wait after l.i2.
    pub wait_scale: Option<f64>,
    /// Insert Benchmark: all clients on one table.
    pub one_table: bool,
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
    /// The Insert Benchmark's numbers (the profile's quick values when the
    /// suite does not run it).
    pub ibench: IbenchParams,
    pub results_dir: PathBuf,
    pub existing: ExistingTables,
    pub pg_bindir: Option<PathBuf>,
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
        if suite.runs_sysbench() && !profile.has_sysbench() {
            return Err(format!(
                "profile {} is an Insert Benchmark profile: use --suite ibench, or --profile quick, small or large for sysbench",
                profile.as_str()
            ));
        }
        let ibench = build_ibench(suite, profile, o)?;
        if suite.runs_ibench() && input.reuse_tables {
            return Err(
                "--reuse-tables applies to sysbench only: the Insert Benchmark always loads its tables (pass --drop-existing to replace existing pi tables)".into(),
            );
        }
        let tests = if !suite.runs_sysbench() {
            Vec::new()
        } else if input.tests.is_empty() {
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
        Ok(Plan {
            suite,
            profile,
            targets,
            sysbench: p,
            tests,
            ibench,
            results_dir: input.results_dir,
            existing,
            pg_bindir: input.pg_bindir,
            port: input.port,
            keep_datadir: input.keep_datadir,
            command_line: input.command_line,
        })
    }
}

/// The Insert Benchmark numbers: the profile's, then the overrides,
/// validated when the suite runs it.
fn build_ibench(suite: Suite, profile: Profile, o: &Overrides) -> Result<IbenchParams, String> {
    let mut p = match profile.ibench() {
        Some(p) => p,
        None if suite.runs_ibench() => {
            return Err(format!(
                "profile {} has no Insert Benchmark sizes: use --profile quick, cpu-bound or io-bound with --suite {}",
                profile.as_str(),
                suite.as_str()
            ));
        }
        None => Profile::Quick.ibench().expect("quick has ibench sizes"),
    };
    if let Some(v) = o.clients {
        p.clients = v;
    }
    if let Some(v) = o.rows_load {
        p.rows_load = v;
    }
    if let Some(v) = o.rows_l_i1 {
        p.rows_l_i1 = v;
    }
    if let Some(v) = o.rows_l_i2 {
        p.rows_l_i2 = v;
    }
    if let Some(v) = o.query_secs {
        p.query_secs = v;
    }
    if let Some(v) = &o.insert_rates {
        p.insert_rates = v.clone();
    }
    if let Some(v) = o.wait_scale {
        p.wait_scale = v;
    }
    if let Some(v) = o.seed {
        p.seed = v;
    }
    p.one_table |= o.one_table;
    if !suite.runs_ibench() {
        return Ok(p);
    }
    if p.clients == 0 {
        return Err("--clients must be at least 1".into());
    }
    if p.rows_load == 0 {
        return Err("--rows-load must be at least 1 (the deleters need rows to delete)".into());
    }
    if !(p.query_secs > 0.0 && p.query_secs.is_finite()) {
        return Err("--query-secs must be a positive number of seconds".into());
    }
    if p.insert_rates.is_empty() || p.insert_rates.contains(&0) {
        return Err("--insert-rates must list rates of at least 1 row/s, e.g. 100,500,1000".into());
    }
    if !(p.wait_scale >= 0.0 && p.wait_scale.is_finite()) {
        return Err("--wait-scale must be zero or a positive factor".into());
    }
    Ok(p)
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
        ];
        for (edit, want) in cases {
            let mut i = input();
            edit(&mut i);
            let e = Plan::build(i).unwrap_err();
            assert!(e.contains(want), "{e:?} should contain {want:?}");
            assert!(!e.contains('\n'), "{e:?} is one line");
        }
    }

    #[test]
    fn ibench_profiles_carry_the_seeds_numbers_and_take_overrides() {
        let mut i = input();
        i.suite = "ibench".into();
        let p = Plan::build(i.clone()).unwrap();
        assert_eq!(p.suite, Suite::Ibench);
        assert!(p.tests.is_empty(), "no sysbench tests");
        let q = &p.ibench;
        assert_eq!(
            (q.clients, q.rows_load, q.rows_l_i1, q.rows_l_i2),
            (2, 200_000, 80_000, 20_000)
        );
        assert_eq!(q.insert_rates, [100, 500, 1000]);
        i.profile = "io-bound".into();
        let p = Plan::build(i.clone()).unwrap();
        assert_eq!(
            (
                p.ibench.clients,
                p.ibench.rows_load,
                p.ibench.rows_l_i1,
                p.ibench.rows_l_i2
            ),
            (8, 250_000_000, 4_000_000, 1_000_000)
        );
        assert_eq!(p.ibench.query_secs, 1800.0);
        assert_eq!(Profile::CpuBound.ibench().unwrap().rows_l_i1, 16_000_000);
        assert_eq!(p.profile.server_size(), "large");
        i.overrides.clients = Some(3);
        i.overrides.rows_load = Some(1_000);
        i.overrides.rows_l_i1 = Some(10);
        i.overrides.rows_l_i2 = Some(5);
        i.overrides.query_secs = Some(2.5);
        i.overrides.insert_rates = Some(vec![7]);
        i.overrides.wait_scale = Some(0.0);
        i.overrides.one_table = true;
        i.overrides.seed = Some(99);
        let p = Plan::build(i).unwrap();
        assert_eq!(
            p.ibench,
            IbenchParams {
                clients: 3,
                rows_load: 1_000,
                rows_l_i1: 10,
                rows_l_i2: 5,
                query_secs: 2.5,
                insert_rates: vec![7],
                wait_scale: 0.0,
                one_table: true,
                seed: 99,
            }
        );
        let mut all = input();
        all.suite = "all".into();
        let p = Plan::build(all).unwrap();
        assert!(p.suite.runs_sysbench() && p.suite.runs_ibench());
        assert_eq!(p.tests.len(), 38);
    }

    #[test]
    fn bad_ibench_input_gives_one_line_errors() {
        type Edit = Box<dyn Fn(&mut PlanInput)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|i| i.overrides.clients = Some(0)), "--clients"),
            (Box::new(|i| i.overrides.rows_load = Some(0)), "--rows-load"),
            (
                Box::new(|i| i.overrides.query_secs = Some(0.0)),
                "--query-secs",
            ),
            (
                Box::new(|i| i.overrides.insert_rates = Some(vec![100, 0])),
                "--insert-rates",
            ),
            (
                Box::new(|i| i.overrides.wait_scale = Some(-1.0)),
                "--wait-scale",
            ),
            (
                Box::new(|i| i.reuse_tables = true),
                "--reuse-tables applies to sysbench",
            ),
            (
                Box::new(|i| i.profile = "large".into()),
                "profile large has no Insert Benchmark sizes",
            ),
            (
                Box::new(|i| {
                    i.suite = "sysbench".into();
                    i.profile = "cpu-bound".into()
                }),
                "profile cpu-bound is an Insert Benchmark profile",
            ),
        ];
        for (edit, want) in cases {
            let mut i = input();
            i.suite = "ibench".into();
            edit(&mut i);
            let e = Plan::build(i).unwrap_err();
            assert!(e.contains(want), "{e:?} should contain {want:?}");
            assert!(!e.contains('\n'), "{e:?} is one line");
        }
        // Insert Benchmark flags are not checked when it does not run.
        let mut i = input();
        i.overrides.clients = Some(0);
        assert!(Plan::build(i).is_ok());
    }
}
