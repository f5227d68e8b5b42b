//! `run --instructions` in a plan: how many events each counted step
//! runs, and the one-line refusals of what cannot be counted under
//! Valgrind (checked before any server starts).

use super::profile::Suite;
use super::target::TargetSpec;
use super::{PlanInput, TargetPlan};
use crate::record::SuiteName;
use crate::server::mysql::Flavor;
use crate::workload::sysbench::{TestDef, catalog};

/// Events per step of `--instructions` for tests that touch at most 10
/// rows per event, unless `--events` says: 1000 point queries repeat
/// within 0.1 % (the A/A numbers are in `report::instructions`), few
/// enough for Valgrind's 30–100× slowdown.
pub const DEFAULT_INSTRUCTION_EVENTS: u64 = 1000;

/// How many events a step counted under Valgrind runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountedEvents {
    /// [`DEFAULT_INSTRUCTION_EVENTS`] scaled down by the rows an event
    /// touches beyond 10 (at least 20 events; the full scan 10): such an
    /// event's count varies less and costs more.
    PerTest,
    /// `--events N` for every test.
    Given(u64),
}

/// About how many rows one event of test `t` reads or writes.
fn rows_per_event(t: &TestDef) -> u64 {
    use catalog::Kind;
    let range = u64::from(t.range);
    match t.kind {
        Kind::PointQuery
        | Kind::UpdateIndex
        | Kind::UpdateNonIndex
        | Kind::Delete
        | Kind::Insert => 1,
        Kind::WriteOnly => 4,
        Kind::RandomPoints { .. } | Kind::Range { .. } | Kind::ReadOnlyCount => range,
        Kind::UpdateInlist => range,
        Kind::Points { .. } => 100,
        Kind::ReadOnly(sel) => 10 + range * u64::from(sel.count()),
        Kind::ReadWrite => 14 + range * 4,
        Kind::Scan => u64::MAX,
    }
}

impl CountedEvents {
    /// The events of test `t`. A warm-up run (`.warm`, `.warmpre`) only
    /// has to warm the server: a fifth as many (at least 2).
    pub fn for_test(self, t: &TestDef) -> u64 {
        let n = match self {
            CountedEvents::Given(n) => return n,
            CountedEvents::PerTest if t.kind == catalog::Kind::Scan => 10,
            CountedEvents::PerTest => {
                (DEFAULT_INSTRUCTION_EVENTS * 10 / rows_per_event(t).max(10)).max(20)
            }
        };
        if t.variant.starts_with(".warm") {
            (n / 5).max(2)
        } else {
            n
        }
    }
}

/// `--instructions`' events per step, or the one-line refusal of what it
/// cannot count: only managed PostgreSQL and MariaDB targets (their
/// processes are tidemark's to run under Valgrind) and the sysbench suite.
pub(super) fn instruction_events(
    input: &PlanInput,
    suite: Suite,
    targets: &[TargetPlan],
) -> Result<Option<CountedEvents>, String> {
    if !input.instructions {
        return match input.events {
            Some(_) => Err(
                "--events applies only with --instructions: add --instructions, or drop --events"
                    .into(),
            ),
            None => Ok(None),
        };
    }
    for t in targets {
        let why = match t.spec {
            TargetSpec::ManagedPostgres { .. } => continue,
            TargetSpec::ManagedMysql {
                flavor: Flavor::MariaDb,
                ..
            } => continue,
            TargetSpec::ExternalPostgres { .. } | TargetSpec::ExternalMysql { .. } => {
                "an external server's processes are not tidemark's to run under Valgrind"
            }
            TargetSpec::ManagedMysql { .. } => {
                "Oracle MySQL is not counted (its marker and vgdb bracketing were checked on MariaDB only)"
            }
            TargetSpec::Sqlite { .. } => {
                "SQLite runs inside tidemark's own process, which is not run under Valgrind"
            }
        };
        return Err(format!(
            "--instructions: target '{}': {why}; use a managed PostgreSQL or MariaDB target (pg@system, mariadb@system)",
            t.spec_text
        ));
    }
    if !suite.is_only(SuiteName::Sysbench) {
        return Err("--instructions counts the sysbench suite only: use --suite sysbench".into());
    }
    if input.cpu_profile {
        return Err("--instructions and --cpu-profile cannot be combined (perf would sample Valgrind): drop one".into());
    }
    if input.client_hosts.is_some() {
        return Err("--instructions runs every client in this process: drop --client-hosts".into());
    }
    match input.events {
        Some(0) => Err("--events must be at least 1".into()),
        Some(n) => Ok(Some(CountedEvents::Given(n))),
        None => Ok(Some(CountedEvents::PerTest)),
    }
}

