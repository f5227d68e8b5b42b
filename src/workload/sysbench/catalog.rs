//! The sysbench microbenchmarks as data: each test's kind, range, group and
//! whether it is reported, plus the suite's run order (reference A.4, A.5).

use crate::workload::Group;

/// What a test's event does; the SQL for each kind lives in `sql.rs` and the
/// event body in `client.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `SELECT c … WHERE id=?`.
    PointQuery,
    /// `SELECT c … WHERE id IN (…range)`; `hot` uses the fixed ids N/2+1 … N/2+range.
    RandomPoints { hot: bool },
    /// 100-point IN lists on the PK (`on_id`) or on `k`, covering or not.
    Points { on_id: bool, covered: bool },
    /// `BETWEEN x AND x+range` on the PK or on `k`, covering or not.
    Range { on_id: bool, covered: bool },
    /// Full scan with `LENGTH(c) < 0`, plain text.
    Scan,
    /// The oltp_read_only transaction with the chosen range-select types.
    ReadOnly(RangeSelects),
    /// `SELECT count(c) … BETWEEN` without a transaction.
    ReadOnlyCount,
    /// The read-only body plus the 4 writes, one transaction.
    ReadWrite,
    /// BEGIN, the 4 writes, COMMIT.
    WriteOnly,
    /// `UPDATE … SET k=k+1 WHERE id=?`.
    UpdateIndex,
    /// `UPDATE … SET c=? WHERE id=?` (update-nonindex, -zipf, -one).
    UpdateNonIndex,
    /// `UPDATE … SET c=? WHERE id IN (…range)`.
    UpdateInlist,
    /// `DELETE … WHERE id=?`.
    Delete,
    /// Plain-text single-row insert at the tail of the PK.
    Insert,
}

/// Which range selects an oltp_read_only event runs (after its 10 point selects).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeSelects {
    pub simple: bool,
    pub sum: bool,
    pub order: bool,
    pub distinct: bool,
}

impl RangeSelects {
    pub const ALL: RangeSelects = RangeSelects {
        simple: true,
        sum: true,
        order: true,
        distinct: true,
    };

    pub fn count(self) -> u32 {
        [self.simple, self.sum, self.order, self.distinct]
            .iter()
            .filter(|&&b| b)
            .count() as u32
    }
}

/// How a test draws its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    Uniform,
    /// sysbench `--rand-type=zipfian` (exponent 0.8).
    Zipfian,
    /// run.sh forces `--table-size=1`: id is always 1.
    TableSizeOne,
}

/// Which duration setting a test runs for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duration {
    Read,
    Write,
    /// The fixed 60 s scan warm-ups (scaled by the profile).
    ScanWarm,
}

/// Housekeeping to run after a test (reference A.6 "postwrite").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    Nothing,
    Postwrite,
}

/// One microbenchmark run of the suite.
#[derive(Clone, Debug, PartialEq)]
pub struct TestDef {
    /// Base name (`random-points`).
    pub test: &'static str,
    /// Decoration of unreported runs (`.pre`, `.warm`, `.warmpre`), or "".
    pub variant: &'static str,
    pub range: u32,
    pub kind: Kind,
    pub keys: Keys,
    pub duration: Duration,
    pub after: After,
    /// Threads = number of tables (the load's warm-up), instead of `--threads`.
    pub threads_per_table: bool,
}

impl TestDef {
    /// The name as the seeds write it: `random-points_range=10`,
    /// `point-query.pre_range=100`.
    pub fn name(&self) -> String {
        format!("{}{}_range={}", self.test, self.variant, self.range)
    }

    /// Reported tests are the 32 of the reference; warm-ups and `.pre`
    /// runs are stored but flagged as not reported.
    pub fn reported(&self) -> bool {
        self.variant.is_empty()
    }

    pub fn group(&self) -> Group {
        group_of(self.test)
    }

    /// Statements per event, counting BEGIN and COMMIT.
    pub fn statements_per_event(&self) -> u32 {
        match self.kind {
            Kind::ReadOnly(r) => 2 + 10 + r.count(),
            Kind::ReadWrite => 2 + 10 + 4 + 4,
            Kind::WriteOnly => 6,
            _ => 1,
        }
    }
}

