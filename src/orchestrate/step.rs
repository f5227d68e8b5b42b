//! The one place a step is measured, stored and printed, whatever suite it
//! belongs to: samplers that watch a step attach here. On a resumed run it
//! is also the place a cell measured before is recognised and kept, so no
//! suite driver can measure a cell twice.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use crate::db::{Connector, DbError};
use crate::report::progress::ProgressView;
use crate::report::terminal::SummaryRow;
use crate::runner::{Progress, StepResult, StepStatus};
use crate::server::TargetServer;
use crate::store::{StepRecord, Store};
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
    /// Steps of this target and repetition measured by an earlier attempt
    /// of the run (`--resume`), by name: kept, not run again.
    pub measured: HashMap<String, StepRecord>,
}

/// How a finished step is shown: the text after its name on the progress
/// line, and the number its summary row carries.
pub struct StepLine {
    pub text: String,
    pub rate: f64,
}

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

impl StepContext<'_> {
    /// Runs one step with `run`, stores it in one transaction with its
    /// plans, prints its line, and returns the result. `run` gets the
    /// target's connector, the cancel flag and a progress callback.
    pub fn measure(
        &mut self,
        seq: u32,
        total: usize,
        info: &StepInfo,
        plans: &[(String, String)],
        run: impl FnOnce(
            &dyn Connector,
            &AtomicBool,
            &mut dyn FnMut(&Progress<'_>),
        ) -> Result<StepResult, DbError>,
    ) -> anyhow::Result<StepResult> {
        self.measure_with(seq, total, info, plans, run, &qps_line)
    }

    /// [`StepContext::measure`] with the step's line made by `describe`.
    /// A step whose clients cannot even start (the server is gone) is
    /// stored as failed with the reason, like one that fails midway.
    pub fn measure_with(
        &mut self,
        seq: u32,
        total: usize,
        info: &StepInfo,
        plans: &[(String, String)],
        run: impl FnOnce(
            &dyn Connector,
            &AtomicBool,
            &mut dyn FnMut(&Progress<'_>),
        ) -> Result<StepResult, DbError>,
        describe: &dyn Fn(&StepResult) -> StepLine,
    ) -> anyhow::Result<StepResult> {
        if let Some(record) = self.measured.remove(&info.name) {
            return self.keep_measured(seq, total, &record);
        }
        let connector = self.server.connector();
        let started_at = crate::util::time::now_rfc3339();
        let view = self.view;
        let result = run(connector.as_ref(), super::cancel_flag(), &mut |p| {
            view.step(p)
        })
        .unwrap_or_else(|e| StepResult::failed(0, format!("clients could not start: {e}")));
        self.store
            .write_step(self.target_id, seq, &started_at, info, &result, plans)?;
        let line = describe(&result);
        self.view.line(&format!(
            "[{}/{}] {} {:<32} {}{}",
            seq + 1,
            total,
            self.label,
            info.name,
            line.text,
            match result.status {
                StepStatus::Ok => String::new(),
                s => format!(
                    "  [{}: {} errors{}]",
                    s.as_str(),
                    result.errors,
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
            name: info.name.clone(),
            group: info.group,
            reported: info.reported,
            qps: line.rate,
            p99_us: result.latency().p99,
            errors: result.errors,
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

    /// Whether an earlier attempt of the run measured step `name` here (and
    /// [`StepContext::measure`] will keep it); drivers may skip the work
    /// around such a step (its EXPLAIN).
    pub fn is_measured(&self, name: &str) -> bool {
        self.measured.contains_key(name)
    }

    /// A cell measured before: print it, count it in the summary, and give
    /// the driver its stored result.
    fn keep_measured(
        &mut self,
        seq: u32,
        total: usize,
        record: &StepRecord,
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
            record.info.name,
            rate
        ));
        self.rows.push(SummaryRow {
            name: record.info.name.clone(),
            group: record.info.group,
            reported: record.info.reported,
            qps: rate,
            p99_us: record.latency.p99,
            errors: record.errors,
            status: record.status.as_str().to_string(),
        });
        Ok(StepResult {
            status: record.status,
            failure: record.failure.clone(),
            secs: record.secs,
            threads: record.threads,
            events: record.events,
            statements: record.statements,
            rows: record.rows,
            errors: record.errors,
            retries: record.retries,
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
}
