//! A memory allocator preloaded into a managed server (`+jemalloc`,
//! `+tcmalloc` after a target's spec), as the seeds start their servers
//! with jemalloc or tcmalloc: the library is found before anything starts
//! (a missing one is a one-line error naming the package), the server
//! process gets it through `LD_PRELOAD`, and the run records which file.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// An allocator a target can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocator {
    Jemalloc,
    Tcmalloc,
}

/// Directories searched for the libraries, in order.
const LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
];

impl Allocator {
    /// `jemalloc` or `tcmalloc`; `None` for another name.
    pub fn parse(name: &str) -> Option<Allocator> {
        match name {
            "jemalloc" => Some(Allocator::Jemalloc),
            "tcmalloc" => Some(Allocator::Tcmalloc),
            _ => None,
        }
    }

    /// The name a target spec uses.
    pub fn name(self) -> &'static str {
        match self {
            Allocator::Jemalloc => "jemalloc",
            Allocator::Tcmalloc => "tcmalloc",
        }
    }

    /// The library files that provide it, preferred first.
    fn files(self) -> &'static [&'static str] {
        match self {
            Allocator::Jemalloc => &["libjemalloc.so.2", "libjemalloc.so.1", "libjemalloc.so"],
            Allocator::Tcmalloc => &[
                "libtcmalloc_minimal.so.4",
                "libtcmalloc.so.4",
                "libtcmalloc_minimal.so",
            ],
        }
    }

    /// The Debian package that installs it, for messages.
    fn package(self) -> &'static str {
        match self {
            Allocator::Jemalloc => "libjemalloc2",
            Allocator::Tcmalloc => "libtcmalloc-minimal4",
        }
    }

    /// The library file on this machine; a one-line error naming the
    /// package when there is none.
    pub fn library(self) -> Result<PathBuf> {
        self.library_in(LIB_DIRS)
    }

    fn library_in(self, dirs: &[&str]) -> Result<PathBuf> {
        for file in self.files() {
            for dir in dirs {
                let p = Path::new(dir).join(file);
                if p.is_file() {
                    return Ok(p);
                }
            }
        }
        bail!(
            "+{} needs {} and this machine has none ({} searched): install it (Debian: \
             apt-get install {}) or drop +{}",
            self.name(),
            self.files()[0],
            dirs.join(", "),
            self.package(),
            self.name()
        )
    }
}

/// Splits a trailing `+jemalloc` / `+tcmalloc` off a target spec:
/// `mariadb@10.2+cz12a+jemalloc` → (`mariadb@10.2+cz12a`, jemalloc).
pub fn split_allocator(spec: &str) -> (&str, Option<Allocator>) {
    if let Some((head, last)) = spec.rsplit_once('+')
        && let Some(a) = Allocator::parse(last)
    {
        return (head, Some(a));
    }
    (spec, None)
}

/// Whether process `pid` has `library` mapped (`/proc/PID/maps`).
pub fn process_maps(pid: u32, library: &Path) -> Result<bool> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    let real = std::fs::canonicalize(library).unwrap_or_else(|_| library.to_path_buf());
    Ok(maps
        .lines()
        .any(|l| l.ends_with(&*library.to_string_lossy()) || l.ends_with(&*real.to_string_lossy())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_an_allocator_last() {
        assert_eq!(
            split_allocator("mariadb@10.2+cz12a+jemalloc"),
            ("mariadb@10.2+cz12a", Some(Allocator::Jemalloc))
        );
        assert_eq!(
            split_allocator("mariadb@system+tcmalloc"),
            ("mariadb@system", Some(Allocator::Tcmalloc))
        );
        assert_eq!(split_allocator("pg@17+cx10b"), ("pg@17+cx10b", None));
        assert_eq!(split_allocator("pg@system"), ("pg@system", None));
    }

    #[test]
    fn a_missing_library_is_one_line_naming_the_package() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        let e = Allocator::Tcmalloc
            .library_in(&[d])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("+tcmalloc needs libtcmalloc_minimal.so.4 and this machine has none")
                && e.contains("apt-get install libtcmalloc-minimal4")
                && !e.contains('\n'),
            "{e}"
        );
        std::fs::write(dir.path().join("libjemalloc.so.2"), b"").unwrap();
        assert_eq!(
            Allocator::Jemalloc.library_in(&[d]).unwrap(),
            dir.path().join("libjemalloc.so.2")
        );
    }
}
