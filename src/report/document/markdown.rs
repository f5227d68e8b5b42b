//! A [`Block`] list as Markdown: pipe tables, `##`/`###` headings, a ratio
//! bold when faster and italic when slower.

use std::fmt::Write as _;

use super::{Block, Cell, Span, Table, Value};
use crate::report::model::Band;
use crate::report::query_plans::PlanRow;

/// Appends `blocks` to `o`.
pub fn write(o: &mut String, blocks: &[Block]) {
    for b in blocks {
        match b {
            Block::Section { title, blocks, .. } => {
                let _ = writeln!(o, "## {title}\n");
                write(o, blocks);
            }
            Block::Heading(t) => _ = writeln!(o, "### {t}\n"),
            Block::Para(t) | Block::Legend(t) => _ = writeln!(o, "{t}\n"),
            Block::Rich { spans: s, .. } => _ = writeln!(o, "{}\n", spans(s)),
            Block::Commands(lines) => {
                o.push_str("```sh\n");
                for l in lines {
                    let _ = writeln!(o, "{l}");
                }
                o.push_str("```\n\n");
            }
            Block::List(items) => {
                for i in items {
                    let _ = writeln!(o, "- {i}");
                }
                o.push('\n');
            }
            Block::Notes(items) if !items.is_empty() => {
                o.push_str("**Read first:**\n\n");
                for i in items {
                    let _ = writeln!(o, "- {i}");
                }
                o.push('\n');
            }
            Block::Notes(_) => {}
            Block::Table(t) => table(o, t),
            Block::Diff { rows, .. } => diff(o, rows),
            Block::Markdown(text) => o.push_str(text),
            Block::Html(_) | Block::Chart(_) => {}
        }
    }
}

/// The blocks as one Markdown string.
pub fn render(blocks: &[Block]) -> String {
    let mut o = String::new();
    write(&mut o, blocks);
    o
}

/// Spans as Markdown: code in backticks, the rest as words.
pub fn spans(s: &[Span]) -> String {
    s.iter()
        .map(|x| match x {
            Span::Code(c) => format!("`{c}`"),
            x => x.plain(),
        })
        .collect()
}

/// A cell's Markdown.
pub fn cell(c: &Cell) -> String {
    let text = match &c.value {
        Value::Code(s) => format!("`{}`", s.replace('`', "'")),
        Value::Spans(s) => spans(s),
        Value::Ratio(_, _, Some(Band::Faster)) => format!("**{}**", c.plain_text()),
        Value::Ratio(_, _, Some(Band::Slower)) => format!("_{}_", c.plain_text()),
        _ => c.plain_text(),
    };
    format!("{text}{}", c.mark)
}

/// Escapes a table cell.
fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A pipe table, after its caption: header, alignment row, rows.
pub fn table(o: &mut String, t: &Table) {
    if let Some(c) = &t.caption {
        let _ = writeln!(o, "{c}:\n");
    }
    let line = |cells: Vec<String>| {
        let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
        format!("| {} |", cells.join(" | "))
    };
    let _ = writeln!(
        o,
        "{}",
        line(t.columns.iter().map(super::Column::plain_title).collect())
    );
    let align: Vec<&str> = t
        .columns
        .iter()
        .map(|c| if c.right { "---:" } else { "---" })
        .collect();
    let _ = writeln!(o, "|{}|", align.join("|"));
    for row in &t.rows {
        let _ = writeln!(o, "{}", line(row.cells.iter().map(cell).collect()));
    }
    o.push('\n');
}

/// A ```` ```diff ```` block: unchanged lines indented, each run of changed
/// lines as the old ones (`- `) then the new (`+ `).
fn diff(o: &mut String, rows: &[PlanRow]) {
    o.push_str("```diff\n");
    let (mut minus, mut plus): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    let flush = |o: &mut String, minus: &mut Vec<&str>, plus: &mut Vec<&str>| {
        for l in minus.drain(..) {
            let _ = writeln!(o, "- {l}");
        }
        for l in plus.drain(..) {
            let _ = writeln!(o, "+ {l}");
        }
    };
    for row in rows {
        if row.changed {
            minus.extend(row.base.as_deref());
            plus.extend(row.target.as_deref());
        } else {
            flush(o, &mut minus, &mut plus);
            let _ = writeln!(o, "  {}", row.base.as_deref().unwrap_or_default());
        }
    }
    flush(o, &mut minus, &mut plus);
    o.push_str("```\n\n");
}
