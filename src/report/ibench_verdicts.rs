//! Intervals and verdicts for the Insert Benchmark's relative throughput:
//! a pass over the built section that reads every repetition of each
//! target (the section itself is built from the first), puts the median
//! rate in each cell, and the interval and verdict on its ratio to the
//! base — from the repetitions when there are two or more, from client 1's
//! per-second rates (the reference's per-second series) otherwise.

use super::basis::Column;
use super::ibench::{IbenchSection, throughput_shades};
use super::ibench_input::{IbenchStepInput, input_from_step};
use super::sysbench::{Comparison, Sample, band_of, compare};
use crate::record::{StepStatus, SuiteName};
use crate::stats::median;

/// The step's headline rate and its per-second series: qps for query
/// steps, ips otherwise.
fn rate_and_seconds(x: &IbenchStepInput) -> Option<(f64, Vec<f64>)> {
    let query = x.qps.is_some() && x.step.starts_with('q');
    let rate = if query { x.qps } else { x.ips }?;
    let seconds = x
        .seconds
        .iter()
        .filter_map(|s| if query { s.qps } else { s.ips })
        .collect();
    Some((rate, seconds))
}

/// Per repetition: the rate and per-second rates of `step`.
fn measurements(c: &Column<'_>, step: &str) -> Vec<Sample> {
    c.repetitions
        .iter()
        .filter_map(|t| {
            let s = t.steps.iter().find(|s| {
                s.info.reported && s.info.suite_is(SuiteName::Ibench) && s.info.name == step
            })?;
            if !matches!(s.status, StepStatus::Ok | StepStatus::Errors) {
                return None;
            }
            let (rate, seconds) = rate_and_seconds(&input_from_step(s))?;
            Some(Sample {
                repetition: t.repetition,
                value: rate,
                seconds,
                slices: Vec::new(),
                slice_median: false,
            })
        })
        .collect()
}

/// Fills `n`, the median value, `relative`, `interval`, `verdict` and the
/// band of every throughput cell of `section` from all repetitions of
/// `columns` (base first, aligned with the section's rows), then shades
/// the columns again from the medians. With `chain`, each target from the
/// third on is also compared with the one before it (`vs_previous`).
pub fn apply(section: &mut IbenchSection, columns: &[Column<'_>], min_effect: f64, chain: bool) {
    let steps = section.steps.clone();
    for (k, step) in steps.iter().enumerate() {
        let base = measurements(&columns[0], step);
        for (t, c) in columns.iter().enumerate() {
            let Some(row) = section.throughput.get_mut(t) else {
                continue;
            };
            let mine = measurements(c, step);
            let cell = &mut row.cells[k];
            if mine.is_empty() {
                continue;
            }
            cell.n = mine.len() as u32;
            let rates: Vec<f64> = mine.iter().map(|m| m.value).collect();
            cell.value = median(&rates).or(cell.value);
            if chain && t >= 2 {
                let previous = measurements(&columns[t - 1], step);
                if !previous.is_empty() {
                    let (iv, v) = compare(&previous, &mine, min_effect, None);
                    let prev = median(&previous.iter().map(|m| m.value).collect::<Vec<_>>());
                    let ratio = iv
                        .map(|iv| iv.estimate)
                        .or_else(|| Some(cell.value? / prev.filter(|p| *p > 0.0)?));
                    cell.vs_previous = ratio.map(|relative| Comparison {
                        relative,
                        interval: iv,
                        verdict: v.for_rate(),
                    });
                }
            }
            if t == 0 || base.is_empty() {
                continue;
            }
            let (iv, v) = compare(&base, &mine, min_effect, None);
            cell.interval = iv;
            if let Some(iv) = iv {
                cell.relative = Some(iv.estimate);
            }
            cell.verdict = Some(v.for_rate());
            cell.band = cell.relative.map(|_| band_of(v));
        }
        let values: Vec<Option<f64>> = section
            .throughput
            .iter()
            .map(|r| r.cells[k].value)
            .collect();
        let fails: Vec<bool> = section
            .throughput
            .iter()
            .map(|r| r.cells[k].sla_failed)
            .collect();
        for (row, shade) in section
            .throughput
            .iter_mut()
            .zip(throughput_shades(&values, &fails))
        {
            row.cells[k].shade = shade;
        }
    }
}
