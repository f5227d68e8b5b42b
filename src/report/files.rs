//! Writing a report's files into its directory, one per [`Renderer`]:
//! `index.html`, `report.md`, `report.json` and `report.csv`, and the
//! Markdown once more one file per section in `sections/`.
//!
//! A report directory is tidemark's own: it carries a marker file, and a
//! directory that has other content and no marker is refused rather than
//! overwritten. Each file is written whole to a temporary name and renamed,
//! so a reader never sees half a report.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use super::model::{Report, ReportOptions, build};
use super::render::{self, Renderer};
use super::select::{Selection, select};
use crate::store::Store;

/// The file that marks a directory as written by `tidemark report`.
pub const MARKER: &str = ".tidemark-report";

/// Writes `report` in every format ([`render::ALL`]) into `dir` (created
/// if needed); returns the path of its `index.html`.
pub fn write_report(dir: &Path, report: &Report) -> Result<PathBuf> {
    write_formats(dir, report, &render::ALL)?;
    write_sections(dir, report)?;
    Ok(dir.join("index.html"))
}

/// The Markdown report one file per section, `sections/<stem>.md`, so a
/// post can take one group's tables alone.
fn write_sections(dir: &Path, report: &Report) -> Result<()> {
    let sub = dir.join("sections");
    std::fs::create_dir_all(&sub).with_context(|| format!("cannot create {}", sub.display()))?;
    for (stem, text) in render::markdown::sections(report) {
        put(&sub, &format!("{stem}.md"), &text)?;
    }
    Ok(())
}

/// Writes `report` into `dir` (created if needed): each (file name,
/// renderer) of `formats`, in their order.
pub fn write_formats(dir: &Path, report: &Report, formats: &[(&str, &dyn Renderer)]) -> Result<()> {
    if dir.exists() {
        if !dir.is_dir() {
            bail!(
                "{} is a file, not a directory: pass another -o DIR",
                dir.display()
            );
        }
        let has_other = std::fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .next()
            .is_some();
        if has_other && !dir.join(MARKER).exists() {
            bail!(
                "{} already has files that tidemark did not write: pass another -o DIR",
                dir.display()
            );
        }
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the report directory {}", dir.display()))?;
    let contents = formats
        .iter()
        .map(|(_, r)| r.render(report))
        .collect::<Result<Vec<String>>>()?;
    put(
        dir,
        MARKER,
        "written by tidemark report; the files here are replaced on the next report\n",
    )?;
    for ((name, _), text) in formats.iter().zip(&contents) {
        put(dir, name, text)?;
    }
    Ok(())
}

fn put(dir: &Path, name: &str, text: &str) -> Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The default report directory for a selection:
/// `RESULTS/reports/run-<id>[-<id>…]`.
pub fn default_dir(results_dir: &Path, sel: &Selection) -> PathBuf {
    let mut ids: Vec<i64> = sel.runs.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    ids.dedup();
    let ids: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    results_dir
        .join("reports")
        .join(format!("run-{}", ids.join("-")))
}

/// Selects, builds and writes a report: `args` and `renames` as for
/// [`select`], into `out` (default: [`default_dir`]). Returns the report
/// and the path of its `index.html`.
pub fn generate(
    store: &Store,
    args: &[String],
    renames: &[(String, String)],
    opts: &ReportOptions,
    out: Option<&Path>,
) -> Result<(Report, PathBuf)> {
    let sel = select(store, args, renames)?;
    let report = build(&sel, opts)?;
    let dir = out.map_or_else(|| default_dir(store.dir(), &sel), Path::to_path_buf);
    let index = write_report(&dir, &report)?;
    Ok((report, index))
}

/// The report `tidemark run` writes at its end: run `run_id`'s targets,
/// the first as the base, into the default directory.
pub fn write_for_run(store: &Store, run_id: i64, min_effect: f64) -> Result<PathBuf> {
    let (_, index) = generate(
        store,
        &[run_id.to_string()],
        &[],
        &ReportOptions {
            min_effect,
            ..ReportOptions::default()
        },
        None,
    )?;
    Ok(index)
}

/// The comparison model of run `run_id` (its targets, the first as the
/// base) without writing files: what the terminal summary at the end of a
/// run prints, so it says what the report says.
pub fn model_for_run(store: &Store, run_id: i64, min_effect: f64) -> Result<Report> {
    let sel = select(store, &[run_id.to_string()], &[])?;
    build(
        &sel,
        &ReportOptions {
            min_effect,
            ..ReportOptions::default()
        },
    )
}
