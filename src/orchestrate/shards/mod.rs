//! Client shards (`run --client-hosts`): a step's clients split over
//! several `tidemark shard` processes that meet in the shared PostgreSQL
//! store ([`crate::store::shards`]), start together at a time the
//! coordinator publishes, and are merged exactly ([`merge()`]).
//!
//! Every part of client shards that runs a step lives in this folder:
//! `merge` (the exact merge of the shards' results), `processes` (the
//! shard processes of a step, killed with it), `ssh` (launching them over
//! OpenSSH) and `k8s` (as a Kubernetes Indexed Job). The `--client-hosts`
//! grammar and split are planning (`plan::client_hosts`); the board the
//! shards meet on is the store's (`store::shards`).
//!
//! The coordinator side ([`run_sharded`]) opens the step on the board,
//! launches the shards, waits until every one is connected and prepared,
//! publishes the start, waits for every result and merges them; a shard
//! that fails or disappears fails the whole step. The shard side
//! ([`run_shard`]) is the `tidemark shard` verb.

pub mod k8s;
pub mod merge;
mod processes;
pub mod ssh;

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, anyhow};
use serde::{Deserialize, Serialize};

use self::merge::{MergedShard, merge};
use self::processes::ShardProcesses;
use crate::db::postgres::{PgConnectOptions, PgConnector};
use crate::db::{Connector, DbError, ErrorKind};
use crate::plan::Plan;
use crate::plan::client_hosts::{ClientHosts, share};
use crate::plan::target::TargetSpec;
use crate::runner::{Progress, StepResult};
use crate::store::Store;
use crate::store::shards::ShardMember;
use crate::workload::ibench::IbenchParams;
use crate::workload::sysbench::SysbenchParams;

/// The environment variable that hands a local shard the target's
/// password (never stored on the board, never on a command line).
pub const PASSWORD_ENV: &str = "TIDEMARK_SHARD_PASSWORD";

/// How long shards may take to connect and prepare before the step is
/// given up.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// The same for a Kubernetes Job, which may be applied by hand and whose
/// pods are scheduled and pulled first.
pub(super) const K8S_READY_TIMEOUT: Duration = Duration::from_secs(600);
/// How far ahead of "everyone is ready" the start is published, so every
/// shard sees it before it comes.
const START_MARGIN_MS: f64 = 500.0;
/// How often the board is read while waiting for the shards to be ready
/// or for the start (before anything is measured: a tight start).
const POLL: Duration = Duration::from_millis(20);
/// How often the coordinator reads the board while the shards measure:
/// enough for the once-a-second progress line, and light on the store
/// (which may share a host with the server being measured).
const DONE_POLL: Duration = Duration::from_millis(200);

/// What every shard of a step runs, as the board holds it (no password).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardSpec {
    /// The target's URL without its password.
    pub target_url: String,
    /// What the step runs.
    pub work: ShardWork,
    /// The target's label, for progress output.
    pub label: String,
    /// Clients of the whole step (sysbench threads; Insert Benchmark
    /// clients, each with all its roles' threads).
    pub threads: u32,
}

/// The step a shard runs its part of.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ShardWork {
    /// A sysbench test (`point-query_range=100`) with the suite's knobs
    /// (the step's one thread count).
    Sysbench {
        test: String,
        params: SysbenchParams,
    },
    /// Insert Benchmark step `step` (`l.i1`), number `seq` of the target.
    Ibench {
        step: String,
        seq: u32,
        params: IbenchParams,
    },
}

/// How long a sharded step runs, for its progress line and deadline:
/// warm-up and measured time, `None` for fixed work.
pub type Span = Option<(Duration, Duration)>;

/// The password and URL of the plan's external PostgreSQL target whose
/// redacted URL is `shown` (a target's recorded spec).
pub fn target_options(plan: &Plan, shown: &str) -> Option<PgConnectOptions> {
    plan.targets.iter().find_map(|t| match &t.spec {
        TargetSpec::ExternalPostgres { url } => PgConnectOptions::from_url(url)
            .ok()
            .filter(|o| o.display_url() == shown),
        _ => None,
    })
}

