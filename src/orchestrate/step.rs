//! The one place a step is measured, stored and printed, whatever suite it
//! belongs to: samplers that watch a step attach here. On a resumed run it
//! is also the place a cell measured before is recognised and kept, so no
//! suite driver can measure a cell twice.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::console::progress::ProgressView;
use crate::console::terminal::SummaryRow;
use crate::db::{Connector, DbError, Dialect};
use crate::metrics::cpu_profile::Profiler;
use crate::metrics::devices::devices_for_path;
use crate::metrics::sampler::{Sampler, SamplerConfig, SamplerOutput};
use crate::metrics::server_counters::CounterSampler;
use crate::metrics::sizes::{database_bytes, dir_bytes};
use crate::metrics::summary::{HostCost, OpRates, Phase, StepHost};
use crate::record::StepInstructions;
use crate::runner::{Progress, StepResult, StepStatus};
use crate::server::TargetServer;
use crate::store::{Store, StoredStep};
use crate::workload::StepInfo;

/// Everything a suite driver needs to run steps on one target.
pub struct StepContext<'a> {
    pub store: &'a mut Store,
    pub target_id: i64,
    pub label: String,
    pub server: &'a mut dyn TargetServer,
    pub view: &'a ProgressView,
    /// Summary rows of the steps run so far.
    pub rows: Vec<SummaryRow>,
    /// Block devices to watch (`--device`); empty: the disks under the
    /// server's data directory.
    pub devices: Vec<String>,
    /// Profile the server's CPU during the measured interval
    /// (`--cpu-profile`).
    pub cpu_profile: bool,
    /// `--instructions`: the events of each step, counted under Valgrind.
    pub instructions: Option<crate::plan::CountedEvents>,
    /// Where a counted step's run leaves its instruction count (or why
    /// there is none) for [`StepContext::measure`] to store.
    pub counted: CountSlot,
    /// Steps of this target and repetition measured by an earlier attempt
    /// of the run (`--resume`), by name: kept, not run again.
    pub measured: HashMap<String, StoredStep>,
}

/// A step being measured on one target ([`StepContext::begin`]): its host
/// sampler, the server's counters, the CPU profile (attached at the first
/// measured second) and the client counters it started from.
pub struct Measuring {
    started_at: String,
    sampler: std::io::Result<Sampler>,
    counter_sampler: Result<CounterSampler, String>,
    counters_before: Vec<(&'static str, u64)>,
    profile_plan: Option<Result<u32, String>>,
    profiler: Option<Profiler>,
}

impl Measuring {
    /// A second of the clients' run went by: the samplers close it as
    /// warm-up or measured, and the profile starts at the first measured.
    pub fn progress(&mut self, p: &Progress<'_>) {
        let phase = if p.warming_up {
            Phase::Warmup
        } else {
            Phase::Measured
        };
        self.tick(phase);
        if phase == Phase::Measured
            && let Some(Ok(pid)) = self.profile_plan.take()
        {
            match Profiler::start(pid) {
                Ok(p) => self.profiler = Some(p),
                Err(e) => self.profile_plan = Some(Err(e)),
            }
        }
    }

    /// The time since the last tick was not this step's measured time
    /// (another target's slice, a slice's warm-up): the samplers close it as
    /// warm-up, which no cost per operation counts.
    pub fn pause(&self) {
        self.tick(Phase::Warmup);
    }

    fn tick(&self, phase: Phase) {
        if let Ok(s) = &self.sampler {
            s.tick(phase);
        }
        if let Ok(c) = &self.counter_sampler {
            c.tick(phase);
        }
    }
}

/// A counted step's instructions, handed from its run to the store.
pub type CountSlot = std::sync::Arc<std::sync::Mutex<Option<Result<StepInstructions, String>>>>;

/// How a finished step is shown: the text after its name on the progress
/// line, and the number its summary row carries.
pub struct StepLine {
    pub text: String,
    pub rate: f64,
}

/// How a driver reads its finished step: the progress line `line` makes
/// and the rates `per_op` reads, by which the step's hardware cost is
/// divided (what one operation is, a query, an inserted row, an indexed
/// row, is the driver's to say).
#[derive(Clone, Copy)]
pub struct Reading<'a> {
    pub line: &'a dyn Fn(&StepResult) -> StepLine,
    pub per_op: &'a dyn Fn(&StepResult) -> OpRates,
}

