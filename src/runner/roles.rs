//! Steps with several roles per client (the Insert Benchmark): each client
//! has an inserter, perhaps a deleter that follows it, a query thread that
//! runs until the inserter is done, and a helper that reads ids. Every role
//! thread has exactly one connection for the whole step, named after its
//! role and client so the server can tell them apart.
//!
//! A step here is fixed work: it ends when every thread with a quota has
//! done it (a slow server makes the step longer, not shorter), or when a
//! thread cannot go on (connection lost, error storm): then every thread
//! stops, and the step is reported failed with what was measured so far.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::crew::{Crew, no_hold};
use super::drive::{Gate, LoopRules, ThreadEnd, drive};
use super::monitor::{ThreadSecond, Watch};
use super::pace::Pacer;
use super::result::{
    ClientResult, Counts, RoleClient, RoleResult, RoleSecond, StepResult, keep_error_sample,
    new_histogram,
};
use super::{ClientWork, Progress, step_status, sum_seconds};
use crate::db::{Connector, DbError};

/// One thread of a multi-role step.
pub struct ThreadPlan {
    /// The client (table) it works for, 0-based.
    pub client: u32,
    /// Index into [`RolesPlan::roles`].
    pub role: usize,
    pub work: Box<dyn ClientWork>,
    /// Stop after this many successful events (fixed work).
    pub quota: Option<u64>,
    /// Stop once the thread at this index has ended (e.g. the query thread
    /// stops when its client's inserter is done).
    pub until_ended: Option<usize>,
    /// Intended events per second on an open-loop schedule.
    pub pace: Option<f64>,
    /// A condition on other threads that must hold before each event.
    pub gate: Option<Gate>,
    /// Threads to wake after each event (those whose gates watch this one).
    pub wakes: Vec<usize>,
}

/// A multi-role step: its threads, its start and how to report it.
pub struct RolesPlan<'h> {
    /// Shown in progress output.
    pub label: String,
    /// Role names; a thread's `role` indexes this.
    pub roles: Vec<String>,
    /// The role whose latency headlines the step (`steps.lat_*`).
    pub primary_role: usize,
    pub threads: Vec<ThreadPlan>,
    /// A thread gives up after this many failed events in a row, and the
    /// step fails (an error storm is not a measurement).
    pub storm_limit: u32,
    /// The start waits, once every thread is connected and prepared,
    /// until this returns (a client shard waits there for the published
    /// start); the step's clock starts then. An error fails the step
    /// before any thread runs. `None`: at once.
    pub hold: Option<&'h dyn Fn() -> Result<(), DbError>>,
}

/// The parts of a [`ThreadPlan`] the thread borrows (its work it owns).
struct Spec {
    client: u32,
    role: usize,
    quota: Option<u64>,
    until_ended: Option<usize>,
    pace: Option<f64>,
    gate: Option<Gate>,
    wakes: Vec<usize>,
}

/// The application name a role thread's connection carries:
/// `tidemark/<role>/<client>` with the client 1-based, like the tables.
pub fn connection_name(role: &str, client: u32) -> String {
    format!("tidemark/{role}/{}", client + 1)
}