/// With `--client-hosts`: where a step's shards run and the target they
/// reach (with its password), for the target recorded as `shown`; `None`
/// without the flag.
pub fn sharded_target(
    plan: &Plan,
    shown: &str,
) -> anyhow::Result<Option<(ClientHosts, PgConnectOptions)>> {
    let Some(hosts) = plan.client_hosts.clone() else {
        return Ok(None);
    };
    let target = target_options(plan, shown).ok_or_else(|| {
        anyhow!("--client-hosts: target {shown} is not an external postgres:// URL")
    })?;
    Ok(Some((hosts, target)))
}

/// Before any server starts: `ssh:` hosts reachable and with this
/// tidemark ([`ssh::prepare`]); nothing for other engines.
pub fn prepare_hosts(plan: &Plan) -> anyhow::Result<()> {
    match &plan.client_hosts {
        Some(ClientHosts::Ssh(hosts)) => {
            ssh::prepare(hosts, plan.input.store.as_deref().unwrap_or_default())
        }
        _ => Ok(()),
    }
}

/// One step run as shards: launches them on `hosts`, starts them together
/// through the store at `store_url`, and returns their merged result (a
/// failed result naming the shard when any failed). `Err` only when the
/// board cannot be used at all.
pub fn run_sharded(
    store_url: &str,
    hosts: &ClientHosts,
    target: &PgConnectOptions,
    spec: &ShardSpec,
    span: Span,
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<StepResult, DbError> {
    let board_error = |e: anyhow::Error| DbError::new(ErrorKind::Other, "", format!("{e:#}"));
    let store = Store::open_postgres(store_url, &std::env::temp_dir()).map_err(board_error)?;
    let n = hosts.count();
    let spec_json = serde_json::to_string(spec).expect("a shard spec serializes");
    let id = store.open_shard_step(n, &spec_json).map_err(board_error)?;
    let mut shards = ShardProcesses::launch(hosts, store_url, id, target.password.as_deref())
        .map_err(|e| board_error(e.context("launching the client shards")))?;
    let label = format!("{} (shards)", spec.label);
    let outcome = coordinate(
        &store,
        id,
        n,
        hosts,
        &mut shards,
        (&label, span),
        cancel,
        on_progress,
    );
    match outcome {
        Ok(members) => Ok(merge(&members, spec.threads)),
        Err(reason) => {
            let _ = store.abort_shard_step(id, &reason);
            shards.stop();
            Ok(StepResult::failed(spec.threads, reason))
        }
    }
}

/// The coordinator's part once the shards run: ready, start, results.
#[allow(clippy::too_many_arguments)]
fn coordinate(
    store: &Store,
    id: i64,
    n: u32,
    hosts: &ClientHosts,
    shards: &mut ShardProcesses,
    (label, span): (&str, Span),
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<Vec<MergedShard>, String> {
    let waiting = Instant::now()
        + match hosts {
            ClientHosts::K8s { .. } => K8S_READY_TIMEOUT,
            _ => READY_TIMEOUT,
        };
    wait_for(
        store,
        id,
        n,
        hosts,
        shards,
        waiting,
        cancel,
        ("ready", POLL),
        &mut |_| {},
    )?;
    let now = store.board_clock_ms().map_err(|e| format!("{e:#}"))?;
    let start_ms = (now + START_MARGIN_MS).round() as i64;
    store
        .publish_shard_start(id, start_ms)
        .map_err(|e| format!("{e:#}"))?;
    let (warmup, duration) = span.unwrap_or_default();
    let total = (warmup + duration).as_secs_f64();
    let began = Instant::now() + Duration::from_millis(START_MARGIN_MS as u64);
    // Fixed work (the Insert Benchmark) ends when it ends; a shard that
    // hangs is still caught when its process ends or Ctrl-C.
    let deadline = match span {
        Some(_) => began + warmup + duration + READY_TIMEOUT,
        None => began + Duration::from_secs(365 * 24 * 3600),
    };
    let mut last_tick = Instant::now();
    let members = wait_for(
        store,
        id,
        n,
        hosts,
        shards,
        deadline,
        cancel,
        ("done", DONE_POLL),
        &mut |members| {
            if last_tick.elapsed() < Duration::from_secs(1) || Instant::now() < began {
                return;
            }
            last_tick = Instant::now();
            let elapsed = match span {
                Some(_) => began.elapsed().as_secs_f64().min(total),
                None => began.elapsed().as_secs_f64(),
            };
            on_progress(&Progress {
                label,
                warming_up: elapsed < warmup.as_secs_f64(),
                elapsed,
                total,
                // The shards' own last seconds, summed.
                qps: members.iter().filter_map(|m| m.live).map(|l| l.0).sum(),
                errors: members.iter().filter_map(|m| m.live).map(|l| l.1).sum(),
            });
        },
    )?;
    shards.reap();
    members
        .into_iter()
        .map(|m| {
            let (report, histogram) = m.report.ok_or_else(|| {
                format!(
                    "shard {} of {n} on {} ended without a result",
                    m.shard, m.host
                )
            })?;
            let roles = report
                .roles
                .iter()
                .map(|r| r.to_result())
                .collect::<anyhow::Result<Vec<_>>>()
                .map_err(|e| format!("shard {} of {n}: {e:#}", m.shard))?;
            Ok(MergedShard {
                shard: m.shard,
                host: m.host,
                clock_offset_ms: m.clock_offset_ms,
                start_lag_ms: m.start_lag_ms,
                report,
                histogram,
                roles,
            })
        })
        .collect()
}

/// Reads the board every `poll` until every shard is in state `want`; fails with the
/// first shard that failed or whose process ended, on Ctrl-C, or at
/// `deadline`. `tick` runs on every round.
#[allow(clippy::too_many_arguments)]
fn wait_for(
    store: &Store,
    id: i64,
    n: u32,
    hosts: &ClientHosts,
    shards: &mut ShardProcesses,
    deadline: Instant,
    cancel: &AtomicBool,
    (want, poll): (&str, Duration),
    tick: &mut dyn FnMut(&[ShardMember]),
) -> Result<Vec<ShardMember>, String> {
    loop {
        let members = store.shard_members(id).map_err(|e| format!("{e:#}"))?;
        if let Some(m) = members.iter().find(|m| m.state == "failed") {
            return Err(format!(
                "shard {} of {n} on {} failed: {}",
                m.shard,
                m.host,
                m.error.as_deref().unwrap_or("no reason given")
            ));
        }
        let there = |s: u32| members.iter().any(|m| m.shard == s && m.state == want);
        if (0..n).all(there) {
            return Ok(members);
        }
        // Ctrl-C reaches the shards too (one process group): the step is
        // interrupted, not failed by a shard that stopped for it.
        if cancel.load(Ordering::Relaxed) {
            return Err("interrupted by the user before every shard finished".into());
        }
        if let Some((shard, why)) = shards.ended_early(&members) {
            // The board was read before the process ended: a shard that
            // stored its result just before exiting is done, not lost.
            let now = store.shard_members(id).map_err(|e| format!("{e:#}"))?;
            if now.iter().any(|m| m.shard == shard && m.state == "done") {
                continue;
            }
            return Err(format!(
                "shard {shard} of {n} on {} {why}: the step's result would be partial, so none is kept",
                hosts.host(shard)
            ));
        }
        if Instant::now() > deadline {
            let late: Vec<String> = (0..n)
                .filter(|&s| !there(s))
                .map(|s| s.to_string())
                .collect();
            return Err(format!(
                "shard(s) {} of {n} were not {want} in time: check that their hosts reach the store and the target",
                late.join(", ")
            ));
        }
        tick(&members);
        std::thread::sleep(poll);
    }
}

/// Milliseconds since the Unix epoch by this host's clock.
fn local_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// `tidemark shard --check-store`: whether this host reaches the store at
/// `store_url` (a connection within 10 s); the error is one line.
pub fn check_store(store_url: &str) -> anyhow::Result<()> {
    let opts = PgConnectOptions::from_url(store_url).map_err(|e| anyhow!("store URL: {e}"))?;
    crate::db::postgres::PgConn::connect_timeout(&opts, Duration::from_secs(10))
        .map(drop)
        .map_err(|e| anyhow!("cannot reach the store {}: {e}", opts.display_url()))
}

/// `tidemark shard`: runs shard `shard` of the sharded step `step` on the
/// board of the store at `store_url`; exit code 0 once its result is
/// stored, whatever the step measured.
pub fn run_shard(store_url: &str, step: i64, shard: u32, lifeline: bool) -> anyhow::Result<i32> {
    if lifeline {
        // Started over ssh: the coordinator's end of the input closing
        // means it (or its ssh) is gone; so is this shard.
        std::thread::spawn(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
            std::process::exit(3);
        });
    }
    let store = Store::open_postgres(store_url, &std::env::temp_dir())?;
    let board = store.shard_step(step)?;
    let outcome = shard_step(&store, step, shard, board.shards, &board.spec_json);
    match outcome {
        Ok(result) => {
            store.finish_shard(step, shard, &result)?;
            Ok(0)
        }
        Err(e) => {
            let text = crate::util::redact::redact_url_passwords(&format!("{e:#}"));
            let _ = store.set_shard_state(step, shard, "failed", None, None, Some(&text));
            Err(e)
        }
    }
}

/// The shard's own step: register, connect and prepare its clients,
/// report ready, start at the published time, run.
fn shard_step(
    store: &Store,
    step: i64,
    shard: u32,
    shards: u32,
    spec_json: &str,
) -> anyhow::Result<StepResult> {
    let spec: ShardSpec = serde_json::from_str(spec_json).context("the shard spec")?;
    if shard >= shards {
        anyhow::bail!(
            "--shard {shard}: step {step} has shards 0 to {}",
            shards - 1
        );
    }
    let (first, count) = share(spec.threads, shards, shard);
    let host = crate::util::process_identity::ProcessIdentity::current().host;
    store.register_shard(step, shard, &host, std::process::id(), count)?;
    let mut opts = PgConnectOptions::from_url(&spec.target_url).map_err(|e| anyhow!(e))?;
    if let Ok(p) = std::env::var(PASSWORD_ENV)
        && !p.is_empty()
    {
        opts.password = Some(p);
    }
    opts.application_name = format!("tidemark-shard{shard}");
    let connector = PgConnector(opts);
    let hold = || -> Result<(), DbError> {
        wait_for_start(store, step, shard)
            .map_err(|e| DbError::new(ErrorKind::Other, "", format!("{e:#}")))
    };
    let cancel = super::cancel_flag();
    // Once a second: this shard's rate for the coordinator's progress line
    // (a failed write only costs the line a second).
    let mut live = |p: &Progress<'_>| {
        let _ = store.set_shard_live(step, shard, p.qps, p.errors);
    };
    let part = ShardPart {
        label: &spec.label,
        first,
        count,
        connector: &connector,
        hold: &hold,
        cancel,
        live: &mut live,
    };
    match &spec.work {
        ShardWork::Sysbench { test, params } => super::sysbench::run_shard_part(test, params, part),
        ShardWork::Ibench {
            step: name,
            seq,
            params,
        } => super::ibench::run_shard_part(name, *seq, params, part),
    }
}

