//! Instructions per query (`run --instructions`): per sysbench test, each
//! target's client-backend instructions per statement counted under
//! Valgrind, its ratio to the base with an interval and a verdict, the
//! background processes' instructions per statement beside it, and per
//! target the functions whose instructions per query changed most.
//!
//! The verdict's method is named in every cell: with two or more
//! repetitions on both sides, the paired t interval on their log ratios;
//! with one count each, the ratio ± a floor ([`floor_for`]) that A/A runs
//! in this mode justify (measured on this project's 2-core VM, see the
//! constants). More instructions per query is "slower": the server does
//! more work for the same answer.

use std::collections::HashMap;

use serde::Serialize;

use super::basis::Column;
use crate::record::{Group, StepInstructions};
use crate::stats::{
    Interval, Verdict, VerdictCounts, median, paired_ratio, verdict, welch_ratio, widened,
};
use crate::store::StoredStep;

/// With one count on each side, the floor of a PostgreSQL read test's
/// ratio: the most two identical servers may differ. A/A in this mode on
/// this project's 2-core VM (all 32 quick tests, `--repeat 2`, two
/// PostgreSQL 15 servers, autovacuum off and a VACUUM and CHECKPOINT before
/// each step, 30,000-row tables; see `orchestrate::provide` and
/// `plan::instructions`): every read test within 0.14 % (point-query's
/// 0.9986 the largest; 20 of 22 within 0.07 %). With autovacuum on and
/// 100,000-row tables reads differed by up to 0.35 % (each server's own
/// ANALYZE sample), a read after writes by 1.4-1.6 % (pruning left to a
/// worker), and point-query on 2,000-row tables by up to 1.1 % (in the
/// backend's malloc). Past the planted 0.3 % it must find, short of 0.14 %.
/// Since a client's count leaves out its waits for the client and the idle
/// statistics flush (`server::valgrind::PG_CLIENT_LEFT_OUT`), the same A/A
/// gave every read within 0.022 % (range-notcovered-si +142 instructions
/// per statement in one repetition, 0 in the other) and every write but
/// delete within 0.021 % (delete 0.22 %, one repetition): the floors are
/// kept, now well clear of what two servers differ by.
pub const READ_FLOOR: f64 = 0.0025;
/// The same for a PostgreSQL write test: every write test within 0.1 %
/// (worst 0.09 %, read-write_range=10) in that A/A, update-one and update-zipf included
/// (2.7-4.0 % with autovacuum on: a worker's snapshot decided how much each
/// update could prune).
pub const WRITE_FLOOR: f64 = 0.003;
/// A MariaDB read test's floor. A/A (the nine point tests, two
/// `mariadb@system` 10.11 servers, `--repeat 2`): every ratio within
/// 0.29 %, the largest point-query's (0.9971 and 0.9976: ~120 fewer
/// instructions per query in `strcmp`/`strlen` on the second server in
/// both repetitions, cause not found).
pub const MARIADB_READ_FLOOR: f64 = 0.005;
/// A MariaDB write test's floor: no A/A of MariaDB's writes in this mode
/// yet, so twice its reads'.
pub const MARIADB_WRITE_FLOOR: f64 = 0.01;
/// The smallest change an instruction-count verdict reports, far below the
/// wall-clock `--min-effect`: a planted 0.3 % of a point query's
/// instructions must be found.
pub const MIN_EFFECT: f64 = 0.002;
/// Functions listed per test and target.
pub const FUNCTION_ROWS: usize = 10;

/// The floor of a test of `group` on servers of `dbms` (the target
/// record's `postgres`, `mariadb`, …).
pub fn floor_for(group: Group, dbms: &str) -> f64 {
    match (dbms == "postgres", group == Group::Write) {
        (true, false) => READ_FLOOR,
        (true, true) => WRITE_FLOOR,
        (false, false) => MARIADB_READ_FLOOR,
        (false, true) => MARIADB_WRITE_FLOOR,
    }
}

/// Everything the report says about instruction counts.
#[derive(Clone, Debug, Serialize)]
pub struct InstructionSection {
    pub tests: Vec<InstrTest>,
    /// One per target other than the base.
    pub summaries: Vec<InstrSummary>,
    /// Per test and target other than the base: the functions that
    /// changed most.
    pub functions: Vec<FunctionTable>,
    /// Said when some functions are shown as addresses.
    pub symbols_note: Option<String>,
    /// Said when some steps run under Valgrind have no count: how many,
    /// and why the first one has none.
    pub uncounted_note: Option<String>,
    pub min_effect: f64,
    pub read_floor: f64,
    pub write_floor: f64,
}

