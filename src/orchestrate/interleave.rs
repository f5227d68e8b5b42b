//! The sysbench suite with every target's server up at once
//! ([`Interleave::Steps`], [`Interleave::Together`]): load each
//! target, then run each test on every target before the next test,
//! alternating which target goes first. A and B are measured seconds
//! apart instead of a whole suite apart, so slow drift of the machine (the
//! dominant noise on a shared host) falls on both alike and cancels in
//! their ratio. With [`Interleave::Together`] each slice of a test runs on
//! every target at the same time (a driving thread per target), so even
//! the machine's second-to-second noise falls on all of them alike.
//!
//! With `--repeat N` the repetitions run one after another, each on
//! freshly started servers (a new data directory, a new load): two server
//! instances of one target differ by a few percent for as long as they
//! run, so a repetition on the same instances would repeat their
//! difference instead of sampling it. The start order rotates by one place
//! each repetition, so over every `n` repetitions of `n` targets each target
//! starts once in each place. Each repetition is stored as its own target row, exactly
//! as `--repeat` stores passes, so the report, export and `--resume` see
//! the same shape whichever order ran. A repetition after the first draws
//! its own keys (the run seed mixed with the repetition), the same on every
//! target, so a repeated write test does not replay the keys of the one
//! before.

use std::collections::HashMap;

use super::step::StepContext;
use super::sysbench::{self, Loaded};
use super::{cancelled, provide};
use crate::console::progress::ProgressView;
use crate::console::terminal::SummaryRow;
use crate::db::kept::KeptConnections;
use crate::plan::Plan;
use crate::plan::interleave::Interleave;
use crate::server::TargetServer;
use crate::store::{Store, StoredStep};

/// What one target position produced: its label (when its server
/// started), its summary rows, and whether it failed.
#[derive(Default)]
pub struct PositionOutcome {
    pub label: Option<String>,
    pub rows: Vec<SummaryRow>,
    pub failed: bool,
}

/// One target's server of one repetition, up with its tables loaded.
struct Live {
    pos: usize,
    label: String,
    server: Box<dyn TargetServer>,
    loaded: Loaded,
    /// Its target row (this repetition's).
    target_id: i64,
    /// Steps measured by an earlier attempt in this repetition.
    measured: HashMap<String, StoredStep>,
    /// Its server was stopped early (a failed step).
    stopped: bool,
}

/// The key seed of repetition `repetition`: the run seed itself for the
/// first, a well-mixed derivative for the others (splitmix64's finaliser).
pub fn repetition_seed(run_seed: u64, repetition: u32) -> u64 {
    if repetition == 0 {
        return run_seed;
    }
    let mut z = run_seed ^ u64::from(repetition).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The order targets run in for test `seq`, repetition `repetition`:
/// forwards and backwards in turn, so no target always goes first.
fn order(n: usize, seq: usize, repetition: u32) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    if (seq + repetition as usize) % 2 == 1 {
        idx.reverse();
    }
    idx
}

/// The order targets start in for repetition `repetition`: the targets in
/// plan order, rotated by one place per repetition (`[0, 1, 2]`, `[1, 2,
/// 0]`, `[2, 0, 1]` …), so each target starts once in each place over
/// every `n` repetitions. The first-started server of a repetition tends to
/// be slower (docs/verdicts.md); a rotation gives every pair of targets the
/// same mean place, where alternating forwards and backwards kept the first
/// and the last target of three two places apart in every repetition. For
/// two targets the two orders are the same. The first repetition starts
/// them in plan order, which keeps the `#2` numbering of repeated labels in
/// position order.
fn start_order(n: usize, repetition: u32) -> Vec<usize> {
    let shift = repetition as usize % n.max(1);
    (0..n).map(|i| (i + shift) % n).collect()
}

