//! What to run, validated before anything starts: targets, the suite, the
//! profile's numbers after overrides, the selected tests. Every problem the
//! user can fix is reported here as one line naming the fix.

pub mod client_hosts;
pub mod connections;
pub mod file;
mod input;
pub mod interleave;
pub mod placement;
mod profile;
mod sets;
pub mod sizing;
pub mod target;
mod targets;
mod workload_file;

pub mod instructions;
pub use input::{PlanInput, TargetEntry};
pub use instructions::{CountedEvents, DEFAULT_INSTRUCTION_EVENTS};

use std::path::PathBuf;

use crate::record::SuiteName;
use crate::workload::ibench::IbenchParams;
use crate::workload::sysbench::load::ExistingTables;
use crate::workload::sysbench::{SysbenchParams, TestDef, catalog};
pub use profile::{Overrides, Profile, Suite, fresh_seed};
use profile::{ibench_params, sysbench_params};
pub use sizing::{Sizing, SizingChoice};
pub use target::{TargetSpec, join_target_settings, parse_setting, split_target_settings};

/// One target of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetPlan {
    /// As the user wrote it.
    pub spec_text: String,
    pub spec: TargetSpec,
    /// `-c name=value` settings for a managed server, in order: the
    /// run-wide ones, then the target's own.
    pub settings: Vec<(String, String)>,
    /// The target's own settings (`:name=value` after its spec).
    pub own_settings: Vec<(String, String)>,
    /// An allocator preloaded into its server (`+jemalloc` at the end).
    pub allocator: Option<crate::server::allocator::Allocator>,
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
    /// `--mysql-basedir`: where `mariadb@system` / `mysql@system` look first.
    pub mysql_basedir: Option<PathBuf>,
    /// Connection character set of MySQL/MariaDB clients (`latin1`).
    pub mysql_charset: String,
    pub port: Option<u16>,
    /// Keep managed servers' data directories after the run.
    pub keep_datadir: bool,
    /// Write the comparison report at the end of the run.
    pub report: bool,
    pub command_line: String,
    /// The buffer pool chosen for the data and this machine.
    pub sizing: SizingChoice,
    /// How many times the whole target sequence runs (A B C, C B A…).
    pub repeat: u32,
    /// Seconds to wait between one target's server stopping and the next
    /// one starting.
    pub settle_secs: f64,
    /// The inputs this plan was built from, stored with the run so that
    /// `--resume` can rebuild it.
    pub input: PlanInput,
    /// Block devices the samplers watch (`--device`); empty: the disks
    /// under each server's data directory.
    pub devices: Vec<String>,
    /// Profile the server's CPU during each step (`--cpu-profile`).
    pub cpu_profile: bool,
    /// `--memory-limit`: a hard memory cgroup limit around each managed
    /// server, bytes.
    pub memory_limit: Option<u64>,
    /// `--instructions`: count the server's instructions under Valgrind,
    /// with this many events per step; `None`: a normal run.
    pub instructions: Option<CountedEvents>,
    /// The checked workload file of `--workload` (suite `workload`).
    pub workload: Option<crate::workload::file::Workload>,
    /// The order of measurements across targets and repetitions.
    pub interleave: interleave::Interleave,
    /// Smallest change the end-of-run report's verdicts report.
    pub min_effect: f64,
    /// CPUs for the managed servers and for tidemark's clients (`None`:
    /// not placed; [`Plan::placed`] applies the default when a run starts).
    pub server_cpus: Option<Vec<usize>>,
    pub client_cpus: Option<Vec<usize>>,
    /// `--client-hosts`: each step's clients split over shards (`None`:
    /// all in this process).
    pub client_hosts: Option<client_hosts::ClientHosts>,
}

/// Parses `--memory-limit`: a size in MiB (`96`), or with a unit (`96MiB`,
/// `1GiB`, `512M`, `2G`); at least 16 MiB.
pub fn parse_memory_limit(text: &str) -> Result<u64, String> {
    parse_memory_size("--memory-limit", text)
}

/// Parses a memory size given to `flag` as [`parse_memory_limit`] does.
fn parse_memory_size(flag: &str, text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => 0,
    };
    let bytes = number
        .parse::<u64>()
        .ok()
        .filter(|_| shift > 0)
        .map(|n| n << shift);
    match bytes {
        Some(b) if b >= 16 << 20 => Ok(b),
        _ => Err(format!(
            "{flag} {text:?}: give a size of at least 16 MiB, e.g. 512MiB or 2GiB"
        )),
    }
}