/// The reference's grouping: names containing "point" are point queries;
/// delete/insert/update/write are writes; read-only* aggregate; the rest are
/// ranges without aggregation.
pub fn group_of(test: &str) -> Group {
    if test.contains("point") {
        Group::Point
    } else if ["delete", "insert", "update", "write"]
        .iter()
        .any(|w| test.contains(w))
    {
        Group::Write
    } else if test.starts_with("read-only") {
        Group::RangeAgg
    } else {
        Group::RangeNoAgg
    }
}

fn def(test: &'static str, range: u32, kind: Kind) -> TestDef {
    TestDef {
        test,
        variant: "",
        range,
        kind,
        keys: Keys::Uniform,
        duration: if group_of(test) == Group::Write {
            Duration::Write
        } else {
            Duration::Read
        },
        after: After::Nothing,
        threads_per_table: false,
    }
}

fn variant(mut d: TestDef, v: &'static str) -> TestDef {
    d.variant = v;
    d
}

fn ro(simple: bool, sum: bool, order: bool, distinct: bool) -> Kind {
    Kind::ReadOnly(RangeSelects {
        simple,
        sum,
        order,
        distinct,
    })
}

/// The suite in the reference's run order (A.5): 38 runs, 32 reported.
pub fn suite() -> Vec<TestDef> {
    let point_query = def("point-query", 100, Kind::PointQuery);
    let scan = def("scan", 100, Kind::Scan);
    let rn_si = def(
        "range-notcovered-si",
        100,
        Kind::Range {
            on_id: false,
            covered: false,
        },
    );
    let pcs = def(
        "points-covered-si",
        100,
        Kind::Points {
            on_id: false,
            covered: true,
        },
    );
    let mut scan_warm = variant(scan.clone(), ".warm");
    scan_warm.duration = Duration::ScanWarm;
    let mut scan_warmpre = variant(scan.clone(), ".warmpre");
    scan_warmpre.duration = Duration::ScanWarm;

    let mut load_warm = variant(point_query.clone(), ".warm");
    load_warm.after = After::Postwrite;
    load_warm.threads_per_table = true;

    let mut update_zipf = def("update-zipf", 100, Kind::UpdateNonIndex);
    update_zipf.keys = Keys::Zipfian;
    let mut update_one = def("update-one", 100, Kind::UpdateNonIndex);
    update_one.keys = Keys::TableSizeOne;
    let mut write_only = def("write-only", 10000, Kind::WriteOnly);
    write_only.duration = Duration::Read;
    let mut rw100 = def("read-write", 100, Kind::ReadWrite);
    rw100.after = After::Postwrite;

    vec![
        // 1. load, then the warm-up with postwrite housekeeping
        load_warm,
        // 2. scans and .pre runs before the write block
        scan_warmpre,
        variant(point_query.clone(), ".pre"),
        variant(rn_si.clone(), ".pre"),
        // 3. writes
        def("update-inlist", 100, Kind::UpdateInlist),
        def("update-index", 100, Kind::UpdateIndex),
        def("update-nonindex", 100, Kind::UpdateNonIndex),
        update_one,
        update_zipf,
        write_only,
        def("read-write", 10, Kind::ReadWrite),
        rw100,
        // 4. scans and the read-only block
        scan_warm,
        scan,
        def("read-only", 10, ro(true, true, true, true)),
        def("read-only", 100, ro(true, true, true, true)),
        def("read-only", 10000, ro(true, true, true, true)),
        def("read-only-simple", 1000, ro(true, false, false, false)),
        def("read-only-sum", 1000, ro(false, true, false, false)),
        def("read-only-order", 1000, ro(false, false, true, false)),
        def("read-only-distinct", 1000, ro(false, false, false, true)),
        def("read-only-count", 1000, Kind::ReadOnlyCount),
        // 5. point and range queries
        point_query,
        def("random-points", 10, Kind::RandomPoints { hot: false }),
        def("random-points", 100, Kind::RandomPoints { hot: false }),
        def("random-points", 1000, Kind::RandomPoints { hot: false }),
        def("hot-points", 100, Kind::RandomPoints { hot: true }),
        def(
            "points-covered-pk",
            100,
            Kind::Points {
                on_id: true,
                covered: true,
            },
        ),
        def(
            "points-notcovered-pk",
            100,
            Kind::Points {
                on_id: true,
                covered: false,
            },
        ),
        def(
            "range-covered-pk",
            100,
            Kind::Range {
                on_id: true,
                covered: true,
            },
        ),
        def(
            "range-notcovered-pk",
            100,
            Kind::Range {
                on_id: true,
                covered: false,
            },
        ),
        variant(pcs.clone(), ".warm"),
        pcs,
        def(
            "points-notcovered-si",
            100,
            Kind::Points {
                on_id: false,
                covered: false,
            },
        ),
        def(
            "range-covered-si",
            100,
            Kind::Range {
                on_id: false,
                covered: true,
            },
        ),
        rn_si,
        // 6. delete, then insert
        def("delete", 100, Kind::Delete),
        def("insert", 100, Kind::Insert),
    ]
}

