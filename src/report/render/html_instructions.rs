//! The instruction-count section in HTML (`run --instructions`): the same
//! tables as the Markdown one, from `report::instructions`.

use std::fmt::Write as _;

use super::html::{l, n, table};
use super::svg::esc;
use crate::report::instructions::{EXPLANATION, InstructionSection, ir_change, ir_text};
use crate::report::model::Report;

/// Appends the section to `o`.
pub fn section(o: &mut String, r: &Report, s: &InstructionSection) {
    o.push_str("<section id=\"instructions\"><h2>Instructions per query (Valgrind)</h2>\n");
    let _ = writeln!(o, "<p>{}</p>", esc(EXPLANATION));
    if !s.summaries.is_empty() {
        o.push_str("<ul>");
        for sum in &s.summaries {
            let _ = write!(o, "<li><b>{}</b>: {}</li>", esc(&sum.label), esc(&sum.text));
        }
        o.push_str("</ul>\n");
    }
    let mut header = vec!["test".to_string()];
    for (i, t) in r.targets.iter().enumerate() {
        header.push(format!("{} Ir/q", esc(&t.label)));
        if i > 0 {
            header.push("ratio".into());
            header.push("verdict".into());
        }
        header.push("bg/q".into());
    }
    let rows: Vec<Vec<(String, String)>> = s
        .tests
        .iter()
        .map(|t| {
            let mut row = vec![l(&t.name)];
            for (i, c) in t.cells.iter().enumerate() {
                match c {
                    Some(c) => {
                        row.push(n(ir_text(c.per_query)));
                        if i > 0 {
                            let title = c.method.clone().unwrap_or_default();
                            row.push((
                                String::new(),
                                format!(
                                    "<span title=\"{}\">{}</span>",
                                    esc(&title),
                                    esc(&c.ratio_text())
                                ),
                            ));
                            row.push(l(c.verdict.unwrap_or("")));
                        }
                        row.push(n(ir_text(c.background_per_query)));
                    }
                    None => {
                        let width = if i > 0 { 4 } else { 2 };
                        row.extend(std::iter::repeat_n(n("n/a".into()), width));
                    }
                }
            }
            row
        })
        .collect();
    table(o, "instructions", &header, &rows);
    if !s.functions.is_empty() {
        o.push_str("<h3>Functions whose instructions per query changed most</h3>\n");
        if let Some(note) = &s.symbols_note {
            let _ = writeln!(o, "<p>Note: {}.</p>", esc(note));
        }
        let header: Vec<String> = [
            "function",
            "base self/q",
            "self/q",
            "Δ self",
            "base incl/q",
            "incl/q",
            "Δ incl",
        ]
        .map(String::from)
        .to_vec();
        for f in &s.functions {
            let _ = writeln!(
                o,
                "<h4>{}: {} vs base ({} Ir/q)</h4>",
                esc(&f.test),
                esc(&f.label),
                esc(&ir_change(f.change_per_query))
            );
            let rows: Vec<Vec<(String, String)>> = f
                .rows
                .iter()
                .map(|x| {
                    vec![
                        l(&x.name),
                        n(ir_text(x.base_self)),
                        n(ir_text(x.self_)),
                        n(ir_change(x.self_change())),
                        n(ir_text(x.base_incl)),
                        n(ir_text(x.incl)),
                        n(ir_change(x.incl_change())),
                    ]
                })
                .collect();
            table(o, "instructions-functions", &header, &rows);
        }
    }
    o.push_str("</section>\n");
}
