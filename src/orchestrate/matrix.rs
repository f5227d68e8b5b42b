//! Running a plan as a matrix: targets one after another with the same
//! workload parameters and seeds, each on a freshly started server, a
//! settle time between them, and `--repeat N` passes over the whole target
//! sequence interleaved (A B C, C B A), each pass stored as a repetition.
//!
//! The unit of work is a cell, (target position, repetition, step name).
//! A resumed run (`--resume RUN`) skips the cells already stored as
//! measured: a target whose cells are all measured is not started at all,
//! a partly measured one starts a fresh server, loads, and measures the
//! rest (see [`super::step::StepContext::measure`]). Nothing here knows a
//! suite: it runs the plan's [`SuiteDriver`]s in order.
//!
//! With [`Interleave::Steps`] (the default for two or more cells) a suite
//! that can run on all targets' servers at once does so first (sysbench,
//! [`super::interleave`]); the per-server cells then run the other suites
//! the plan has (the Insert Benchmark).

use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::labels::{dedupe_labels, unique_in_run};
use super::provide;
use super::step::StepContext;
use super::suite::{self, SuiteDriver};
use super::{EXIT_INTERRUPTED, cancelled};
use crate::console::progress::ProgressView;
use crate::console::terminal::{SummaryRow, summary};
use crate::plan::interleave::Interleave;
use crate::plan::{Plan, TargetPlan};
use crate::server::TargetServer;
use crate::store::{RunInfo, Store, StoredStep};

/// One target in one repetition.
struct Cell<'a> {
    pos: u32,
    repetition: u32,
    target: &'a TargetPlan,
}

/// The cells in execution order: repetition-major, so the targets
/// interleave, and every other pass backwards so no target always goes
/// first (A B C, C B A, A B C…).
fn cells(plan: &Plan) -> Vec<Cell<'_>> {
    (0..plan.repeat)
        .flat_map(|repetition| {
            let mut pass: Vec<Cell<'_>> = plan
                .targets
                .iter()
                .enumerate()
                .map(|(pos, target)| Cell {
                    pos: pos as u32,
                    repetition,
                    target,
                })
                .collect();
            if repetition % 2 == 1 {
                pass.reverse();
            }
            pass
        })
        .collect()
}

/// Where the run's results go, as shown: the results directory's
/// results.db, or the PostgreSQL store's URL without its password.
fn store_shown(store: &Store, plan: &Plan) -> String {
    match store.engine() {
        crate::store::Engine::Sqlite => plan.results_dir.join("results.db").display().to_string(),
        crate::store::Engine::Postgres => store.place().to_string(),
    }
}

