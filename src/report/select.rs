//! Choosing what a report compares: targets from any stored runs, named by
//! run id or by label, with labels made unique and renamed as the user asks.
//!
//! A report is a pure function of stored runs, so selection is the only part
//! that talks to the store; everything after it works on the loaded
//! [`StoredRun`]s.

use anyhow::{Result, anyhow, bail};

use crate::store::{Store, StoredRun, StoredTarget};

/// The runs a report reads and the targets it compares, in the order the
/// user named them.
#[derive(Clone, Debug)]
pub struct Selection {
    /// Every run a pick refers to, in the order first named.
    pub runs: Vec<StoredRun>,
    pub picks: Vec<Pick>,
}

/// One compared target: an index into [`Selection::runs`], the indexes of
/// that run's stored targets at one position (one per repetition, in
/// repetition order), and the label the report shows for it. A target
/// measured in several repetitions is one column with a spread, never
/// several columns.
#[derive(Clone, Debug, PartialEq)]
pub struct Pick {
    pub run: usize,
    /// Never empty; the first is the first repetition.
    pub targets: Vec<usize>,
    /// Unique among the picks (see [`unique_labels`]), after `--label`.
    pub label: String,
}

impl Selection {
    /// The run a pick belongs to.
    pub fn run(&self, p: &Pick) -> &StoredRun {
        &self.runs[p.run]
    }

    /// The stored target of a pick's first repetition (what it is: spec,
    /// version, config are the same in every repetition).
    pub fn target(&self, p: &Pick) -> &StoredTarget {
        &self.runs[p.run].targets[p.targets[0]]
    }

    /// The stored targets of all of a pick's repetitions.
    pub fn repetitions(&self, p: &Pick) -> Vec<&StoredTarget> {
        p.targets
            .iter()
            .map(|&i| &self.runs[p.run].targets[i])
            .collect()
    }
}

/// Selects targets from `store`: each of `args` is a run id (all its
/// targets), `RUN:LABEL` (that run's targets with that stored label) or a
/// stored label found in exactly one run. No `args`: the latest run's
/// targets. `renames` are `--label OLD=NEW` pairs.
pub fn select(store: &Store, args: &[String], renames: &[(String, String)]) -> Result<Selection> {
    let mut sel = Selection {
        runs: Vec::new(),
        picks: Vec::new(),
    };
    if args.is_empty() {
        let Some(&latest) = store.run_ids()?.last() else {
            bail!(
                "no runs stored in {}: run `tidemark run` first or pass --results DIR",
                store.dir().display()
            );
        };
        add_run_targets(store, &mut sel, latest, None)?;
    }
    for arg in args {
        let arg = arg.trim();
        if let Ok(id) = arg.parse::<i64>() {
            add_run_targets(store, &mut sel, id, None)?;
        } else if let Some((run, label)) = arg.split_once(':')
            && let Ok(id) = run.trim().parse::<i64>()
        {
            add_run_targets(store, &mut sel, id, Some(label.trim()))?;
        } else {
            let runs: Vec<i64> = store
                .list_runs()?
                .into_iter()
                .filter(|r| r.targets.iter().any(|l| l == arg))
                .map(|r| r.id)
                .collect();
            match runs.as_slice() {
                [] => bail!(
                    "no stored target is labelled {arg:?}: `tidemark runs` lists the runs and their target labels"
                ),
                [id] => add_run_targets(store, &mut sel, *id, Some(arg))?,
                many => bail!(
                    "label {arg:?} is in runs {}: name one as RUN:LABEL, e.g. {}:{arg}",
                    join_ids(many),
                    many[many.len() - 1]
                ),
            }
        }
    }
    if sel.picks.is_empty() {
        bail!(
            "the selected runs have no targets (they stopped before any server started): name other runs"
        );
    }
    let keys: Vec<(i64, u32, &str)> = sel
        .picks
        .iter()
        .map(|p| {
            let t = sel.target(p);
            (sel.run(p).id, t.position, t.info.label.as_str())
        })
        .collect();
    let unique = unique_labels(&keys);
    let stored: Vec<&str> = keys.iter().map(|k| k.2).collect();
    let labels = apply_renames(&unique, &stored, renames).map_err(|e| anyhow!(e))?;
    for (p, l) in sel.picks.iter_mut().zip(labels) {
        p.label = l;
    }
    Ok(sel)
}

/// Adds run `id`'s targets (only those labelled `label`, if given).
fn add_run_targets(store: &Store, sel: &mut Selection, id: i64, label: Option<&str>) -> Result<()> {
    let run = match sel.runs.iter().position(|r| r.id == id) {
        Some(i) => i,
        None => {
            sel.runs.push(store.load_run(id)?);
            sel.runs.len() - 1
        }
    };
    let targets = &sel.runs[run].targets;
    let chosen: Vec<usize> = (0..targets.len())
        .filter(|&i| label.is_none_or(|l| targets[i].info.label == l))
        .collect();
    if chosen.is_empty()
        && let Some(l) = label
    {
        let have: Vec<&str> = targets.iter().map(|t| t.info.label.as_str()).collect();
        bail!(
            "run {id} has no target labelled {l:?} (it has: {})",
            if have.is_empty() {
                "none".to_string()
            } else {
                have.join(", ")
            }
        );
    }
    let mut positions: Vec<u32> = chosen.iter().map(|&i| targets[i].position).collect();
    positions.sort_unstable();
    positions.dedup();
    for pos in positions {
        if sel
            .picks
            .iter()
            .any(|p| p.run == run && sel.runs[run].targets[p.targets[0]].position == pos)
        {
            continue;
        }
        let mut reps: Vec<usize> = chosen
            .iter()
            .copied()
            .filter(|&i| targets[i].position == pos)
            .collect();
        reps.sort_by_key(|&i| targets[i].repetition);
        sel.picks.push(Pick {
            run,
            targets: reps,
            label: String::new(),
        });
    }
    Ok(())
}

