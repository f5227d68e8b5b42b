//! Installed trees in the install cache, for every family that installs
//! releases on demand: each tree is a directory named by its release that
//! holds a manifest ([`MANIFEST`]) saying where it came from. A tree is
//! unpacked and checked in a staging directory, then moved into place with
//! one rename, so a reader never sees half of one.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The file in each installed tree that records its origin.
pub const MANIFEST: &str = "tidemark-install.json";

/// What a family records of an installed tree.
pub trait Manifest: Serialize + DeserializeOwned {
    /// The release, as the server reports it (`17.10`, `10.2.11`).
    fn version(&self) -> &str;
}

/// An installed tree in the cache.
#[derive(Clone, Debug, PartialEq)]
pub struct Installed<M> {
    /// The tree's root.
    pub dir: PathBuf,
    pub manifest: M,
}

/// The installed tree at `dir`, if its manifest is there.
pub fn installed_in<M: Manifest>(dir: &Path) -> Result<Option<Installed<M>>> {
    let Ok(text) = std::fs::read_to_string(dir.join(MANIFEST)) else {
        return Ok(None);
    };
    let manifest = serde_json::from_str(&text)
        .with_context(|| format!("malformed {}", dir.join(MANIFEST).display()))?;
    Ok(Some(Installed {
        dir: dir.to_path_buf(),
        manifest,
    }))
}

/// Every installed tree in `root`, oldest release first by `key`.
pub fn list_installed_in<M: Manifest>(
    root: &Path,
    key: fn(&str) -> Vec<u32>,
) -> Result<Vec<Installed<M>>> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in entries {
        if let Some(found) = installed_in::<M>(&entry?.path())? {
            out.push(found);
        }
    }
    out.sort_by_key(|i| key(i.manifest.version()));
    Ok(out)
}

/// Makes the checked tree in `staging` the installed one at `dest`:
/// records `manifest` in it and moves it there, then says `installed` of
/// it. A tree another tidemark installed at `dest` meanwhile is used
/// instead (and nothing said).
pub fn move_into_cache<M: Manifest>(
    staging: &Path,
    dest: PathBuf,
    manifest: M,
    say: &mut dyn FnMut(&str),
    installed: impl FnOnce(&Installed<M>) -> String,
) -> Result<Installed<M>> {
    std::fs::write(
        staging.join(MANIFEST),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    if let Err(e) = std::fs::rename(staging, &dest) {
        // Another tidemark installed the same release meanwhile: use it.
        if let Some(done) = installed_in(&dest)? {
            return Ok(done);
        }
        return Err(e).with_context(|| format!("cannot move the new tree to {}", dest.display()));
    }
    let done = Installed {
        dir: dest,
        manifest,
    };
    say(&installed(&done));
    Ok(done)
}