/// Picks the runs `--tests` names, keeping suite order. A name selects the
/// run with exactly that name (`random-points_range=10`, `point-query.pre`),
/// or every reported run of that test (`random-points` → all three ranges).
/// Unknown names give a one-line error listing what exists.
pub fn select(names: &[String]) -> Result<Vec<TestDef>, String> {
    let all = suite();
    let mut keep = vec![false; all.len()];
    for raw in names {
        let name = raw.trim();
        let mut found = false;
        for (i, t) in all.iter().enumerate() {
            let exact = t.name() == name || format!("{}{}", t.test, t.variant) == name;
            let by_test = t.test == name && t.reported();
            if exact || by_test {
                keep[i] = true;
                found = true;
            }
        }
        if !found {
            let reported: Vec<&TestDef> = all.iter().filter(|t| t.reported()).collect();
            let mut known: Vec<String> = reported.iter().map(|t| t.name()).collect();
            known.dedup();
            let hint = crate::util::suggest::did_you_mean(
                name,
                reported
                    .iter()
                    .map(|t| t.test)
                    .chain(known.iter().map(String::as_str)),
            );
            return Err(format!(
                "unknown sysbench test '{name}'{hint}: use one of {} (or a test name without _range= to run all its ranges)",
                known.join(", ")
            ));
        }
    }
    Ok(all
        .into_iter()
        .zip(keep)
        .filter_map(|(t, k)| k.then_some(t))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_has_38_runs_and_32_reported() {
        let s = suite();
        assert_eq!(s.len(), 38);
        assert_eq!(s.iter().filter(|t| t.reported()).count(), 32);
        let mut names: Vec<String> = s.iter().map(|t| t.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 38, "names are unique");
    }

    #[test]
    fn groups_match_the_seeds() {
        let s = suite();
        let count = |g| s.iter().filter(|t| t.reported() && t.group() == g).count();
        assert_eq!(count(Group::Point), 9);
        assert_eq!(count(Group::RangeNoAgg), 5);
        assert_eq!(count(Group::RangeAgg), 8);
        assert_eq!(count(Group::Write), 10);
    }

    #[test]
    fn statements_per_event_follow_the_reference() {
        let s = suite();
        let get = |n: &str| {
            s.iter()
                .find(|t| t.name() == n)
                .unwrap()
                .statements_per_event()
        };
        assert_eq!(get("read-only_range=100"), 16);
        assert_eq!(get("read-only-simple_range=1000"), 13);
        assert_eq!(get("read-write_range=10"), 20);
        assert_eq!(get("write-only_range=10000"), 6);
        assert_eq!(get("point-query_range=100"), 1);
    }

    #[test]
    fn selection_by_test_and_by_exact_name() {
        let names = |v: &[&str]| {
            select(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap()
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&["random-points"]),
            [
                "random-points_range=10",
                "random-points_range=100",
                "random-points_range=1000"
            ]
        );
        assert_eq!(names(&["point-query"]), ["point-query_range=100"]);
        assert_eq!(names(&["point-query.pre"]), ["point-query.pre_range=100"]);
        assert_eq!(
            names(&["insert", "read-only_range=10"]),
            ["read-only_range=10", "insert_range=100"]
        );
        let err = select(&["nope".to_string()]).unwrap_err();
        assert!(
            err.starts_with("unknown sysbench test 'nope': use one of"),
            "{err}"
        );
        assert!(!err.contains('\n'));
        // A typo gets the test it was likely meant to be, by its short name
        // or its full one.
        let err = select(&["point-qurey".to_string()]).unwrap_err();
        assert!(
            err.starts_with("unknown sysbench test 'point-qurey' (did you mean 'point-query'?): "),
            "{err}"
        );
        let err = select(&["read-only_range=1O".to_string()]).unwrap_err();
        assert!(
            err.contains("(did you mean 'read-only_range=10'?)"),
            "{err}"
        );
    }
}
