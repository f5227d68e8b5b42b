//! Carrying out a [`Plan`]: validate what can be checked before any server
//! starts, then for each target provide the server, load, run every step,
//! store each finished step at once, stop the server. Ctrl-C stops the
//! current step, keeps what it measured, and shuts the server down.

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;

use crate::cli::EXIT_INTERRUPTED;
use crate::db::postgres::{PgConn, PgConnectOptions};
use crate::db::{Conn, DbError, Dialect};
use crate::plan::target::BinSource;
use crate::plan::{Plan, TargetPlan, TargetSpec};
use crate::report::progress::ProgressView;
use crate::report::terminal::{SummaryRow, summary};
use crate::runner::{Connector, StepStatus, run_step};
use crate::server::TargetInfo;
use crate::server::postgres::{ManagedPgOptions, ManagedPostgres, PgBinaries, find_bindir};
use crate::store::{RunInfo, Store};
use crate::workload::sysbench::catalog::After;
use crate::workload::sysbench::{Sysbench, load};

/// Set by Ctrl-C (SIGINT) or SIGTERM; every loop of a run watches it.
static CANCEL: AtomicBool = AtomicBool::new(false);

/// The run-wide cancellation flag.
pub fn cancel_flag() -> &'static AtomicBool {
    &CANCEL
}

/// First Ctrl-C: stop after the current step's bookkeeping. Second: stop
/// the servers now and exit.
fn install_signal_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if CANCEL.swap(true, Ordering::SeqCst) {
                crate::server::process::kill_all_servers();
                std::process::exit(EXIT_INTERRUPTED);
            }
            eprintln!("\ntidemark: interrupted; stopping after storing what was measured (Ctrl-C again to stop at once)");
        });
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            crate::server::process::kill_all_servers();
            default_hook(info);
        }));
    });
}

/// Connects benchmark clients to a PostgreSQL target.
struct PgConnector {
    opts: PgConnectOptions,
}

impl Connector for PgConnector {
    fn connect(&self) -> Result<Box<dyn Conn>, DbError> {
        Ok(Box::new(PgConn::connect(&self.opts)?))
    }
}

/// A target after validation: what is needed to provide its server.
enum Provider {
    Managed(PgBinaries),
    External(PgConnectOptions),
}

/// Runs the plan; returns the exit code (0, 1 when a target failed, 130
/// when interrupted).
pub fn run(plan: &Plan) -> anyhow::Result<i32> {
    install_signal_handlers();
    let providers = validate(plan)?;
    std::fs::create_dir_all(&plan.results_dir).with_context(|| {
        format!(
            "cannot create the results directory {}: pass --results DIR somewhere writable",
            plan.results_dir.display()
        )
    })?;
    let mut store = Store::open(&plan.results_dir)?;
    let host = crate::metrics::host::collect(Some(&plan.results_dir));
    let run_id = store.begin_run(&RunInfo {
        started_at: crate::util::time::now_rfc3339(),
        command_line: plan.command_line.clone(),
        tidemark_version: env!("CARGO_PKG_VERSION").to_string(),
        profile: plan.profile.as_str().to_string(),
        suite: plan.suite.as_str().to_string(),
        params: serde_json::to_value(&plan.sysbench)?,
        host,
    })?;
    let view = ProgressView::new();
    view.line(&format!(
        "tidemark run {run_id}: {} tests × {} target(s), profile {}, results in {}",
        plan.tests.len(),
        plan.targets.len(),
        plan.profile.as_str(),
        plan.results_dir.display()
    ));

    let mut labels = Vec::new();
    let mut rows = Vec::new();
    let mut failed = false;
    for (pos, (target, provider)) in plan.targets.iter().zip(providers).enumerate() {
        if CANCEL.load(Ordering::SeqCst) {
            break;
        }
        match run_target(
            plan, &mut store, run_id, pos as u32, target, provider, &view,
        ) {
            Ok((label, target_rows)) => {
                labels.push(label);
                rows.push(target_rows);
            }
            Err(e) => {
                failed = true;
                view.line(&format!("tidemark: target {}: {e:#}", target.spec_text));
            }
        }
    }
    view.finish();
    let interrupted = CANCEL.load(Ordering::SeqCst);
    let status = if interrupted {
        "interrupted"
    } else if failed {
        "failed"
    } else {
        "finished"
    };
    store.finish_run(run_id, status)?;
    if !labels.is_empty() {
        print!("{}", summary(&labels, &rows));
    }
    println!(
        "\nrun {run_id} {status}; results in {} (`tidemark export --run {run_id}`)",
        plan.results_dir.join("results.db").display()
    );
    Ok(if interrupted {
        EXIT_INTERRUPTED
    } else if failed {
        1
    } else {
        0
    })
}