/// Rows per table under `--instructions` unless `--table-size` says:
/// PostgreSQL's ANALYZE reads at most 30,000 rows (300 × its default
/// statistics target of 100) and samples them at random from a bigger
/// table, which gave two identical servers different planner statistics
/// and points-notcovered-si 0.35 % more planning work on one of them;
/// every row read gives every server the same statistics.
pub const COUNTED_TABLE_SIZE: u64 = 30_000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;

    fn input(targets: &[&str]) -> PlanInput {
        PlanInput {
            suite: Some("sysbench".into()),
            profile: "quick".into(),
            results_dir: "r".into(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            instructions: true,
            ..Default::default()
        }
    }

    fn refusal(i: PlanInput) -> String {
        Plan::build(i).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn counted_tables_hold_what_analyze_reads_whole_unless_sized() {
        let p = Plan::build(input(&["pg@system"])).unwrap();
        assert_eq!(p.sysbench.table_size, COUNTED_TABLE_SIZE);
        let mut i = input(&["pg@system"]);
        i.overrides.table_size = Some(100_000);
        assert_eq!(Plan::build(i).unwrap().sysbench.table_size, 100_000);
        let mut i = input(&["pg@system"]);
        i.overrides.table_size = Some(2_000);
        assert_eq!(Plan::build(i).unwrap().sysbench.table_size, 2_000);
    }

    #[test]
    fn managed_postgres_is_counted_with_per_test_events() {
        assert!(Plan::build(input(&["pg@system", "mariadb@system"])).is_ok());
        let p = Plan::build(input(&["pg@system"])).unwrap();
        let events = p.instructions.expect("counted");
        assert_eq!(events, CountedEvents::PerTest);
        let of = |name: &str| {
            let t = p.tests.iter().find(|t| t.name() == name).expect(name);
            events.for_test(t)
        };
        assert_eq!(of("point-query_range=100"), 1000);
        assert_eq!(of("random-points_range=100"), 100);
        assert_eq!(of("read-only_range=10000"), 20);
        assert_eq!(of("scan_range=100"), 10);
        assert_eq!(of("scan.warm_range=100"), 2);
        assert_eq!(of("point-query.warm_range=100"), 200);
        let mut i = input(&["pg@system"]);
        i.events = Some(300);
        let p = Plan::build(i).unwrap();
        assert_eq!(p.instructions, Some(CountedEvents::Given(300)));
    }

    #[test]
    fn what_cannot_be_counted_is_refused_in_one_line() {
        for (target, says) in [
            ("postgres://u@127.0.0.1:5432/db", "external server"),
            ("mysql@8.0", "Oracle MySQL is not counted"),
            ("sqlite:/tmp/x.db", "inside tidemark's own process"),
        ] {
            let e = refusal(input(&["pg@system", target]));
            assert!(e.starts_with("--instructions: target"), "{e}");
            assert!(e.contains(says), "{e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
        let mut i = input(&["pg@system"]);
        i.cpu_profile = true;
        assert!(refusal(i).contains("cannot be combined"));
        let mut i = input(&["pg@system"]);
        i.suite = Some("ibench".into());
        assert!(refusal(i).contains("sysbench suite only"));
        let mut i = input(&["pg@system"]);
        i.events = Some(0);
        assert!(refusal(i).contains("at least 1"));
        let mut i = input(&["pg@system"]);
        (i.instructions, i.events) = (false, Some(10));
        assert!(refusal(i).contains("only with --instructions"));
    }
}