/// One test across the targets.
#[derive(Clone, Debug, Serialize)]
pub struct InstrTest {
    pub name: String,
    pub group: &'static str,
    /// One per target, base first; `None`: not counted there.
    pub cells: Vec<Option<InstrCell>>,
}

/// One test on one target (medians over repetitions).
#[derive(Clone, Debug, Serialize)]
pub struct InstrCell {
    /// Client backends' instructions per statement (BEGIN and COMMIT
    /// included, as QPS counts).
    pub per_query: f64,
    /// The same per event (transaction).
    pub per_event: f64,
    /// Background processes' instructions per statement.
    pub background_per_query: f64,
    /// Counts (repetitions) behind the cell.
    pub n: u32,
    /// `per_query` over the base's; `None` for the base.
    pub relative: Option<f64>,
    pub interval: Option<Interval>,
    /// `slower` (more instructions), `faster`, `no difference`, `unknown`.
    pub verdict: Option<&'static str>,
    /// How the verdict was reached, in words.
    pub method: Option<String>,
}

impl InstrCell {
    /// The ratio to the base with four decimals and its interval
    /// (`1.0103 ±0.0050`); empty for the base.
    pub fn ratio_text(&self) -> String {
        match (self.relative, self.interval) {
            (Some(r), Some(iv)) => format!("{r:.4} ±{:.4}", (iv.hi - iv.lo) / 2.0),
            (Some(r), None) => format!("{r:.4}"),
            _ => String::new(),
        }
    }
}

/// Instructions as the tables print them: whole numbers with thousands
/// separated (`45,961`), one decimal below 100.
pub fn ir_text(x: f64) -> String {
    if x.abs() < 100.0 {
        return format!("{x:.1}");
    }
    let whole = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, ch) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if x < 0.0 { format!("-{out}") } else { out }
}

/// A change in instructions with its sign (`+1,204`, `-37.5`).
pub fn ir_change(x: f64) -> String {
    if x >= 0.0 {
        format!("+{}", ir_text(x))
    } else {
        ir_text(x)
    }
}

/// The section's explanation, the same in every format.
pub const EXPLANATION: &str = "Instructions the server executed per statement (BEGIN and COMMIT \
included, as QPS counts) during each step's measured interval only, counted by Valgrind's \
callgrind in the client backends (MariaDB: connection threads) (Ir/q); bg/q is the background \
processes' (postmaster, checkpointer, WAL writer, autovacuum launcher, …; MariaDB's background \
threads: purge, page cleaner, timers, …) per statement over the same interval. The ratio is \
target ÷ base with its 95 % interval; more instructions per query is slower.";

/// A target's verdicts over every counted test.
#[derive(Clone, Debug, Serialize)]
pub struct InstrSummary {
    pub label: String,
    pub verdicts: VerdictCounts,
    /// `1 slower, 31 no difference (instruction counts: …)`.
    pub text: String,
}

/// The functions of one test whose instructions per query changed most
/// on one target against the base.
#[derive(Clone, Debug, Serialize)]
pub struct FunctionTable {
    pub test: String,
    /// The target's column index (1…).
    pub column: usize,
    pub label: String,
    /// The whole change of the client instructions per query.
    pub change_per_query: f64,
    pub rows: Vec<FunctionChange>,
}

/// One function's instructions per query on the base and the target.
#[derive(Clone, Debug, Serialize)]
pub struct FunctionChange {
    pub name: String,
    pub base_self: f64,
    pub self_: f64,
    pub base_incl: f64,
    pub incl: f64,
}

impl FunctionChange {
    pub fn self_change(&self) -> f64 {
        self.self_ - self.base_self
    }
    pub fn incl_change(&self) -> f64 {
        self.incl - self.base_incl
    }
}

fn counted(s: &StoredStep) -> Option<&StepInstructions> {
    s.host.as_ref()?.instructions.as_ref()
}

/// Whether a step was measured under Valgrind (its wall-clock numbers are
/// not comparable with a normal run's).
pub fn under_valgrind(s: &StoredStep) -> bool {
    s.host.as_ref().is_some_and(|h| h.under_valgrind())
}

