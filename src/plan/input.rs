//! [`PlanInput`]: every option of `tidemark run`, defined once. The command
//! line parses it (clap), a plan file is read into it (TOML: the same
//! keys, plus `set`, `[params]` and `[[target]]`), and the store keeps it
//! (JSON) so that `--resume` rebuilds the same plan. A field's doc comment
//! is its `--help` text.

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::Overrides;
use crate::record::SuiteName;

/// The raw options of a run, before [`super::Plan::build`] checks them.
#[derive(Args, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlanInput {
    /// Benchmark suite to run: sysbench, ibench (the Insert Benchmark) or
    /// all (both, sysbench first). Default: all, or sysbench when --tests
    /// names sysbench tests, or workload with --workload.
    #[arg(long)]
    pub suite: Option<String>,
    /// Target to benchmark, repeatable; the first is the base of comparisons.
    /// Forms: pg@system, pg@17.10 (installed if missing), pg@/path/to/bin,
    /// each with an optional +config (cx10b, ./my.conf) and :name=value
    /// settings for that target alone; postgres://user@host:port/db;
    /// mariadb@system, mariadb@10.2 (installed if missing), mysql@/path/to/basedir, each with an optional
    /// +config (binlog, z12a, z12b, bl1_sync1_dw1, …; see
    /// config/mysql/configs.toml) and :name=value settings;
    /// mysql://user:pass@host:port/db, mariadb://…;
    /// sqlite:PATH[+wal|+wal-full|+delete].
    #[arg(long = "target", short = 't', value_name = "SPEC")]
    pub targets: Vec<String>,
    /// Run every target once per config of this set. PostgreSQL targets:
    /// pg-durability, pg-durability-nolz4, pg-io-method, pg-wal-compression.
    /// MySQL/MariaDB targets: my-durability (binlog x fsync x doublewrite,
    /// MySQL 8.0.30+), my-durability-nodo (MariaDB, older MySQL),
    /// my-durability-fast (MariaDB 11.4+), my-doublewrite, my-flush-method,
    /// my-binlog.
    #[arg(long, value_name = "SET")]
    pub config_set: Option<String>,
    /// Run the whole target sequence N times, interleaved (A B A B).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Seconds to wait between targets (default: 0 for quick, 60 otherwise).
    #[arg(long, value_name = "SECS")]
    pub settle_secs: Option<f64>,
    /// Order of measurements: steps (every target's server up at once, each
    /// sysbench test run on every target and repetition before the next,
    /// alternating which goes first; the default with two or more targets
    /// or repetitions), together (as steps, but each test's slices measured
    /// on every target at the same time, sharing the CPUs: the machine's
    /// noise falls on all alike; for comparing, not for absolute rates) or
    /// servers (one fresh server per target and repetition, whole passes
    /// A B A B).
    #[arg(long, value_name = "ORDER")]
    pub interleave: Option<String>,
    /// Smallest change the end-of-run report calls faster or slower
    /// (a fraction or a percentage; default 1%).
    #[arg(long, value_name = "FRACTION")]
    pub min_effect: Option<String>,
    /// CPUs the managed servers run on (0-1,3 as taskset writes them, or
    /// all); recorded with the run. Default: with one client per step on
    /// servers tidemark starts (sysbench, up to 2M rows), the servers and
    /// the client share the least busy CPU (measured: half the noise);
    /// otherwise unplaced.
    #[arg(long, value_name = "CPUS")]
    pub server_cpus: Option<String>,
    /// CPUs tidemark's client threads run on (or all); recorded with the
    /// run. Default: see --server-cpus.
    #[arg(long, value_name = "CPUS")]
    pub client_cpus: Option<String>,
    /// Split each step's clients over shards that start together and are
    /// merged exactly (local:N); needs --store postgres://….
    #[arg(long, value_name = "SPEC")]
    pub client_hosts: Option<String>,
    /// Buffer pool sizing: cached (the data fits) or io-bound (the data is
    /// 4x the buffer pool), from the machine's memory.
    #[arg(long, default_value = "cached")]
    pub sizing: String,
    /// With --sizing io-bound: the memory each managed server gets
    /// (256MiB, 1GiB), used as the posts use their servers' memory: the
    /// buffer pool 3/4 of it, PostgreSQL's page cache held to it, and the
    /// tables (unless --table-size or --rows-load say) 5x it.
    #[arg(long, value_name = "SIZE")]
    pub server_memory: Option<String>,
    /// Size profile: quick (minutes, the default), small (1 × 50M rows,
    /// 600/900 s per test), large (8 × 10M rows); for the Insert Benchmark
    /// quick, cpu-bound (8 clients, 10M/16M/4M rows per table) and io-bound
    /// (8 clients, 250M/4M/1M rows per table).
    #[arg(long, default_value = "quick")]
    pub profile: String,
    /// Only these tests (comma-separated; `random-points` selects all its
    /// ranges, `random-points_range=10` one of them).
    #[arg(long, value_delimiter = ',')]
    pub tests: Vec<String>,
    /// Server setting for managed targets, repeatable (-c work_mem=64MB).
    #[arg(short = 'c', long = "set", value_name = "NAME=VALUE")]
    pub settings: Vec<String>,
    /// The profile's numbers given on the command line ([`crate::knobs`]);
    /// a plan file's `[params]`.
    #[command(flatten)]
    #[serde(alias = "params")]
    pub overrides: Overrides,
    /// Directory with the postgres and initdb binaries to use.
    #[arg(long, value_name = "DIR")]
    pub pg_bindir: Option<PathBuf>,
    /// MySQL/MariaDB basedir (bin/mariadbd or bin/mysqld) for mariadb@system
    /// and mysql@system, instead of the installed server.
    #[arg(long, value_name = "DIR")]
    pub mysql_basedir: Option<PathBuf>,
    /// Connection character set of every MySQL/MariaDB client connection,
    /// pinned with SET NAMES (latin1, utf8mb4, utf8mb3, ascii, binary); a
    /// mysql:// URL's ?charset= wins for that target.
    #[arg(long, value_name = "NAME", default_value = "latin1")]
    pub mysql_charset: Option<String>,
    /// Loopback port for a managed server (default: a free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// On an external server, benchmark existing sbtest tables as they are.
    #[arg(long)]
    pub reuse_tables: bool,
    /// On an external server, drop existing sbtest tables and load new ones.
    #[arg(long)]
    pub drop_existing: bool,
    /// Keep managed servers' data directories after the run.
    #[arg(long)]
    pub keep_datadir: bool,
    /// Do not write the comparison report at the end of the run.
    #[arg(long)]
    pub no_report: bool,
    /// Block device whose I/O the samplers report (as iostat names it,
    /// e.g. nvme0n1; repeatable or comma-separated). Default: the disks
    /// under the server's data directory.
    #[arg(long = "device", value_name = "NAME", value_delimiter = ',')]
    pub devices: Vec<String>,
    /// Sample the server's processes with `perf record -e cpu-clock -g`
    /// during each step's measured interval; the report draws
    /// flamegraphs and the top functions per query.
    #[arg(long)]
    pub cpu_profile: bool,
    /// A hard memory limit around each managed server (a memory cgroup,
    /// page cache included: 512MiB, 2GiB); a server process that outgrows
    /// it is killed by the kernel and the step says so. (`--sizing
    /// io-bound` limits only the page cache and never kills.)
    #[arg(long, value_name = "SIZE")]
    pub memory_limit: Option<String>,
    /// Count the instructions the server executes per query under
    /// Valgrind (callgrind) instead of timing it: managed PostgreSQL
    /// targets, sysbench; each step runs a fixed number of events.
    #[arg(long)]
    pub instructions: bool,
    /// Events (transactions) per step with --instructions (default 1000).
    #[arg(long, value_name = "N")]
    pub events: Option<u64>,
    /// Run a workload file instead of a suite: a TOML file (see
    /// workloads/README.md) or a shipped one (tpcb-like, simple-update,
    /// select-only: pgbench's built-ins).
    #[arg(long, value_name = "FILE")]
    pub workload: Option<String>,
    /// Override a param of the workload file (scale=10), repeatable.
    #[arg(long = "workload-param", value_name = "NAME=VALUE")]
    pub workload_params: Vec<String>,
    /// Tries per transaction of a workload file on a retryable error
    /// (serialization failure, deadlock), as pgbench's --max-tries;
    /// overrides the file's [retry] max_tries.
    #[arg(long, value_name = "N")]
    pub max_tries: Option<u32>,
    /// Transactions a second over all clients of a workload file, on an
    /// open-loop schedule (pgbench's --rate); overrides the file's rate.
    #[arg(long, value_name = "TPS")]
    pub rate: Option<f64>,
    /// The results directory (`--results`, not an option of its own here).
    #[arg(skip)]
    pub results_dir: PathBuf,
    /// `--store`: a PostgreSQL results store instead of the directory's
    /// results.db. Never stored with the run (it may hold a password).
    #[arg(skip)]
    #[serde(skip)]
    pub store: Option<String>,
    /// The command line as typed, passwords hidden (the report shows it).
    #[arg(skip)]
    pub command_line: String,
    /// A plan file's `set = { … }`: settings for every managed target
    /// (the command line's `-c`).
    #[arg(skip)]
    #[serde(skip_serializing)]
    pub set: Option<toml::Table>,
    /// A plan file's `[[target]]`s (the command line's `--target`).
    #[arg(skip)]
    #[serde(skip_serializing)]
    pub target: Vec<TargetEntry>,
}

