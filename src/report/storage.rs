//! The storage detail the seeds argue from, per step and target: iostat's
//! waits, queue size, utilisation, flushes and discards per second over
//! the measured interval, and the data directory's size after the step
//! (`dbgb2`), each relative to the base. Read from the host summary the
//! samplers stored; a step without one shows "n/a".

use serde::Serialize;

use super::basis::Column;
use super::server_counters::{ServerRow, Shown, row};
use crate::record::DiskRates;
use crate::store::StoredStep;

/// One step's storage detail, targets side by side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StorageStep {
    pub name: String,
    pub rows: Vec<ServerRow>,
}

/// An iostat column: its name, what it is, and where it is stored.
type IostatColumn = (&'static str, &'static str, fn(&DiskRates) -> f64);

/// The iostat columns shown, as iostat names them, and what they are.
const COLUMNS: [IostatColumn; 8] = [
    ("r_await", "ms per read, queueing included", |d| d.r_await),
    ("w_await", "ms per write, queueing included", |d| d.w_await),
    ("aqu-sz", "average queue size", |d| d.aqu_sz),
    ("%util", "busiest device's utilisation, %", |d| d.util),
    ("r/s", "reads per second", |d| d.rps),
    ("w/s", "writes per second", |d| d.wps),
    ("f/s", "flushes per second", |d| d.fps),
    ("d/s", "discards per second", |d| d.dps),
];

/// The storage rows of every reported step any target sampled a disk in.
pub fn build(columns: &[Column<'_>]) -> Vec<StorageStep> {
    let mut names: Vec<&str> = Vec::new();
    for c in columns {
        for s in c.target.steps.iter().filter(|s| s.info.reported) {
            if disk(s).is_some() && !names.contains(&s.info.name.as_str()) {
                names.push(&s.info.name);
            }
        }
    }
    names
        .iter()
        .map(|name| {
            let steps: Vec<Option<&StoredStep>> = columns.iter().map(|c| c.step(name)).collect();
            let mut rows: Vec<ServerRow> = COLUMNS
                .iter()
                .map(|(key, title, pick)| {
                    let values = steps.iter().map(|s| disk((*s)?).map(pick)).collect();
                    row(key, format!("{key}: {title}"), Shown::Average, values)
                })
                .collect();
            let dbgb2 = steps
                .iter()
                .map(|s| {
                    let bytes = (*s)?.host.as_ref()?.metrics.datadir_bytes?;
                    Some(bytes as f64 / (1u64 << 30) as f64)
                })
                .collect();
            rows.push(row(
                "dbgb2",
                "dbgb2: data directory after the step, GB".into(),
                Shown::AtEnd,
                dbgb2,
            ));
            StorageStep {
                name: name.to_string(),
                rows,
            }
        })
        .collect()
}

fn disk(s: &StoredStep) -> Option<&DiskRates> {
    s.host.as_ref()?.metrics.avg.as_ref()?.disk.as_ref()
}
