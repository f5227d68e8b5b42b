//! How a step's hardware cost per operation is computed from the samplers'
//! rows, as pure functions of the samples (the types are in
//! [`crate::record::host_cost`]):
//! `rpq = r/s ÷ rate`, `wpi = w/s ÷ insert rate`, `cspq = cs/s ÷ rate`,
//! `cpupq = (us+sy)/100 · ncpu · 10⁶ ÷ rate` (host-wide CPU µs per
//! operation, the client included), plus what the seeds could not
//! separate: server CPU µs per operation and client CPU µs per operation.

use std::collections::BTreeMap;

use crate::record::host_cost::ratio;
pub use crate::record::host_cost::{
    BASIS_INDEXED_ROWS, BASIS_INSERTS, BASIS_QUERIES, DiskRates, HostAverages, HostCost,
    HostSecond, OpRates, PerOp, Phase, StepHost,
};

/// Averages over `rows`, each weighted by its length: the totals of the
/// window divided by its length. Waits are per request (total wait ÷ total
/// requests). `None` for an empty window.
pub fn averages(rows: &[&HostSecond]) -> Option<HostAverages> {
    let secs: f64 = rows.iter().map(|r| r.secs).sum();
    if rows.is_empty() || secs <= 0.0 {
        return None;
    }
    let mean =
        |f: &dyn Fn(&HostSecond) -> f64| rows.iter().map(|r| f(r) * r.secs).sum::<f64>() / secs;
    let disk_rows: Vec<(&DiskRates, f64)> = rows
        .iter()
        .filter_map(|r| r.disk.as_ref().map(|d| (d, r.secs)))
        .collect();
    let disk = disk_average(&disk_rows);
    // A process metric averages over the rows that have it.
    let where_read = |f: &dyn Fn(&HostSecond) -> Option<f64>| {
        let (mut sum, mut secs) = (0.0, 0.0);
        for r in rows {
            if let Some(v) = f(r) {
                sum += v * r.secs;
                secs += r.secs;
            }
        }
        (secs > 0.0).then(|| sum / secs)
    };
    Some(HostAverages {
        secs,
        samples: rows.len() as u32,
        us: mean(&|r| r.us),
        sy: mean(&|r| r.sy),
        id: mean(&|r| r.id),
        wa: mean(&|r| r.wa),
        st: mean(&|r| r.st),
        cs: mean(&|r| r.cs),
        intr: mean(&|r| r.intr),
        bi: mean(&|r| r.bi),
        bo: mean(&|r| r.bo),
        si: mean(&|r| r.si),
        so: mean(&|r| r.so),
        r: mean(&|r| r.r as f64),
        b: mean(&|r| r.b as f64),
        disk,
        server_cpu_pct: where_read(&|r| r.server_cpu_pct),
        server_read_kbps: where_read(&|r| r.server_read_kbps),
        client_cpu_pct: mean(&|r| r.client_cpu_pct),
        server_rss_bytes: rows.iter().rev().find_map(|r| r.server_rss_bytes),
    })
}

fn disk_average(rows: &[(&DiskRates, f64)]) -> Option<DiskRates> {
    let secs: f64 = rows.iter().map(|r| r.1).sum();
    if rows.is_empty() || secs <= 0.0 {
        return None;
    }
    let total = |f: &dyn Fn(&DiskRates) -> f64| rows.iter().map(|(d, s)| f(d) * s).sum::<f64>();
    let (r, w, d, f) = (
        total(&|d| d.rps),
        total(&|d| d.wps),
        total(&|d| d.dps),
        total(&|d| d.fps),
    );
    Some(DiskRates {
        rps: r / secs,
        rkbps: total(&|d| d.rkbps) / secs,
        r_await: ratio(total(&|d| d.r_await * d.rps), r),
        wps: w / secs,
        wkbps: total(&|d| d.wkbps) / secs,
        w_await: ratio(total(&|d| d.w_await * d.wps), w),
        dps: d / secs,
        dkbps: total(&|d| d.dkbps) / secs,
        d_await: ratio(total(&|d| d.d_await * d.dps), d),
        fps: f / secs,
        f_await: ratio(total(&|d| d.f_await * d.fps), f),
        aqu_sz: total(&|d| d.aqu_sz) / secs,
        util: total(&|d| d.util) / secs,
    })
}

/// Divides the averages by the step's rates (workloads.md C.1).
pub fn per_op(avg: &HostAverages, ncpu: u32, rates: &OpRates) -> PerOp {
    let per = |x: f64, rate: Option<f64>| rate.filter(|r| *r > 0.0).map(|r| x / r);
    let rate = Some(rates.rate);
    let ips = rates.insert_rate;
    let disk = avg.disk.as_ref();
    PerOp {
        rpq: disk.and_then(|d| per(d.rps, rate)),
        rkbpq: disk.and_then(|d| per(d.rkbps, rate)),
        wpi: disk.and_then(|d| per(d.wps, ips)),
        wkbpi: disk.and_then(|d| per(d.wkbps, ips)),
        cspq: per(avg.cs, rate),
        cpupq: per(avg.cpups() / 100.0 * f64::from(ncpu) * 1e6, rate),
        scpupq: avg.server_cpu_pct.and_then(|c| per(c / 100.0 * 1e6, rate)),
        ccpupq: per(avg.client_cpu_pct / 100.0 * 1e6, rate),
        srkbpq: avg.server_read_kbps.and_then(|r| per(r, rate)),
    }
}

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