/// What a shard hands its suite to run its part of a step: its clients
/// (numbered `first..first + count` of the whole step), a connector to
/// the target, the hold that waits for the published start, the cancel
/// flag and the once-a-second progress callback.
pub struct ShardPart<'a> {
    /// The target's label, for progress output.
    pub label: &'a str,
    /// The number of this shard's first client in the whole step.
    pub first: u32,
    /// How many clients this shard runs.
    pub count: u32,
    /// Connections to the target.
    pub connector: &'a dyn Connector,
    /// Waits for the coordinator's start, once every client is ready.
    pub hold: &'a dyn Fn() -> Result<(), DbError>,
    /// Set by Ctrl-C.
    pub cancel: &'a AtomicBool,
    /// This shard's rate, once a second.
    pub live: &'a mut dyn FnMut(&Progress<'_>),
}

/// Reports ready with this host's clock offset, waits for the published
/// start (or an abort), sleeps until it by this host's clock, and records
/// how late it woke.
fn wait_for_start(store: &Store, step: i64, shard: u32) -> anyhow::Result<()> {
    let before = local_ms();
    let board_now = store.board_clock_ms()?;
    let offset = (before + local_ms()) / 2.0 - board_now;
    store.set_shard_state(step, shard, "ready", Some(offset), None, None)?;
    let give_up = Instant::now() + READY_TIMEOUT;
    let start_ms = loop {
        let s = store.shard_step(step)?;
        if let Some(reason) = s.aborted {
            anyhow::bail!("the coordinator aborted the step: {reason}");
        }
        if let Some(start) = s.start_ms {
            break start as f64;
        }
        if Instant::now() > give_up {
            anyhow::bail!(
                "no start was published within {} s",
                READY_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(POLL);
    };
    let wait_ms = start_ms + offset - local_ms();
    if wait_ms > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(wait_ms / 1000.0));
    }
    let lag = local_ms() - offset - start_ms;
    store.set_shard_state(step, shard, "running", None, Some(lag), None)?;
    Ok(())
}
