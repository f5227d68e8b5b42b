//! Places a managed server lives in: a free loopback port, a fresh private
//! data directory the server's account can reach (relocated under
//! [`FALLBACK_ROOT`] when it cannot), short unix socket paths, log files
//! beside the data directory, and scratch directories removed when the
//! server is gone. Shared by the managed DBMS families that start a server.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use super::process::ServerUser;

/// Where a data directory goes when tidemark runs as root and the server
/// account cannot reach the requested one.
pub const FALLBACK_ROOT: &str = "/var/tmp/tidemark";
/// Longest unix socket path Linux accepts (`sun_path` minus the NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// Directories to remove when the server is gone (or the start failed).
#[derive(Debug, Default)]
pub struct Scratch(Vec<PathBuf>);

impl Scratch {
    /// Registers a directory for removal.
    pub fn push(&mut self, dir: PathBuf) {
        self.0.push(dir);
    }

    /// Removes every registered directory (best-effort).
    pub fn remove(&mut self) {
        for dir in self.0.drain(..) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.remove();
    }
}

/// `port` if 127.0.0.1 has it free, or any free port.
pub fn choose_port(port: Option<u16>) -> Result<u16> {
    match port {
        Some(port) => match TcpListener::bind(("127.0.0.1", port)) {
            Ok(_) => Ok(port),
            Err(_) => bail!(
                "port {port} on 127.0.0.1 is already in use: pass another --port, or omit it \
                 to pick a free one"
            ),
        },
        None => Ok(TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .context("cannot find a free port on 127.0.0.1")?
            .port()),
    }
}

/// The requested data directory as an absolute UTF-8 path whose parent
/// exists; it must be new or empty.
pub fn checked_datadir_path(datadir: &Path) -> Result<PathBuf> {
    let name = datadir
        .file_name()
        .with_context(|| format!("data directory {} has no final name", datadir.display()))?;
    let parent = match datadir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let datadir = parent.canonicalize()?.join(name);
    if datadir.to_str().is_none() {
        bail!("data directory path {} is not UTF-8", datadir.display());
    }
    if datadir.exists() {
        let mut entries = std::fs::read_dir(&datadir).with_context(|| {
            format!(
                "data directory {} is not a readable directory",
                datadir.display()
            )
        })?;
        if entries.next().is_some() {
            bail!(
                "data directory {} exists and is not empty: tidemark initialises a fresh one, \
                 pass a new path",
                datadir.display()
            );
        }
    }
    Ok(datadir)
}

