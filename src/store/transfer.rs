//! Copying whole runs between stores (`tidemark push` and `pull`): a
//! laptop's SQLite results into a team's PostgreSQL store and back, so runs
//! from different machines meet in one report.
//!
//! A run is known everywhere by its UUID: copying a run the destination
//! already holds stores nothing, so pushing twice stores once. A copy is
//! one transaction on the destination (all of the run or none of it) and
//! only reads the source.

use anyhow::{Context, Result};

use super::backend::params;
use super::read::{StoredRun, StoredStep};
use super::role_rows::{RoleRow, insert_role};
use super::write::{StepRow, insert_step, insert_step_rows, target_values};
use super::{Store, host_rows};

/// What copying one run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Copied {
    /// Stored under this id in the destination.
    Stored(i64),
    /// The destination already had it, under this id.
    AlreadyThere(i64),
}

impl Store {
    /// Copies run `id` of `source` into this store, unless it is there
    /// already (same UUID). The copy records where it came from.
    pub fn copy_run_from(&mut self, source: &Store, id: i64) -> Result<Copied> {
        let run = source.load_run(id)?;
        if let Some(there) = self.run_id_of(&run.uuid)? {
            return Ok(Copied::AlreadyThere(there));
        }
        let (_, plan_json) = source.run_plan(id)?;
        let origin = run.origin.clone().unwrap_or_else(|| source.place.clone());
        let place = self.place.clone();
        self.db()
            .transaction(|tx| {
                let new_id = tx.insert_id(
                    "INSERT INTO runs (started_at, finished_at, status, command_line,
                                       tidemark_version, profile, suite, params_json,
                                       host_json, plan_json, uuid, origin)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING id",
                    &params![
                        &run.info.started_at,
                        run.finished_at.as_deref(),
                        &run.status,
                        &run.info.command_line,
                        &run.info.tidemark_version,
                        &run.info.profile,
                        &run.info.suite,
                        serde_json::to_string(&run.info.params)?,
                        serde_json::to_string(&run.info.host)?,
                        plan_json,
                        &run.uuid,
                        origin,
                    ],
                )?;
                copy_targets(tx, new_id, &run)?;
                Ok(new_id)
            })
            .map(Copied::Stored)
            .with_context(|| format!("copying run {id} ({}) to {place}", run.uuid))
    }
}

fn copy_targets(tx: &mut super::backend::Backend, run_id: i64, run: &StoredRun) -> Result<()> {
    for t in &run.targets {
        let mut values = params![run_id, t.position, t.repetition].to_vec();
        values.extend(target_values(&t.info)?);
        values.extend(params![&t.status, t.failure.as_deref()]);
        let target_id = tx.insert_id(
            "INSERT INTO targets (run_id, position, repetition, spec, label, dbms, version,
                                  version_number, config_name, config_text, settings_json,
                                  managed, extra_json, status, failure)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
             RETURNING id",
            &values,
        )?;
        for s in &t.steps {
            copy_step(tx, target_id, s)
                .with_context(|| format!("step {} of {}", s.info.name, t.info.label))?;
        }
    }
    Ok(())
}

fn copy_step(tx: &mut super::backend::Backend, target_id: i64, s: &StoredStep) -> Result<()> {
    let row = StepRow {
        seq: s.seq,
        started_at: &s.started_at,
        info: &s.info,
        status: s.status.as_str(),
        failure: s.failure.as_deref(),
        secs: s.secs,
        threads: s.threads,
        counts: s.counts,
        rates: [s.qps, s.tps, s.rows_per_sec],
        latency: s.latency,
        client_cpu_secs: s.client_cpu_secs,
        error_samples: &s.error_samples,
        histogram: s.histogram_v2.clone(),
        metrics: s.metrics.as_ref(),
    };
    let step_id = insert_step(tx, target_id, &row)?;
    insert_step_rows(tx, step_id, &s.per_second, &s.clients, &s.plans)?;
    for role in &s.roles {
        insert_role(tx, step_id, &RoleRow::of_record(role))?;
    }
    if let Some(host) = &s.host {
        host_rows::insert(tx, step_id, host)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copied_run_reads_back_the_same_and_copies_once() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut source = Store::open(a.path()).unwrap();
        let id = super::super::tests::write_sample_run(&mut source);
        let mut dest = Store::open(b.path()).unwrap();
        let copied = dest.copy_run_from(&source, id).unwrap();
        let Copied::Stored(new_id) = copied else {
            panic!("{copied:?}")
        };
        assert_eq!(
            dest.copy_run_from(&source, id).unwrap(),
            Copied::AlreadyThere(new_id)
        );
        assert_eq!(dest.run_ids().unwrap(), [new_id]);
        let (want, got) = (source.load_run(id).unwrap(), dest.load_run(new_id).unwrap());
        assert_eq!(got.origin.as_deref(), Some(source.place()));
        assert_eq!(got.uuid, want.uuid);
        // Everything but the local ids and the origin is the same.
        let strip = |mut r: StoredRun| {
            r.id = 0;
            r.origin = None;
            for t in &mut r.targets {
                t.id = 0;
                for s in &mut t.steps {
                    s.id = 0;
                }
            }
            r
        };
        assert_eq!(strip(got), strip(want));
    }
}
