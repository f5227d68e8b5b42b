//! How a step's hardware cost per operation is computed from the samplers'
//! rows: the summary of a step ([`HostCost::from_samples`]). The pure
//! formulas it uses, [`averages`] and [`per_op`], live with the types in
//! [`crate::record::host_cost`] so a slice's cost (`record::slices`) uses
//! the same ones:
//! `rpq = r/s ÷ rate`, `wpi = w/s ÷ insert rate`, `cspq = cs/s ÷ rate`,
//! `cpupq = (us+sy)/100 · ncpu · 10⁶ ÷ rate` (host-wide CPU µs per
//! operation, the client included), plus what the seeds could not
//! separate: server CPU µs per operation and client CPU µs per operation.

use std::collections::BTreeMap;

pub use crate::record::host_cost::{
    BASIS_INDEXED_ROWS, BASIS_INSERTS, BASIS_QUERIES, DiskRates, HostAverages, HostCost,
    HostSecond, OpRates, PerOp, Phase, StepHost, averages, per_op,
};

impl HostCost {
    /// Builds the summary from a step's samples: averages over the measured
    /// rows (all rows if none is marked measured), divided by `rates`.
    pub fn from_samples(
        rows: &[HostSecond],
        ncpu: u32,
        devices: Vec<String>,
        rates: OpRates,
        mut missing: BTreeMap<String, String>,
    ) -> HostCost {
        let measured: Vec<&HostSecond> =
            rows.iter().filter(|r| r.phase == Phase::Measured).collect();
        let window = if measured.is_empty() {
            rows.iter().collect()
        } else {
            measured
        };
        let avg = averages(&window);
        let per_op = match &avg {
            Some(a) => per_op(a, ncpu, &rates),
            None => PerOp::default(),
        };
        if avg.is_none() {
            missing
                .entry("host".into())
                .or_insert_with(|| "no sampler interval completed during the step".into());
        }
        if rates.rate <= 0.0 {
            missing
                .entry("per_op".into())
                .or_insert_with(|| format!("the step's rate ({}) is zero", rates.basis));
        } else if !rates.insert_rate.is_some_and(|r| r > 0.0) {
            missing
                .entry("per_insert".into())
                .or_insert_with(|| "no inserts in this step: wpi and wkbpi are undefined".into());
        }
        HostCost {
            ncpu,
            devices,
            rates: Some(rates),
            avg,
            per_op,
            db_bytes: None,
            datadir_bytes: None,
            sampler_cpu_pct: None,
            missing,
        }
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
