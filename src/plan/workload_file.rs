//! The plan's workload file (`--workload`): read, params overridden,
//! `--max-tries` applied, and checked against the family of every target
//! before any server starts.

use super::{PlanInput, Suite, TargetPlan, TargetSpec};
use crate::record::SuiteName;

/// The workload file of `--workload`, checked against every target's
/// family; `None` for the built-in suites.
pub(super) fn check(
    input: &PlanInput,
    suite: Suite,
    targets: &[TargetPlan],
) -> Result<Option<crate::workload::file::Workload>, String> {
    use crate::db::Dialect;
    let Some(spec) = &input.workload else {
        if suite.is_only(SuiteName::WorkloadFile) {
            return Err("suite workload needs a file: pass --workload FILE (or tpcb-like, simple-update, select-only)".into());
        }
        return Ok(None);
    };
    if !suite.is_only(SuiteName::WorkloadFile) {
        return Err(format!(
            "--workload runs a workload file, not suite {}: drop --suite or --tests",
            suite.as_str()
        ));
    }
    let mut w = crate::workload::file::load(spec, &input.workload_params)?;
    if let Some(n) = input.max_tries {
        if n == 0 {
            return Err("--max-tries 0: give 1 (no retry) or more".into());
        }
        w.retry.max_tries = n;
    }
    if let Some(r) = input.rate {
        if !(r > 0.0 && r.is_finite()) {
            return Err(format!(
                "--rate {r}: give transactions per second over all clients, a number above 0"
            ));
        }
        w.rate = Some(r);
    }
    let mut dialects: Vec<Dialect> = targets
        .iter()
        .map(|t| match t.spec {
            TargetSpec::ManagedPostgres { .. } | TargetSpec::ExternalPostgres { .. } => {
                Dialect::Postgres
            }
            TargetSpec::ManagedMysql { .. } | TargetSpec::ExternalMysql { .. } => Dialect::Mysql,
            TargetSpec::Sqlite { .. } => Dialect::Sqlite,
        })
        .collect();
    dialects.dedup();
    w.check_families(&dialects)?;
    Ok(Some(w))
}

#[cfg(test)]
mod tests {
    use super::super::Plan;
    use super::*;

    fn input(suite: &str, workload: Option<&str>, target: &str) -> PlanInput {
        PlanInput {
            suite: Some(suite.into()),
            profile: "quick".into(),
            targets: vec![target.into()],
            workload: workload.map(str::to_string),
            ..PlanInput::default()
        }
    }

    #[test]
    fn a_shipped_workload_builds_a_plan_with_its_overrides() {
        let mut i = input("workload", Some("tpcb-like"), "sqlite:/tmp/x.db");
        i.workload_params = vec!["scale=3".into()];
        i.max_tries = Some(7);
        i.rate = Some(50.0);
        let p = Plan::build(i).unwrap();
        let w = p.workload.unwrap();
        assert_eq!(w.rate, Some(50.0));
        assert_eq!(
            (p.suite, w.param("scale"), w.retry.max_tries),
            (Suite::One(SuiteName::WorkloadFile), Some(3), 7)
        );
    }

    #[test]
    fn workload_mistakes_are_one_line_errors() {
        let e = Plan::build(input("sysbench", Some("tpcb-like"), "pg@system")).unwrap_err();
        assert!(
            e.contains("--workload") && e.contains("drop --suite"),
            "{e}"
        );
        let e = Plan::build(input("workload", None, "pg@system")).unwrap_err();
        assert!(e.contains("pass --workload FILE"), "{e}");
        let mut i = input("workload", Some("select-only"), "pg@system");
        i.max_tries = Some(0);
        assert!(Plan::build(i).unwrap_err().contains("--max-tries 0"));
        let mut i = input("workload", Some("select-only"), "pg@system");
        i.rate = Some(0.0);
        assert!(Plan::build(i).unwrap_err().contains("--rate 0"));
        let e =
            Plan::build(input("workload", Some("/nonexistent/w.toml"), "pg@system")).unwrap_err();
        assert!(
            e.contains("/nonexistent/w.toml") && e.contains("tpcb-like"),
            "{e}"
        );
    }
}
