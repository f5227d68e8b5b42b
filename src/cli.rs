//! The command line: clap definitions, turning arguments into a validated
//! [`Plan`](crate::plan::Plan), dispatching verbs, and exit codes. Nothing
//! here measures or renders; it calls the modules that do.

use std::io::Write as _;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::plan::{Overrides, Plan, PlanInput};
use crate::util::redact::redact_url_passwords;

mod build_verb;
mod mariadb_servers;
mod servers_verb;
mod shard_verb;
mod store_verbs;
mod workload_args;

pub use servers_verb::ServersCommand;
use servers_verb::servers;
pub use shard_verb::ShardArgs;
pub use store_verbs::{HistoryArgs, PullArgs, PushArgs};
use store_verbs::{copy_runs, history};

/// Exit code for a run stopped by Ctrl-C (defined by the run it stops).
pub use crate::orchestrate::EXIT_INTERRUPTED;

/// tidemark: benchmark database servers and compare versions and configs.
#[derive(Parser, Debug)]
#[command(name = "tidemark", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a suite on one or more targets and store the results.
    Run(Box<RunArgs>),
    /// List the runs stored in the results directory.
    Runs(ResultsArgs),
    /// Write stored results to stdout as JSON or CSV.
    Export(ExportArgs),
    /// Write the comparison report (HTML, Markdown, JSON, CSV) from stored runs.
    Report(ReportArgs),
    /// Copy runs into a shared PostgreSQL store (a run it holds already is
    /// skipped, so pushing twice stores once).
    Push(PushArgs),
    /// Copy runs from a shared PostgreSQL store into the local results.db.
    Pull(PullArgs),
    /// Each test's measurements across stored runs per target family,
    /// ordered by version, with change points (E-divisive means).
    History(HistoryArgs),
    /// PostgreSQL and MariaDB versions: installed, offered by package clients, install.
    #[command(subcommand)]
    Servers(ServersCommand),
    /// One client shard of a step split by `run --client-hosts` (started
    /// by the coordinator, not by hand).
    Shard(ShardArgs),
}

/// Where the results database lives.
#[derive(Args, Debug, Clone)]
pub struct ResultsArgs {
    /// Results directory (holds results.db and managed servers' data dirs).
    #[arg(long, default_value = "tidemark-results", env = "TIDEMARK_RESULTS")]
    pub results: PathBuf,
    /// A shared PostgreSQL results store (postgres://user@host/db) instead
    /// of RESULTS/results.db; the schema is created on first use.
    #[arg(
        long,
        value_name = "URL",
        env = "TIDEMARK_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,
}