/// Runs the plan's sysbench tests interleaved across all targets, one
/// repetition after another, each on fresh servers; returns one outcome
/// per plan target. A target whose steps of a repetition were all measured
/// before (`--resume`) is not started for it; a target that failed is not
/// started again.
pub fn run_sysbench(
    plan: &Plan,
    store: &mut Store,
    run_id: i64,
    providers: &[provide::Provider],
    resuming: bool,
    view: &ProgressView,
) -> anyhow::Result<Vec<PositionOutcome>> {
    let mut out: Vec<PositionOutcome> = (0..plan.targets.len())
        .map(|_| PositionOutcome::default())
        .collect();
    let run = RunScope {
        plan,
        run_id,
        providers,
        resuming,
        view,
    };
    for repetition in 0..plan.repeat {
        if cancelled() {
            break;
        }
        let mut live = start_repetition(&run, store, repetition, &mut out)?;
        run_repetition(plan, store, view, &mut live, &mut out, repetition)?;
        stop_repetition(plan, store, view, live, &mut out)?;
    }
    Ok(out)
}

/// The run a repetition's servers are started for.
struct RunScope<'a> {
    plan: &'a Plan,
    run_id: i64,
    providers: &'a [provide::Provider],
    /// `--resume`: steps measured before are kept.
    resuming: bool,
    view: &'a ProgressView,
}

/// Starts and loads every target's server for `repetition`, in
/// [`start_order`]; a target measured before in it is kept from the store.
fn start_repetition(
    run: &RunScope<'_>,
    store: &mut Store,
    repetition: u32,
    out: &mut [PositionOutcome],
) -> anyhow::Result<Vec<Live>> {
    let RunScope {
        plan,
        run_id,
        providers,
        resuming,
        view,
    } = *run;
    let names = sysbench::planned_keys(plan);
    let of_n = |pos: &str| match plan.repeat {
        1 => format!("target {pos}"),
        n => format!("target {pos} repetition {}/{n}", repetition + 1),
    };
    let mut live: Vec<Live> = Vec::new();
    for pos in start_order(plan.targets.len(), repetition) {
        let target = &plan.targets[pos];
        if cancelled() {
            break;
        }
        if out[pos].failed {
            continue;
        }
        if resuming && all_measured(store, run_id, pos as u32, repetition, &names)? {
            view.line(&format!(
                "{}: all {} sysbench steps measured before, skipped",
                of_n(&target.spec_text),
                names.len()
            ));
            keep_rows(store, run_id, pos as u32, repetition, &names, &mut out[pos])?;
            continue;
        }
        view.line(&format!("{}: starting", of_n(&target.spec_text)));
        let started = provide::provide(
            plan,
            run_id,
            pos as u32,
            repetition,
            target,
            providers[pos].clone(),
        )
        .and_then(|server| {
            open(
                plan,
                store,
                run_id,
                (pos, repetition),
                server,
                resuming,
                view,
            )
        });
        match started {
            Ok(l) => {
                out[pos].label.get_or_insert_with(|| l.label.clone());
                live.push(l);
            }
            Err(e) => {
                out[pos].failed = true;
                view.line(&format!("tidemark: target {}: {e:#}", target.spec_text));
            }
        }
    }
    live.sort_by_key(|l| l.pos);
    if !live.is_empty() && plan.settle_secs > 0.0 && !cancelled() {
        super::matrix::settle(plan.settle_secs, view);
    }
    Ok(live)
}

/// Runs every test of the plan on the `live` servers of `repetition`,
/// test by test, the targets taking turns (sliced when `--slices` asks).
fn run_repetition(
    plan: &Plan,
    store: &mut Store,
    view: &ProgressView,
    live: &mut [Live],
    out: &mut [PositionOutcome],
    repetition: u32,
) -> anyhow::Result<()> {
    let seed = repetition_seed(plan.sysbench.seed, repetition);
    let cells =
        (0..plan.tests.len()).flat_map(|seq| (0..sysbench::points(plan)).map(move |p| (seq, p)));
    for (seq, point) in cells {
        if cancelled() {
            break;
        }
        if run_sliced(plan, store, view, live, out, (seq, point), repetition)? {
            continue;
        }
        for i in order(live.len(), seq + point, repetition) {
            if cancelled() {
                break;
            }
            let l = &mut live[i];
            if out[l.pos].failed {
                continue;
            }
            let (target, measured, loaded) = l.parts();
            let mut ctx = context(plan, store, view, target, measured);
            let result = sysbench::run_test(plan, &mut ctx, loaded, (seq, point), seed);
            let (kept, mut rows) = (std::mem::take(&mut ctx.measured), ctx.rows);
            l.measured = kept;
            out[l.pos].rows.append(&mut rows);
            if let Err(e) = result {
                fail(plan, store, view, l, &mut out[l.pos], &e)?;
            }
        }
    }
    Ok(())
}