/// Runs `plan`: a new run, or run `resume` continued. Returns the exit
/// code (0; 1 when a target failed; 130 when interrupted).
pub fn execute(plan: &Plan, resume: Option<i64>) -> anyhow::Result<i32> {
    let say = &mut |line: &str| eprintln!("{line}");
    let providers = provide::validate(plan, say)?;
    say(&plan.sizing.describe());
    if let Some(line) = plan.placement_line() {
        say(&line);
    }
    if let Some(line) = provide::io_bound_mechanism(plan) {
        say(&line);
    }
    std::fs::create_dir_all(&plan.results_dir).with_context(|| {
        format!(
            "cannot create the results directory {}: pass --results DIR somewhere writable",
            plan.results_dir.display()
        )
    })?;
    let mut store = Store::open_in(&plan.results_dir, plan.input.store.as_deref(), false)?;
    let run_id = match resume {
        Some(id) => {
            store.reopen_run(id)?;
            id
        }
        None => {
            let host = crate::metrics::host::collect(Some(&plan.results_dir));
            let mut params = suite::run_params(plan)?;
            params["sizing"] = serde_json::to_value(&plan.sizing)?;
            params["repeat"] = plan.repeat.into();
            params["settle_secs"] = plan.settle_secs.into();
            params["interleave"] = plan.interleave.as_str().into();
            for (key, cpus) in [
                ("server_cpus", &plan.server_cpus),
                ("client_cpus", &plan.client_cpus),
            ] {
                if let Some(c) = cpus {
                    params[key] = crate::util::cpus::format_list(c).into();
                }
            }
            let id = store.begin_run(&RunInfo {
                started_at: crate::util::time::now_rfc3339(),
                command_line: plan.command_line.clone(),
                tidemark_version: env!("CARGO_PKG_VERSION").to_string(),
                profile: plan.profile.as_str().to_string(),
                suite: plan.suite.as_str().to_string(),
                params,
                host,
            })?;
            store.set_run_plan(id, &serde_json::to_string(&plan.input)?)?;
            id
        }
    };
    let view = ProgressView::new();
    let planned = suite::planned_step_names(plan);
    view.line(&format!(
        "tidemark run {run_id}{}: {} steps × {} target(s) × {} repetition(s), profile {}, seed {}, results in {}",
        if resume.is_some() { " (resumed)" } else { "" },
        planned.len(),
        plan.targets.len(),
        plan.repeat,
        plan.profile.as_str(),
        plan.sysbench.seed,
        store_shown(&store, plan)
    ));

    // Summary rows per plan target, over all repetitions.
    let mut labels: Vec<Option<String>> = vec![None; plan.targets.len()];
    let mut rows: Vec<Vec<SummaryRow>> = vec![Vec::new(); plan.targets.len()];
    let mut failed = false;
    let mut started_one = false;
    // Steps already run interleaved across targets (all servers up).
    let mut interleaved: Vec<String> = Vec::new();
    let drivers = suite::drivers(plan);
    // The suites left for the per-server cells.
    let mut per_server: Vec<&dyn SuiteDriver> = Vec::new();
    for d in drivers.iter().copied() {
        let across = match plan.interleave {
            Interleave::Steps | Interleave::Together => d.run_interleaved(
                plan,
                &mut store,
                run_id,
                &providers,
                resume.is_some(),
                &view,
            ),
            _ => None,
        };
        let Some(outcomes) = across else {
            per_server.push(d);
            continue;
        };
        for (pos, o) in outcomes?.into_iter().enumerate() {
            if let Some(l) = o.label {
                labels[pos].get_or_insert(l);
            }
            rows[pos].extend(o.rows);
            failed |= o.failed;
        }
        interleaved.extend(d.planned_keys(plan));
        started_one = true;
    }
    let cell_list = if per_server.is_empty() {
        Vec::new()
    } else {
        cells(plan)
    };
    for cell in cell_list {
        if cancelled() {
            break;
        }
        let name = cell_name(plan, &cell);
        let done = if resume.is_some() {
            store.measured_step_names(run_id, cell.pos, cell.repetition)?
        } else {
            Vec::new()
        };
        if !planned.is_empty() && planned.iter().all(|n| done.contains(n)) {
            view.line(&format!(
                "target {name}: all {} steps measured before, skipped",
                planned.len()
            ));
            if let Some(id) = store.find_target(run_id, cell.pos, cell.repetition)? {
                let kept = store.measured_steps(id)?;
                rows[cell.pos as usize].extend(
                    planned
                        .iter()
                        .filter(|n| !interleaved.contains(n))
                        .filter_map(|n| kept.get(n))
                        .map(summary_row),
                );
            }
            continue;
        }
        if started_one {
            settle(plan.settle_secs, &view);
            if cancelled() {
                break;
            }
        }
        started_one = true;
        view.line(&format!("target {name}: starting"));
        let provider = providers[cell.pos as usize].clone();
        let outcome = provide::provide(
            plan,
            run_id,
            cell.pos,
            cell.repetition,
            cell.target,
            provider,
        )
        .and_then(|mut server| {
            let result = run_cell(
                plan,
                &per_server,
                &mut store,
                run_id,
                &cell,
                server.as_mut(),
                &view,
                resume.is_some(),
            );
            let stopped = server.stop(plan.keep_datadir);
            let r = result?;
            stopped?;
            Ok(r)
        });
        match outcome {
            Ok((label, cell_rows)) => {
                labels[cell.pos as usize].get_or_insert(label);
                rows[cell.pos as usize].extend(cell_rows);
            }
            Err(e) => {
                failed = true;
                view.line(&format!("tidemark: target {name}: {e:#}"));
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
    let shown: Vec<(String, Vec<SummaryRow>)> = labels
        .into_iter()
        .zip(rows)
        .enumerate()
        .filter(|(_, (_, r))| !r.is_empty())
        .map(|(pos, (label, r))| {
            let label = label.unwrap_or_else(|| plan.targets[pos].spec_text.clone());
            (label, median_rows(&r))
        })
        .collect();
    let model = crate::report::model_for_run(&store, run_id, plan.min_effect).ok();
    if let Some(report) = model.as_ref().filter(|r| r.sysbench.is_some()) {
        print!("{}", crate::console::verdicts::sysbench_summary(report));
        print!("{}", crate::console::verdicts::sweep_summary(report));
        print!("{}", crate::console::instructions::summary(report));
    } else if !shown.is_empty() {
        let (mut names, rows): (Vec<String>, Vec<Vec<SummaryRow>>) = shown.into_iter().unzip();
        dedupe_labels(&mut names);
        if plan.repeat > 1 {
            println!("\nmedian QPS over {} repetitions", plan.repeat);
        }
        print!("{}", summary(&names, &rows));
    }
    for d in &drivers {
        print!("{}", d.summary(&store, run_id, model.as_ref())?);
    }
    println!(
        "\nrun {run_id} {status}; results in {} (`tidemark export --run {run_id}`{})",
        store_shown(&store, plan),
        if interrupted {
            format!(", `tidemark run --resume {run_id}` to finish it")
        } else {
            String::new()
        }
    );
    if plan.report {
        match crate::report::write_for_run(&store, run_id, plan.min_effect) {
            Ok(index) => println!("report: {}", index.display()),
            Err(e) => eprintln!("tidemark: no report for run {run_id}: {e:#}"),
        }
    }
    Ok(if interrupted {
        EXIT_INTERRUPTED
    } else if failed {
        1
    } else {
        0
    })
}

/// How a cell is named in progress lines: the spec, and the repetition
/// when there are several.
fn cell_name(plan: &Plan, cell: &Cell<'_>) -> String {
    if plan.repeat > 1 {
        format!(
            "{} (repetition {}/{})",
            cell.target.spec_text,
            cell.repetition + 1,
            plan.repeat
        )
    } else {
        cell.target.spec_text.clone()
    }
}

/// The summary row of a step measured before.
pub(super) fn summary_row(r: &StoredStep) -> SummaryRow {
    SummaryRow {
        name: r.info.cell_key(),
        group: r.info.group,
        reported: r.info.reported,
        qps: r.qps,
        p99_us: r.latency.p99,
        errors: r.counts.errors,
        status: r.status.as_str().to_string(),
    }
}

/// Waits `secs` between targets, watching for Ctrl-C.
pub(super) fn settle(secs: f64, view: &ProgressView) {
    if secs <= 0.0 {
        return;
    }
    let end = Instant::now() + Duration::from_secs_f64(secs);
    view.line(&format!("settling {secs:.0} s before the next target"));
    while !cancelled() {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let left = end - now;
        view.phase(
            &format!("settling, {:.0} s left", left.as_secs_f64()),
            1.0 - left.as_secs_f64() / secs,
        );
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// Runs `suites` in order on one provided server for one cell (stopping
/// at the first that fails, or when interrupted); returns its label and
/// summary rows. The target's status is stored whatever happens.
#[allow(clippy::too_many_arguments)]
fn run_cell(
    plan: &Plan,
    suites: &[&dyn SuiteDriver],
    store: &mut Store,
    run_id: i64,
    cell: &Cell<'_>,
    server: &mut dyn TargetServer,
    view: &ProgressView,
    resuming: bool,
) -> anyhow::Result<(String, Vec<SummaryRow>)> {
    let info = unique_in_run(store, run_id, cell.pos, server.info())?;
    let (target_id, measured) = match store.find_target(run_id, cell.pos, cell.repetition)? {
        Some(id) => {
            let dropped = store.delete_unmeasured_steps(id)?;
            store.update_target_info(id, &info)?;
            let measured = store.measured_steps(id)?;
            if resuming {
                view.line(&format!(
                    "target {}: resuming: {} step(s) measured before are kept{}",
                    info.label,
                    measured.len(),
                    if dropped > 0 {
                        format!(", {dropped} cut short are measured again")
                    } else {
                        String::new()
                    }
                ));
            }
            (id, measured)
        }
        None => (
            store.add_target_repetition(run_id, cell.pos, cell.repetition, &info)?,
            Default::default(),
        ),
    };
    view.line(&format!(
        "target {}: {} ({})",
        info.label,
        info.version,
        if info.managed { "managed" } else { "external" }
    ));
    let mut ctx = StepContext::for_plan(
        plan,
        store,
        view,
        (server, &info.label, target_id),
        measured,
    );
    let mut outcome = Ok(());
    for (i, d) in suites.iter().enumerate() {
        if i > 0 && cancelled() {
            break;
        }
        outcome = d.run(plan, &mut ctx);
        if outcome.is_err() {
            break;
        }
    }
    // A load or step that failed because the kernel killed a server
    // process for memory says so (a step's own failure already does).
    let outcome = outcome.map_err(|e| match ctx.server.memory_note() {
        Some(note) if !format!("{e:#}").contains(&note) => anyhow::anyhow!("{e:#}; {note}"),
        _ => e,
    });
    let (status, failure) = match &outcome {
        Ok(()) if cancelled() => ("interrupted", None),
        Ok(()) => ("finished", None),
        Err(e) => ("failed", Some(format!("{e:#}"))),
    };
    ctx.store
        .set_target_status(target_id, status, failure.as_deref())?;
    outcome.map(|()| (info.label, ctx.rows))
}

/// One row per step name: the median QPS over the repetitions, the worst
/// p99, all errors, and the worst status.
fn median_rows(rows: &[SummaryRow]) -> Vec<SummaryRow> {
    let mut out: Vec<SummaryRow> = Vec::new();
    let mut qps: Vec<Vec<f64>> = Vec::new();
    for r in rows {
        match out.iter().position(|o| o.name == r.name) {
            Some(i) => {
                let o = &mut out[i];
                o.p99_us = o.p99_us.max(r.p99_us);
                o.errors += r.errors;
                if r.status != "ok" {
                    o.status = r.status.clone();
                }
                qps[i].push(r.qps);
            }
            None => {
                out.push(r.clone());
                qps.push(vec![r.qps]);
            }
        }
    }
    for (o, mut q) in out.iter_mut().zip(qps) {
        q.sort_by(f64::total_cmp);
        let n = q.len();
        o.qps = if n % 2 == 1 {
            q[n / 2]
        } else {
            (q[n / 2 - 1] + q[n / 2]) / 2.0
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, qps: f64, status: &str) -> SummaryRow {
        SummaryRow {
            name: name.into(),
            group: None,
            reported: true,
            qps,
            p99_us: qps as u64,
            errors: 0,
            status: status.into(),
        }
    }

    #[test]
    fn repetitions_summarise_as_medians() {
        let rows = [
            row("a", 10.0, "ok"),
            row("b", 1.0, "ok"),
            row("a", 30.0, "ok"),
            row("a", 20.0, "errors"),
            row("b", 3.0, "ok"),
        ];
        let m = median_rows(&rows);
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].qps, m[0].p99_us, m[0].status.as_str()),
            (20.0, 30, "errors")
        );
        assert_eq!(m[1].qps, 2.0);
    }
}
