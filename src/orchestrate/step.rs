//! The one place a step is measured, stored and printed, whatever suite it
//! belongs to: samplers that watch a step attach here.

use std::sync::atomic::AtomicBool;

use crate::db::{Connector, DbError};
use crate::report::progress::ProgressView;
use crate::report::terminal::SummaryRow;
use crate::runner::{Progress, StepResult, StepStatus};
use crate::server::TargetServer;
use crate::store::Store;
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
        let connector = self.server.connector();
        let started_at = crate::util::time::now_rfc3339();
        let view = self.view;
        let counters_before = self.server.client_counters();
        let result = run(connector.as_ref(), super::cancel_flag(), &mut |p| {
            view.step(p)
        })
        .map_err(|e| anyhow::anyhow!("{}: clients could not start: {e}", info.name))?;
        let info = &with_counter_growth(info, &counters_before, &self.server.client_counters());
        self.store
            .write_step(self.target_id, seq, &started_at, info, &result, plans)?;
        let lat = result.latency();
        self.view.line(&format!(
            "[{}/{}] {} {:<32} {:>10.0} qps {:>9.0} tps  p99 {:>7} µs{}",
            seq + 1,
            total,
            self.label,
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
        self.rows.push(SummaryRow {
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
                result.failure.clone().unwrap_or_default()
            );
        }
        Ok(result)
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
