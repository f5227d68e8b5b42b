//! Carrying out a [`Plan`]: validate what can be checked before any server
//! starts, then for each target provide its server, run the suite's steps
//! (each stored the moment it finishes), and stop the server. Ctrl-C stops
//! the current step, keeps what it measured, and shuts the server down.
//!
//! - [`provide`]: validation and servers, per target kind;
//! - [`step`]: the one place a step is measured, stored and printed;
//! - [`sysbench`]: the sysbench suite's sequence of load, tests, housekeeping.

pub mod provide;
pub mod step;
pub mod sysbench;

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;

use crate::cli::EXIT_INTERRUPTED;
use crate::plan::{Plan, Suite};
use crate::report::progress::ProgressView;
use crate::report::terminal::{SummaryRow, summary};
use crate::server::TargetServer;
use crate::store::{RunInfo, Store};
use step::StepContext;

/// Set by Ctrl-C (SIGINT) or SIGTERM; every loop of a run watches it.
static CANCEL: AtomicBool = AtomicBool::new(false);

/// The run-wide cancellation flag.
pub fn cancel_flag() -> &'static AtomicBool {
    &CANCEL
}

/// Whether the run was asked to stop.
pub fn cancelled() -> bool {
    CANCEL.load(Ordering::SeqCst)
}

/// First Ctrl-C: stop after storing what the current step measured. Second:
/// stop the servers now and exit.
fn install_signal_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if CANCEL.swap(true, Ordering::SeqCst) {
                crate::server::process::kill_all_servers();
                std::process::exit(EXIT_INTERRUPTED);
            }
            eprintln!(
                "\ntidemark: interrupted; stopping after storing what was measured (Ctrl-C again to stop at once)"
            );
        });
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            crate::server::process::kill_all_servers();
            default_hook(info);
        }));
    });
}

/// Runs the plan; returns the exit code (0; 1 when a target failed; 130
/// when interrupted).
pub fn run(plan: &Plan) -> anyhow::Result<i32> {
    install_signal_handlers();
    let providers = provide::validate(plan)?;
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
        if cancelled() {
            break;
        }
        view.line(&format!("target {}: starting", target.spec_text));
        let outcome =
            provide::provide(plan, run_id, pos as u32, target, provider).and_then(|mut server| {
                let result =
                    run_target(plan, &mut store, run_id, pos as u32, server.as_mut(), &view);
                let stopped = server.stop(plan.keep_datadir);
                let r = result?;
                stopped?;
                Ok(r)
            });
        match outcome {
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
    let interrupted = cancelled();
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

/// Runs the plan's suite on one provided server; returns its label and
/// summary rows. The target's status is stored whatever happens.
fn run_target(
    plan: &Plan,
    store: &mut Store,
    run_id: i64,
    pos: u32,
    server: &mut dyn TargetServer,
    view: &ProgressView,
) -> anyhow::Result<(String, Vec<SummaryRow>)> {
    let info = server.info().clone();
    let target_id = store.add_target(run_id, pos, &info)?;
    view.line(&format!(
        "target {}: {} ({})",
        info.label,
        info.version,
        if info.managed { "managed" } else { "external" }
    ));
    let mut ctx = StepContext {
        store,
        target_id,
        label: info.label.clone(),
        server,
        view,
        rows: Vec::new(),
        devices: plan.devices.clone(),
    };
    let outcome = match plan.suite {
        Suite::Sysbench => sysbench::run(plan, &mut ctx),
    };
    let (status, failure) = match &outcome {
        Ok(()) if cancelled() => ("interrupted", None),
        Ok(()) => ("finished", None),
        Err(e) => ("failed", Some(format!("{e:#}"))),
    };
    ctx.store
        .set_target_status(target_id, status, failure.as_deref())?;
    outcome.map(|()| (info.label, ctx.rows))
}