/// Marks the repetition's target rows finished (or interrupted) and stops
/// the servers still up.
fn stop_repetition(
    plan: &Plan,
    store: &mut Store,
    view: &ProgressView,
    live: Vec<Live>,
    out: &mut [PositionOutcome],
) -> anyhow::Result<()> {
    let status = if cancelled() {
        "interrupted"
    } else {
        "finished"
    };
    for mut l in live {
        if !out[l.pos].failed {
            store.set_target_status(l.target_id, status, None)?;
        }
        if l.stopped {
            continue;
        }
        if let Err(e) = l.server.stop(plan.keep_datadir) {
            out[l.pos].failed = true;
            view.line(&format!("tidemark: target {}: {e:#}", l.label));
        }
    }
    Ok(())
}

/// Runs test `seq` at sweep point `point`, repetition `repetition`, in
/// slices on every live target (`--slices`): each target's step is made
/// ready and its samplers started, then the targets take turns slice by
/// slice (A B, B A, A B …), or run each slice at the same time
/// (`--interleave together`), each slice a short run of the clients on the
/// connections the target's earlier slices used (kept open between its
/// turns) with the slice's own keys (the same on every target), and
/// each target's slices are stored as one step listing them. Returns
/// false, having run nothing, when the cell is not to be sliced: one slice,
/// clients on shards, or a step an earlier attempt measured (`--resume`).
fn run_sliced(
    plan: &Plan,
    store: &mut Store,
    view: &ProgressView,
    live: &mut [Live],
    out: &mut [PositionOutcome],
    (seq, point): (usize, usize),
    repetition: u32,
) -> anyhow::Result<bool> {
    let seed = repetition_seed(plan.sysbench.seed, repetition);
    let active: Vec<usize> = (0..live.len())
        .filter(|&i| !out[live[i].pos].failed)
        .collect();
    let n = sysbench::slices_of(plan, seq);
    if active.len() < 2 || n <= 1 {
        return Ok(false);
    }
    let mut prepared: Vec<(usize, sysbench::PreparedTest)> = Vec::new();
    for &i in &active {
        let l = &mut live[i];
        let (target, measured, loaded) = l.parts();
        let mut ctx = context(plan, store, view, target, measured);
        let made = sysbench::prepare_test(plan, &mut ctx, loaded, (seq, point), seed);
        l.measured = ctx.measured;
        let test = match made {
            Ok(t) => t,
            Err(e) => {
                fail(plan, store, view, l, &mut out[l.pos], &e)?;
                continue;
            }
        };
        if l.measured.contains_key(&test.cell_key()) {
            return Ok(false);
        }
        prepared.push((i, test));
    }
    if prepared.is_empty() {
        return Ok(true);
    }
    let mut measuring = Vec::new();
    for (i, _) in &prepared {
        let l = &mut live[*i];
        let (target, measured, _) = l.parts();
        let ctx = context(plan, store, view, target, measured);
        measuring.push(ctx.begin());
        l.measured = ctx.measured;
    }
    // Each target's client connections, kept from slice to slice (closed
    // when the test's slices are done).
    let kept: Vec<KeptConnections> = prepared
        .iter()
        .map(|(i, _)| KeptConnections::new(live[*i].server.connector()))
        .collect();
    let mut parts: Vec<Vec<(String, crate::runner::StepResult)>> =
        prepared.iter().map(|_| Vec::new()).collect();
    let mut stopped = vec![false; prepared.len()];
    let at_once = plan.interleave == Interleave::Together;
    // Short turns inside each slice, every target's clients up through it.
    let turn =
        (!at_once && plan.sysbench.turn_ms > 0 && prepared.iter().all(|(_, t)| t.takes_turns()))
            .then(|| std::time::Duration::from_millis(u64::from(plan.sysbench.turn_ms)));
    for k in 0..n {
        if cancelled() {
            break;
        }
        let turns: Vec<usize> = order(prepared.len(), k as usize, 0)
            .into_iter()
            .filter(|&j| !stopped[j])
            .collect();
        let ran: Vec<(usize, (String, crate::runner::StepResult))> = if at_once {
            // Every target's slice k at the same time, one driving thread
            // each (the clients run on the runner's own threads).
            let mut of: Vec<Option<&mut super::step::Measuring>> =
                measuring.iter_mut().map(Some).collect();
            std::thread::scope(|scope| {
                let handles: Vec<_> = turns
                    .iter()
                    .map(|&j| {
                        let (_, test) = &prepared[j];
                        let connector = &kept[j];
                        let m = of[j].take().expect("one slice per target");
                        scope.spawn(move || (j, run_slice(plan, test, (k, n), connector, m, view)))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a slice's thread panicked"))
                    .collect()
            })
        } else if let Some(turn) = turn {
            let sides: Vec<(usize, &sysbench::PreparedTest, &KeptConnections)> = turns
                .iter()
                .map(|&j| (j, &prepared[j].1, &kept[j]))
                .collect();
            run_turn_slice(plan, &sides, (k, n), turn, &mut measuring, view)
        } else {
            // Taking turns; on Ctrl-C the slices this round already ran
            // are still kept below (the next round does not start).
            let mut ran = Vec::new();
            for j in turns {
                if cancelled() {
                    break;
                }
                let (_, test) = &prepared[j];
                let slice = run_slice(plan, test, (k, n), &kept[j], &mut measuring[j], view);
                ran.push((j, slice));
            }
            ran
        };
        for (j, (started_at, result)) in ran {
            stopped[j] = result.status == crate::runner::StepStatus::Failed;
            parts[j].push((started_at, result));
        }
    }
    drop(kept);
    for ((j, (i, mut test)), m) in prepared.into_iter().enumerate().zip(measuring) {
        test.mark_sliced(n);
        let l = &mut live[i];
        let (target, measured, loaded) = l.parts();
        let mut ctx = context(plan, store, view, target, measured);
        let stored = test
            .finish_sliced(plan, &mut ctx, m, std::mem::take(&mut parts[j]))
            .and_then(|()| sysbench::housekeeping(plan, &mut ctx, loaded, seq));
        let (kept, mut rows) = (std::mem::take(&mut ctx.measured), ctx.rows);
        l.measured = kept;
        out[l.pos].rows.append(&mut rows);
        if let Err(e) = stored {
            fail(plan, store, view, l, &mut out[l.pos], &e)?;
        }
    }
    Ok(true)
}

/// Runs slice `k` of `n` of `test` on the server behind `connector`, its
/// samplers in `m`; returns when its measured interval began and what it
/// measured.
fn run_slice(
    plan: &Plan,
    test: &sysbench::PreparedTest,
    (k, n): (u32, u32),
    connector: &dyn crate::db::Connector,
    m: &mut super::step::Measuring,
    view: &ProgressView,
) -> (String, crate::runner::StepResult) {
    let slice_plan = test.slice_plan(k, n);
    let mut started_at = None;
    let result = test
        .run(
            plan,
            &slice_plan,
            test.slice_seed(k),
            connector,
            super::cancel_flag(),
            &mut |p| {
                if !p.warming_up && started_at.is_none() {
                    started_at = Some(crate::util::time::now_rfc3339());
                }
                m.progress(p);
                view.step(p)
            },
        )
        .unwrap_or_else(|e| {
            crate::runner::StepResult::failed(
                slice_plan.threads,
                format!("clients could not start: {e}"),
            )
        });
    m.pause();
    let started_at = started_at.unwrap_or_else(crate::util::time::now_rfc3339);
    (started_at, result)
}

/// Runs slice `k` of `n` on every target in `sides` (its index among the
/// cell's targets, its test and its kept connections) at once, their
/// clients taking turns of `turn` (the first side first), each target's
/// samplers in `measuring` ticked alike; returns when the slice's measured
/// interval began (the same for all) and what each target measured.
fn run_turn_slice(
    plan: &Plan,
    sides: &[(usize, &sysbench::PreparedTest, &KeptConnections)],
    (k, n): (u32, u32),
    turn: std::time::Duration,
    measuring: &mut [super::step::Measuring],
    view: &ProgressView,
) -> Vec<(usize, (String, crate::runner::StepResult))> {
    let (_, first, _) = sides[0];
    let slice_plan = first.slice_plan(k, n);
    let tests: Vec<(&sysbench::PreparedTest, &dyn crate::db::Connector)> = sides
        .iter()
        .map(|&(_, t, c)| (t, c as &dyn crate::db::Connector))
        .collect();
    let mut started_at = None;
    let result = sysbench::PreparedTest::run_turns(
        plan,
        &tests,
        &slice_plan,
        (first.slice_seed(k), turn),
        super::cancel_flag(),
        &mut |p| {
            if !p.warming_up && started_at.is_none() {
                started_at = Some(crate::util::time::now_rfc3339());
            }
            for &(j, _, _) in sides {
                measuring[j].progress(p);
            }
            view.step(p)
        },
    );
    for &(j, _, _) in sides {
        measuring[j].pause();
    }
    let started_at = started_at.unwrap_or_else(crate::util::time::now_rfc3339);
    let results: Vec<crate::runner::StepResult> = match result {
        Ok(r) => r,
        Err(e) => sides
            .iter()
            .map(|_| {
                crate::runner::StepResult::failed(
                    slice_plan.threads,
                    format!("clients could not start: {e}"),
                )
            })
            .collect(),
    };
    sides
        .iter()
        .zip(results)
        .map(|(&(j, _, _), r)| (j, (started_at.clone(), r)))
        .collect()
}

/// A live target's server, label and target row of one repetition.
type TargetRef<'a> = (&'a mut Box<dyn TargetServer>, &'a str, i64);

/// The step context of a live target's `server` for repetition `r`, with
/// the steps `measured` before; the caller puts `ctx.measured` back.
fn context<'a>(
    plan: &Plan,
    store: &'a mut Store,
    view: &'a ProgressView,
    (server, label, target_id): TargetRef<'a>,
    measured: HashMap<String, StoredStep>,
) -> StepContext<'a> {
    StepContext::for_plan(
        plan,
        store,
        view,
        (server.as_mut(), label, target_id),
        measured,
    )
}