/// Creates the data directory (mode 0700, owned by the server account).
/// When the account cannot reach `requested` (tidemark runs as root and a
/// parent is private), uses a fresh directory under [`FALLBACK_ROOT`]
/// instead, says so on stderr and registers it in `scratch`. `dbms` names
/// the server in messages.
pub fn create_datadir(
    requested: &Path,
    user: &ServerUser,
    dbms: &str,
    scratch: &mut Scratch,
) -> Result<PathBuf> {
    let make = |dir: &Path| std::fs::DirBuilder::new().mode(0o700).create(dir);
    let Some(blocked) = user.blocked_ancestor(requested) else {
        if !requested.exists() {
            make(requested)
                .with_context(|| format!("cannot create data directory {}", requested.display()))?;
        }
        user.chown_tree(requested)?;
        return Ok(requested.to_path_buf());
    };
    let unreachable = || {
        anyhow!(
            "the {dbms} server runs as user '{}', which cannot enter {}: choose a results \
             directory '{}' can reach, e.g. under /tmp or /var/tmp",
            user.name(),
            blocked.display(),
            user.name()
        )
    };
    let root = Path::new(FALLBACK_ROOT);
    if !root.exists() {
        std::fs::create_dir_all(root).map_err(|_| unreachable())?;
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(root, mode).map_err(|_| unreachable())?;
    }
    let name = requested.file_name().unwrap_or_default().to_string_lossy();
    for n in 0..1000 {
        let dir = root.join(format!("{name}-{}-{n}", std::process::id()));
        match make(&dir) {
            Ok(()) => {
                scratch.push(dir.clone());
                if user.blocked_ancestor(&dir).is_some() {
                    return Err(unreachable());
                }
                user.chown_tree(&dir)?;
                eprintln!(
                    "tidemark: user '{}' cannot enter {}, so the {dbms} data directory is {} \
                     (removed when the server stops)",
                    user.name(),
                    blocked.display(),
                    dir.display()
                );
                return Ok(dir);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(_) => return Err(unreachable()),
        }
    }
    Err(unreachable())
}

/// `<parent>/<datadir name>.<suffix>`: logs live beside the data directory.
pub fn sibling_file(datadir: &Path, suffix: &str) -> PathBuf {
    let name = datadir.file_name().unwrap_or_default().to_string_lossy();
    datadir.with_file_name(format!("{name}.{suffix}"))
}

/// Opens `path` for appending (a log a tool writes into).
pub fn log_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// `dir` if `dir/<socket_name>` fits a unix socket path, else a fresh
/// directory `/tmp/tidemark-<tag>-<pid>-<n>` owned by the server account and
/// registered in `scratch`.
pub fn socket_dir_for(
    dir: &Path,
    socket_name: &str,
    tag: &str,
    user: &ServerUser,
    scratch: &mut Scratch,
) -> Result<PathBuf> {
    if dir.as_os_str().len() + 1 + socket_name.len() <= MAX_SOCKET_PATH {
        return Ok(dir.to_path_buf());
    }
    scratch_dir(tag, user, scratch)
}

/// A fresh directory `/tmp/tidemark-<tag>-<pid>-<n>` (mode 0700) owned by
/// the server account and registered in `scratch`.
pub fn scratch_dir(tag: &str, user: &ServerUser, scratch: &mut Scratch) -> Result<PathBuf> {
    for n in 0..1000 {
        let short = PathBuf::from(format!("/tmp/tidemark-{tag}-{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&short) {
            Ok(()) => {
                scratch.push(short.clone());
                user.chown_tree(&short)?;
                return Ok(short);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", short.display())),
        }
    }
    bail!("cannot create a socket directory under /tmp")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_sit_beside_the_data_directory() {
        let log = sibling_file(Path::new("/r/data"), "install.log");
        assert_eq!(log, Path::new("/r/data.install.log"));
        let log = sibling_file(Path::new("/r/pg.quick"), "log");
        assert_eq!(log, Path::new("/r/pg.quick.log"));
    }

    #[test]
    fn data_directory_must_be_new_or_empty() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = checked_datadir_path(&dir.path().join("a/b/data")).unwrap();
        assert!(fresh.is_absolute() && fresh.ends_with("a/b/data"));
        assert!(fresh.parent().unwrap().is_dir());
        std::fs::create_dir(&fresh).unwrap();
        assert_eq!(checked_datadir_path(&fresh).unwrap(), fresh);
        std::fs::write(fresh.join("ibdata1"), "x").unwrap();
        let err = checked_datadir_path(&fresh).unwrap_err().to_string();
        assert!(err.ends_with(
            "exists and is not empty: tidemark initialises a fresh one, pass a new path"
        ));
    }

    #[test]
    fn short_socket_dir_only_for_long_paths() {
        let mut scratch = Scratch::default();
        let short = Path::new("/tmp/x/data");
        let got = socket_dir_for(
            short,
            "mysql.sock",
            "my",
            &ServerUser::Current,
            &mut scratch,
        );
        assert_eq!(got.unwrap(), short);
        let long = PathBuf::from(format!("/tmp/{}", "d".repeat(100)));
        let dir = socket_dir_for(
            &long,
            "mysql.sock",
            "my",
            &ServerUser::Current,
            &mut scratch,
        )
        .unwrap();
        assert!(dir.starts_with("/tmp") && dir.is_dir(), "{}", dir.display());
        scratch.remove();
        assert!(!dir.exists());
        assert!(choose_port(None).unwrap() > 0);
    }
}