impl ResultsArgs {
    /// The store these arguments name, which must exist (a PostgreSQL
    /// store is created on first use).
    pub fn open_existing(&self) -> anyhow::Result<crate::store::Store> {
        crate::store::Store::open_in(&self.results, self.store.as_deref(), true)
    }
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub results: ResultsArgs,
    /// Output format.
    #[arg(long, value_parser = ["json", "csv"], default_value = "json")]
    pub format: String,
    /// Export only this run (default: all runs).
    #[arg(long)]
    pub run: Option<i64>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub results: ResultsArgs,
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
    /// A TOML plan file (targets, settings, suite, profile, overrides);
    /// options given on the command line win over it.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
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
    /// or repetitions) or servers (one fresh server per target and
    /// repetition, whole passes A B A B).
    #[arg(long, value_name = "ORDER")]
    pub interleave: Option<String>,
    /// Smallest change the end-of-run report calls faster or slower
    /// (a fraction or a percentage; default 3%).
    #[arg(long, value_name = "FRACTION")]
    pub min_effect: Option<String>,
    /// CPUs the managed servers run on (0-1,3 as taskset writes them);
    /// recorded with the run.
    #[arg(long, value_name = "CPUS")]
    pub server_cpus: Option<String>,
    /// CPUs tidemark's client threads run on; recorded with the run.
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
    /// Continue an interrupted run with its stored plan, skipping the
    /// (target, repetition, step) cells it measured.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<i64>,
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
    /// The profile's numbers given on the command line ([`crate::knobs`]).
    #[command(flatten)]
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
    pub mysql_charset: String,
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
    #[command(flatten)]
    pub workload: workload_args::WorkloadArgs,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub results: ResultsArgs,
    /// What to compare: run ids (all their targets), target labels, or
    /// RUN:LABEL; default: the latest run's targets.
    #[arg(value_name = "RUN|TARGET")]
    pub select: Vec<String>,
    /// Label of the base target (default: the first selected).
    #[arg(long, value_name = "LABEL")]
    pub base: Option<String>,
    /// Output directory (default: RESULTS/reports/run-<ids>).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Rename a target in the report, repeatable (--label pg1518.base=pg15).
    #[arg(long = "label", value_name = "OLD=NEW")]
    pub labels: Vec<String>,
    /// Fixed relative-QPS bands (red at or below LOW, green at or above
    /// HIGH) kept in report.json for scripts; the cells are coloured by
    /// their verdict (see --min-effect).
    #[arg(long, value_name = "LOW,HIGH", default_value = "0.97,1.03")]
    pub bands: String,
    /// Insert Benchmark fixed bands for report.json (cells are coloured by
    /// their verdict).
    #[arg(long, value_name = "LOW,HIGH", default_value = "0.95,1.05")]
    pub ibench_bands: String,
    /// Lowest relative QPS the bar charts show.
    #[arg(long, value_name = "X", default_value_t = 0.8)]
    pub chart_floor: f64,
    /// Smallest change a verdict calls faster or slower: a fraction (0.03)
    /// or a percentage (3%), between 0 and 1.
    #[arg(long, value_name = "FRACTION", default_value = "3%")]
    pub min_effect: String,
    /// Order of the sysbench tests within a group: seeds (the blog posts'
    /// order, `.pre` runs before their twins) or run (as measured).
    #[arg(long, value_name = "ORDER", default_value = "seeds")]
    pub order: String,
    /// Also compare each target with the one before it (a version chain:
    /// pg16 vs pg15, pg17 vs pg16…), not only with the base.
    #[arg(long)]
    pub chain: bool,
    /// A CI gate: exit with code 3, naming each cell, when a compared
    /// cell's verdict is slower, faster, or either (any); `not verified`
    /// and `no difference` pass. junit.xml counts these cells as failures.
    #[arg(long, value_name = "RULE")]
    pub fail_on: Option<String>,
}

impl RunArgs {
    /// The raw plan inputs these arguments describe.
    pub fn plan_input(&self, command_line: String) -> PlanInput {
        PlanInput {
            suite: self.suite.clone().unwrap_or_else(|| {
                if self.workload.workload.is_some() {
                    "workload".to_string()
                } else if self.tests.iter().any(|t| !t.trim().is_empty()) {
                    "sysbench".to_string()
                } else {
                    "all".to_string()
                }
            }),
            profile: self.profile.clone(),
            targets: self.targets.clone(),
            settings: self.settings.clone(),
            tests: self
                .tests
                .iter()
                .filter(|t| !t.trim().is_empty())
                .cloned()
                .collect(),
            overrides: self.overrides.clone(),
            results_dir: self.results.results.clone(),
            store: self.results.store.clone(),
            reuse_tables: self.reuse_tables,
            drop_existing: self.drop_existing,
            pg_bindir: self.pg_bindir.clone(),
            mysql_basedir: self.mysql_basedir.clone(),
            mysql_charset: Some(self.mysql_charset.clone()),
            port: self.port,
            keep_datadir: self.keep_datadir,
            no_report: self.no_report,
            command_line,
            sizing: self.sizing.clone(),
            repeat: self.repeat,
            settle_secs: self.settle_secs,
            interleave: self.interleave.clone(),
            min_effect: self.min_effect.clone(),
            server_cpus: self.server_cpus.clone(),
            client_cpus: self.client_cpus.clone(),
            client_hosts: self.client_hosts.clone(),
            config_set: self.config_set.clone(),
            devices: self.devices.clone(),
            cpu_profile: self.cpu_profile,
            memory_limit: self.memory_limit.clone(),
            server_memory: self.server_memory.clone(),
            instructions: self.instructions,
            events: self.events,
            workload: self.workload.workload.clone(),
            workload_params: self.workload.workload_params.clone(),
            max_tries: self.workload.max_tries,
            rate: self.workload.rate,
        }
    }
}

