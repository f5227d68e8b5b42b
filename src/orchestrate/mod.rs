//! Carrying out a [`Plan`]: validate what can be checked before any server
//! starts, then for each target provide its server, run the suite's steps
//! (each stored the moment it finishes), and stop the server. Ctrl-C stops
//! the current step, keeps what it measured, and shuts the server down.
//!
//! - [`matrix`]: targets × repetitions in order, settle time, resume;
//! - [`interleave`]: sysbench tests across all targets' servers at once;
//! - [`provide`]: validation and servers, per target kind;
//! - [`step`]: the one place a step is measured, stored and printed;
//! - [`suite`]: the trait every suite implements and their registration;
//! - [`sysbench`]: the sysbench suite's sequence of load, tests, housekeeping;
//! - [`ibench`]: the Insert Benchmark's ten steps, housekeeping and wait.

pub mod ibench;
pub mod interleave;
mod labels;
pub mod limits;
pub mod matrix;
pub mod provide;
pub mod shards;
pub mod step;
pub mod suite;
pub mod sysbench;
pub mod workload_file;

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::plan::Plan;

/// Exit code for a run stopped by Ctrl-C (128 + SIGINT). Defined here, where
/// a run stops, so `cli` imports `orchestrate` and never the reverse.
pub const EXIT_INTERRUPTED: i32 = 130;

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

/// Runs the plan as a new run; returns the exit code (0; 1 when a target
/// failed; 130 when interrupted).
pub fn run(plan: &Plan) -> anyhow::Result<i32> {
    start(plan, None)
}

/// Continues run `run_id` (its plan rebuilt from the store), skipping the
/// cells it measured; returns the exit code as [`run`] does.
pub fn resume(plan: &Plan, run_id: i64) -> anyhow::Result<i32> {
    start(plan, Some(run_id))
}

/// What a new and a resumed run do alike: place the plan's CPUs, refuse
/// what this host cannot do (profiling, Valgrind), prepare the shards'
/// hosts and the signal handlers, then carry out the plan (continuing
/// `resume`'s run when given).
fn start(plan: &Plan, resume: Option<i64>) -> anyhow::Result<i32> {
    let placed = plan.placed();
    let plan = placed.as_ref().unwrap_or(plan);
    check_profiling(plan)?;
    check_valgrind(plan)?;
    place_cpus(plan)?;
    shards::prepare_hosts(plan)?;
    install_signal_handlers();
    matrix::execute(plan, resume)
}

/// `--cpu-profile` on a host where perf cannot record is refused in one
/// line before any server starts, rather than every step storing a
/// missing profile.
fn check_profiling(plan: &Plan) -> anyhow::Result<()> {
    match plan
        .cpu_profile
        .then(crate::metrics::cpu_profile::unavailable)
    {
        Some(Some(why)) => anyhow::bail!("--cpu-profile: {why}; or run without --cpu-profile"),
        _ => Ok(()),
    }
}

/// `--instructions` without a working Valgrind is refused in one line
/// before any server starts.
fn check_valgrind(plan: &Plan) -> anyhow::Result<()> {
    match plan
        .instructions
        .and_then(|_| crate::server::valgrind::unavailable())
    {
        Some(why) => anyhow::bail!("--instructions: {why}"),
        None => Ok(()),
    }
}

/// `--server-cpus` / `--client-cpus`, or the default of one client per
/// step (`plan::placement`, said by the matrix after validation): placed
/// before any thread or server starts, so every thread tidemark starts
/// inherits the client CPUs.
fn place_cpus(plan: &Plan) -> anyhow::Result<()> {
    if plan.server_cpus.is_some() || plan.client_cpus.is_some() {
        crate::util::cpus::place(plan.server_cpus.as_deref(), plan.client_cpus.as_deref())
            .map_err(|e| anyhow::anyhow!("cannot place tidemark on --client-cpus: {e}"))?;
    }
    Ok(())
}
