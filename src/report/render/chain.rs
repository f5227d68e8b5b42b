//! The version chain (`tidemark report --chain`): each target against the
//! one before it, test by test, as the seeds' "each release against the
//! previous" tables; the comparison with the base stays in the group
//! tables.

use std::fmt::Write as _;

use crate::report::format::rel_pm;
use crate::report::model::Report;
use crate::report::render::svg::esc;
use crate::report::sysbench::{Cell, TestRow};

/// Per test: its name and each link's cell.
type Rows = Vec<(String, Vec<String>)>;

/// The headers (`col-1 vs base`…) and, per test, each link's relative QPS
/// and verdict; `None` when the report has no chain.
fn rows(r: &Report) -> Option<(Vec<String>, Rows)> {
    let s = r
        .sysbench
        .as_ref()
        .filter(|_| r.chain && r.targets.len() > 1)?;
    let headers = r
        .targets
        .windows(2)
        .map(|w| format!("{} vs {}", w[1].label, w[0].label))
        .collect();
    let link = |c: Option<&Cell>, i: usize| -> String {
        let found = c.and_then(|c| {
            if i == 1 {
                Some((c.relative?, c.interval, c.verdict?))
            } else {
                let p = c.vs_previous.as_ref()?;
                Some((p.relative, p.interval, p.verdict))
            }
        });
        match found {
            Some((v, iv, verdict)) => format!("{} {verdict}", rel_pm(v, iv.as_ref())),
            None => "-".into(),
        }
    };
    let row = |t: &TestRow| {
        let cells = (1..r.targets.len())
            .map(|i| link(t.cells.get(i).and_then(Option::as_ref), i))
            .collect();
        (t.name.clone(), cells)
    };
    Some((
        headers,
        s.groups
            .iter()
            .flat_map(|g| g.tests.iter().map(row))
            .collect(),
    ))
}

const TITLE: &str = "Each target against the one before it";

/// The chain as a Markdown table (nothing without `--chain`).
pub fn markdown(o: &mut String, r: &Report) {
    let Some((headers, rows)) = rows(r) else {
        return;
    };
    let _ = writeln!(
        o,
        "## {TITLE}\n\nRelative QPS with its 95 % interval and verdict.\n"
    );
    let _ = writeln!(o, "| test | {} |", headers.join(" | "));
    let _ = writeln!(o, "|---|{}", "---:|".repeat(headers.len()));
    for (name, cells) in rows {
        let _ = writeln!(o, "| {name} | {} |", cells.join(" | "));
    }
    o.push('\n');
}

/// The chain as an HTML table (nothing without `--chain`).
pub fn html(o: &mut String, r: &Report) {
    let Some((headers, rows)) = rows(r) else {
        return;
    };
    let _ = write!(
        o,
        "<section id=\"chain\"><h2>{TITLE}</h2><table><tr><th>test</th>"
    );
    for h in &headers {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr>");
    for (name, cells) in rows {
        let _ = write!(o, "<tr><td>{}</td>", esc(&name));
        for c in cells {
            let _ = write!(o, "<td class=\"num\">{}</td>", esc(&c));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table></section>\n");
}
