//! Providing the database server a target names: finding binaries, a private
//! data directory, configuration, start on loopback, health, and a stop that
//! always happens (on success, error, Ctrl-C and panic).

pub mod account;
pub mod allocator;
pub mod cgroup;
pub mod datadir;
pub mod lifecycle;
pub mod managed;
pub mod mysql;
pub mod package;
pub mod postgres;
pub mod process;
pub mod sqlite;
pub mod stack;
pub mod valgrind;

use std::path::PathBuf;
use std::sync::Arc;

use crate::db::{Connector, Dialect};

/// The server size profiles each family ships config files for; every
/// benchmark profile maps to one of them (`Profile::server_size`).
pub const SERVER_SIZES: &[&str] = &["quick", "small", "large"];

/// The one of a family's size files (`quick`, `small`, `large`: in
/// [`SERVER_SIZES`] order) that `profile` names; `None` for another name.
pub fn size_file<'a>(profile: &str, files: [&'a str; 3]) -> Option<&'a str> {
    let at = SERVER_SIZES.iter().position(|size| *size == profile)?;
    Some(files[at])
}

/// A managed server's configuration file as tidemark writes it: `base`,
/// then under tidemark's header (after `section`, an option-file group
/// line or nothing) the `own` lines that make the server private, then the
/// `-c` overrides in command-line order (the server keeps the last
/// occurrence), each `name = value` with the value as `value` writes it.
pub fn compose_config_file(
    base: &str,
    section: &str,
    own: &str,
    overrides: &[(String, String)],
    value: impl Fn(&str) -> String,
) -> String {
    let mut text = String::new();
    if !base.trim().is_empty() {
        text.push_str(base.trim_end());
        text.push_str("\n\n");
    }
    text.push_str(section);
    text.push_str("# --- added by tidemark: a private server on loopback ---\n");
    text.push_str(own);
    if !overrides.is_empty() {
        text.push_str("# --- -c overrides, in command-line order (the last one wins) ---\n");
        for (name, v) in overrides {
            text.push_str(&format!("{name} = {}\n", value(v)));
        }
    }
    text
}

pub use crate::record::TargetInfo;

/// A target's server as the rest of a run sees it, however it was
/// provided: started by tidemark, reached by URL, or an embedded library.
pub trait TargetServer {
    /// What the store records about it.
    fn info(&self) -> &TargetInfo;
    fn dialect(&self) -> Dialect;
    /// Opens client and admin connections.
    fn connector(&self) -> Arc<dyn Connector>;
    /// Pid of the server's main process on this host (the postmaster, the
    /// single mariadbd), for per-process samplers; `None` when the server is
    /// external or embedded.
    fn server_pid(&self) -> Option<u32>;
    /// Where the server keeps its data on this host, when known.
    fn data_dir(&self) -> Option<PathBuf>;
    /// Cumulative counters the client side keeps (SQLite: busy-handler
    /// waits); each step stores how much they grew while it ran. Empty for
    /// targets without any.
    fn client_counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Why the server may have failed that it cannot say itself: the
    /// kernel killed one of its processes for memory in its cgroup.
    fn memory_note(&self) -> Option<String> {
        None
    }
    /// Stops a server tidemark started (nothing for other kinds) and
    /// removes its data directory unless `keep_data`.
    fn stop(&mut self, keep_data: bool) -> anyhow::Result<()>;
}

/// Whether `p` is a file with an execute bit.
pub(crate) fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
