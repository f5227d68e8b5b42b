//! Query plans that changed between the base and a target, lined up side by
//! side with the change marked.
//!
//! The seeds found a 2.5× speedup that was nothing but Index Scan becoming
//! Index Only Scan; a report should point at such a change rather than leave
//! it to be dug out. Plans are compared by shape: cost estimates and
//! literal numbers are ignored, so only a different plan counts as a change.

use serde::Serialize;

use super::basis::{Column, relative};

/// One statement whose plan differs between the base and one or more
/// targets (targets with the same new plan share one entry).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanChange {
    /// The step name (`read-only-count_range=1000`).
    pub test: String,
    /// The statement as the base explained it.
    pub statement: String,
    /// The targets that got this plan.
    pub targets: Vec<PlanTarget>,
    /// The base's and the (first) target's plan aligned line by line.
    pub rows: Vec<PlanRow>,
}

/// A target whose plan changed, and the test's relative QPS on it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanTarget {
    pub target: String,
    /// `col-1`, `col-2`…
    pub column: String,
    pub relative: Option<f64>,
}

/// One line of the side-by-side view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanRow {
    pub base: Option<String>,
    pub target: Option<String>,
    /// Whether the two sides differ in shape.
    pub changed: bool,
}

/// The plan changes between the base (`columns[0]`) and the other targets,
/// over the base's reported steps in order.
pub fn changes(columns: &[Column<'_>]) -> Vec<PlanChange> {
    let mut out: Vec<(PlanChange, Vec<String>)> = Vec::new();
    let Some(base) = columns.first() else {
        return Vec::new();
    };
    // A test's first step only (a concurrency sweep stores one per count).
    let first = |s: &&crate::store::StoredStep| {
        base.step(&s.info.name).is_some_and(|f| std::ptr::eq(f, *s))
    };
    for b in base.target.steps.iter().filter(first) {
        for (k, (stmt, bp)) in b.plans.iter().enumerate() {
            let base_shape = shape(bp);
            for (i, col) in columns.iter().enumerate().skip(1) {
                let Some(t) = col.step(&b.info.name) else {
                    continue;
                };
                let Some((_, tp)) = t.plans.get(k) else {
                    continue;
                };
                let target_shape = shape(tp);
                if target_shape == base_shape {
                    continue;
                }
                let who = PlanTarget {
                    target: col.label.to_string(),
                    column: super::basis::column_name(i),
                    relative: relative(t.qps, b.qps),
                };
                let same = out.iter_mut().find(|(c, s)| {
                    c.test == b.info.name && c.statement == *stmt && *s == target_shape
                });
                match same {
                    Some((c, _)) => c.targets.push(who),
                    None => out.push((
                        PlanChange {
                            test: b.info.name.clone(),
                            statement: stmt.clone(),
                            targets: vec![who],
                            rows: align(bp, tp),
                        },
                        target_shape,
                    )),
                }
            }
        }
    }
    out.into_iter().map(|(c, _)| c).collect()
}

/// A plan's shape: its lines without cost estimates, with every number
/// replaced by `#` and trailing blanks removed.
pub fn shape(plan: &str) -> Vec<String> {
    plan.lines().map(line_shape).collect()
}

fn line_shape(line: &str) -> String {
    let mut s = line.to_string();
    for opener in ["(cost=", "(actual "] {
        while let Some(start) = s.find(opener) {
            let end = s[start..].find(')').map_or(s.len(), |e| start + e + 1);
            s.replace_range(start..end, "");
        }
    }
    let mut out = String::with_capacity(s.len());
    let mut in_number = false;
    for ch in s.chars() {
        if ch.is_ascii_digit() || (in_number && ch == '.') {
            if !in_number {
                out.push('#');
                in_number = true;
            }
        } else {
            in_number = false;
            out.push(ch);
        }
    }
    out.trim_end().to_string()
}

/// Lines up two plans: lines of equal shape share a row; the lines between
/// are paired up as changed rows.
pub fn align(base: &str, target: &str) -> Vec<PlanRow> {
    let a: Vec<&str> = base.lines().collect();
    let b: Vec<&str> = target.lines().collect();
    let sa: Vec<String> = a.iter().map(|l| line_shape(l)).collect();
    let sb: Vec<String> = b.iter().map(|l| line_shape(l)).collect();
    let pairs = lcs(&sa, &sb);
    let mut rows = Vec::new();
    let (mut i, mut j) = (0, 0);
    let flush = |rows: &mut Vec<PlanRow>, del: &[&str], ins: &[&str]| {
        for k in 0..del.len().max(ins.len()) {
            rows.push(PlanRow {
                base: del.get(k).map(|s| s.to_string()),
                target: ins.get(k).map(|s| s.to_string()),
                changed: true,
            });
        }
    };
    for (pi, pj) in pairs.into_iter().chain(std::iter::once((a.len(), b.len()))) {
        flush(&mut rows, &a[i..pi], &b[j..pj]);
        if pi < a.len() && pj < b.len() {
            rows.push(PlanRow {
                base: Some(a[pi].to_string()),
                target: Some(b[pj].to_string()),
                changed: false,
            });
        }
        i = pi + 1;
        j = pj + 1;
    }
    rows
}

/// Index pairs of a longest common subsequence of `a` and `b`.
fn lcs<T: PartialEq>(a: &[T], b: &[T]) -> Vec<(usize, usize)> {
    let (n, m) = (a.len(), b.len());
    // Plans are short; a pathological one is compared line by line.
    if n.saturating_mul(m) > 4_000_000 {
        return (0..n.min(m))
            .filter(|&k| a[k] == b[k])
            .map(|k| (k, k))
            .collect();
    }
    let mut len = vec![vec![0u32; m + 1]; n + 1];
    for x in (0..n).rev() {
        for y in (0..m).rev() {
            len[x][y] = if a[x] == b[y] {
                len[x + 1][y + 1] + 1
            } else {
                len[x + 1][y].max(len[x][y + 1])
            };
        }
    }
    let (mut x, mut y) = (0, 0);
    let mut out = Vec::new();
    while x < n && y < m {
        if a[x] == b[y] {
            out.push((x, y));
            x += 1;
            y += 1;
        } else if len[x + 1][y] >= len[x][y + 1] {
            x += 1;
        } else {
            y += 1;
        }
    }
    out
}

/// Text split into pieces, each marked `true` when it changed.
pub type Marked = Vec<(String, bool)>;

/// Word-level marks for a changed row: each side split into words and
/// blanks, with `true` on the words the other side lacks.
pub fn word_diff(a: &str, b: &str) -> (Marked, Marked) {
    let ta = tokens(a);
    let tb = tokens(b);
    let sa: Vec<String> = ta.iter().map(|t| line_shape(t)).collect();
    let sb: Vec<String> = tb.iter().map(|t| line_shape(t)).collect();
    let pairs = lcs(&sa, &sb);
    let mark = |toks: &[&str], kept: Vec<usize>| {
        toks.iter()
            .enumerate()
            .map(|(k, t)| (t.to_string(), !t.trim().is_empty() && !kept.contains(&k)))
            .collect()
    };
    (
        mark(&ta, pairs.iter().map(|p| p.0).collect()),
        mark(&tb, pairs.iter().map(|p| p.1).collect()),
    )
}

/// `s` split into alternating runs of blanks and non-blanks.
fn tokens(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut blank: Option<bool> = None;
    for (i, ch) in s.char_indices() {
        let is_blank = ch.is_whitespace();
        if blank.is_some_and(|b| b != is_blank) {
            out.push(&s[start..i]);
            start = i;
        }
        blank = Some(is_blank);
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The seeds' read-only-count plans for 18.4 and 19beta1.
    const OLD: &str = "Aggregate  (cost=1310.09..1310.10 rows=1 width=8)
  ->  Index Scan using sbtest1_pkey on sbtest1  (cost=0.56..1307.89 rows=882 width=121)
        Index Cond: ((id >= 11575278) AND (id <= 11576277))";
    const NEW: &str = "Aggregate  (cost=32.32..32.33 rows=1 width=8)
  ->  Index Only Scan using sbtest1_pkey on sbtest1  (cost=0.56..30.13 rows=878 width=0)
        Index Cond: ((id >= 11686801) AND (id <= 11687800))";

    #[test]
    fn costs_and_literals_do_not_make_a_change() {
        assert_eq!(shape(OLD)[0], shape(NEW)[0]);
        assert_eq!(shape(OLD)[2], shape(NEW)[2]);
        assert_ne!(shape(OLD), shape(NEW));
        assert_eq!(
            shape(OLD)[1],
            "  ->  Index Scan using sbtest#_pkey on sbtest#"
        );
    }

    #[test]
    fn aligned_rows_mark_only_the_changed_node() {
        let rows = align(OLD, NEW);
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows.iter().map(|r| r.changed).collect::<Vec<_>>(),
            [false, true, false]
        );
        assert!(
            rows[1]
                .target
                .as_deref()
                .unwrap()
                .contains("Index Only Scan")
        );
    }

    #[test]
    fn lines_only_one_side_has_get_rows_of_their_own() {
        let rows = align("A\nB\nC", "A\nX\nY\nC");
        let sides: Vec<(Option<&str>, Option<&str>)> = rows
            .iter()
            .map(|r| (r.base.as_deref(), r.target.as_deref()))
            .collect();
        assert_eq!(
            sides,
            [
                (Some("A"), Some("A")),
                (Some("B"), Some("X")),
                (None, Some("Y")),
                (Some("C"), Some("C"))
            ]
        );
    }

    #[test]
    fn word_diff_marks_the_new_word() {
        let (a, b) = word_diff(
            "->  Index Scan using sbtest1_pkey",
            "->  Index Only Scan using sbtest1_pkey",
        );
        let marked = |v: &[(String, bool)]| {
            v.iter()
                .filter(|t| t.1)
                .map(|t| t.0.clone())
                .collect::<Vec<_>>()
        };
        assert!(marked(&a).is_empty());
        assert_eq!(marked(&b), ["Only"]);
        assert_eq!(
            b.iter().map(|t| t.0.as_str()).collect::<String>(),
            "->  Index Only Scan using sbtest1_pkey"
        );
    }
}