/// The report's note when some selected steps ran under Valgrind: their
/// wall-clock numbers are marked, and never compared with a normal run's.
pub fn wall_clock_note(columns: &[Column<'_>]) -> Option<String> {
    let mode = |c: &Column<'_>| {
        c.repetitions
            .iter()
            .flat_map(|t| &t.steps)
            .any(under_valgrind)
    };
    let counted: Vec<&str> = columns
        .iter()
        .filter(|c| mode(c))
        .map(|c| c.label)
        .collect();
    if counted.is_empty() {
        return None;
    }
    let mixed = counted.len() < columns.len();
    Some(format!(
        "{} ran under Valgrind (instruction-count mode): their QPS and latencies are \
         30-100x slower than a normal run's and are wall-clock numbers of that mode only{}",
        counted.join(", "),
        if mixed {
            "; they are not compared with the targets measured normally"
        } else {
            ""
        }
    ))
}

/// Per repetition: (repetition, instructions per statement).
fn per_query(c: &Column<'_>, name: &str) -> Vec<(u32, f64)> {
    c.steps(name)
        .into_iter()
        .filter_map(|(r, s)| Some((r, counted(s)?.per_statement()?)))
        .collect()
}

/// A floor as a percentage with the digits it has: 0.0025 is `0.25`,
/// 0.003 is `0.3`.
fn percent(fraction: f64) -> String {
    format!("{}", (fraction * 10_000.0).round() / 100.0)
}

/// The interval on `other / base` of instruction counts and how it was
/// reached.
fn compare(base: &[(u32, f64)], other: &[(u32, f64)], floor: f64) -> (Option<Interval>, String) {
    if base.len() == 1 && other.len() == 1 {
        let iv = crate::stats::floor_ratio(base[0].1, other[0].1, floor);
        let how = format!(
            "instruction count, one each: ±{} % floor from A/A runs in this mode",
            percent(floor)
        );
        return (iv, how);
    }
    let mut b = base.to_vec();
    let mut o = other.to_vec();
    b.sort_by_key(|x| x.0);
    o.sort_by_key(|x| x.0);
    let bv: Vec<f64> = b.iter().map(|x| x.1).collect();
    let ov: Vec<f64> = o.iter().map(|x| x.1).collect();
    let paired = b.iter().map(|x| x.0).eq(o.iter().map(|x| x.0));
    // Repetitions run on the same two servers: their spread does not
    // cover how two servers differ, which the floor does.
    let between = format!("widened by the ±{} % floor between servers", percent(floor));
    if paired && let Some(iv) = paired_ratio(&bv, &ov) {
        let how = format!(
            "instruction count: t interval on {} repetitions paired in time, {between}",
            bv.len()
        );
        return (Some(widened(iv, floor)), how);
    }
    (
        welch_ratio(&bv, &ov).map(|iv| widened(iv, floor)),
        format!("instruction count: Welch t on unpaired repetitions, {between}"),
    )
}

/// The verdict words of an instruction-count ratio: more instructions is
/// slower.
fn word(v: Verdict) -> &'static str {
    match v {
        Verdict::Higher => "slower",
        Verdict::Lower => "faster",
        Verdict::NoDifference => "no difference",
        Verdict::Unknown => "unknown",
        Verdict::Unverified => crate::stats::NOT_VERIFIED,
    }
}

