//! The one place a step is measured, stored and printed, whatever suite it
//! belongs to: the samplers that watch a step attach here. A sampler thread
//! runs from just before the step's clients start until they are done; the
//! runner's once-a-second progress call closes each sampler interval, so
//! host second *n* is the runner's second *n*. Database and data directory
//! sizes are read after the step, outside the measurement.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::db::{Connector, DbError, Dialect};
use crate::metrics::devices::devices_for_path;
use crate::metrics::sampler::{Sampler, SamplerConfig, SamplerOutput};
use crate::metrics::sizes::{database_bytes, dir_bytes};
use crate::metrics::summary::{OpRates, Phase, StepHost, StepMetrics};
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
    /// Block devices to watch (`--device`); empty: the disks under the
    /// server's data directory.
    pub devices: Vec<String>,
}

impl StepContext<'_> {
    /// Runs one step with `run`, stores it in one transaction with its
    /// plans and what the samplers saw, prints its line, and returns the
    /// result. `run` gets the target's connector, the cancel flag and a
    /// progress callback. Hardware use is divided by the step's QPS.
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
        self.measure_with_rates(seq, total, info, plans, |r| OpRates::queries(r.qps()), run)
    }

    /// [`StepContext::measure`] where `rates` says what one operation of
    /// this step is (inserts for a load step, indexed rows for an index
    /// build, queries with the insert rate for a query step).
    pub fn measure_with_rates(
        &mut self,
        seq: u32,
        total: usize,
        info: &StepInfo,
        plans: &[(String, String)],
        rates: impl FnOnce(&StepResult) -> OpRates,
        run: impl FnOnce(
            &dyn Connector,
            &AtomicBool,
            &mut dyn FnMut(&Progress<'_>),
        ) -> Result<StepResult, DbError>,
    ) -> anyhow::Result<StepResult> {
        let connector = self.server.connector();
        let started_at = crate::util::time::now_rfc3339();
        let view = self.view;
        let sampler = Sampler::start(self.sampler_config());
        let result = run(connector.as_ref(), super::cancel_flag(), &mut |p| {
            if let Ok(s) = &sampler {
                s.tick(if p.warming_up {
                    Phase::Warmup
                } else {
                    Phase::Measured
                });
            }
            view.step(p)
        });
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
        let result =
            result.map_err(|e| anyhow::anyhow!("{}: clients could not start: {e}", info.name))?;
        let host = self.host_summary(sampled, rates(&result), connector.as_ref());
        self.store.write_step_with_host(
            self.target_id,
            seq,
            &started_at,
            info,
            &result,
            plans,
            Some(&host),
        )?;
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

    /// What the sampler watches for this target.
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
        let mut metrics = StepMetrics::from_samples(
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
        }
    }
}