impl Live {
    /// Its server, label and target row, borrowed apart from its tables,
    /// and the steps measured before in its repetition.
    fn parts(&mut self) -> (TargetRef<'_>, HashMap<String, StoredStep>, &mut Loaded) {
        (
            (&mut self.server, &self.label, self.target_id),
            std::mem::take(&mut self.measured),
            &mut self.loaded,
        )
    }
}

/// Marks live target `l` failed with `e` in the store and the outcome,
/// and stops its server now: an idle server (its checkpoints, vacuum,
/// memory) would weigh on the targets still measured beside it.
fn fail(
    plan: &Plan,
    store: &mut Store,
    view: &ProgressView,
    l: &mut Live,
    out: &mut PositionOutcome,
    e: &anyhow::Error,
) -> anyhow::Result<()> {
    out.failed = true;
    view.line(&format!("tidemark: target {}: {e:#}", l.label));
    store.set_target_status(l.target_id, "failed", Some(&format!("{e:#}")))?;
    l.stopped = true;
    if let Err(e) = l.server.stop(plan.keep_datadir) {
        view.line(&format!("tidemark: target {}: {e:#}", l.label));
    }
    Ok(())
}

/// Records the target's row of one repetition and loads its tables.
fn open(
    plan: &Plan,
    store: &mut Store,
    run_id: i64,
    (pos, repetition): (usize, u32),
    mut server: Box<dyn TargetServer>,
    resuming: bool,
    view: &ProgressView,
) -> anyhow::Result<Live> {
    let info = super::labels::unique_in_run(store, run_id, pos as u32, server.info())?;
    view.line(&format!(
        "target {}: {} ({})",
        info.label,
        info.version,
        if info.managed { "managed" } else { "external" }
    ));
    let (target_id, measured) = match store.find_target(run_id, pos as u32, repetition)? {
        Some(id) => {
            store.delete_unmeasured_steps(id)?;
            store.update_target_info(id, &info)?;
            let kept = store.measured_steps(id)?;
            if resuming && !kept.is_empty() {
                view.line(&format!(
                    "target {} repetition {}: resuming: {} step(s) measured before are kept",
                    info.label,
                    repetition + 1,
                    kept.len()
                ));
            }
            (id, kept)
        }
        None => (
            store.add_target_repetition(run_id, pos as u32, repetition, &info)?,
            HashMap::new(),
        ),
    };
    let loaded = {
        let server: &mut dyn TargetServer = server.as_mut();
        let target = (server, info.label.as_str(), target_id);
        let mut ctx = StepContext::for_plan(plan, store, view, target, HashMap::new());
        sysbench::prepare(plan, &mut ctx)
    };
    match loaded {
        Ok(loaded) => Ok(Live {
            pos,
            label: info.label,
            server,
            loaded,
            target_id,
            measured,
            stopped: false,
        }),
        Err(e) => {
            let e = match server.memory_note() {
                Some(note) => anyhow::anyhow!("{e:#}; {note}"),
                None => e,
            };
            store.set_target_status(target_id, "failed", Some(&format!("{e:#}")))?;
            let _ = server.stop(plan.keep_datadir);
            Err(e)
        }
    }
}