/// `--server-memory`: the rows the user did not give, sized as the posts
/// size their IO-bound runs against `memory`: each suite's data
/// [`sizing::POSTS_DATA_PER_MEMORY`] times it, the Insert Benchmark's
/// l.i1 and l.i2 in the posts' proportion to l.i0.
fn scale_to_memory(memory: u64, o: &Overrides, p: &mut SysbenchParams, ib: &mut IbenchParams) {
    if o.table_size.is_none() {
        p.table_size =
            sizing::rows_for_memory(memory, u64::from(p.tables), sizing::SYSBENCH_ROW_BYTES);
    }
    if o.rows_load.is_none() {
        // Rows per client (one table each, or all in one: the same data).
        ib.rows_load =
            sizing::rows_for_memory(memory, u64::from(ib.clients), sizing::IBENCH_ROW_BYTES);
    }
    let share = |f: f64| ((ib.rows_load as f64 * f) as u64).max(1);
    if o.rows_l_i1.is_none() {
        ib.rows_l_i1 = share(sizing::POSTS_L_I1_PER_LOAD);
    }
    if o.rows_l_i2.is_none() {
        ib.rows_l_i2 = share(sizing::POSTS_L_I2_PER_LOAD);
    }
}

/// The default target: a PostgreSQL server tidemark starts from the
/// installed binaries.
pub const DEFAULT_TARGET: &str = "pg@system";