/// One `[[target]]` of a plan file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetEntry {
    pub spec: String,
    /// Settings for this target alone.
    pub set: Option<toml::Table>,
}

/// Options that stay the command line's own with `--resume` (the rest
/// come from the stored plan, and `--resume` refuses them): where the
/// results go, the port, what is kept afterwards.
const RESUME_KEEPS: [&str; 3] = ["port", "keep_datadir", "no_report"];

impl PlanInput {
    /// The suite to run: as given, or all, or sysbench when `tests` names
    /// tests, or workload with a workload file.
    pub fn suite_name(&self) -> &str {
        match &self.suite {
            Some(s) => s,
            None if self.workload.is_some() => SuiteName::WorkloadFile.as_str(),
            None if self.tests.iter().any(|t| !t.trim().is_empty()) => SuiteName::Sysbench.as_str(),
            None => "all",
        }
    }

    /// The options `--resume` refuses, in `--help` order: each one's id
    /// (its field's name) and its flag (`--workload-param`).
    pub fn plan_options() -> Vec<(String, String)> {
        use clap::CommandFactory as _;
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            input: PlanInput,
        }
        Only::command()
            .get_arguments()
            .filter(|a| !RESUME_KEEPS.contains(&a.get_id().as_str()))
            .map(|a| {
                let flag = match a.get_long() {
                    Some(long) => format!("--{long}"),
                    None => format!("-{}", a.get_short().unwrap_or('?')),
                };
                (a.get_id().to_string(), flag)
            })
            .collect()
    }

    /// This input with what `--resume` keeps from the command line
    /// (`now`): the results directory and store, the port when given, and
    /// what is kept afterwards.
    pub fn resumed_with(mut self, now: &PlanInput) -> PlanInput {
        self.results_dir = now.results_dir.clone();
        self.store = now.store.clone();
        self.keep_datadir = now.keep_datadir;
        self.no_report = now.no_report;
        if now.port.is_some() {
            self.port = now.port;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_refuses_every_plan_option_but_the_kept_ones() {
        let options = PlanInput::plan_options();
        let ids: Vec<&str> = options.iter().map(|(id, _)| id.as_str()).collect();
        assert!(options.contains(&("workload_params".into(), "--workload-param".into())));
        for id in [
            "suite",
            "targets",
            "tests",
            "threads",
            "read_secs",
            "min_effect",
        ] {
            assert!(ids.contains(&id), "{id} in {ids:?}");
        }
        for id in RESUME_KEEPS.iter().chain(&["results_dir", "set", "target"]) {
            assert!(!ids.contains(id), "{id} not in {ids:?}");
        }
        assert_eq!(ids[0], "suite", "in --help order");
    }

    #[test]
    fn suite_follows_tests_and_workload_unless_given() {
        let mut i = PlanInput::default();
        assert_eq!(i.suite_name(), "all");
        i.tests = vec![" ".into()];
        assert_eq!(i.suite_name(), "all");
        i.tests = vec!["point-query".into()];
        assert_eq!(i.suite_name(), "sysbench");
        i.workload = Some("tpcb-like".into());
        assert_eq!(i.suite_name(), "workload");
        i.suite = Some("ibench".into());
        assert_eq!(i.suite_name(), "ibench");
    }

    #[test]
    fn stored_json_round_trips_without_the_store_or_the_file_only_keys() {
        let i = PlanInput {
            targets: vec!["pg@system".into()],
            store: Some("postgres://u:secret@h/db".into()),
            set: Some(toml::Table::new()),
            ..Default::default()
        };
        let json = serde_json::to_string(&i).unwrap();
        assert!(
            !json.contains("secret") && !json.contains("\"set\""),
            "{json}"
        );
        let back: PlanInput = serde_json::from_str(&json).unwrap();
        assert_eq!(back.targets, i.targets);
        assert_eq!(back.store, None);
    }
}
