//! The server's own counters of a step (`step_server_counters`): one row
//! per reading and value, raw as the server reported it, so any rate or
//! ratio can be derived again later; and its CPU profile
//! (`step_cpu_profiles`), the folded stacks as one text.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow};

use super::backend::{Backend, Value, params};
use super::write::{int, real};
use crate::record::{CounterReading, CpuProfile, Phase, ServerCounters, StepInstructions};

/// Inserts every reading of `counters` for step `step_id`.
pub(super) fn insert(db: &mut Backend, step_id: i64, counters: &ServerCounters) -> Result<()> {
    let mut rows: Vec<Vec<Value>> = Vec::new();
    for (seq, r) in counters.readings.iter().enumerate() {
        for (name, value) in r.values.iter().filter(|(_, v)| v.is_finite()) {
            rows.push(
                params![
                    step_id,
                    seq as i64,
                    r.sec,
                    r.phase.as_str(),
                    real(r.end_secs),
                    name.as_str(),
                    *value
                ]
                .to_vec(),
            );
        }
    }
    db.insert_many(
        "step_server_counters",
        &[
            "step_id", "seq", "sec", "phase", "end_secs", "name", "value",
        ],
        &rows,
    )
    .context("server counters")
}

/// The stored readings of step `step_id`; `None` when it has none.
pub(super) fn load(db: &mut Backend, step_id: i64) -> Result<Option<ServerCounters>> {
    let rows = db.query(
        "SELECT seq, sec, phase, end_secs, name, value FROM step_server_counters
         WHERE step_id = ?1 ORDER BY seq, name",
        &params![step_id],
    )?;
    let mut readings: BTreeMap<i64, CounterReading> = BTreeMap::new();
    for row in rows.iter() {
        let seq: i64 = row.at(0)?;
        let phase: String = row.at(2)?;
        let reading = match readings.entry(seq) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert(CounterReading {
                sec: row.at(1)?,
                phase: Phase::parse(&phase).ok_or_else(|| anyhow!("unknown phase {phase:?}"))?,
                end_secs: row.at(3)?,
                values: BTreeMap::new(),
            }),
        };
        reading.values.insert(row.at(4)?, row.at(5)?);
    }
    Ok((!readings.is_empty()).then(|| ServerCounters {
        readings: readings.into_values().collect(),
    }))
}

/// Stores step `step_id`'s CPU profile.
pub(super) fn insert_profile(db: &mut Backend, step_id: i64, p: &CpuProfile) -> Result<()> {
    db.execute(
        "INSERT INTO step_cpu_profiles (step_id, hz, secs, samples, folded)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        &params![
            step_id,
            p.hz,
            real(p.secs),
            int(p.samples),
            p.folded.as_str()
        ],
    )
    .context("CPU profile")?;
    Ok(())
}

/// Step `step_id`'s CPU profile, if one was taken.
pub(super) fn load_profile(db: &mut Backend, step_id: i64) -> Result<Option<CpuProfile>> {
    let rows = db.query(
        "SELECT hz, secs, samples, folded FROM step_cpu_profiles WHERE step_id = ?1",
        &params![step_id],
    )?;
    let Some(r) = rows.first() else {
        return Ok(None);
    };
    Ok(Some(CpuProfile {
        hz: r.at(0)?,
        secs: r.at(1)?,
        samples: r.at::<i64>(2)?.max(0) as u64,
        folded: r.at(3)?,
    }))
}

/// Stores step `step_id`'s instruction count.
pub(super) fn insert_instructions(
    db: &mut Backend,
    step_id: i64,
    i: &StepInstructions,
) -> Result<()> {
    let functions = serde_json::to_string(&i.functions)?;
    db.execute(
        "INSERT INTO step_instructions (step_id, events, statements, client_ir, marker_ir,
             background_ir, background_procs, clients, functions)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        &params![
            step_id,
            int(i.events),
            int(i.statements),
            int(i.client_ir),
            int(i.marker_ir),
            int(i.background_ir),
            int(u64::from(i.background_procs)),
            int(u64::from(i.clients)),
            functions.as_str()
        ],
    )
    .context("instruction count")?;
    Ok(())
}

/// Step `step_id`'s instruction count, if it was counted.
pub(super) fn load_instructions(
    db: &mut Backend,
    step_id: i64,
) -> Result<Option<StepInstructions>> {
    let rows = db.query(
        "SELECT events, statements, client_ir, marker_ir, background_ir, background_procs,
             clients, functions FROM step_instructions WHERE step_id = ?1",
        &params![step_id],
    )?;
    let Some(r) = rows.first() else {
        return Ok(None);
    };
    let n = |i: usize| -> Result<u64> { Ok(r.at::<i64>(i)?.max(0) as u64) };
    let functions: String = r.at(7)?;
    Ok(Some(StepInstructions {
        events: n(0)?,
        statements: n(1)?,
        client_ir: n(2)?,
        marker_ir: n(3)?,
        background_ir: n(4)?,
        background_procs: n(5)? as u32,
        clients: n(6)? as u32,
        functions: serde_json::from_str(&functions).context("step_instructions.functions")?,
    }))
}
