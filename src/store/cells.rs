//! The store's side of matrix runs: targets per repetition, the plan kept
//! with a run, and what `--resume` needs to find the cells — (target
//! position, repetition, step name) — already measured.
//!
//! A cell is measured when its step is stored with status `ok` or
//! `errors`; a step cut short (`interrupted`) or `failed` is deleted when
//! its target is resumed and measured again, so every cell ends up stored
//! exactly once.

use std::collections::HashMap;

use anyhow::{Context, Result, bail};

use super::backend::{Row, params};
use super::write::target_values;
use super::{Store, StoredStep};
use crate::record::TargetInfo;
use crate::util::process_identity::{Liveness, ProcessIdentity};
use crate::util::redact::redact_url_passwords;

/// A stored status as `tidemark runs` shows it: a `running` run whose
/// process is gone (killed, crashed, its host rebooted) is `abandoned`.
pub fn shown_status(status: &str, process: &Option<ProcessIdentity>) -> String {
    match process {
        Some(p) if status == "running" && p.liveness() == Liveness::Gone => "abandoned".into(),
        _ => status.to_string(),
    }
}

/// The process recorded in columns `first..first + 3` (host_name, pid,
/// process_start) of a `runs` row; `None` for runs stored before.
pub(super) fn process_of(r: &Row<'_>, first: usize) -> Result<Option<ProcessIdentity>> {
    let host: Option<String> = r.at(first)?;
    let pid: Option<u32> = r.at(first + 1)?;
    let start: Option<String> = r.at(first + 2)?;
    Ok(match (host, pid) {
        (Some(host), Some(pid)) => Some(ProcessIdentity {
            host,
            pid,
            start: start.unwrap_or_default(),
        }),
        _ => None,
    })
}

/// Step statuses that count as measured.
pub const MEASURED_STATUSES: [&str; 2] = ["ok", "errors"];

impl Store {
    /// The id of target `position` in pass `repetition` of run `run_id`.
    pub fn find_target(&self, run_id: i64, position: u32, repetition: u32) -> Result<Option<i64>> {
        self.db().query_value(
            "SELECT id FROM targets WHERE run_id = ?1 AND position = ?2 AND repetition = ?3",
            &params![run_id, position, repetition],
        )
    }

    /// Replaces what is recorded about a target's server (a resumed target
    /// runs on a new one) and sets it `running` again.
    pub fn update_target_info(&mut self, target_id: i64, target: &TargetInfo) -> Result<()> {
        let mut values = params![target_id].to_vec();
        values.extend(target_values(target)?);
        let n = self.db().execute(
            "UPDATE targets SET spec = ?2, label = ?3, dbms = ?4, version = ?5,
                    version_number = ?6, config_name = ?7, config_text = ?8,
                    settings_json = ?9, managed = ?10, extra_json = ?11,
                    status = 'running', failure = NULL
              WHERE id = ?1",
            &values,
        )?;
        if n == 0 {
            bail!("no target {target_id} in {}", self.place);
        }
        Ok(())
    }

    /// The label of each target position of run `run_id` stored so far
    /// (the first repetition's), in position order.
    pub fn position_labels(&self, run_id: i64) -> Result<Vec<(u32, String)>> {
        let rows = self.db().query(
            "SELECT t.position, t.label FROM targets t
              WHERE t.run_id = ?1
                AND t.repetition = (SELECT MIN(u.repetition) FROM targets u
                                     WHERE u.run_id = t.run_id AND u.position = t.position)
              ORDER BY t.position",
            &params![run_id],
        )?;
        rows.iter().map(|r| Ok((r.at(0)?, r.at(1)?))).collect()
    }

    /// The measured steps of a target, by step name.
    pub fn measured_steps(&self, target_id: i64) -> Result<HashMap<String, StoredStep>> {
        Ok(self
            .load_steps(target_id)?
            .into_iter()
            .filter(|s| MEASURED_STATUSES.contains(&s.status.as_str()))
            .map(|s| (s.info.cell_key(), s))
            .collect())
    }

    /// Cell keys ([`StepInfo::cell_key`](crate::record::StepInfo::cell_key):
    /// the name, with the client count of a sweep point) of the measured
    /// steps of target `position` in pass `repetition` (empty when the
    /// target was never stored).
    pub fn measured_step_names(
        &self,
        run_id: i64,
        position: u32,
        repetition: u32,
    ) -> Result<Vec<String>> {
        let rows = self.db().query(
            "SELECT s.name, s.sweep_threads FROM steps s JOIN targets t ON s.target_id = t.id
              WHERE t.run_id = ?1 AND t.position = ?2 AND t.repetition = ?3
                AND s.status IN ('ok', 'errors')
              ORDER BY s.seq",
            &params![run_id, position, repetition],
        )?;
        rows.iter()
            .map(|r| {
                Ok(crate::record::step_info::cell_key(
                    &r.at::<String>(0)?,
                    r.at(1)?,
                ))
            })
            .collect()
    }

    /// Deletes a target's steps that were cut short or failed (with their
    /// seconds, clients and plans); returns how many.
    pub fn delete_unmeasured_steps(&mut self, target_id: i64) -> Result<usize> {
        let n = self.db().execute(
            "DELETE FROM steps WHERE target_id = ?1 AND status NOT IN ('ok', 'errors')",
            &params![target_id],
        )?;
        Ok(n as usize)
    }