/// Checks everything that can be checked before a server starts: binaries,
/// the port, external servers' reachability and their existing tables.
fn validate(plan: &Plan) -> anyhow::Result<Vec<Provider>> {
    if let Some(port) = plan.port
        && std::net::TcpListener::bind(("127.0.0.1", port)).is_err()
    {
        anyhow::bail!(
            "port {port} on 127.0.0.1 is already in use: pass another --port, or omit it to pick a free one"
        );
    }
    let mut out = Vec::new();
    for t in &plan.targets {
        match &t.spec {
            TargetSpec::ManagedPostgres { source, .. } => {
                let dir = match source {
                    BinSource::Dir(d) => Some(d.as_path()),
                    BinSource::System => plan.pg_bindir.as_deref(),
                };
                out.push(Provider::Managed(find_bindir(dir)?));
            }
            TargetSpec::ExternalPostgres { url } => {
                let opts = PgConnectOptions::from_url(url).map_err(anyhow::Error::msg)?;
                let mut conn = PgConn::connect(&opts).map_err(|e| {
                    anyhow::anyhow!(
                        "cannot connect to {}: {e}: check the URL and that the server is running",
                        opts.display_url()
                    )
                })?;
                if plan.existing == load::ExistingTables::Refuse {
                    // Fails with the one-line refusal when foreign tables exist;
                    // drops nothing here (tables tidemark owns are dropped later).
                    check_foreign_tables(&mut conn)?;
                }
                out.push(Provider::External(opts));
            }
        }
    }
    Ok(out)
}

/// Refuses early when an external database has sbtest tables tidemark did
/// not create, without changing anything.
fn check_foreign_tables(conn: &mut PgConn) -> anyhow::Result<()> {
    let existing = load::existing_tables(conn)?;
    if existing.is_empty() {
        return Ok(());
    }
    // Only a dry look: the marker table may not exist yet.
    let owned: Vec<String> = conn
        .query_text("SELECT table_name FROM tidemark_owned_tables")
        .map(|rows| {
            rows.into_iter()
                .filter_map(|mut r| r.pop().flatten())
                .collect()
        })
        .unwrap_or_default();
    let foreign: Vec<String> = existing
        .into_iter()
        .filter(|t| !owned.contains(t))
        .collect();
    if !foreign.is_empty() {
        anyhow::bail!(
            "the target database already has table(s) {} that tidemark did not create: pass --reuse-tables to benchmark them as they are, or --drop-existing to drop and reload them",
            foreign.join(", ")
        );
    }
    Ok(())
}

/// Label in the seeds' style: DBMS + version digits + config (`pg1518.base`).
fn label_for(version_number: &str, config: &str) -> String {
    let digits: String = version_number
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    format!("pg{digits}.{config}")
}

/// A started (or reached) server and how to connect to it.
struct Provided {
    managed: Option<ManagedPostgres>,
    opts: PgConnectOptions,
    info: TargetInfo,
}

