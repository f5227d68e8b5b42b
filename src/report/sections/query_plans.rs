//! The query plans that changed, as a document: per test the targets
//! whose plan differs from the base's (with their rQPS), the statement,
//! and the two plans as a [`Block::Diff`].

use crate::report::document::Block;
use crate::report::format::{bp, rel};
use crate::report::model::Report;
use crate::report::render::svg::esc;
use crate::report::sysbench::basis_points;

/// The section (`## Query plans that changed`, `<section id="plans">`);
/// `None` when no plan changed.
pub fn section(r: &Report) -> Option<Block> {
    if r.query_plan_changes.is_empty() {
        return None;
    }
    let mut blocks = vec![
        Block::Markdown("Plans are compared without cost estimates and literal numbers; `-` lines are the base's plan, `+` lines the target's.\n\n".into()),
        Block::Html("<p class=\"legend\">Plans are compared without cost estimates and literal numbers; changed lines are shaded and the changed words marked.</p>\n".into()),
    ];
    for p in &r.query_plan_changes {
        let who = |bold: bool| -> String {
            let list: Vec<String> = p
                .targets
                .iter()
                .map(|t| {
                    let rqps = t.relative.map(|x| {
                        format!(", rQPS {} ({} basis points)", rel(x), bp(basis_points(x)))
                    });
                    let rqps = rqps.unwrap_or_default();
                    match bold {
                        true => format!("<b>{}</b> ({}){rqps}", esc(&t.target), esc(&t.column)),
                        false => format!("{} ({}){rqps}", t.target, t.column),
                    }
                })
                .collect();
            list.join("; ")
        };
        blocks.push(Block::Markdown(format!(
            "### {}\n\n{} vs {}\n\n`{}`\n\n",
            p.test,
            r.base,
            who(false),
            p.statement.replace('`', "'")
        )));
        blocks.push(Block::Html(format!(
            "<h3>{}</h3><p>{} (base) vs {}</p><p class=\"stmt\"><code>{}</code></p>\n",
            esc(&p.test),
            esc(&r.base),
            who(true),
            esc(&p.statement)
        )));
        let targets: Vec<String> = p
            .targets
            .iter()
            .map(|t| format!("{} ({})", t.target, t.column))
            .collect();
        blocks.push(Block::Diff {
            titles: [format!("{} (base)", r.base), targets.join(", ")],
            rows: p.rows.clone(),
        });
    }
    Some(Block::section("plans", "Query plans that changed", blocks))
}
