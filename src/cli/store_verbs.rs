//! The verbs of the results store beyond a run: `push` and `pull` (runs
//! between a local results.db and a shared PostgreSQL store), `history`
//! (each test across runs, with change points), and keeping passwords out
//! of the command line a run stores.

use std::path::PathBuf;

use clap::Args;

use super::ResultsArgs;

/// `tidemark history`.
#[derive(Args, Debug)]
pub struct HistoryArgs {
    #[command(flatten)]
    pub results: ResultsArgs,
    /// Only runs started on or after this date (2026-11-01 or RFC 3339).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only these tests (test or step names; repeatable, comma-separated).
    #[arg(long = "test", value_name = "NAME", value_delimiter = ',')]
    pub tests: Vec<String>,
    /// Only target families whose name contains this (postgres, "sqlite wal").
    #[arg(long, value_name = "NAME")]
    pub target_family: Option<String>,
    /// Order of the points: version (then date) or date.
    #[arg(long, value_parser = ["version", "date"], default_value = "version")]
    pub order: String,
    /// What to follow: rate (statements per second, Insert Benchmark
    /// steps their own rate), cpu (CPU µs per operation, client plus
    /// server) or instructions (the server's instructions per statement,
    /// from runs with --instructions).
    #[arg(long, value_parser = ["rate", "cpu", "instructions"], default_value = "rate")]
    pub metric: String,
    /// Smallest change reported as a change point (a fraction or a
    /// percentage).
    #[arg(long, value_name = "FRACTION", default_value = "5%")]
    pub min_effect: String,
    /// Output directory (default: RESULTS/reports/history).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `tidemark push`.
#[derive(Args, Debug)]
pub struct PushArgs {
    /// The store the runs come from (default: RESULTS/results.db).
    #[command(flatten)]
    pub results: ResultsArgs,
    /// Runs to copy, by their ids in the source (default: all).
    #[arg(value_name = "RUN")]
    pub runs: Vec<i64>,
    /// The PostgreSQL store to copy them to (postgres://user@host/db).
    #[arg(long, value_name = "URL")]
    pub to: String,
}

/// `tidemark pull`.
#[derive(Args, Debug)]
pub struct PullArgs {
    /// Results directory whose results.db receives the runs.
    #[arg(long, default_value = "tidemark-results", env = "TIDEMARK_RESULTS")]
    pub results: PathBuf,
    /// Runs to copy, by their ids in the shared store (default: all).
    #[arg(value_name = "RUN")]
    pub runs: Vec<i64>,
    /// The PostgreSQL store to copy them from (postgres://user@host/db).
    #[arg(
        long,
        value_name = "URL",
        env = "TIDEMARK_STORE",
        hide_env_values = true
    )]
    pub from: String,
}

pub(super) fn history(a: &HistoryArgs) -> anyhow::Result<i32> {
    use crate::report::{history, history_render};
    let min_effect = crate::stats::parse_min_effect(&a.min_effect).map_err(anyhow::Error::msg)?;
    if let Some(since) = &a.since
        && !(since.len() >= 10 && since.as_bytes()[4] == b'-' && since.as_bytes()[7] == b'-')
    {
        anyhow::bail!("--since {since}: write a date like 2026-11-01 (or an RFC 3339 time)");
    }
    let store = a.results.open_existing()?;
    let opts = history::HistoryOptions {
        since: a.since.clone(),
        tests: a.tests.iter().filter(|t| !t.is_empty()).cloned().collect(),
        family: a.target_family.clone(),
        by_date: a.order == "date",
        metric: history::Metric::parse(&a.metric).unwrap_or_default(),
        min_effect,
        detect: Default::default(),
    };
    let series = history::history(&store, &opts)?;
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| a.results.results.join("reports").join("history"));
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let markdown = history_render::markdown(&series);
    for (name, text) in [
        ("history.md", markdown.clone()),
        ("history.html", history_render::html(&series)),
        ("history.json", serde_json::to_string_pretty(&series)?),
    ] {
        std::fs::write(dir.join(name), text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", dir.join(name).display()))?;
    }
    print!("{markdown}");
    println!(
        "\nhistory of {} series: {} (also history.md, history.json)",
        series.len(),
        dir.join("history.html").display()
    );
    Ok(0)
}

/// Copies `runs` (all when empty) from `source` to `dest`, one line each.
pub(super) fn copy_runs(
    source: &crate::store::Store,
    mut dest: crate::store::Store,
    runs: &[i64],
) -> anyhow::Result<i32> {
    use crate::store::transfer::Copied;
    let ids = if runs.is_empty() {
        source.run_ids()?
    } else {
        runs.to_vec()
    };
    for id in ids {
        let copied = dest.copy_run_from(source, id).map_err(|e| {
            let text = format!("{e:#}");
            if text.contains("42501") {
                e.context(format!(
                    "the store's user may not write to {}: grant it INSERT and SELECT on \
                     tidemark's tables (and USAGE on their sequences), or use its owner",
                    dest.place()
                ))
            } else {
                e
            }
        })?;
        match copied {
            Copied::Stored(new) => println!("run {id} -> run {new} in {}", dest.place()),
            Copied::AlreadyThere(there) => {
                println!("run {id} is in {} already (run {there})", dest.place())
            }
        }
    }
    Ok(0)
}
