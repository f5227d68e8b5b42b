//! The summary `tidemark run` prints at its end: one line per reported test,
//! grouped as the seeds group them, one QPS column per target.
//!
//! The rows are collected in memory as the steps finish (a run may not be
//! reportable yet); relative QPS is computed and printed by the report
//! model's own [`relative`] and [`rel`], so it reads as in the Markdown and HTML.

use std::fmt::Write as _;

use crate::record::Group;
use crate::report::document::{Cell, Column, Row, Table};
use crate::report::format::rel;
use crate::report::model::relative;

/// One test of one target, as the summary needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    pub name: String,
    pub group: Option<Group>,
    pub reported: bool,
    pub qps: f64,
    pub p99_us: u64,
    pub errors: u64,
    pub status: String,
}

/// Formats the summary for targets `labels[i]` with rows `rows[i]`. The
/// first target is the base: later targets also show QPS relative to it.
pub fn summary(labels: &[String], rows: &[Vec<SummaryRow>]) -> String {
    let mut out = String::new();
    let names_in_order = {
        let mut v: Vec<(&str, Option<Group>)> = Vec::new();
        for r in rows.iter().flatten().filter(|r| r.reported) {
            if !v.iter().any(|(n, _)| *n == r.name) {
                v.push((&r.name, r.group));
            }
        }
        v
    };
    let width = name_width(names_in_order.iter().map(|(n, _)| *n));
    let col = label_width(labels.iter().map(String::as_str));
    for group in Group::ALL {
        let names: Vec<&str> = names_in_order
            .iter()
            .filter(|(_, g)| *g == Some(group))
            .map(|(n, _)| *n)
            .collect();
        if names.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{}", group.title());
        let mut columns = vec![Column::text("test")];
        let mut widths = vec![width];
        for (i, l) in labels.iter().enumerate() {
            columns.push(Column::num(l));
            widths.push(col);
            if i > 0 {
                columns.push(Column::num("rel"));
                widths.push(6);
            }
        }
        columns.push(Column::num("p99 µs"));
        widths.push(10);
        let table_rows = names.iter().map(|name| {
            let mut v = vec![Cell::text(*name)];
            let base = find(&rows[0], name).map(|r| r.qps);
            let mut last_p99 = 0;
            for (i, target_rows) in rows.iter().enumerate() {
                match find(target_rows, name) {
                    Some(r) => {
                        let failed = r.errors > 0 || r.status != "ok";
                        let mark = if failed { "!" } else { " " };
                        v.push(Cell::num(format!("{:.0}", r.qps)).marked(mark));
                        if i > 0 {
                            let cell = base.and_then(|b| relative(r.qps, b)).map(rel);
                            v.push(Cell::num(cell.unwrap_or_else(|| "-".into())));
                        }
                        last_p99 = r.p99_us;
                    }
                    None => {
                        v.push(Cell::num("-"));
                        if i > 0 {
                            v.push(Cell::num("-"));
                        }
                    }
                }
            }
            v.push(Cell::count(last_p99));
            Row::new(v)
        });
        let t = Table::new("summary", columns, table_rows.collect());
        super::table::write(&mut out, &t, &widths);
    }
    if rows
        .iter()
        .flatten()
        .any(|r| r.errors > 0 || r.status != "ok")
    {
        let _ = writeln!(
            out,
            "\n! = the step had errors or did not finish; `tidemark export` shows why"
        );
    }
    out
}

fn find<'a>(rows: &'a [SummaryRow], name: &str) -> Option<&'a SummaryRow> {
    rows.iter().find(|r| r.name == name)
}

/// The width of the test-name column: the longest name, at least 10.
pub(super) fn name_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names.map(|n| n.chars().count()).max().unwrap_or(10).max(10)
}

/// The width of a target's column: labels are shown whole up to 32
/// characters (pg1518.base, pg1518_o3_native_lto.cx10a), at least 12.
pub(super) fn label_width<'a>(labels: impl Iterator<Item = &'a str>) -> usize {
    labels
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(12)
        .clamp(12, 32)
}

/// `s` fitted to `n` characters: whole when it fits, else its start and
/// its end around an ellipsis, so a longer label keeps both its version
/// and its config or settings (`pg1518.base:synchr…commit=off`).
pub(super) fn truncate(s: &str, n: usize) -> std::borrow::Cow<'_, str> {
    let len = s.chars().count();
    if len <= n {
        return s.into();
    }
    let head = n.saturating_sub(1).div_ceil(2);
    let tail = n.saturating_sub(1) - head;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(len - tail).collect();
    format!("{start}…{end}").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, group: Group, qps: f64) -> SummaryRow {
        SummaryRow {
            name: name.into(),
            group: Some(group),
            reported: true,
            qps,
            p99_us: 250,
            errors: 0,
            status: "ok".into(),
        }
    }

    #[test]
    fn groups_tests_and_shows_relative_qps() {
        let a = vec![
            row("point-query_range=100", Group::Point, 1000.0),
            row("insert_range=100", Group::Write, 500.0),
        ];
        let b = vec![
            row("point-query_range=100", Group::Point, 1100.0),
            row("insert_range=100", Group::Write, 450.0),
        ];
        let s = summary(&["pg15".into(), "pg16".into()], &[a, b]);
        assert!(s.contains("point queries"));
        assert!(s.contains("writes"));
        assert!(s.contains("1.10"), "{s}");
        assert!(s.contains("0.90"), "{s}");
        assert!(s.find("point queries").unwrap() < s.find("writes").unwrap());
    }

    #[test]
    fn long_labels_are_shown_whole_and_columns_line_up() {
        let a = vec![row("point-query_range=100", Group::Point, 1000.0)];
        let b = vec![row("point-query_range=100", Group::Point, 2000.0)];
        let labels = [
            "ma101119.base".to_string(),
            "sqlite3541.wal-full".to_string(),
        ];
        let s = summary(&labels, &[a, b]);
        assert!(
            s.contains("ma101119.base") && s.contains("sqlite3541.wal-full"),
            "{s}"
        );
        let lines: Vec<&str> = s
            .lines()
            .filter(|l| l.contains("point-query") || l.contains("test"))
            .collect();
        assert_eq!(lines.len(), 2, "{s}");
        assert_eq!(lines[0].chars().count(), lines[1].chars().count(), "{s}");
    }

    #[test]
    fn labels_longer_than_the_column_keep_their_start_and_end() {
        assert_eq!(truncate("pg1518.base", 12), "pg1518.base");
        let cut = truncate("pg1518.base:synchronous_commit=off", 20);
        assert_eq!(cut.chars().count(), 20);
        assert_eq!(cut, "pg1518.bas…ommit=off");
    }
}
