//! The server's own counters of a step (`step_server_counters`): one row
//! per reading and value, raw as the server reported it, so any rate or
//! ratio can be derived again later; and its CPU profile
//! (`step_cpu_profiles`), the folded stacks as one text.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow};
use rusqlite::{Connection, params};

use super::write::real;
use crate::record::{CounterReading, CpuProfile, Phase, ServerCounters};

/// Inserts every reading of `counters` for step `step_id`.
pub(super) fn insert(conn: &Connection, step_id: i64, counters: &ServerCounters) -> Result<()> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO step_server_counters (step_id, seq, sec, phase, end_secs, name, value)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for (seq, r) in counters.readings.iter().enumerate() {
        for (name, value) in r.values.iter().filter(|(_, v)| v.is_finite()) {
            insert
                .execute(params![
                    step_id,
                    seq as i64,
                    r.sec,
                    r.phase.as_str(),
                    real(r.end_secs),
                    name,
                    value
                ])
                .with_context(|| format!("server counter {name}, reading {seq}"))?;
        }
    }
    Ok(())
}

/// The stored readings of step `step_id`; `None` when it has none.
pub(super) fn load(conn: &Connection, step_id: i64) -> Result<Option<ServerCounters>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, sec, phase, end_secs, name, value FROM step_server_counters
         WHERE step_id = ?1 ORDER BY seq, name",
    )?;
    let mut rows = stmt.query([step_id])?;
    let mut readings: BTreeMap<i64, CounterReading> = BTreeMap::new();
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let phase: String = row.get(2)?;
        let reading = readings.entry(seq).or_insert(CounterReading {
            sec: row.get(1)?,
            phase: Phase::parse(&phase).ok_or_else(|| anyhow!("unknown phase {phase:?}"))?,
            end_secs: row.get(3)?,
            values: BTreeMap::new(),
        });
        reading.values.insert(row.get(4)?, row.get(5)?);
    }
    Ok((!readings.is_empty()).then(|| ServerCounters {
        readings: readings.into_values().collect(),
    }))
}

/// Stores step `step_id`'s CPU profile.
pub(super) fn insert_profile(conn: &Connection, step_id: i64, p: &CpuProfile) -> Result<()> {
    conn.execute(
        "INSERT INTO step_cpu_profiles (step_id, hz, secs, samples, folded)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            step_id,
            p.hz,
            real(p.secs),
            super::write::int(p.samples),
            p.folded
        ],
    )
    .context("CPU profile")?;
    Ok(())
}

/// Step `step_id`'s CPU profile, if one was taken.
pub(super) fn load_profile(conn: &Connection, step_id: i64) -> Result<Option<CpuProfile>> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .prepare_cached(
            "SELECT hz, secs, samples, folded FROM step_cpu_profiles WHERE step_id = ?1",
        )?
        .query_row([step_id], |r| {
            Ok(CpuProfile {
                hz: r.get(0)?,
                secs: r.get(1)?,
                samples: r.get::<_, i64>(2)?.max(0) as u64,
                folded: r.get(3)?,
            })
        })
        .optional()?)
}