/// The sysbench way ([`qps_line`]), its cost per statement (sysbench's
/// QPS, A.7: BEGIN and COMMIT included).
pub const PER_QUERY: Reading<'static> = Reading {
    line: &qps_line,
    per_op: &|r| OpRates::queries(crate::record::slices::cost_rate(r)),
};

/// The sysbench way: QPS, TPS and p99 latency.
pub fn qps_line(result: &StepResult) -> StepLine {
    StepLine {
        text: format!(
            "{:>10.0} qps {:>9.0} tps  p99 {:>7} µs",
            result.qps(),
            result.tps(),
            result.latency().p99
        ),
        rate: result.qps(),
    }
}

/// What runs a step's clients: it gets the target's connector, the cancel
/// flag and a progress callback, and returns the step's result.
pub trait StepRun:
    FnOnce(&dyn Connector, &AtomicBool, &mut dyn FnMut(&Progress<'_>)) -> Result<StepResult, DbError>
{
}

impl<F> StepRun for F where
    F: FnOnce(
        &dyn Connector,
        &AtomicBool,
        &mut dyn FnMut(&Progress<'_>),
    ) -> Result<StepResult, DbError>
{
}

impl<'a> StepContext<'a> {
    /// The context of target row `target_id` (labelled `label`) on
    /// `server`, with the plan's devices, CPU profile and instruction
    /// mode, and the steps `measured` by an earlier attempt.
    pub fn for_plan(
        plan: &crate::plan::Plan,
        store: &'a mut Store,
        view: &'a ProgressView,
        (server, label, target_id): (&'a mut dyn TargetServer, &str, i64),
        measured: HashMap<String, StoredStep>,
    ) -> StepContext<'a> {
        StepContext {
            store,
            target_id,
            label: label.to_string(),
            server,
            view,
            rows: Vec::new(),
            measured,
            devices: plan.devices.clone(),
            cpu_profile: plan.cpu_profile,
            instructions: plan.instructions,
            counted: Default::default(),
        }
    }
}

impl StepContext<'_> {
    /// Runs one step with `run`, stores it in one transaction with its
    /// plans, prints its line, and returns the result. `run` gets the
    /// target's connector, the cancel flag and a progress callback;
    /// `reading` makes the step's line and says what one operation of its
    /// hardware cost is ([`PER_QUERY`] for a statement). A step whose
    /// clients cannot even start (the server is gone) is stored as failed
    /// with the reason, like one that fails midway.
    pub fn measure(
        &mut self,
        seq: u32,
        total: usize,
        info: &StepInfo,
        plans: &[(String, String)],
        run: impl StepRun,
        reading: Reading<'_>,
    ) -> anyhow::Result<StepResult> {
        if let Some(record) = self.measured.remove(&info.cell_key()) {
            return self.keep_measured(seq, total, &record);
        }
        let mut measuring = self.begin();
        let connector = self.server.connector();
        let view = self.view;
        let result = run(connector.as_ref(), super::cancel_flag(), &mut |p| {
            measuring.progress(p);
            view.step(p)
        })
        .unwrap_or_else(|e| StepResult::failed(0, format!("clients could not start: {e}")));
        self.finish(measuring, (seq, total), info, plans, result, reading)
    }

    /// Starts measuring a step on this target: the samplers run from here
    /// to [`StepContext::finish`], over one run of its clients or several
    /// slices (`--slices`) with other targets' turns between them.
    pub fn begin(&self) -> Measuring {
        let connector = self.server.connector();
        Measuring {
            started_at: crate::util::time::now_rfc3339(),
            sampler: Sampler::start(self.sampler_config()),
            counter_sampler: match self.server.dialect() {
                Dialect::Sqlite => {
                    Err("embedded SQLite has no server statistics views".to_string())
                }
                // Its queries take snapshots while the step runs, which
                // decide how much the step's updates can prune.
                _ if self.instructions.is_some() => Err(
                    "the server's counters are not sampled under --instructions (their \
                     queries would change what a step prunes)"
                        .to_string(),
                ),
                _ => CounterSampler::start(connector.as_ref()),
            },
            counters_before: self.server.client_counters(),
            // The profile covers the measured interval: perf attaches at
            // its first second, to the backends the clients already have.
            profile_plan: self.profile_target(),
            profiler: None,
        }
    }

    /// Ends measuring a step begun with [`StepContext::begin`]: stops the
    /// samplers, divides the host's cost by the rates `reading.per_op`
    /// reads from `result`, stores the step in one transaction with its
    /// plans, prints its line (made by `reading.line`) and returns the
    /// result; a failed step is an error once stored.
    pub fn finish(
        &mut self,
        measuring: Measuring,
        (seq, total): (u32, usize),
        info: &StepInfo,
        plans: &[(String, String)],
        result: StepResult,
        reading: Reading<'_>,
    ) -> anyhow::Result<StepResult> {
        let Measuring {
            started_at,
            sampler,
            counter_sampler,
            counters_before,
            profile_plan,
            profiler,
        } = measuring;
        let mut result = result;
        if result.status == StepStatus::Failed
            && let Some(note) = self.server.memory_note()
        {
            let said = result.failure.take().unwrap_or_default();
            result.failure = Some(format!("{said}; {note}"));
        }
        let connector = self.server.connector();
        let sampled = match sampler {
            Ok(s) => s.stop(),
            Err(e) => SamplerOutput {
                missing: BTreeMap::from([(
                    "host".to_string(),
                    format!("the sampler thread could not start: {e}"),
                )]),
                ..SamplerOutput::default()
            },
        };
        let server_counters = counter_sampler.map(CounterSampler::stop);
        let profile = match (profiler, profile_plan) {
            (Some(p), _) => Some(p.stop()),
            (None, Some(Err(e))) => Some(Err(e)),
            (None, Some(Ok(_))) => Some(Err("the step had no measured second".into())),
            (None, None) => None,
        };
        let info = &note_nothing_finished(
            with_counter_growth(info, &counters_before, &self.server.client_counters()),
            &result,
        );
        let mut host = self.host_summary(sampled, (reading.per_op)(&result), connector.as_ref());
        match server_counters {
            Ok((counters, error)) => {
                if let Some(e) = error {
                    host.metrics.missing.insert("server_counters".into(), e);
                }
                host.server_counters = Some(counters);
            }
            Err(e) => {
                host.metrics.missing.insert("server_counters".into(), e);
            }
        }
        match self.counted.lock().expect("count slot").take() {
            Some(Ok(i)) => host.instructions = Some(i),
            Some(Err(e)) => {
                host.metrics.missing.insert("instructions".into(), e);
            }
            None => {}
        }
        match profile {
            Some(Ok(p)) => host.cpu_profile = Some(p),
            Some(Err(e)) => {
                host.metrics.missing.insert("cpu_profile".into(), e);
            }
            None => {}
        }
        self.store.write_step(
            self.target_id,
            seq,
            &started_at,
            info,
            &result,
            plans,
            Some(&host),
        )?;
        let line = (reading.line)(&result);
        // What the user asked for and this step could not give.
        let lost: String = ["instructions", "cpu_profile"]
            .iter()
            .filter_map(|k| {
                let why = host.metrics.missing.get(*k)?;
                Some(format!("  [no {}: {why}]", k.replace('_', " ")))
            })
            .collect();
        self.view.line(&format!(
            "[{}/{}] {} {:<32} {}{}{lost}",
            seq + 1,
            total,
            self.label,
            info.cell_key(),
            line.text,
            match result.status {
                StepStatus::Ok => String::new(),
                s => format!(
                    "  [{}: {} errors{}]",
                    s.as_str(),
                    result.counts.errors,
                    match (s, &result.failure) {
                        (StepStatus::Failed, Some(f)) => format!(": {f}"),
                        _ => result
                            .error_samples
                            .first()
                            .map(|e| format!(", e.g. {e}"))
                            .unwrap_or_default(),
                    }
                ),
            }
        ));
        self.rows.push(SummaryRow {
            name: info.cell_key(),
            group: info.group,
            reported: info.reported,
            qps: line.rate,
            p99_us: result.latency().p99,
            errors: result.counts.errors,
            status: result.status.as_str().to_string(),
        });
        if result.status == StepStatus::Failed {
            anyhow::bail!(
                "{} failed: {}",
                info.name,
                result.failure.clone().unwrap_or_default()
            );
        }
        Ok(result)
    }

    /// Whether an earlier attempt of the run measured the step of cell key
    /// `key` ([`StepInfo::cell_key`]) here (and [`StepContext::measure`]
    /// will keep it); drivers may skip the work around such a step (its
    /// EXPLAIN).
    pub fn is_measured(&self, key: &str) -> bool {
        self.measured.contains_key(key)
    }

    /// A cell measured before: print it, count it in the summary, and give
    /// the driver its stored result.
    fn keep_measured(
        &mut self,
        seq: u32,
        total: usize,
        record: &StoredStep,
    ) -> anyhow::Result<StepResult> {
        // A suite's own headline number (ibench: ips or qps) when it has one.
        let rate = record
            .metrics
            .as_ref()
            .and_then(|m| m.get("rate")?.as_f64())
            .unwrap_or(record.qps);
        let unit = record
            .metrics
            .as_ref()
            .and_then(|m| m.get("rate_unit")?.as_str().map(str::to_string))
            .unwrap_or_else(|| "qps".to_string());
        self.view.line(&format!(
            "[{}/{}] {} {:<32} {:>10.0} {unit}  measured before, kept",
            seq + 1,
            total,
            self.label,
            record.info.cell_key(),
            rate
        ));
        self.rows.push(SummaryRow {
            name: record.info.cell_key(),
            group: record.info.group,
            reported: record.info.reported,
            qps: rate,
            p99_us: record.latency.p99,
            errors: record.counts.errors,
            status: record.status.as_str().to_string(),
        });
        Ok(StepResult {
            status: record.status,
            failure: record.failure.clone(),
            secs: record.secs,
            threads: record.threads,
            counts: record.counts,
            error_samples: record.error_samples.clone(),
            histogram: record.histogram()?,
            per_second: record.per_second.clone(),
            clients: record.clients.clone(),
            client_cpu_secs: record.client_cpu_secs,
            // The stored roles stay in the store; the driver needs none.
            roles: Vec::new(),
            metrics: record.metrics.clone(),
        })
    }

    /// With `--cpu-profile`: the server process to profile, or why there
    /// is none; `None` without it.
    fn profile_target(&self) -> Option<Result<u32, String>> {
        self.cpu_profile.then(|| {
            self.server.server_pid().ok_or_else(|| {
                "no server process on this host to profile (external or embedded)".to_string()
            })
        })
    }

    fn sampler_config(&self) -> SamplerConfig {
        let server_pid = self.server.server_pid().ok_or_else(|| {
            if self.server.dialect() == Dialect::Sqlite {
                "embedded SQLite: its work runs in the client threads (client CPU)".to_string()
            } else if !self.server.info().managed {
                "external server: its processes are not on this host or not known".to_string()
            } else {
                "the server's process id is not known".to_string()
            }
        });
        let devices = if !self.devices.is_empty() {
            Ok(self.devices.clone())
        } else {
            match self.server.data_dir() {
                Some(dir) => devices_for_path(&dir),
                None => Err(
                    "no data directory on this host: pass --device NAME to watch a disk"
                        .to_string(),
                ),
            }
        };
        SamplerConfig {
            server_pid,
            devices,
            interval: Duration::from_secs(1),
        }
    }

    /// The step's hardware summary: the sampled seconds divided by `rates`,
    /// with the database and data directory sizes read now.
    fn host_summary(
        &self,
        sampled: SamplerOutput,
        rates: OpRates,
        connector: &dyn Connector,
    ) -> StepHost {
        let mut missing = sampled.missing.clone();
        let db_bytes = connector
            .connect()
            .map_err(|e| e.to_string())
            .and_then(|mut conn| database_bytes(conn.as_mut()));
        let datadir_bytes = match self.server.data_dir() {
            Some(dir) => dir_bytes(&dir),
            None => Err("no data directory on this host".to_string()),
        };
        let db_bytes = db_bytes
            .map_err(|e| missing.insert("db_size".into(), e))
            .ok();
        let datadir_bytes = datadir_bytes
            .map_err(|e| missing.insert("datadir_size".into(), e))
            .ok();
        let mut metrics = HostCost::from_samples(
            &sampled.rows,
            sampled.ncpu,
            sampled.devices.clone(),
            rates,
            missing,
        );
        metrics.db_bytes = db_bytes;
        metrics.datadir_bytes = datadir_bytes;
        metrics.sampler_cpu_pct = sampled.sampler_cpu_pct();
        StepHost {
            seconds: sampled.rows,
            metrics,
            server_counters: None,
            cpu_profile: None,
            instructions: None,
        }
    }
}

/// `info` with the growth of each client counter during the step added to
/// its params (warm-up included), e.g. `busy_waits` on SQLite.
fn with_counter_growth(
    info: &StepInfo,
    before: &[(&'static str, u64)],
    after: &[(&'static str, u64)],
) -> StepInfo {
    let mut info = info.clone();
    if let Some(params) = info.params.as_object_mut() {
        for (name, now) in after {
            let was = before
                .iter()
                .find(|(n, _)| n == name)
                .map_or(0, |(_, v)| *v);
            params.insert(
                (*name).to_string(),
                serde_json::json!(now.saturating_sub(was)),
            );
        }
    }
    info
}

/// A timed step in which no event finished measured no rate: its note says
/// so and how to size it (an IO-bound scan of a large table outlasts the
/// quick profile's seconds). Other steps keep their info as it is.
fn note_nothing_finished(mut info: StepInfo, result: &StepResult) -> StepInfo {
    if result.status == StepStatus::Ok && result.counts.events == 0 && result.secs > 0.0 {
        let said = format!(
            "no event finished within the step's {:.0} s, so it measured no rate: one takes \
             longer on this data; give the step more seconds (sysbench: --read-secs, \
             --write-secs)",
            result.secs
        );
        info.note = Some(match info.note.take() {
            Some(n) => format!("{n}. {said}"),
            None => said,
        });
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_where_nothing_finished_says_so() {
        let info = StepInfo {
            suite: "sysbench".into(),
            name: "scan_range=100".into(),
            test: "scan".into(),
            range: Some(100),
            group: None,
            reported: true,
            note: Some("rows counts rows scanned".into()),
            params: serde_json::json!({}),
            sweep_threads: None,
        };
        let mut result = StepResult::failed(1, "x");
        result.status = StepStatus::Ok;
        result.secs = 5.0;
        let noted = note_nothing_finished(info.clone(), &result);
        let note = noted.note.unwrap();
        assert!(
            note.starts_with("rows counts rows scanned. no event finished within the step's 5 s")
                && note.ends_with("--write-secs)"),
            "{note}"
        );
        result.counts.events = 1;
        assert_eq!(note_nothing_finished(info.clone(), &result), info);
        result.counts.events = 0;
        result.status = StepStatus::Failed;
        assert_eq!(
            note_nothing_finished(info.clone(), &result),
            info,
            "a failure says why itself"
        );
    }
}