/// Builds the section; `None` when no selected step was counted.
pub fn build(columns: &[Column<'_>]) -> Option<InstructionSection> {
    let mut names: Vec<(String, Group)> = Vec::new();
    for c in columns {
        for s in &c.target.steps {
            if counted(s).is_some()
                && s.info.reported
                && let Some(g) = s.info.group
                && !names.iter().any(|(n, _)| *n == s.info.name)
            {
                names.push((s.info.name.clone(), g));
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    names.sort_by_key(|(n, g)| (Group::ALL.iter().position(|x| x == g), n.clone()));
    let mut counts = vec![VerdictCounts::default(); columns.len()];
    let mut methods: Vec<Vec<String>> = vec![Vec::new(); columns.len()];
    let mut functions = Vec::new();
    let mut tests = Vec::new();
    for (name, group) in &names {
        let base = per_query(&columns[0], name);
        let floor_of = |c: &Column<'_>| floor_for(*group, &c.target.info.dbms);
        let cells: Vec<Option<InstrCell>> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let reps = per_query(c, name);
                if reps.is_empty() {
                    return None;
                }
                let steps: Vec<&StepInstructions> = c
                    .steps(name)
                    .into_iter()
                    .filter_map(|(_, s)| counted(s))
                    .collect();
                let med = |f: &dyn Fn(&StepInstructions) -> Option<f64>| {
                    median(&steps.iter().filter_map(|s| f(s)).collect::<Vec<_>>()).unwrap_or(0.0)
                };
                let mut cell = InstrCell {
                    per_query: med(&|s| s.per_statement()),
                    per_event: med(&|s| s.per_event()),
                    background_per_query: med(&|s| s.background_per_statement()),
                    n: reps.len() as u32,
                    relative: None,
                    interval: None,
                    verdict: None,
                    method: None,
                };
                if i > 0 && !base.is_empty() {
                    let floor = floor_of(&columns[0]).max(floor_of(c));
                    let (iv, how) = compare(&base, &reps, floor);
                    let v = verdict(iv.as_ref(), MIN_EFFECT);
                    // Counted as a throughput verdict: more instructions is
                    // slower.
                    counts[i].add(match v {
                        Verdict::Higher => Verdict::Lower,
                        Verdict::Lower => Verdict::Higher,
                        other => other,
                    });
                    methods[i].push(how.clone());
                    cell.relative = iv.map(|iv| iv.estimate);
                    cell.interval = iv;
                    cell.verdict = Some(word(v));
                    cell.method = Some(how);
                }
                Some(cell)
            })
            .collect();
        for i in 1..columns.len() {
            if let Some(t) = function_table(columns, name, i) {
                functions.push(t);
            }
        }
        tests.push(InstrTest {
            name: name.clone(),
            group: group.as_str(),
            cells,
        });
    }
    let summaries = (1..columns.len())
        .map(|i| {
            let mut m = methods[i].clone();
            m.sort();
            m.dedup();
            InstrSummary {
                label: columns[i].label.to_string(),
                verdicts: counts[i],
                text: format!(
                    "{} ({}; minimum effect {:.1} %)",
                    counts[i].phrase_for_rate(),
                    if m.is_empty() {
                        "no counts to compare".to_string()
                    } else {
                        m.join("; ")
                    },
                    MIN_EFFECT * 100.0
                ),
            }
        })
        .collect();
    let addresses = functions
        .iter()
        .flat_map(|t: &FunctionTable| &t.rows)
        .filter(|r| r.name.contains("+0x"))
        .count();
    Some(InstructionSection {
        uncounted_note: uncounted_note(columns),
        tests,
        summaries,
        functions,
        symbols_note: (addresses > 0).then(|| {
            "functions shown as OBJECT+0xADDRESS have no symbol in the server binary \
             (Debian's packages strip static functions); a server built from source \
             (tidemark servers build pg) names them all"
                .to_string()
        }),
        min_effect: MIN_EFFECT,
        read_floor: READ_FLOOR,
        write_floor: WRITE_FLOOR,
    })
}

/// How many selected steps ran under Valgrind but have no count, and the
/// reason of the first; `None` when every one has its count.
fn uncounted_note(columns: &[Column<'_>]) -> Option<String> {
    let steps: Vec<&StoredStep> = (columns.iter())
        .flat_map(|c| c.repetitions.iter().flat_map(|t| &t.steps))
        .filter(|s| under_valgrind(s))
        .collect();
    let reasons: Vec<&String> = (steps.iter())
        .filter_map(|s| s.host.as_ref()?.metrics.missing.get("instructions"))
        .collect();
    let first = reasons.first()?;
    Some(format!(
        "{} of {} steps run under Valgrind have no instruction count, so their cells rest \
         on fewer repetitions (the first: {first})",
        reasons.len(),
        steps.len()
    ))
}

/// Per function over every repetition of a test on one column: (self,
/// inclusive) instructions per statement.
fn function_costs(c: &Column<'_>, name: &str) -> Option<HashMap<String, (f64, f64)>> {
    let steps: Vec<&StepInstructions> = c
        .steps(name)
        .into_iter()
        .filter_map(|(_, s)| counted(s))
        .collect();
    let statements: u64 = steps.iter().map(|s| s.statements).sum();
    if statements == 0 {
        return None;
    }
    let mut out: HashMap<String, (f64, f64)> = HashMap::new();
    for s in &steps {
        for f in &s.functions {
            let e = out.entry(f.name.clone()).or_default();
            e.0 += f.self_ir as f64 / statements as f64;
            e.1 += f.incl_ir as f64 / statements as f64;
        }
    }
    Some(out)
}

fn function_table(columns: &[Column<'_>], name: &str, i: usize) -> Option<FunctionTable> {
    let base = function_costs(&columns[0], name)?;
    let other = function_costs(&columns[i], name)?;
    let pq = |c: &Column<'_>| {
        let v: Vec<f64> = per_query(c, name).into_iter().map(|x| x.1).collect();
        median(&v)
    };
    let change = pq(&columns[i])? - pq(&columns[0])?;
    let mut rows: Vec<FunctionChange> = base
        .keys()
        .chain(other.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|n| {
            let (bs, bi) = base.get(n).copied().unwrap_or_default();
            let (s, inc) = other.get(n).copied().unwrap_or_default();
            FunctionChange {
                name: n.clone(),
                base_self: bs,
                self_: s,
                base_incl: bi,
                incl: inc,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.self_change()
            .abs()
            .total_cmp(&a.self_change().abs())
            .then(a.name.cmp(&b.name))
    });
    rows.truncate(FUNCTION_ROWS);
    Some(FunctionTable {
        test: name.to_string(),
        column: i,
        label: columns[i].label.to_string(),
        change_per_query: change,
        rows,
    })
}

#[cfg(test)]
#[path = "instructions_tests.rs"]
mod store_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_with_separators() {
        assert_eq!(ir_text(45960.86), "45,961");
        assert_eq!(ir_text(1_234_567.0), "1,234,567");
        assert_eq!(ir_text(-812.0), "-812");
        assert_eq!(ir_change(37.54), "+37.5");
        assert_eq!(ir_change(-1204.0), "-1,204");
    }

    #[test]
    fn one_count_each_uses_the_floor_and_repetitions_the_t_interval() {
        let (iv, how) = compare(&[(0, 1000.0)], &[(0, 1010.0)], READ_FLOOR);
        let iv = iv.unwrap();
        assert!((iv.estimate - 1.01).abs() < 1e-12);
        assert!(iv.lo > 1.0, "1 % is past a 0.25 % floor: {iv:?}");
        assert_eq!(word(verdict(Some(&iv), MIN_EFFECT)), "slower");
        assert!(how.contains("floor from A/A"), "{how}");
        let (iv, _) = compare(&[(0, 1000.0)], &[(0, 1003.0)], READ_FLOOR);
        assert_eq!(word(verdict(iv.as_ref(), MIN_EFFECT)), "slower");
        let (iv, _) = compare(&[(0, 1000.0)], &[(0, 1001.5)], READ_FLOOR);
        assert_eq!(word(verdict(iv.as_ref(), MIN_EFFECT)), "no difference");
        let (iv, how) = compare(
            &[(0, 1000.0), (1, 1001.0)],
            &[(1, 1011.0), (0, 1010.0)],
            READ_FLOOR,
        );
        assert!(
            how.contains("paired") && how.contains("floor between servers"),
            "{how}"
        );
        let iv = iv.unwrap();
        assert_eq!(iv.n, 2);
        assert_eq!(word(verdict(Some(&iv), MIN_EFFECT)), "slower");
        // Two repetitions that agree to the last instruction still leave
        // the floor: 0.15 % is no difference.
        let (iv, _) = compare(
            &[(0, 1000.0), (1, 2000.0)],
            &[(0, 1001.5), (1, 2003.0)],
            READ_FLOOR,
        );
        assert_eq!(word(verdict(iv.as_ref(), MIN_EFFECT)), "no difference");
        let (iv, _) = compare(&[(0, 1000.0)], &[(0, 998.0)], WRITE_FLOOR);
        assert_eq!(word(verdict(iv.as_ref(), MIN_EFFECT)), "no difference");
        assert_eq!(percent(READ_FLOOR), "0.25");
        assert_eq!(percent(WRITE_FLOOR), "0.3");
        assert_eq!(floor_for(Group::Write, "postgres"), WRITE_FLOOR);
        assert_eq!(floor_for(Group::Point, "postgres"), READ_FLOOR);
        assert_eq!(floor_for(Group::Point, "mariadb"), MARIADB_READ_FLOOR);
        assert_eq!(floor_for(Group::Write, "mariadb"), MARIADB_WRITE_FLOOR);
    }
}