    /// Keeps the inputs run `run_id` was planned from (JSON).
    pub fn set_run_plan(&mut self, run_id: i64, plan_json: &str) -> Result<()> {
        let n = self.db().execute(
            "UPDATE runs SET plan_json = ?2 WHERE id = ?1",
            &params![run_id, redact_url_passwords(plan_json)],
        )?;
        if n == 0 {
            return Err(self.unknown_run(run_id));
        }
        Ok(())
    }

    /// The status (as [`shown_status`] tells it) and stored plan inputs of
    /// run `run_id`.
    pub fn run_plan(&self, run_id: i64) -> Result<(String, Option<String>)> {
        let rows = self.db().query(
            "SELECT status, plan_json, host_name, pid, process_start FROM runs WHERE id = ?1",
            &params![run_id],
        )?;
        let row = rows.first().ok_or_else(|| self.unknown_run(run_id))?;
        let status: String = row.at(0)?;
        Ok((shown_status(&status, &process_of(&row, 2)?), row.at(1)?))
    }

    /// The process recorded as running run `run_id` (`None` for runs
    /// stored before tidemark recorded it).
    pub fn run_process(&self, run_id: i64) -> Result<Option<ProcessIdentity>> {
        let rows = self.db().query(
            "SELECT host_name, pid, process_start FROM runs WHERE id = ?1",
            &params![run_id],
        )?;
        let row = rows.first().ok_or_else(|| self.unknown_run(run_id))?;
        process_of(&row, 0)
    }

    /// Marks run `run_id` as running again (a resume), by this process.
    pub fn reopen_run(&mut self, run_id: i64) -> Result<()> {
        let me = ProcessIdentity::current();
        self.db()
            .execute(
                "UPDATE runs SET status = 'running', finished_at = NULL,
                                 host_name = ?2, pid = ?3, process_start = ?4
                  WHERE id = ?1",
                &params![run_id, me.host, me.pid, me.start],
            )
            .with_context(|| format!("reopening run {run_id}"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{plans, run_info, step_info, step_result, target};
    use super::*;
    use crate::record::StepStatus;

    #[test]
    fn repetitions_are_stored_and_cells_found() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let run = store.begin_run(&run_info()).unwrap();
        store.set_run_plan(run, "{\"profile\":\"quick\"}").unwrap();
        assert_eq!(
            store.run_plan(run).unwrap(),
            ("running".into(), Some("{\"profile\":\"quick\"}".into()))
        );
        let a0 = store.add_target_repetition(run, 0, 0, &target(5)).unwrap();
        let b0 = store.add_target_repetition(run, 1, 0, &target(6)).unwrap();
        let a1 = store.add_target_repetition(run, 0, 1, &target(5)).unwrap();
        assert!(store.add_target_repetition(run, 0, 1, &target(5)).is_err());
        assert_eq!(store.find_target(run, 0, 1).unwrap(), Some(a1));
        assert_eq!(store.find_target(run, 1, 1).unwrap(), None);
        for (t, seq) in [(a0, 0), (a0, 1), (b0, 0), (a1, 0)] {
            let mut r = step_result(seq);
            if (t, seq) == (a0, 1) {
                r.status = StepStatus::Interrupted;
            }
            store
                .write_step(
                    t,
                    seq,
                    "2026-11-20T23:50:00Z",
                    &step_info(seq),
                    &r,
                    &plans(seq),
                    None,
                )
                .unwrap();
        }
        assert_eq!(
            store.measured_step_names(run, 0, 0).unwrap(),
            ["point-query_range=0"]
        );
        assert_eq!(store.measured_steps(a0).unwrap().len(), 1);
        assert_eq!(store.delete_unmeasured_steps(a0).unwrap(), 1);
        assert_eq!(store.load_steps(a0).unwrap().len(), 1);
        let record = store.load_run(run).unwrap();
        let order: Vec<(u32, u32)> = record
            .targets
            .iter()
            .map(|t| (t.repetition, t.position))
            .collect();
        assert_eq!(order, [(0, 0), (0, 1), (1, 0)]);
        let runs = store.list_runs().unwrap();
        assert_eq!(runs[0].targets.len(), 2, "labels once per plan target");
        store.finish_run(run, "interrupted").unwrap();
        store.reopen_run(run).unwrap();
        assert_eq!(store.run_plan(run).unwrap().0, "running");
        let mut changed = target(5);
        changed.label = "pg15.new".into();
        store.update_target_info(a0, &changed).unwrap();
        assert_eq!(
            store.load_run(run).unwrap().targets[0].info.label,
            "pg15.new"
        );
    }

    #[test]
    fn sweep_points_of_one_test_are_separate_cells() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let run = store.begin_run(&run_info()).unwrap();
        let t = store.add_target_repetition(run, 0, 0, &target(5)).unwrap();
        for (seq, n) in [(0, 1), (1, 4), (2, 64)] {
            let mut info = step_info(0);
            info.sweep_threads = Some(n);
            let mut r = step_result(0);
            r.threads = n;
            store
                .write_step(t, seq, "2026-11-20T23:50:00Z", &info, &r, &[], None)
                .unwrap();
        }
        let keys = store.measured_step_names(run, 0, 0).unwrap();
        assert_eq!(
            keys,
            [
                "point-query_range=0@1",
                "point-query_range=0@4",
                "point-query_range=0@64"
            ]
        );
        let cells = store.measured_steps(t).unwrap();
        assert_eq!(cells["point-query_range=0@64"].info.sweep_threads, Some(64));
        assert_eq!(cells["point-query_range=0@4"].threads, 4);
    }
}
