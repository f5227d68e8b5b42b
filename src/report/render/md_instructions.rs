//! The instruction-count section in Markdown (`run --instructions`): per
//! test each target's instructions per query, ratio and verdict, then per
//! target the functions that changed most. Everything it prints comes
//! from `report::instructions`.

use std::fmt::Write as _;

use crate::report::instructions::{EXPLANATION, InstructionSection, ir_change, ir_text};
use crate::report::model::Report;

/// Appends the section to `o`.
pub fn section(o: &mut String, r: &Report, s: &InstructionSection) {
    o.push_str("## Instructions per query (Valgrind)\n\n");
    let _ = writeln!(o, "{EXPLANATION}\n");
    for sum in &s.summaries {
        let _ = writeln!(o, "- **{}**: {}", sum.label, sum.text);
    }
    if !s.summaries.is_empty() {
        o.push('\n');
    }
    let mut header = vec!["test".to_string()];
    for (i, t) in r.targets.iter().enumerate() {
        header.push(format!("{} Ir/q", t.label));
        if i > 0 {
            header.push("ratio".into());
            header.push("verdict".into());
        }
        header.push("bg/q".into());
    }
    let _ = writeln!(o, "| {} |", header.join(" | "));
    let _ = writeln!(o, "|{}", "---|".repeat(header.len()));
    for t in &s.tests {
        let mut row = vec![t.name.clone()];
        for (i, c) in t.cells.iter().enumerate() {
            let width = if i > 0 { 4 } else { 2 };
            match c {
                Some(c) => {
                    row.push(ir_text(c.per_query));
                    if i > 0 {
                        row.push(c.ratio_text());
                        row.push(c.verdict.unwrap_or("").to_string());
                    }
                    row.push(ir_text(c.background_per_query));
                }
                None => row.extend(std::iter::repeat_n("n/a".to_string(), width)),
            }
        }
        let _ = writeln!(o, "| {} |", row.join(" | "));
    }
    o.push('\n');
    if s.functions.is_empty() {
        return;
    }
    o.push_str("### Functions whose instructions per query changed most\n\n");
    if let Some(note) = &s.symbols_note {
        let _ = writeln!(o, "Note: {note}.\n");
    }
    for f in &s.functions {
        let _ = writeln!(
            o,
            "#### {}: {} vs base ({} Ir/q)\n",
            f.test,
            f.label,
            ir_change(f.change_per_query)
        );
        o.push_str(
            "| function | base self/q | self/q | Δ self | base incl/q | incl/q | Δ incl |\n",
        );
        o.push_str("|---|---|---|---|---|---|---|\n");
        for row in &f.rows {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {} | {} | {} |",
                row.name,
                ir_text(row.base_self),
                ir_text(row.self_),
                ir_change(row.self_change()),
                ir_text(row.base_incl),
                ir_text(row.incl),
                ir_change(row.incl_change())
            );
        }
        o.push('\n');
    }
}