fn provide(
    plan: &Plan,
    run_id: i64,
    pos: u32,
    target: &TargetPlan,
    provider: Provider,
) -> anyhow::Result<Provided> {
    match provider {
        Provider::Managed(bins) => {
            let config = match &target.spec {
                TargetSpec::ManagedPostgres { config, .. } => config.clone(),
                TargetSpec::ExternalPostgres { .. } => None,
            }
            .unwrap_or_else(|| "base".to_string());
            let base_config = crate::server::postgres::base_config(plan.profile.as_str())
                .context("no shipped PostgreSQL config for this profile")?;
            let datadir = server_dir(&plan.results_dir, run_id, pos, &bins.version);
            let server = ManagedPostgres::start(ManagedPgOptions {
                bindir: bins.clone(),
                datadir,
                port: plan.port,
                config_name: config.clone(),
                base_config,
                overrides: target.settings.clone(),
                dbname: "tidemark".to_string(),
                start_timeout: Duration::from_secs(120),
            })?;
            let label = label_for(&bins.version, &config);
            let info = server.info(&target.spec_text, &label)?;
            Ok(Provided {
                opts: server.connect_options(),
                managed: Some(server),
                info,
            })
        }
        Provider::External(opts) => {
            let mut conn = PgConn::connect(&opts)?;
            let version = first_value(&mut conn, "SELECT version()")?;
            let number = first_value(&mut conn, "SHOW server_version")?;
            let settings = conn
                .query_text(
                    "SELECT name, current_setting(name) FROM pg_settings \
                     WHERE source NOT IN ('default', 'client', 'session', 'override') ORDER BY name",
                )?
                .into_iter()
                .map(|r| {
                    let mut it = r.into_iter();
                    (
                        it.next().flatten().unwrap_or_default(),
                        it.next().flatten().unwrap_or_default(),
                    )
                })
                .collect();
            let info = TargetInfo {
                spec: opts.display_url(),
                label: label_for(&number, "external"),
                dbms: "postgres".into(),
                version,
                version_number: number,
                config_name: None,
                config_text: String::new(),
                settings,
                managed: false,
                extra: serde_json::json!({ "url": opts.display_url() }),
            };
            Ok(Provided {
                managed: None,
                opts,
                info,
            })
        }
    }
}

fn first_value(conn: &mut dyn Conn, sql: &str) -> Result<String, DbError> {
    Ok(conn
        .query_text(sql)?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .unwrap_or_default())
}

/// Where a managed server's data directory goes: under the results dir.
fn server_dir(results: &Path, run_id: i64, pos: u32, version: &str) -> PathBuf {
    let abs = std::path::absolute(results).unwrap_or_else(|_| results.to_path_buf());
    abs.join("servers")
        .join(format!("run{run_id}-t{pos}-pg{version}"))
}

/// Runs the suite on one target; returns its label and summary rows.
fn run_target(
    plan: &Plan,
    store: &mut Store,
    run_id: i64,
    pos: u32,
    target: &TargetPlan,
    provider: Provider,
    view: &ProgressView,
) -> anyhow::Result<(String, Vec<SummaryRow>)> {
    view.line(&format!("target {}: starting", target.spec_text));
    let mut provided = provide(plan, run_id, pos, target, provider)?;
    let label = provided.info.label.clone();
    let target_id = store.add_target(run_id, pos, &provided.info)?;
    view.line(&format!(
        "target {label}: {} ({})",
        provided.info.version,
        if provided.info.managed {
            "managed"
        } else {
            "external"
        }
    ));
    let outcome = run_suite(plan, store, target_id, &label, &provided.opts, view);
    let (status, failure) = match &outcome {
        Ok(_) if CANCEL.load(Ordering::SeqCst) => ("interrupted", None),
        Ok(_) => ("finished", None),
        Err(e) => ("failed", Some(format!("{e:#}"))),
    };
    store.set_target_status(target_id, status, failure.as_deref())?;
    if let Some(mut server) = provided.managed.take() {
        let datadir = server.datadir().to_path_buf();
        server.stop()?;
        if !plan.keep_datadir
            && let Some(parent) = datadir.parent()
        {
            let _ = std::fs::remove_dir_all(parent);
        }
    }
    outcome.map(|rows| (label, rows))
}

