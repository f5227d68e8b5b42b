//! Asking a PostgreSQL binary about settings and features before any server
//! starts, so a plan with a typo, a setting from another version or a value
//! the build cannot honour (lz4 in a build without it) fails in seconds,
//! naming the target, instead of minutes into a matrix.
//!
//! Everything here runs the `postgres` binary as the server user against a
//! throw-away empty directory: `--describe-config` for names, `-C` with a
//! written configuration for values, and `-C name -c name=value` to probe
//! one optional feature.

use std::collections::HashSet;
use std::io::ErrorKind;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::binaries::{PgBinaries, tool};
use super::config::{NameCheck, config_complaints, known_names, probe_name};
use crate::server::process::ServerUser;

/// Optional build features and the setting value that needs each: (feature,
/// setting, value, first major version that has the setting).
pub const FEATURES: &[(&str, &str, &str, u32)] = &[
    ("lz4", "default_toast_compression", "lz4", 14),
    ("zstd", "wal_compression", "zstd", 15),
    ("io_uring", "io_method", "io_uring", 18),
];

/// The feature a `setting = value` needs, if it needs one.
pub fn feature_for(setting: &str, value: &str) -> Option<&'static str> {
    let value = value.trim().trim_matches('\'').to_ascii_lowercase();
    let setting = setting.to_ascii_lowercase();
    match (setting.as_str(), value.as_str()) {
        ("wal_compression" | "default_toast_compression", "lz4") => Some("lz4"),
        ("wal_compression", "zstd") => Some("zstd"),
        ("io_method", "io_uring") => Some("io_uring"),
        _ => None,
    }
}

/// An empty directory the server user owns, removed on drop.
pub struct ProbeDir(PathBuf);

impl ProbeDir {
    /// Creates one under /tmp (mode 0700, owned by `user`).
    pub fn new(user: &ServerUser) -> Result<ProbeDir> {
        for n in 0..1000 {
            let dir = PathBuf::from(format!("/tmp/tidemark-probe-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    let probe = ProbeDir(dir);
                    user.chown_tree(&probe.0)?;
                    return Ok(probe);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).context("cannot create a probe directory under /tmp"),
            }
        }
        bail!("cannot create a probe directory under /tmp")
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ProbeDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Checks `bin` can run as `user` (shared libraries resolve, the tree is
/// readable); the error quotes the loader or the server.
pub fn runs_as_server_user(bin: &PgBinaries, user: &ServerUser) -> Result<()> {
    let out = tool(bin, "postgres", user)
        .arg("--version")
        .output()
        .with_context(|| format!("cannot run {}", bin.program("postgres").display()))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    bail!(
        "PostgreSQL {} in {} does not run as user '{}': {}",
        bin.version,
        bin.bindir.display(),
        user.name(),
        err.lines().next().unwrap_or("no message").trim()
    )
}

/// Whether `bin` accepts `setting = value` (false: the build lacks what the
/// value needs).
fn accepts(
    bin: &PgBinaries,
    user: &ServerUser,
    dir: &Path,
    setting: &str,
    value: &str,
) -> Result<bool> {
    let out = tool(bin, "postgres", user)
        .arg("-D")
        .arg(dir)
        .arg("--config-file=/dev/null")
        .args(["-C", setting, "-c", &format!("{setting}={value}")])
        .output()
        .context("cannot run postgres -C")?;
    if out.status.success() {
        return Ok(true);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("invalid value for parameter") {
        return Ok(false);
    }
    bail!("postgres -C {setting} failed: {}", config_complaints(&err))
}

/// The optional features (see [`FEATURES`]) this build's version has a
/// setting for but cannot use.
pub fn lacking_features(bin: &PgBinaries, user: &ServerUser) -> Result<Vec<String>> {
    let probe = ProbeDir::new(user)?;
    let mut lacks = Vec::new();
    for (feature, setting, value, since) in FEATURES {
        if bin.major >= *since && !accepts(bin, user, probe.path(), setting, value)? {
            lacks.push(feature.to_string());
        }
    }
    Ok(lacks)
}

/// One binary's view of settings, for checking many configurations.
pub struct Preflight<'a> {
    bin: &'a PgBinaries,
    user: ServerUser,
    probe: ProbeDir,
    known: HashSet<String>,
}

impl<'a> Preflight<'a> {
    /// Reads the setting names `bin` knows.
    pub fn new(bin: &'a PgBinaries) -> Result<Preflight<'a>> {
        let user = ServerUser::detect("postgres")?;
        runs_as_server_user(bin, &user)?;
        let known = known_names(bin, &user)?;
        let probe = ProbeDir::new(&user)?;
        Ok(Preflight {
            bin,
            user,
            probe,
            known,
        })
    }

    /// Whether the binary knows setting `name` (dotted extension settings
    /// are always accepted, as the server does).
    pub fn knows(&self, name: &str) -> bool {
        if name.contains('.') || self.known.contains(&name.to_ascii_lowercase()) {
            return true;
        }
        // --describe-config leaves out developer settings: ask directly.
        probe_name(self.bin, &self.user, self.probe.path(), name, true) != NameCheck::Unknown
    }

    /// Whether the build can use `feature` (see [`FEATURES`]); true when
    /// the version has no setting for it (the name check reports that).
    pub fn has_feature(&self, feature: &str) -> Result<bool> {
        for (f, setting, value, since) in FEATURES {
            if *f == feature && self.bin.major >= *since {
                return accepts(self.bin, &self.user, self.probe.path(), setting, value);
            }
        }
        Ok(true)
    }

    /// Lets the binary parse `config_text` as its postgresql.conf; the
    /// error is the server's complaint on one line.
    pub fn check_values(&self, config_text: &str) -> Result<(), String> {
        let conf = self.probe.path().join("postgresql.conf");
        std::fs::write(&conf, config_text)
            .map_err(|e| format!("cannot write {}: {e}", conf.display()))?;
        let _ = self.user.chown_tree(&conf);
        let out = tool(self.bin, "postgres", &self.user)
            .args(["-C", "port", "-D"])
            .arg(self.probe.path())
            .output()
            .map_err(|e| format!("cannot run postgres -C: {e}"))?;
        let _ = std::fs::remove_file(&conf);
        if out.status.success() {
            Ok(())
        } else {
            Err(config_complaints(&String::from_utf8_lossy(&out.stderr)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_need_features() {
        assert_eq!(feature_for("wal_compression", "'lz4'"), Some("lz4"));
        assert_eq!(feature_for("WAL_COMPRESSION", "ZSTD"), Some("zstd"));
        assert_eq!(feature_for("io_method", "io_uring"), Some("io_uring"));
        assert_eq!(feature_for("io_method", "worker"), None);
        assert_eq!(feature_for("wal_compression", "pglz"), None);
        for (feature, setting, value, _) in FEATURES {
            assert_eq!(feature_for(setting, value), Some(*feature));
        }
    }
}