fn join_ids(ids: &[i64]) -> String {
    ids.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Report labels for targets given as (run id, position, stored label):
/// the stored label where it is unique among them; `.r<run>` appended
/// where other runs have it too; and where one run has it at several
/// positions (the same spec given twice), `#2`, `#3`… on the later ones,
/// as the terminal and the store number them.
pub fn unique_labels(targets: &[(i64, u32, &str)]) -> Vec<String> {
    targets
        .iter()
        .map(|&(run, pos, label)| {
            let same: Vec<_> = targets.iter().filter(|t| t.2 == label).collect();
            let mut out = label.to_string();
            if same.iter().any(|t| t.0 != run) {
                out.push_str(&format!(".r{run}"));
            }
            let earlier = same.iter().filter(|t| t.0 == run && t.1 < pos).count();
            if earlier > 0 {
                out.push_str(&format!("#{}", earlier + 1));
            }
            out
        })
        .collect()
}

/// Applies `--label OLD=NEW` renames. OLD names a report label, or a stored
/// label that only one target has. Errors (one line) for an OLD that names
/// no target and for renames that make two labels equal.
pub fn apply_renames(
    labels: &[String],
    stored: &[&str],
    renames: &[(String, String)],
) -> Result<Vec<String>, String> {
    let mut out = labels.to_vec();
    for (old, new) in renames {
        if new.trim().is_empty() {
            return Err(format!(
                "--label {old}= gives an empty label: write OLD=NEW"
            ));
        }
        let idx = match labels.iter().position(|l| l == old) {
            Some(i) => i,
            None => {
                let hits: Vec<usize> = (0..stored.len()).filter(|&i| stored[i] == old).collect();
                match hits.as_slice() {
                    [i] => *i,
                    [] => {
                        return Err(format!(
                            "--label {old}={new}: no selected target is labelled {old:?} (labels: {})",
                            labels.join(", ")
                        ));
                    }
                    _ => {
                        return Err(format!(
                            "--label {old}={new}: {old:?} names several targets; use one of {}",
                            hits.iter()
                                .map(|&i| labels[i].as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
            }
        };
        out[idx] = new.trim().to_string();
    }
    for (i, l) in out.iter().enumerate() {
        if out[..i].contains(l) {
            return Err(format!(
                "two targets would both be labelled {l:?}: choose different --label names"
            ));
        }
    }
    Ok(out)
}

/// Parses one `--label OLD=NEW` argument. It splits at the last `=`: a
/// label may hold settings (`pg1518.base:fsync=off=nofsync`), a new name
/// may not.
pub fn parse_rename(s: &str) -> Result<(String, String), String> {
    match s.rsplit_once('=') {
        Some((old, new)) if !old.trim().is_empty() && !new.trim().is_empty() => {
            Ok((old.trim().to_string(), new.trim().to_string()))
        }
        _ => Err(format!(
            "--label {s:?}: write OLD=NEW, e.g. --label pg1518.base=pg15"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_splits_at_the_last_equals_sign() {
        assert_eq!(
            parse_rename("pg1518.base:fsync=off=nofsync").unwrap(),
            ("pg1518.base:fsync=off".to_string(), "nofsync".to_string())
        );
        assert_eq!(
            parse_rename("pg1518.base=pg15").unwrap(),
            ("pg1518.base".to_string(), "pg15".to_string())
        );
        assert!(parse_rename("pg1518.base:fsync=off=").is_err());
    }

    #[test]
    fn unique_labels_keep_distinct_ones_and_suffix_duplicates() {
        let got = unique_labels(&[
            (1, 0, "pg1518.base"),
            (2, 0, "pg1518.base"),
            (2, 1, "pg1518.base"),
            (2, 2, "pg17.cx10b"),
        ]);
        assert_eq!(
            got,
            [
                "pg1518.base.r1",
                "pg1518.base.r2",
                "pg1518.base.r2#2",
                "pg17.cx10b"
            ]
        );
        let one_run = unique_labels(&[(3, 0, "pg1518.base"), (3, 1, "pg1518.base")]);
        assert_eq!(one_run, ["pg1518.base", "pg1518.base#2"]);
    }

    #[test]
    fn renames_by_report_label_or_unambiguous_stored_label() {
        let labels: Vec<String> = vec!["a.r1".into(), "a.r2".into(), "b".into()];
        let stored = ["a", "a", "b"];
        let r = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
            apply_renames(&labels, &stored, &pairs)
        };
        assert_eq!(
            r(&[("a.r2", "new"), ("b", "pg17")]).unwrap(),
            ["a.r1", "new", "pg17"]
        );
        assert!(r(&[("a", "x")]).unwrap_err().contains("several targets"));
        assert!(
            r(&[("zz", "x")])
                .unwrap_err()
                .contains("no selected target")
        );
        assert!(
            r(&[("a.r1", "b")])
                .unwrap_err()
                .contains("both be labelled")
        );
    }

    #[test]
    fn rename_arguments_need_both_sides() {
        assert_eq!(
            parse_rename("pg1518.base=pg15").unwrap(),
            ("pg1518.base".into(), "pg15".into())
        );
        assert!(parse_rename("pg15").is_err());
        assert!(parse_rename("=pg15").is_err());
    }
}