/// Options that shape a plan: `--resume` takes them from the stored run.
/// Between these two lists come the sysbench knobs (and the seed) of
/// [`crate::knobs::KNOBS`]; the Insert Benchmark's knobs are not checked.
const PLAN_OPTIONS: [&[&str]; 2] = [
    &[
        "suite",
        "targets",
        "plan",
        "config_set",
        "repeat",
        "settle_secs",
        "interleave",
        "server_cpus",
        "client_cpus",
        "sizing",
        "server_memory",
        "profile",
        "tests",
        "settings",
    ],
    &[
        "pg_bindir",
        "mysql_basedir",
        "mysql_charset",
        "reuse_tables",
        "drop_existing",
        "workload",
        "workload_params",
        "max_tries",
        "rate",
        "instructions",
        "events",
    ],
];

/// The ids of the options `--resume` refuses, in the order they are checked.
fn plan_options() -> impl Iterator<Item = &'static str> {
    let knobs = crate::knobs::KNOBS
        .iter()
        .filter(|k| k.applies.covers(crate::knobs::Applies::Sysbench))
        .map(|k| k.name);
    let [before, after] = PLAN_OPTIONS;
    before
        .iter()
        .copied()
        .chain(knobs)
        .chain(after.iter().copied())
}

/// The plan `tidemark run` asked for: from the arguments and a plan file,
/// or, with `--resume`, the stored run's.
fn run_command(a: &RunArgs, m: &ArgMatches, command_line: String) -> anyhow::Result<i32> {
    let given = |id: &str| {
        matches!(
            m.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    if let Some(run_id) = a.resume {
        if let Some(id) = plan_options().find(|id| given(id)) {
            anyhow::bail!(
                "--resume {run_id} runs the plan stored with run {run_id}: drop --{} (or start a new run without --resume)",
                id.replace('_', "-")
                    .replace("targets", "target")
                    .replace("settings", "set")
            );
        }
        let store = a.results.open_existing()?;
        let (status, plan_json) = store.run_plan(run_id)?;
        if status == "finished" {
            anyhow::bail!("run {run_id} finished: nothing to resume (`tidemark runs` lists runs)");
        }
        if let Some(p) = store.run_process(run_id)?
            && status == "running"
            && p.liveness() == crate::util::process_identity::Liveness::Alive
        {
            anyhow::bail!(
                "run {run_id} is still running (pid {}): wait for it, or stop it (Ctrl-C) and then resume",
                p.pid
            );
        }
        let plan_json = plan_json.ok_or_else(|| {
            anyhow::anyhow!(
                "run {run_id} was stored without its plan (an older tidemark): it cannot be resumed"
            )
        })?;
        drop(store);
        let mut input: PlanInput = serde_json::from_str(&plan_json)
            .map_err(|e| anyhow::anyhow!("the plan stored with run {run_id} is unreadable: {e}"))?;
        input.results_dir = a.results.results.clone();
        input.store = a.results.store.clone();
        input.keep_datadir = a.keep_datadir;
        input.no_report = a.no_report;
        if a.port.is_some() {
            input.port = a.port;
        }
        let plan = Plan::build(input).map_err(anyhow::Error::msg)?;
        return crate::orchestrate::resume(&plan, run_id);
    }
    let mut input = a.plan_input(command_line);
    if let Some(path) = &a.plan {
        let file = crate::plan::file::read(path).map_err(anyhow::Error::msg)?;
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        crate::plan::file::apply(file, dir, &mut input, &given).map_err(anyhow::Error::msg)?;
    }
    // A new run without --seed draws its run seed here, so the plan stored
    // with the run (and so --resume) keeps it.
    input
        .overrides
        .seed
        .get_or_insert_with(crate::plan::fresh_seed);
    let plan = Plan::build(input).map_err(anyhow::Error::msg)?;
    crate::orchestrate::run(&plan)
}

/// Runs the verb and returns the process exit code. Errors are printed here,
/// once, as `tidemark: <one line>`.
pub fn main_with_args(args: Vec<String>) -> i32 {
    // Recorded with the run and shown in its report: never with a password.
    let command_line = args
        .iter()
        .map(|a| redact_url_passwords(a))
        .collect::<Vec<_>>()
        .join(" ");
    let parsed = Cli::command()
        .try_get_matches_from(&args)
        .and_then(|m| Cli::from_arg_matches(&m).map(|c| (c, m)));
    let (cli, matches) = match parsed {
        Ok(c) => c,
        Err(e) => {
            // clap quotes the offending argument, which may be a URL.
            let text = redact_url_passwords(&e.render().to_string());
            if e.use_stderr() {
                eprint!("{text}");
            } else {
                print!("{text}");
            }
            return e.exit_code();
        }
    };
    let result = match cli.command {
        Command::Run(a) => {
            let m = matches
                .subcommand_matches("run")
                .expect("the run subcommand has matches");
            run_command(&a, m, command_line)
        }
        Command::Runs(a) => list_runs(&a),
        Command::Export(a) => export(&a),
        Command::Report(a) => report(&a),
        Command::History(a) => history(&a),
        Command::Push(a) => {
            let source = a.results.open_existing();
            source.and_then(|source| {
                let dest = crate::store::Store::open_postgres(&a.to, &a.results.results)?;
                copy_runs(&source, dest, &a.runs)
            })
        }
        Command::Pull(a) => crate::store::Store::open_postgres(&a.from, &a.results)
            .and_then(|source| copy_runs(&source, crate::store::Store::open(&a.results)?, &a.runs)),
        Command::Servers(c) => servers(&c),
        Command::Shard(a) => shard_verb::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tidemark: {}", redact_url_passwords(&one_line(&e)));
            1
        }
    }
}

/// An error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string().replace('\n', " ");
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

fn list_runs(a: &ResultsArgs) -> anyhow::Result<i32> {
    let store = a.open_existing()?;
    let runs = store.list_runs()?;
    print!("{}", crate::store::format_runs_table(&runs));
    Ok(0)
}

fn export(a: &ExportArgs) -> anyhow::Result<i32> {
    let store = a.results.open_existing()?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match a.format.as_str() {
        "csv" => crate::store::export::export_csv(&store, a.run, &mut out)?,
        _ => crate::store::export::export_json(&store, a.run, &mut out)?,
    }
    out.flush()?;
    Ok(0)
}

fn report(a: &ReportArgs) -> anyhow::Result<i32> {
    use crate::report::{Bands, ReportOptions, select::parse_rename};
    // Everything the user typed is checked before the store is opened.
    let bands = Bands::parse(&a.bands, "--bands").map_err(anyhow::Error::msg)?;
    let ibench_bands =
        Bands::parse(&a.ibench_bands, "--ibench-bands").map_err(anyhow::Error::msg)?;
    let min_effect = crate::stats::parse_min_effect(&a.min_effect).map_err(anyhow::Error::msg)?;
    let test_order = crate::report::TestOrder::parse(&a.order).map_err(anyhow::Error::msg)?;
    let fail_on = a
        .fail_on
        .as_deref()
        .map(crate::report::gate::FailOn::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    if !(a.chart_floor >= 0.0 && a.chart_floor < 1.0) {
        anyhow::bail!(
            "--chart-floor {}: pick a relative QPS from 0 up to below 1, e.g. 0.8",
            a.chart_floor
        );
    }
    let renames = a
        .labels
        .iter()
        .map(|s| parse_rename(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let store = a.results.open_existing()?;
    let opts = ReportOptions {
        base: a.base.clone(),
        bands,
        ibench_bands,
        chart_floor: a.chart_floor,
        min_effect,
        test_order,
        chain: a.chain,
        ..ReportOptions::default()
    };
    let (report, index) =
        crate::report::generate(&store, &a.select, &renames, &opts, a.out.as_deref())?;
    let dir = index.parent().unwrap_or(&index);
    use crate::report::{ci_formats, gate};
    let rule = fail_on.unwrap_or(gate::FailOn::Slower);
    for (name, text) in [
        ("junit.xml", ci_formats::junit(&report, rule)),
        ("bencher.json", ci_formats::bencher(&report)),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    println!(
        "report of {} target(s), base {}: {} (also report.md, report.json, report.csv, junit.xml, bencher.json and sections/summary.md in {})",
        report.targets.len(),
        report.base,
        index.display(),
        dir.display()
    );
    let Some(on) = fail_on else {
        return Ok(0);
    };
    let failing = gate::failing(&report, on);
    if failing.is_empty() {
        println!(
            "gate --fail-on {}: passed ({} compared cells)",
            a.fail_on.as_deref().unwrap_or_default().trim(),
            gate::cells(&report).len()
        );
        return Ok(0);
    }
    for c in &failing {
        eprintln!("tidemark: gate: {}", c.line());
    }
    eprintln!(
        "tidemark: gate --fail-on {}: {} cell(s) failed (exit {})",
        a.fail_on.as_deref().unwrap_or_default().trim(),
        failing.len(),
        gate::EXIT_GATE
    );
    Ok(gate::EXIT_GATE)
}
