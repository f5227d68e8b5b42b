//! The command line: clap definitions, turning arguments into a validated
//! [`Plan`](crate::plan::Plan), dispatching verbs, and exit codes. Nothing
//! here measures or renders; it calls the modules that do.

use std::io::Write as _;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::plan::{Overrides, Plan, PlanInput};

/// Exit code for a run stopped by Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

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
}

/// Where the results database lives.
#[derive(Args, Debug, Clone)]
pub struct ResultsArgs {
    /// Results directory (holds results.db and managed servers' data dirs).
    #[arg(long, default_value = "tidemark-results", env = "TIDEMARK_RESULTS")]
    pub results: PathBuf,
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
    /// Benchmark suite to run.
    #[arg(long, default_value = "sysbench")]
    pub suite: String,
    /// Target to benchmark, repeatable; the first is the base of comparisons.
    /// Forms: pg@system, pg@/path/to/bin[+config], postgres://user@host:port/db,
    /// mariadb@system[+binlog], mysql@/path/to/basedir, mysql://user:pass@host:port/db,
    /// mariadb://…, sqlite:PATH[+wal|+wal-full|+delete].
    #[arg(long = "target", short = 't', value_name = "SPEC")]
    pub targets: Vec<String>,
    /// Size profile: quick (minutes, the default), small (1 × 50M rows,
    /// 600/900 s per test), large (8 × 10M rows).
    #[arg(long, default_value = "quick")]
    pub profile: String,
    /// Only these tests (comma-separated; `random-points` selects all its
    /// ranges, `random-points_range=10` one of them).
    #[arg(long, value_delimiter = ',')]
    pub tests: Vec<String>,
    /// Server setting for managed targets, repeatable (-c work_mem=64MB).
    #[arg(short = 'c', long = "set", value_name = "NAME=VALUE")]
    pub settings: Vec<String>,
    /// Number of sbtest tables.
    #[arg(long)]
    pub tables: Option<u32>,
    /// Rows per table.
    #[arg(long)]
    pub table_size: Option<u64>,
    /// Client threads (one connection each).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Measured seconds of each read test.
    #[arg(long)]
    pub read_secs: Option<f64>,
    /// Measured seconds of each write test.
    #[arg(long)]
    pub write_secs: Option<f64>,
    /// Unmeasured warm-up seconds before each test.
    #[arg(long)]
    pub warmup_secs: Option<f64>,
    /// Seconds of the unreported scan warm-ups.
    #[arg(long)]
    pub scan_warm_secs: Option<f64>,
    /// Fraction of the reference's postwrite wait to sleep (1 = full).
    #[arg(long)]
    pub postwrite_scale: Option<f64>,
    /// Seed of the key generators.
    #[arg(long)]
    pub seed: Option<u64>,
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
}

impl RunArgs {
    /// The raw plan inputs these arguments describe.
    pub fn plan_input(&self, command_line: String) -> PlanInput {
        PlanInput {
            suite: self.suite.clone(),
            profile: self.profile.clone(),
            targets: self.targets.clone(),
            settings: self.settings.clone(),
            tests: self
                .tests
                .iter()
                .filter(|t| !t.trim().is_empty())
                .cloned()
                .collect(),
            overrides: Overrides {
                tables: self.tables,
                table_size: self.table_size,
                threads: self.threads,
                read_secs: self.read_secs,
                write_secs: self.write_secs,
                warmup_secs: self.warmup_secs,
                scan_warm_secs: self.scan_warm_secs,
                postwrite_scale: self.postwrite_scale,
                seed: self.seed,
            },
            results_dir: self.results.results.clone(),
            reuse_tables: self.reuse_tables,
            drop_existing: self.drop_existing,
            pg_bindir: self.pg_bindir.clone(),
            mysql_basedir: self.mysql_basedir.clone(),
            mysql_charset: Some(self.mysql_charset.clone()),
            port: self.port,
            keep_datadir: self.keep_datadir,
            command_line,
        }
    }
}

/// Runs the verb and returns the process exit code. Errors are printed here,
/// once, as `tidemark: <one line>`.
pub fn main_with_args(args: Vec<String>) -> i32 {
    let command_line = args.join(" ");
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let result = match cli.command {
        Command::Run(a) => Plan::build(a.plan_input(command_line))
            .map_err(anyhow::Error::msg)
            .and_then(|plan| crate::orchestrate::run(&plan)),
        Command::Runs(a) => list_runs(&a),
        Command::Export(a) => export(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tidemark: {}", one_line(&e));
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
    let store = crate::store::Store::open_existing(&a.results)?;
    let runs = store.list_runs()?;
    print!("{}", crate::store::format_runs_table(&runs));
    Ok(0)
}

fn export(a: &ExportArgs) -> anyhow::Result<i32> {
    let store = crate::store::Store::open_existing(&a.results.results)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match a.format.as_str() {
        "csv" => crate::store::export::export_csv(&store, a.run, &mut out)?,
        _ => crate::store::export::export_json(&store, a.run, &mut out)?,
    }
    out.flush()?;
    Ok(0)
}
