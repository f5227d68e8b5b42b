//! The client shards of `--client-hosts` steps as a document: each
//! shard's rate, so an overloaded client host shows as a shard behind the
//! others.

use crate::report::document::{Block, Cell, Column, Row, Table};
use crate::report::shards::ShardedStep;

/// The section (`## Client shards`, `<section id="shards">`); `None`
/// without sharded steps.
pub fn section(steps: &[ShardedStep]) -> Option<Block> {
    if steps.is_empty() {
        return None;
    }
    let text = "Steps whose clients ran as shards (--client-hosts): each shard's rate, so an \
                overloaded client host shows as a shard behind the others. The step's own \
                numbers are the exact merge of these.";
    let columns = [
        Column::text("target"),
        Column::text("step"),
        Column::num("shard"),
        Column::text("host"),
        Column::num("clients"),
        Column::num("events"),
        Column::num("qps"),
        Column::num("errors"),
        Column::num("start lag ms"),
    ];
    let rows = steps.iter().flat_map(|s| {
        s.shards.iter().map(|r| {
            Row::new(vec![
                Cell::text(&s.target),
                Cell::text(&s.step),
                Cell::count(r.shard),
                Cell::text(&r.host),
                Cell::count(r.threads),
                Cell::count(r.events),
                Cell::num(format!("{:.0}", r.qps)),
                Cell::count(r.errors),
                Cell::num(r.start_lag_ms.map_or("n/a".into(), |l| format!("{l:.1}"))),
            ])
        })
    });
    let blocks = vec![
        Block::Markdown(format!(
            "{}\n\n",
            text.replace("(--client-hosts)", "(`--client-hosts`)")
        )),
        Block::Html(format!("<p class=\"legend\">{text}</p>\n")),
        Block::Table(Table::new("shards", columns.to_vec(), rows.collect())),
    ];
    Some(Block::section("shards", "Client shards", blocks))
}