/// Runs a multi-role step to its end and returns what it measured. Fails
/// only when a thread cannot connect or prepare (nothing was measured) or
/// the plan's start `hold` fails.
pub fn run_roles(
    plan: RolesPlan<'_>,
    connector: &dyn Connector,
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<StepResult, DbError> {
    let (n, hold) = (plan.threads.len(), plan.hold);
    let mut works = Vec::with_capacity(n);
    let mut specs = Vec::with_capacity(n);
    for t in plan.threads {
        works.push(t.work);
        specs.push(Spec {
            client: t.client,
            role: t.role,
            quota: t.quota,
            until_ended: t.until_ended,
            pace: t.pace,
            gate: t.gate,
            wakes: t.wakes,
        });
    }
    // Held, the start is taken after the hold, once every thread is ready.
    let crew = Crew::new(n, hold.is_some());
    let peers = crew.peers();
    let abort = AtomicBool::new(false);
    let roles = &plan.roles;
    let storm_limit = plan.storm_limit.max(1);

    let (start, ends, seconds) = std::thread::scope(|scope| {
        let mut joins = Vec::with_capacity(n);
        for (index, mut work) in works.into_iter().enumerate() {
            let (crew, peers, abort, spec) = (&crew, &peers, &abort, &specs[index]);
            let name = connection_name(&roles[spec.role], spec.client);
            let join = std::thread::Builder::new()
                .name(name.clone())
                .spawn_scoped(scope, move || {
                    let setup = connector.connect_as(&name).and_then(|mut conn| {
                        work.prepare(conn.as_mut())?;
                        Ok((conn, work))
                    });
                    let (mut conn, mut work, start) = crew.ready(index, setup)?;
                    let rules = LoopRules {
                        index,
                        client: spec.client,
                        measure_from: start,
                        deadline: None,
                        quota: spec.quota,
                        until_ended: spec.until_ended,
                        pacer: spec.pace.and_then(|r| Pacer::new(start, r)),
                        gate: spec.gate.as_ref(),
                        turn: None,
                        wakes: &spec.wakes,
                        peers,
                        cancel,
                        abort: Some(abort),
                        storm_limit: Some(storm_limit),
                    };
                    Some(drive(&rules, conn.as_mut(), work.as_mut()))
                })
                .expect("spawning a role thread");
            joins.push(join);
        }
        let start = crew.open(&mut joins, hold.unwrap_or(&no_hold))?;
        let quotas: Vec<Option<u64>> = specs.iter().map(|s| s.quota).collect();
        let watch = Watch {
            label: &plan.label,
            start,
            measure_from: start,
            end: None,
            quotas: &quotas,
            cancel,
            abort: Some(&abort),
        };
        let (seconds, ends) = crew.watch_and_join(&watch, joins, on_progress);
        Ok((start, ends, seconds))
    })?;
    let interrupted = cancel.load(Ordering::Relaxed);
    Ok(assemble(
        roles,
        plan.primary_role,
        &specs,
        ends,
        &seconds,
        start,
        interrupted,
    ))
}

/// Merges the threads' results into the step result and its roles.
fn assemble(
    roles: &[String],
    primary_role: usize,
    specs: &[Spec],
    ends: Vec<ThreadEnd>,
    seconds: &[Vec<ThreadSecond>],
    start: Instant,
    interrupted: bool,
) -> StepResult {
    let since = |t: Instant| t.saturating_duration_since(start).as_secs_f64();
    let has_quota = specs.iter().any(|s| s.quota.is_some());
    let fatal = specs.iter().zip(&ends).find_map(|(s, e)| {
        e.fatal
            .as_ref()
            .map(|f| format!("client {} {}: {f}", s.client + 1, roles[s.role]))
    });
    // The step lasts until its last piece of fixed work is done; when it
    // stopped early, until the last thread stopped.
    let secs = specs
        .iter()
        .zip(&ends)
        .filter(|(s, _)| s.quota.is_some() || !has_quota || fatal.is_some() || interrupted)
        .map(|(_, e)| since(e.ended_at))
        .fold(0.0, f64::max);

    let mut role_results: Vec<RoleResult> = roles
        .iter()
        .enumerate()
        .map(|(i, name)| RoleResult {
            role: name.clone(),
            threads: 0,
            counts: Counts::default(),
            target_rate: specs.iter().find(|s| s.role == i).and_then(|s| s.pace),
            histogram: new_histogram(),
            intended: None,
            cpu_secs: 0.0,
            clients: Vec::new(),
            per_second: Vec::new(),
        })
        .collect();
    let mut step = StepResult::empty(specs.len() as u32);
    for (s, e) in specs.iter().zip(&ends) {
        let r = &mut role_results[s.role];
        let counts = Counts {
            events: e.result.events,
            statements: e.result.statements,
            rows: e.rows,
            errors: e.result.errors,
            retries: e.retries,
        };
        r.threads += 1;
        r.counts.add(&counts);
        r.cpu_secs += e.cpu_secs;
        let _ = r.histogram.add(&e.histogram);
        if let Some(h) = &e.intended {
            let merged = r.intended.get_or_insert_with(new_histogram);
            let _ = merged.add(h);
        }
        r.clients.push(RoleClient {
            client: s.client,
            counts,
            finish_secs: e.result.finish_secs,
            max_behind_us: e.max_behind_us,
            late_events: e.late_events,
        });
        step.client_cpu_secs += e.cpu_secs;
        for m in &e.error_samples {
            keep_error_sample(&mut step.error_samples, m);
        }
        // The client's share: its threads' totals; it finishes when its
        // last piece of fixed work is done.
        let pos = match step.clients.iter().position(|c| c.client == s.client) {
            Some(p) => p,
            None => {
                step.clients.push(ClientResult {
                    client: s.client,
                    ..Default::default()
                });
                step.clients.len() - 1
            }
        };
        let c = &mut step.clients[pos];
        c.events += e.result.events;
        c.statements += e.result.statements;
        c.errors += e.result.errors;
        if s.quota.is_some() || !has_quota {
            c.finish_secs = c.finish_secs.max(e.result.finish_secs);
        }
    }
    step.clients.sort_by_key(|c| c.client);
    for r in &mut role_results {
        r.clients.sort_by_key(|c| c.client);
    }
    for (sec, row) in seconds.iter().enumerate() {
        for (s, t) in specs.iter().zip(row) {
            role_results[s.role].per_second.push(RoleSecond {
                client: s.client,
                sec: sec as u32,
                events: t.counts.events,
                rows: t.counts.rows,
                errors: t.counts.errors,
                retries: t.counts.retries,
                max_latency_us: t.max_latency_us,
                max_intended_us: t.max_intended_us,
                max_behind_us: t.max_behind_us,
            });
        }
    }
    for r in &mut role_results {
        r.per_second.sort_by_key(|p| (p.sec, p.client));
    }
    step.per_second = sum_seconds(seconds);
    for r in &role_results {
        step.counts.add(&r.counts);
    }
    (step.status, step.failure) = step_status(fatal, interrupted, step.counts.errors);
    if let Some(r) = role_results.get(primary_role) {
        step.histogram = r.histogram.clone();
    }
    step.secs = secs;
    step.roles = role_results;
    step
}
