//! Exporting stored runs for use outside tidemark: JSON with everything the
//! store holds for each step (`json`, its shape versioned by
//! [`FORMAT_VERSION`] and described in docs/export.md), and CSV with one row
//! per step for spreadsheets (`csv`). `server` turns a step's server-side
//! records (the DBMS's counters, a CPU profile, slices) into the JSON's
//! objects.

use anyhow::Result;

use super::{Store, StoredRun};

mod csv;
mod json;
mod server;

pub use csv::{CSV_COLUMNS, INSTRUCTION_COLUMNS, csv_field, csv_header, csv_line, export_csv};
pub use json::export_json;

/// The version of the JSON export's shape (`format_version` in the
/// document). It grows by one when a key is renamed, removed or changes
/// meaning; adding keys keeps it. docs/export.md describes each version.
pub const FORMAT_VERSION: u32 = 1;

/// The runs to export: `run`, or all of them, oldest first.
fn load(store: &Store, run: Option<i64>) -> Result<Vec<StoredRun>> {
    match run {
        Some(id) => Ok(vec![store.load_run(id)?]),
        None => store
            .run_ids()?
            .into_iter()
            .map(|id| store.load_run(id))
            .collect(),
    }
}

#[cfg(test)]
mod tests;
