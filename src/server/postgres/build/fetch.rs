//! PostgreSQL sources fetched for a build (`servers build pg --version
//! 18.6`): Debian's source package of that release from a newer suite
//! (experimental, sid) or the machine's own (see
//! [`crate::server::package::debian`]), downloaded
//! by `apt-get source` (which checks every file against the suite's signed
//! index), its upstream tarball unpacked once into `<cache>/src/debian`
//! (apart from trees a user unpacks into `<cache>/src` themselves). The tree
//! says where it came from in `SOURCE_NOTE`, which the build record takes
//! as its source.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use crate::server::package::debian::PrivateApt;
use crate::server::package::{Scratch, fresh_dir, hex, run_client};
use crate::server::postgres::install::{cache_root, debian::release_of};

/// The file in a fetched tree saying where it came from.
pub const SOURCE_NOTE: &str = ".tidemark-source";

/// The source tree of release `version` (`18.6`, `19beta2`, `19~beta2`),
/// fetched and unpacked when the cache has none; `say` gets progress lines.
pub fn fetch_source(version: &str, say: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    fetch_source_in(&cache_root(), version, say)
}

/// [`fetch_source`] into the install cache `cache` (the tests name theirs
/// here rather than through the process's environment).
pub fn fetch_source_in(cache: &Path, version: &str, say: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let release = version.replace('~', "");
    let major: String = release.chars().take_while(char::is_ascii_digit).collect();
    if major.is_empty() {
        bail!("--version {version}: give a PostgreSQL release such as 18.6 or 19beta2");
    }
    let root = cache.join("src").join("debian");
    crate::server::package::tarball::make_dirs(&root)?;
    let dest = root.join(format!("postgresql-{release}"));
    if dest.join("configure").exists() && dest.join(SOURCE_NOTE).exists() {
        return Ok(dest);
    }
    let apt = PrivateApt::open(cache)?;
    let package = format!("postgresql-{major}");
    let listing = apt
        .run("apt-cache", &["showsrc", &package], &root)
        .unwrap_or_default();
    let listing = String::from_utf8_lossy(&listing);
    let offered: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.strip_prefix("Version: "))
        .collect();
    let Some(debian_version) = offered
        .iter()
        .find(|v| release_of(v).as_deref() == Some(release.as_str()))
    else {
        let names: Vec<String> = offered.iter().filter_map(|v| release_of(v)).collect();
        bail!(
            "no Debian suite has the source of PostgreSQL {release} ({})",
            if names.is_empty() {
                format!("no {package} source package")
            } else {
                format!("{package} offers {}", names.join(", "))
            }
        );
    };
    say(&format!(
        "fetching the source of PostgreSQL {release} ({package} {debian_version}) with apt-get source"
    ));
    let work = fresh_dir(&root, "download")?;
    let staging = fresh_dir(&root, "staging")?;
    let _scratch = Scratch(vec![work.clone(), staging.clone()]);
    apt.run(
        "apt-get",
        &[
            "source",
            "--download-only",
            "-qq",
            &format!("{package}={debian_version}"),
        ],
        &work,
    )
    .with_context(|| {
        format!(
            "cannot fetch the source of PostgreSQL {release}; build it from a source tree \
             you have with `tidemark servers build pg --src DIR`"
        )
    })?;
    let tarball = std::fs::read_dir(&work)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(".orig.tar."))
        })
        .context("apt-get source left no upstream tarball (.orig.tar.*)")?;
    let sha = hex(&Sha256::digest(&std::fs::read(&tarball)?));
    let mut tar = Command::new("tar");
    tar.arg("xf").arg(&tarball).arg("-C").arg(&staging);
    run_client(tar, "tar").with_context(|| format!("cannot unpack {}", tarball.display()))?;
    let top = single_dir(&staging)?;
    if !top.join("configure").exists() {
        bail!("{} holds no configure script", tarball.display());
    }
    std::fs::write(
        top.join(SOURCE_NOTE),
        format!(
            "Debian source package {package} {debian_version}, {} (sha256 {sha})",
            tarball.file_name().unwrap_or_default().to_string_lossy()
        ),
    )?;
    std::fs::rename(&top, &dest)
        .with_context(|| format!("cannot move the source to {}", dest.display()))?;
    say(&format!(
        "source of PostgreSQL {release} in {}",
        dest.display()
    ));
    Ok(dest)
}

fn single_dir(dir: &Path) -> Result<PathBuf> {
    let mut dirs = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir());
    let first = dirs.next().context("the tarball unpacked to nothing")?;
    Ok(first)
}