impl Plan {
    /// Validates the inputs; the error is one line naming the fix.
    pub fn build(input: PlanInput) -> Result<Plan, String> {
        let kept = input.clone();
        let suite = Suite::parse(input.suite_name())?;
        let profile = Profile::parse(match input.profile.as_str() {
            "" => "quick",
            p => p,
        })?;
        let o = &input.overrides;
        let mut p = sysbench_params(profile, o)?;
        if input.instructions && o.table_size.is_none() {
            p.table_size = p.table_size.min(instructions::COUNTED_TABLE_SIZE);
        }
        if suite.runs_sysbench() && !profile.has_sysbench() {
            return Err(format!(
                "profile {} is an Insert Benchmark profile: use --suite ibench, or --profile quick, small or large for sysbench",
                profile.as_str()
            ));
        }
        let mut ibench = ibench_params(suite, profile, o)?;
        if suite.runs_ibench() && input.reuse_tables {
            return Err(
                "--reuse-tables applies to sysbench only: the Insert Benchmark always loads its tables (pass --drop-existing to replace existing pi tables)".into(),
            );
        }
        let tests = if !suite.runs_sysbench() {
            Vec::new()
        } else {
            let named: Vec<String> = (input.tests.iter())
                .filter(|t| !t.trim().is_empty())
                .cloned()
                .collect();
            match named.is_empty() {
                true => catalog::suite(),
                false => catalog::select(&named)?,
            }
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
        let mut targets = targets::build(&input, &settings)?;
        if suite.runs_sysbench() || suite.runs(SuiteName::WorkloadFile) {
            connections::size_max_connections(&mut targets, p.threads.largest())?;
        }
        let workload = workload_file::check(&input, suite, &targets)?;
        let sizing_kind = if input.sizing.is_empty() {
            Sizing::Cached
        } else {
            Sizing::parse(&input.sizing)?
        };
        let server_memory = input
            .server_memory
            .as_deref()
            .map(|t| parse_memory_size("--server-memory", t))
            .transpose()?;
        if let Some(memory) = server_memory {
            if sizing_kind != Sizing::IoBound {
                return Err(
                    "--server-memory sizes an IO-bound run: add --sizing io-bound (or drop --server-memory)"
                        .into(),
                );
            }
            scale_to_memory(memory, o, &mut p, &mut ibench);
        }
        let sysbench_bytes = u64::from(p.tables) * p.table_size * sizing::SYSBENCH_ROW_BYTES;
        // The Insert Benchmark's tables keep the size l.i0 gives them.
        let ibench_bytes = u64::from(ibench.clients) * ibench.rows_load * sizing::IBENCH_ROW_BYTES;
        // What each suite the plan runs loads (a workload file: nothing sized).
        let data_bytes = (suite.suites().iter())
            .map(|s| match s {
                SuiteName::Sysbench => sysbench_bytes,
                SuiteName::Ibench => ibench_bytes,
                SuiteName::WorkloadFile => 0,
            })
            .sum();
        let machine_memory = crate::metrics::host::memory_bytes().unwrap_or(0);
        let sizing = match server_memory {
            Some(memory) => sizing::choose_for_memory(memory, data_bytes, machine_memory),
            None => sizing::choose(sizing_kind, data_bytes, machine_memory),
        };
        let repeat = input.repeat.unwrap_or(1);
        if !(1..=1000).contains(&repeat) {
            return Err(format!("--repeat {repeat}: give a count from 1 to 1000"));
        }
        let settle_secs = input.settle_secs.unwrap_or(profile.settle_secs());
        if !(settle_secs >= 0.0 && settle_secs.is_finite()) {
            return Err("--settle-secs must be zero or a positive number of seconds".into());
        }
        if let Some(dir) = &input.pg_bindir
            && !dir.is_dir()
        {
            return Err(format!(
                "--pg-bindir {} is not a directory: point it at the bin/ directory of a PostgreSQL install or build",
                dir.display()
            ));
        }
        let devices: Vec<String> = input
            .devices
            .iter()
            .map(|d| d.trim().trim_start_matches("/dev/").to_string())
            .filter(|d| !d.is_empty())
            .collect();
        crate::metrics::devices::check_device_names(&devices)?;
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
        let cells = targets.len() * repeat as usize;
        let managed = targets.iter().filter(|t| t.spec.starts_server()).count();
        // Steps keep one server per target up at a time (each repetition
        // starts them afresh).
        let together = sizing.fit_together(managed);
        let interleave = interleave::choose(
            input.interleave.as_deref(),
            suite.runs_sysbench(),
            cells,
            managed == targets.len(),
            input.port.is_some(),
            together,
        )?;
        let min_effect = crate::stats::min_effect_or_default(input.min_effect.as_deref())?;
        let cpus = |text: &Option<String>, what: &str| {
            text.as_deref()
                .map(|t| crate::util::cpus::parse_cpu_list(t, what))
                .transpose()
        };
        let server_cpus = cpus(&input.server_cpus, "--server-cpus")?;
        let client_cpus = cpus(&input.client_cpus, "--client-cpus")?;
        let memory_limit = input
            .memory_limit
            .as_deref()
            .map(parse_memory_limit)
            .transpose()?;
        if memory_limit.is_some()
            && let Err(why) = crate::server::cgroup::available()
        {
            return Err(format!("--memory-limit needs a memory cgroup: {why}"));
        }
        let client_hosts = client_hosts::from_plan(
            input.client_hosts.as_deref(),
            &input.results_dir,
            input.store.as_deref(),
            &targets,
            suite,
            (&p, &tests),
            &ibench,
        )?;
        if interleave == interleave::Interleave::Together {
            if p.slices == 1 {
                return Err("--interleave together measures each test's slices on every target at once: drop --slices 1 (or give 2 or more)".into());
            }
            if client_hosts.is_some() || input.instructions {
                return Err("--interleave together measures slices on this host in wall-clock time: drop --client-hosts and --instructions, or pass --interleave steps".into());
            }
        }
        if p.slices > 1 {
            if !interleave.servers_up_together() {
                return Err(format!(
                    "--slices {} alternates targets within each test, which needs them up together: drop --interleave servers (or --slices)",
                    p.slices
                ));
            }
            if client_hosts.is_some() {
                return Err(format!(
                    "--slices {}: a step on --client-hosts shards runs whole; drop --slices or --client-hosts",
                    p.slices
                ));
            }
        }
        if let Some(ms @ 1..) = input.overrides.turn_ms
            && interleave != interleave::Interleave::Steps
        {
            return Err(format!(
                "--turn-ms {ms} takes turns between targets inside a test's slices, which only --interleave steps has: drop --turn-ms or pass --interleave steps"
            ));
        }
        let instructions = instructions::instruction_events(&input, suite, &targets)?;
        Ok(Plan {
            instructions,
            client_hosts,
            interleave,
            min_effect,
            server_cpus,
            client_cpus,
            devices,
            cpu_profile: input.cpu_profile,
            memory_limit,
            workload,
            suite,
            profile,
            targets,
            sysbench: p,
            tests,
            ibench,
            results_dir: input.results_dir,
            existing,
            pg_bindir: input.pg_bindir,
            mysql_basedir: input.mysql_basedir,
            mysql_charset,
            port: input.port,
            keep_datadir: input.keep_datadir,
            report: !input.no_report,
            command_line: input.command_line,
            sizing,
            repeat,
            settle_secs,
            input: kept,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn input() -> PlanInput {
        PlanInput {
            suite: Some("sysbench".into()),
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
    fn server_memory_sizes_rows_and_pool_as_the_posts_do() {
        let mut i = input();
        i.sizing = "io-bound".into();
        i.server_memory = Some("256MiB".into());
        let p = Plan::build(i.clone()).unwrap();
        assert_eq!(p.sysbench.table_size, 4_971_026);
        assert_eq!(p.sizing.shared_buffers_mb, 192);
        assert_eq!(p.sizing.server_memory_bytes, Some(256 << 20));
        // Given rows win; the Insert Benchmark's follow the posts' X:Y:Z.
        i.overrides.table_size = Some(1_000_000);
        i.suite = Some("all".into());
        let p = Plan::build(i.clone()).unwrap();
        assert_eq!(p.sysbench.table_size, 1_000_000);
        let q = &p.ibench;
        assert_eq!(
            (q.clients, q.rows_load, q.rows_l_i1, q.rows_l_i2),
            (2, 3_728_270, 59_652, 14_913)
        );
        assert!(
            p.sizing.note.starts_with("server memory 256 MiB"),
            "{}",
            p.sizing.note
        );
        i.sizing = "cached".into();
        let e = Plan::build(i.clone()).unwrap_err();
        assert!(e.contains("add --sizing io-bound"), "{e}");
        i.sizing = "io-bound".into();
        i.server_memory = Some("lots".into());
        let e = Plan::build(i).unwrap_err();
        assert!(
            e.starts_with("--server-memory \"lots\": give a size"),
            "{e}"
        );
    }

    #[test]
    fn overrides_replace_profile_numbers() {
        let mut i = input();
        i.overrides.threads = Some("4".parse().unwrap());
        i.overrides.read_secs = Some(2.5);
        let p = Plan::build(i).unwrap();
        assert_eq!(p.sysbench.threads.counts(), [4]);
        assert_eq!(p.sysbench.read_secs, 2.5);
    }

    #[test]
    fn matrix_numbers_have_defaults_and_limits() {
        let p = Plan::build(input()).unwrap();
        assert_eq!((p.repeat, p.settle_secs), (1, 0.0));
        assert_eq!(p.sizing.sizing, Sizing::Cached);
        let mut i = input();
        i.profile = "small".into();
        i.repeat = Some(3);
        i.sizing = "io-bound".into();
        let p = Plan::build(i).unwrap();
        assert_eq!((p.repeat, p.settle_secs), (3, 60.0));
        assert_eq!(p.sizing.data_bytes, 50_000_000 * sizing::SYSBENCH_ROW_BYTES);
        assert_eq!(p.input.repeat, Some(3), "the inputs are kept for --resume");
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
                Box::new(|i| i.suite = Some("tpcc".into())),
                "unknown suite 'tpcc'",
            ),
            (
                Box::new(|i| {
                    i.overrides.threads = Some("1,512".parse().unwrap());
                    i.settings = vec!["max_connections=300".into()];
                }),
                "max_connections = 300 is below",
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
            (Box::new(|i| i.repeat = Some(0)), "--repeat 0"),
            (Box::new(|i| i.settle_secs = Some(-1.0)), "--settle-secs"),
            (
                Box::new(|i| i.sizing = "hot".into()),
                "unknown sizing 'hot'",
            ),
            (
                Box::new(|i| i.config_set = Some("pg-x".into())),
                "unknown config set 'pg-x': use one of pg-durability",
            ),
            (
                Box::new(|i| i.config_set = Some("my-x".into())),
                "my-binlog, my-doublewrite, my-durability",
            ),
            (
                Box::new(|i| {
                    i.targets = vec!["pg+cx10b".into()];
                    i.config_set = Some("pg-io-method".into())
                }),
                "names config 'cx10b' and --config-set",
            ),
            (
                Box::new(|i| i.devices = vec!["no-such-disk".into()]),
                "--device no-such-disk: no block device",
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

    #[test]
    fn ibench_profiles_carry_the_seeds_numbers_and_take_overrides() {
        let mut i = input();
        i.suite = Some("ibench".into());
        let p = Plan::build(i.clone()).unwrap();
        assert_eq!(p.suite, Suite::One(SuiteName::Ibench));
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
        all.suite = Some("all".into());
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
                    i.suite = Some("sysbench".into());
                    i.profile = "cpu-bound".into()
                }),
                "profile cpu-bound is an Insert Benchmark profile",
            ),
        ];
        for (edit, want) in cases {
            let mut i = input();
            i.suite = Some("ibench".into());
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
