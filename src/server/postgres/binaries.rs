//! Finding the PostgreSQL server binaries and their version.
//!
//! A benchmark compares versions, so the binaries must be named precisely
//! and the version recorded; the search order prefers what the user said,
//! then what the system's tools say, then conventional install places.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, anyhow, bail};

use crate::server::is_executable;
use crate::server::process::ServerUser;

/// Where the server binaries are and what version they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgBinaries {
    /// Directory holding `postgres` and `initdb` (absolute).
    pub bindir: PathBuf,
    /// From `postgres --version`, e.g. `15.18` (or `18beta1`).
    pub version: String,
    /// Leading number of the version, e.g. 15 (9 for 9.6).
    pub major: u32,
    /// How it was found: `--pg-bindir`, `pg_config`, `PATH` or `debian`.
    pub source: String,
    /// An allocator library every PostgreSQL process of this server gets
    /// through `LD_PRELOAD` (the target's `+jemalloc`, `+tcmalloc`).
    pub preload: Option<PathBuf>,
}

impl PgBinaries {
    /// Reads the version of the `postgres` binary in `bindir`.
    pub fn probe(bindir: &Path, source: &str) -> Result<PgBinaries> {
        let postgres = bindir.join("postgres");
        let out = Command::new(&postgres)
            .arg("--version")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {} --version", postgres.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let (version, major) = parse_version(&text).ok_or_else(|| {
            anyhow!(
                "{} --version printed {:?}, not a PostgreSQL version",
                postgres.display(),
                text.trim()
            )
        })?;
        Ok(PgBinaries {
            bindir: bindir.to_path_buf(),
            version,
            major,
            source: source.to_string(),
            preload: None,
        })
    }

    /// Path of a program in the bin directory.
    pub fn program(&self, name: &str) -> PathBuf {
        self.bindir.join(name)
    }
}

/// Parses `postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)` into
/// `("15.18", 15)`.
pub fn parse_version(text: &str) -> Option<(String, u32)> {
    let rest = text.split_once("(PostgreSQL)")?.1;
    let version = rest.split_whitespace().next()?.to_string();
    let digits: String = version.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().ok()?;
    Some((version, major))
}

fn has_server_programs(dir: &Path) -> bool {
    is_executable(&dir.join("postgres")) && is_executable(&dir.join("initdb"))
}

/// Finds the PostgreSQL server binaries: `explicit` (from `--pg-bindir`),
/// else `pg_config --bindir`, else `postgres` on `PATH` (symlinks resolved),
/// else Debian's `/usr/lib/postgresql/<major>/bin`, highest major first.
pub fn find_bindir(explicit: Option<&Path>) -> Result<PgBinaries> {
    if let Some(dir) = explicit {
        for program in ["postgres", "initdb"] {
            if !is_executable(&dir.join(program)) {
                bail!(
                    "--pg-bindir {} has no {program} binary: point it at the bin/ directory \
                     of a PostgreSQL install or build",
                    dir.display()
                );
            }
        }
        let dir = dir
            .canonicalize()
            .with_context(|| format!("--pg-bindir {}", dir.display()))?;
        return PgBinaries::probe(&dir, "--pg-bindir");
    }
    let mut candidates: Vec<(PathBuf, &str)> = Vec::new();
    if let Ok(out) = Command::new("pg_config")
        .arg("--bindir")
        .stdin(Stdio::null())
        .output()
        && out.status.success()
    {
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
        candidates.push((PathBuf::from(dir), "pg_config"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        let on_path = std::env::split_paths(&path)
            .find_map(|dir| dir.join("postgres").canonicalize().ok())
            .and_then(|real| real.parent().map(Path::to_path_buf));
        if let Some(dir) = on_path {
            candidates.push((dir, "PATH"));
        }
    }
    let debian = debian_bindirs(Path::new("/usr/lib/postgresql"));
    candidates.extend(debian.into_iter().map(|dir| (dir, "debian")));
    for (dir, source) in candidates {
        if has_server_programs(&dir)
            && let Ok(found) = PgBinaries::probe(&dir, source)
        {
            return Ok(found);
        }
    }
    bail!(
        "no PostgreSQL server binaries found: install them (Debian: apt-get install postgresql) \
         or pass --pg-bindir DIR"
    )
}

/// `<root>/<version>/bin` for every numeric version directory, newest first.
fn debian_bindirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut versions: Vec<(Vec<u32>, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let key = name
                .split('.')
                .map(|part| part.parse().ok())
                .collect::<Option<Vec<u32>>>()?;
            Some((key, e.path().join("bin")))
        })
        .collect();
    versions.sort_by(|a, b| b.0.cmp(&a.0));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

/// A command for a PostgreSQL program run as the server user, with
/// untranslated messages and a working directory every user can enter.
pub(super) fn tool(bin: &PgBinaries, program: &str, user: &ServerUser) -> Command {
    tool_wrapped(bin, &bin.program(program), user, &[])
}

/// [`tool`] for the program at `exe` (one of `bin`'s, perhaps through
/// another path), run by `wrapper` (a program and its arguments, e.g.
/// Valgrind; empty: none).
pub(super) fn tool_wrapped(
    bin: &PgBinaries,
    exe: &Path,
    user: &ServerUser,
    wrapper: &[std::ffi::OsString],
) -> Command {
    let mut cmd = match wrapper.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    user.apply(&mut cmd);
    cmd.env("LC_ALL", "C").current_dir("/").stdin(Stdio::null());
    if let Some(lib) = &bin.preload {
        cmd.env("LD_PRELOAD", lib);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_parsing() {
        let debian = "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n";
        assert_eq!(parse_version(debian), Some(("15.18".to_string(), 15)));
        let beta = "postgres (PostgreSQL) 18beta1";
        assert_eq!(parse_version(beta), Some(("18beta1".to_string(), 18)));
        let old = "postgres (PostgreSQL) 9.6.24";
        assert_eq!(parse_version(old), Some(("9.6.24".to_string(), 9)));
        assert_eq!(parse_version("mysqld  Ver 8.0.36"), None);
        assert_eq!(parse_version("postgres (PostgreSQL) devel"), None);
    }

    #[test]
    fn debian_dirs_newest_first_and_explicit_dir_errors() {
        let root = tempfile::tempdir().unwrap();
        for v in ["10", "9.6", "16", "15", "notes"] {
            std::fs::create_dir(root.path().join(v)).unwrap();
        }
        let found: Vec<String> = debian_bindirs(root.path())
            .iter()
            .map(|d| d.strip_prefix(root.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(found, ["16/bin", "15/bin", "10/bin", "9.6/bin"]);
        let err = find_bindir(Some(root.path())).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "--pg-bindir {} has no postgres binary: point it at the bin/ directory of a \
                 PostgreSQL install or build",
                root.path().display()
            )
        );
    }
}
