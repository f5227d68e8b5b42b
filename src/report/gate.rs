//! The CI gate: every compared cell of a report with its verdict, and the
//! ones a `--fail-on` rule matches, so `tidemark report --fail-on slower`
//! can fail a build naming the cells. A cell's verdict is the report's own
//! (the same interval, method and minimum effect); `not verified` and
//! `unknown` never match, since they carry no evidence either way. The
//! instruction counts of `run --instructions` are cells too: more
//! instructions per query is `slower`.

use serde::Serialize;

use super::model::Report;
use crate::record::SuiteName;
use crate::stats::{Interval, Verdict};

/// The exit code of `tidemark report` when a cell's verdict matched
/// `--fail-on`.
pub const EXIT_GATE: i32 = 3;

/// Which verdicts fail the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    /// Throughput lower than the base's.
    Slower,
    /// Throughput higher than the base's (an unexpected speed-up).
    Faster,
    /// Either.
    Any,
}

impl FailOn {
    /// Parses `slower`, `faster` or `any`.
    pub fn parse(s: &str) -> Result<FailOn, String> {
        match s.trim() {
            "slower" => Ok(FailOn::Slower),
            "faster" => Ok(FailOn::Faster),
            "any" => Ok(FailOn::Any),
            other => Err(format!("--fail-on {other:?}: write slower, faster or any")),
        }
    }

    /// Whether `verdict` fails the gate.
    pub fn matches(self, verdict: Verdict) -> bool {
        match self {
            FailOn::Slower => verdict == Verdict::Lower,
            FailOn::Faster => verdict == Verdict::Higher,
            FailOn::Any => matches!(verdict, Verdict::Lower | Verdict::Higher),
        }
    }
}

/// One compared cell: a test (or Insert Benchmark step) on a target other
/// than the base.
#[derive(Clone, Debug, Serialize)]
pub struct GateCell {
    /// `sysbench`, `ibench` or `instructions` (a sysbench test's
    /// instructions per query counted under Valgrind).
    pub suite: &'static str,
    /// The sysbench group's title, `Insert Benchmark`, or the counted
    /// test's group.
    pub group: String,
    pub test: String,
    pub target: String,
    /// What was compared: `qps` (sysbench), the step's rate, or `Ir/q`
    /// (instructions per query: a ratio above 1 is slower).
    pub measure: &'static str,
    /// The target's value of the measure.
    pub value: Option<f64>,
    pub ratio: Option<f64>,
    pub interval: Option<Interval>,
    /// `faster`, `slower`, `no difference`, `not verified`, `unknown`.
    pub verdict: &'static str,
}

impl GateCell {
    /// Its verdict as a [`Verdict`].
    pub fn verdict(&self) -> Verdict {
        Verdict::parse(Some(self.verdict))
    }

    /// `point-query_range=100 on pg18.base: 0.91 (0.88–0.94, paired slices), slower`.
    pub fn line(&self) -> String {
        let ratio = match (self.ratio, &self.interval) {
            (Some(r), Some(iv)) => format!(
                "{r:.3} ({:.3}–{:.3}, {})",
                iv.lo,
                iv.hi,
                super::format::method_name(iv.method)
            ),
            (Some(r), None) => format!("{r:.3} (no interval)"),
            _ => "-".to_string(),
        };
        format!(
            "{} {} on {}: {} {ratio}, {}",
            self.suite, self.test, self.target, self.measure, self.verdict
        )
    }
}

/// Every compared cell of `r`, sysbench groups first, then the
/// instruction counts, then the Insert Benchmark's steps, each in the
/// report's order and target by target.
pub fn cells(r: &Report) -> Vec<GateCell> {
    let mut out = Vec::new();
    if let Some(s) = &r.sysbench {
        for g in &s.groups {
            for t in &g.tests {
                for (i, c) in t.cells.iter().enumerate().skip(1) {
                    let Some(c) = c else { continue };
                    out.push(GateCell {
                        suite: SuiteName::Sysbench.as_str(),
                        group: g.title.to_string(),
                        test: t.name.clone(),
                        target: r.targets[i].label.clone(),
                        measure: "qps",
                        value: Some(c.qps),
                        ratio: c.relative,
                        interval: c.interval,
                        verdict: c.verdict.unwrap_or("unknown"),
                    });
                }
            }
        }
    }
    if let Some(s) = &r.instructions {
        for t in &s.tests {
            for (i, c) in t.cells.iter().enumerate().skip(1) {
                let Some(c) = c else { continue };
                out.push(GateCell {
                    suite: "instructions",
                    group: t.group.to_string(),
                    test: t.name.clone(),
                    target: r.targets[i].label.clone(),
                    measure: "Ir/q",
                    value: Some(c.per_query),
                    ratio: c.relative,
                    interval: c.interval,
                    verdict: c.verdict.unwrap_or("unknown"),
                });
            }
        }
    }
    if let Some(s) = &r.ibench {
        for (i, row) in s.throughput.iter().enumerate().skip(1) {
            for (step, c) in s.steps.iter().zip(&row.cells) {
                if c.value.is_none() {
                    continue;
                }
                out.push(GateCell {
                    suite: SuiteName::Ibench.as_str(),
                    group: "Insert Benchmark".into(),
                    test: step.clone(),
                    target: r
                        .targets
                        .get(i)
                        .map_or_else(|| row.target.clone(), |t| t.label.clone()),
                    measure: if step.starts_with('q') {
                        "qps"
                    } else {
                        "rows/s"
                    },
                    value: c.value,
                    ratio: c.relative,
                    interval: c.interval,
                    verdict: c.verdict.unwrap_or("unknown"),
                });
            }
        }
    }
    out
}

/// The cells of `r` whose verdict fails the gate `on`.
pub fn failing(r: &Report, on: FailOn) -> Vec<GateCell> {
    cells(r)
        .into_iter()
        .filter(|c| on.matches(c.verdict()))
        .collect()
}

/// Why the gate cannot pass on `r` whatever its verdicts: measurements
/// the run was asked for and did not get (instruction counts lost), which
/// a passing gate would hide.
pub fn missing(r: &Report) -> Option<String> {
    let note = r.instructions.as_ref()?.uncounted_note.as_ref()?;
    Some(format!("missing counts: {note}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_only_decided_verdicts() {
        assert_eq!(FailOn::parse("slower"), Ok(FailOn::Slower));
        assert_eq!(FailOn::parse(" any "), Ok(FailOn::Any));
        let e = FailOn::parse("worse").unwrap_err();
        assert!(
            e.contains("slower, faster or any") && !e.contains('\n'),
            "{e}"
        );
        for on in [FailOn::Slower, FailOn::Faster, FailOn::Any] {
            for v in [Verdict::NoDifference, Verdict::Unknown, Verdict::Unverified] {
                assert!(!on.matches(v), "{on:?} {v:?}");
            }
        }
        assert!(FailOn::Slower.matches(Verdict::Lower) && !FailOn::Slower.matches(Verdict::Higher));
        assert!(FailOn::Faster.matches(Verdict::Higher) && !FailOn::Faster.matches(Verdict::Lower));
        assert!(FailOn::Any.matches(Verdict::Higher) && FailOn::Any.matches(Verdict::Lower));
    }
}