fn run_suite(
    plan: &Plan,
    store: &mut Store,
    target_id: i64,
    label: &str,
    opts: &PgConnectOptions,
    view: &ProgressView,
) -> anyhow::Result<Vec<SummaryRow>> {
    let connector = PgConnector { opts: opts.clone() };
    let suite = Sysbench {
        params: plan.sysbench.clone(),
        dialect: Dialect::Postgres,
    };
    let p = &plan.sysbench;
    let mut admin = connector.connect()?;
    if load::check_existing(admin.as_mut(), plan.existing)? {
        view.line(&format!(
            "target {label}: loading {} table(s) × {} rows",
            p.tables, p.table_size
        ));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
        load::create_and_load(
            &connector,
            p.tables,
            p.table_size,
            p.seed,
            threads,
            &CANCEL,
            &mut |done, total| {
                view.phase(
                    &format!("{label} load {done}/{total} rows"),
                    done as f64 / total.max(1) as f64,
                );
            },
        )?;
    }
    let mut rows = Vec::new();
    for (seq, test) in plan.tests.iter().enumerate() {
        if CANCEL.load(Ordering::SeqCst) {
            break;
        }
        let plans = suite.explain(test, admin.as_mut());
        let started_at = crate::util::time::now_rfc3339();
        let step_plan = suite.step_plan(test, label);
        let result = run_step(
            &step_plan,
            &connector,
            &|client| suite.client(test, client),
            &CANCEL,
            &mut |p| view.step(p),
        )
        .map_err(|e| anyhow::anyhow!("{}: clients could not start: {e}", test.name()))?;
        let info = suite.step_info(test, Dialect::Postgres);
        store.write_step(target_id, seq as u32, &started_at, &info, &result, &plans)?;
        let lat = result.latency();
        view.line(&format!(
            "[{}/{}] {label} {:<32} {:>10.0} qps {:>9.0} tps  p99 {:>7} µs{}",
            seq + 1,
            plan.tests.len(),
            info.name,
            result.qps(),
            result.tps(),
            lat.p99,
            match result.status {
                StepStatus::Ok => String::new(),
                s => format!(
                    "  [{}: {} errors{}]",
                    s.as_str(),
                    result.errors,
                    result
                        .error_samples
                        .first()
                        .map(|e| format!(", e.g. {e}"))
                        .unwrap_or_default()
                ),
            }
        ));
        rows.push(SummaryRow {
            name: info.name.clone(),
            group: info.group,
            reported: info.reported,
            qps: result.qps(),
            p99_us: lat.p99,
            errors: result.errors,
            status: result.status.as_str().to_string(),
        });
        if result.status == StepStatus::Failed {
            anyhow::bail!(
                "{} failed: {}",
                info.name,
                result.failure.unwrap_or_default()
            );
        }
        if test.after == After::Postwrite && !CANCEL.load(Ordering::SeqCst) {
            let budget =
                load::postwrite_budget(u64::from(p.tables) * p.table_size, p.postwrite_scale);
            view.phase(
                &format!(
                    "{label} housekeeping (vacuum, checkpoint, wait {:.0}s)",
                    budget.as_secs_f64()
                ),
                1.0,
            );
            drop(admin);
            for note in load::postwrite(&connector, p.tables, budget, &CANCEL)? {
                view.line(&format!("target {label}: {note}"));
            }
            admin = connector.connect()?;
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_the_seeds_style() {
        assert_eq!(label_for("15.18", "base"), "pg1518.base");
        assert_eq!(label_for("18beta1", "cx10b"), "pg18.cx10b");
        assert_eq!(label_for("17.10 (Debian 17.10-1)", "x"), "pg1710.x");
    }
}