/// Whether repetition `repetition` of target `pos` has all `names`
/// measured.
fn all_measured(
    store: &Store,
    run_id: i64,
    pos: u32,
    repetition: u32,
    names: &[String],
) -> anyhow::Result<bool> {
    let done = store.measured_step_names(run_id, pos, repetition)?;
    Ok(names.iter().all(|n| done.contains(n)))
}

/// The summary rows of a target's repetition measured before, from the
/// store.
fn keep_rows(
    store: &Store,
    run_id: i64,
    pos: u32,
    repetition: u32,
    names: &[String],
    out: &mut PositionOutcome,
) -> anyhow::Result<()> {
    if let Some(id) = store.find_target(run_id, pos, repetition)? {
        let kept = store.measured_steps(id)?;
        out.rows.extend(
            names
                .iter()
                .filter_map(|n| kept.get(n))
                .map(super::matrix::summary_row),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_alternate_which_goes_first() {
        assert_eq!(order(2, 0, 0), [0, 1]);
        assert_eq!(order(2, 0, 1), [1, 0]);
        assert_eq!(order(2, 1, 0), [1, 0]);
        assert_eq!(order(3, 1, 1), [0, 1, 2]);
    }

    #[test]
    fn the_start_order_rotates_so_each_target_starts_once_in_each_place() {
        assert_eq!(start_order(3, 0), [0, 1, 2]);
        assert_eq!(start_order(3, 1), [1, 2, 0]);
        assert_eq!(start_order(3, 2), [2, 0, 1]);
        assert_eq!(start_order(3, 3), [0, 1, 2]);
        assert_eq!(start_order(2, 1), [1, 0]);
        assert_eq!(start_order(1, 5), [0]);
        for n in 1..6 {
            for target in 0..n {
                let mut places: Vec<usize> = (0..n as u32)
                    .map(|r| start_order(n, r).iter().position(|&t| t == target).unwrap())
                    .collect();
                places.sort_unstable();
                assert_eq!(places, (0..n).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn repetition_seeds_differ_and_the_first_is_the_run_seed() {
        assert_eq!(repetition_seed(42, 0), 42);
        let s: Vec<u64> = (0..4).map(|r| repetition_seed(42, r)).collect();
        for i in 0..s.len() {
            for j in i + 1..s.len() {
                assert_ne!(s[i], s[j]);
            }
        }
        assert_eq!(repetition_seed(42, 1), repetition_seed(42, 1));
    }
}
