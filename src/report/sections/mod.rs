//! What each report section shows, as a format-neutral
//! [`crate::report::document`]: one file per section, each building its
//! headings, prose, typed tables and charts once for every format, and
//! [`parts`], the one list of them in page order that the Markdown and
//! HTML renderers both walk; the terminal prints the `verdict_table`s of
//! [`sysbench`] and [`ibench`].
//!
//! A new table is a function returning a [`crate::report::document::Table`]
//! in its section's file, pushed as a `Block::Table` among the section's
//! blocks; a new column is one `Column` and one cell per row in that
//! function. A new section is one file here and one entry in [`parts`].

pub mod chain;
pub mod context;
pub mod ibench;
pub mod instructions;
pub mod profiles;
pub mod query_plans;
pub mod server;
pub mod shards;
pub mod summary;
pub mod sweep;
pub mod sysbench;
pub mod sysbench_cost;

use crate::report::document::Block;
use crate::report::model::Report;

/// One part of the report: its blocks and the parts inside it (a sysbench
/// group inside the sysbench section). On the page the inner parts sit in
/// the part's section; in Markdown every part is also a file of its own,
/// `sections/<stem>.md`, that pastes alone.
#[derive(Clone, Debug)]
pub struct Part {
    /// The Markdown file's stem.
    pub stem: String,
    /// The part's own blocks (a section, or loose blocks).
    pub blocks: Vec<Block>,
    /// Parts inside this one.
    pub inner: Vec<Part>,
}

impl Part {
    fn new(stem: &str, blocks: Vec<Block>) -> Part {
        Part {
            stem: stem.into(),
            blocks,
            inner: Vec::new(),
        }
    }

    /// The blocks the page shows: the inner parts' inside this part's
    /// (last) section.
    pub fn on_page(&self) -> Vec<Block> {
        let mut blocks = self.blocks.clone();
        let inner = self.inner.iter().flat_map(Part::on_page);
        match blocks.last_mut() {
            Some(Block::Section { blocks, .. }) => blocks.extend(inner),
            _ => blocks.extend(inner),
        }
        blocks
    }

    /// This part and every inner part, each as (stem, its own blocks).
    pub fn files(&self) -> Vec<(&str, &[Block])> {
        let mut out = vec![(self.stem.as_str(), self.blocks.as_slice())];
        out.extend(self.inner.iter().flat_map(Part::files));
        out
    }
}

/// The report's parts in the order every format lists them: `summary`
/// (and what to read first), `context`, `sweep`, `sysbench` (with a part
/// per group, `sysbench-<group>`), `instructions`, `chain`, `ibench`,
/// `server` (server counters, CPU profiles, storage detail), `shards`
/// (per-shard throughput of `--client-hosts` steps), `plans`, `configs`
/// (each managed target's configuration file; Markdown only). A part with
/// nothing to show is left out.
pub fn parts(r: &Report) -> Vec<Part> {
    let mut out = vec![
        Part::new(
            "summary",
            vec![summary::section(r), Block::Notes(r.notes.clone())],
        ),
        Part::new("context", vec![context::section(r)]),
    ];
    if let Some(s) = &r.sweep {
        out.push(Part::new("sweep", vec![sweep::section(s)]));
    }
    if let Some(s) = &r.sysbench {
        let mut part = Part::new(
            "sysbench",
            vec![Block::section("sysbench", "Sysbench", sysbench::intro(r))],
        );
        part.inner = s
            .groups
            .iter()
            .map(|g| Part::new(&format!("sysbench-{}", g.group), sysbench::group(r, s, g)))
            .collect();
        out.push(part);
    }
    let optional = [
        ("instructions", instructions::section(r)),
        ("chain", chain::section(r)),
        ("ibench", r.ibench.as_ref().map(|s| ibench::section(r, s))),
    ];
    out.extend(
        optional
            .into_iter()
            .filter_map(|(stem, b)| Some(Part::new(stem, vec![b?]))),
    );
    let mut server = Vec::new();
    if let Some(s) = &r.server {
        server.push(server::counters(r, s));
    }
    if let Some(s) = &r.profiles {
        server.extend(profiles::blocks(r, s));
    }
    if !r.storage.is_empty() {
        server.push(server::storage(r, &r.storage));
    }
    if !server.is_empty() {
        out.push(Part::new("server", server));
    }
    let optional = [
        ("shards", shards::section(&r.shards)),
        ("plans", query_plans::section(r)),
        ("configs", context::config_files(r)),
    ];
    out.extend(
        optional
            .into_iter()
            .filter_map(|(stem, b)| Some(Part::new(stem, vec![b?]))),
    );
    out
}
