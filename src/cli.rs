//! The command line: clap definitions, turning arguments into a validated
//! [`Plan`](crate::plan::Plan), dispatching verbs, and exit codes. Nothing
//! here measures or renders; it calls the modules that do.

use std::io::Write as _;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::plan::{Plan, PlanInput};
use crate::util::redact::redact_url_passwords;

mod build_verb;
mod mariadb_servers;
mod servers_verb;
mod shard_verb;
mod store_verbs;

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

/// `tidemark run`: where results go, a plan file or a run to resume, and
/// every option of a run ([`PlanInput`], which plan files share).
#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub results: ResultsArgs,
    /// A TOML plan file (targets, settings, suite, profile, overrides);
    /// options given on the command line win over it.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Continue an interrupted run with its stored plan, skipping the
    /// (target, repetition, step) cells it measured.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<i64>,
    #[command(flatten)]
    pub input: PlanInput,
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
    /// or a percentage (3%), between 0 and 1 (default 1%).
    #[arg(long, value_name = "FRACTION")]
    pub min_effect: Option<String>,
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

/// The plan `tidemark run` asked for: from the arguments and a plan file,
/// or, with `--resume`, the stored run's.
fn run_command(a: &RunArgs, m: &ArgMatches, command_line: String) -> anyhow::Result<i32> {
    let given = |id: &str| {
        matches!(
            m.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    let mut input = a.input.clone();
    input.results_dir = a.results.results.clone();
    input.store = a.results.store.clone();
    input.command_line = command_line;
    if let Some(run_id) = a.resume {
        let refused = match &a.plan {
            Some(_) => Some("--plan".to_string()),
            None => PlanInput::plan_options()
                .into_iter()
                .find(|(id, _)| given(id))
                .map(|(_, flag)| flag),
        };
        if let Some(flag) = refused {
            anyhow::bail!(
                "--resume {run_id} runs the plan stored with run {run_id}: drop {flag} (or start a new run without --resume)"
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
        let stored: PlanInput = serde_json::from_str(&plan_json)
            .map_err(|e| anyhow::anyhow!("the plan stored with run {run_id} is unreadable: {e}"))?;
        let plan = Plan::build(stored.resumed_with(&input)).map_err(anyhow::Error::msg)?;
        return crate::orchestrate::resume(&plan, run_id);
    }
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
    let min_effect =
        crate::stats::min_effect_or_default(a.min_effect.as_deref()).map_err(anyhow::Error::msg)?;
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
    if let Some(why) = gate::missing(&report) {
        eprintln!(
            "tidemark: gate --fail-on {}: cannot pass: {why} (exit {})",
            a.fail_on.as_deref().unwrap_or_default().trim(),
            gate::EXIT_GATE
        );
        return Ok(gate::EXIT_GATE);
    }
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
