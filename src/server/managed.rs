//! What every server tidemark starts has, whatever its family: the
//! process, where it lives, what it was given, and a stop on
//! [`ManagedServer::stop`] and on drop; and [`ServerTarget`], such a server
//! (or an external one of the same family) as a [`TargetServer`]. The families
//! ([`super::postgres`], [`super::mysql`]) add how they start, connect and
//! describe themselves through their part `F` and the [`Family`] trait.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use nix::sys::signal::Signal;

use super::datadir::{Scratch, sibling_file};
use super::lifecycle::{stop_and_clean, stop_server};
use super::process::{ServerProcess, ServerUser, SpawnOptions};
use super::{TargetInfo, TargetServer};
use crate::db::{Connector, Dialect};

/// What a family's start has prepared before the server process runs.
#[derive(Debug)]
pub struct Setup {
    /// Directories tidemark made outside the requested place (relocated
    /// data directory, short socket directory, private tmpdir), removed
    /// after the stop.
    pub scratch: Scratch,
    /// The data directory in use (absolute).
    pub datadir: PathBuf,
    /// The data directory the user asked for.
    pub requested_datadir: PathBuf,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// Name of the configuration, for the record.
    pub config_name: String,
    /// The configuration file text tidemark wrote.
    pub config_text: String,
    /// The benchmark database.
    pub dbname: String,
    /// The account the server runs as.
    pub user: ServerUser,
    /// The family's name in messages (`PostgreSQL`, `MariaDB`).
    pub title: &'static str,
    /// The signal that asks for the family's orderly shutdown.
    pub stop_signal: Signal,
    /// How long that shutdown may take before the stop escalates.
    pub grace: Duration,
}

/// A running server owned by tidemark; `F` is the family's own part
/// (binaries, socket, …). Stopped on [`ManagedServer::stop`] or drop.
#[derive(Debug)]
pub struct ManagedServer<F> {
    pub(super) server: ServerProcess,
    pub(super) setup: Setup,
    stopped: bool,
    pub(super) family: F,
    /// The memory cgroup of an IO-bound run (removed after the stop), or
    /// why there is none; `None`: no limit was asked for.
    memory_limit: Option<Result<super::cgroup::MemoryCgroup, String>>,
}

impl<F> ManagedServer<F> {
    /// Starts `cmd` as the server process `name`, its log beside the
    /// requested data directory.
    pub(super) fn spawn(cmd: Command, name: String, setup: Setup, family: F) -> Result<Self> {
        let spawn = SpawnOptions {
            name,
            log: sibling_file(&setup.requested_datadir, "log"),
            user: setup.user.clone(),
            stop_signal: setup.stop_signal,
            drop_grace: setup.grace,
        };
        Ok(ManagedServer {
            server: ServerProcess::spawn(cmd, spawn)?,
            setup,
            stopped: false,
            family,
            memory_limit: None,
        })
    }

    /// The record's fields every managed server fills alike (spec, label,
    /// config, `managed`), with the placement facts added to the family's
    /// `extra`; the family fills in the rest.
    pub(super) fn info_base(
        &self,
        spec: &str,
        label: &str,
        mut extra: serde_json::Value,
    ) -> TargetInfo {
        let s = &self.setup;
        extra["datadir"] = serde_json::json!(s.datadir);
        extra["port"] = serde_json::json!(s.port);
        extra["server_user"] = serde_json::json!(s.user.name());
        extra["log"] = serde_json::json!(self.server.log_path());
        match &self.memory_limit {
            Some(Ok(group)) => extra["io_bound"] = serde_json::json!(group.describe()),
            Some(Err(why)) => {
                extra["io_bound"] = serde_json::json!(format!("no memory limit: {why}"))
            }
            None => {}
        }
        if s.datadir != s.requested_datadir {
            extra["requested_datadir"] = serde_json::json!(s.requested_datadir);
        }
        TargetInfo {
            spec: spec.to_string(),
            label: label.to_string(),
            config_name: Some(s.config_name.clone()),
            config_text: s.config_text.clone(),
            managed: true,
            extra,
            ..TargetInfo::default()
        }
    }

    /// The server's (main process's) pid.
    pub fn pid(&self) -> u32 {
        self.server.pid()
    }

    /// The data directory in use (absolute). It differs from the requested
    /// one only when tidemark runs as root and the server user could not
    /// reach that (see [`super::datadir::FALLBACK_ROOT`]); such a directory
    /// is removed when the server stops.
    pub fn datadir(&self) -> &Path {
        &self.setup.datadir
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.setup.port
    }

    /// The server log file (beside the requested data directory).
    pub fn log_path(&self) -> &Path {
        self.server.log_path()
    }

    /// The configuration file text tidemark wrote.
    pub fn config_text(&self) -> &str {
        &self.setup.config_text
    }

    /// Whether the server is still running.
    pub fn is_running(&mut self) -> bool {
        self.server.is_running()
    }

    /// The family's orderly shutdown (PostgreSQL: SIGINT, up to 60 s;
    /// MySQL/MariaDB: SIGTERM, up to 120 s), then SIGQUIT and SIGKILL. The
    /// server is gone afterwards even when this returns an error (it had
    /// crashed before, or needed to be forced). Calling it again is a no-op.
    pub fn stop(&mut self) -> Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let s = &mut self.setup;
        let stopped = stop_server(
            &mut self.server,
            s.title,
            s.stop_signal,
            s.grace,
            &mut s.scratch,
        );
        // Empty now: the group can go.
        self.memory_limit = None;
        stopped
    }

    /// Limits the server's process tree, page cache included, to
    /// `limit_bytes` with a memory cgroup (an IO-bound run); returns what
    /// applied or why nothing could, also recorded in the target's facts.
    pub fn limit_memory(
        &mut self,
        limit_bytes: u64,
        mode: super::cgroup::Mode,
    ) -> Result<String, String> {
        let group = super::cgroup::MemoryCgroup::around(self.pid(), limit_bytes, mode);
        let said = group.as_ref().map(|g| g.describe()).map_err(Clone::clone);
        self.memory_limit = Some(group);
        said
    }

    /// What the memory cgroup saw that a failure should mention: a kernel
    /// OOM kill of one of the server's processes (see
    /// [`super::cgroup::MemoryCgroup::oom_note`]).
    pub fn memory_note(&self) -> Option<String> {
        self.memory_limit.as_ref()?.as_ref().ok()?.oom_note()
    }
}

impl<F: Family> ManagedServer<F> {
    /// How tidemark connects: over TCP to 127.0.0.1 and the port, as its
    /// own account, to the benchmark database.
    pub fn connect_options(&self) -> F::Options {
        F::connect_options(self)
    }

    /// What the store records about this server (queries it).
    pub fn info(&self, spec: &str, label: &str) -> Result<TargetInfo> {
        F::info(self, spec, label)
    }
}

impl<F> Drop for ManagedServer<F> {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// How a family's clients reach its servers, managed or external.
pub trait Family: Sized {
    /// Client connection options.
    type Options: Clone;
    /// The SQL dialect the family speaks.
    const DIALECT: Dialect;
    /// A connector that opens connections with `opts`.
    fn connector(opts: &Self::Options) -> Arc<dyn Connector>;
    /// How tidemark connects to a managed `server` of the family.
    fn connect_options(server: &ManagedServer<Self>) -> Self::Options;
    /// What the store records about a managed `server` (queries it).
    fn info(server: &ManagedServer<Self>, spec: &str, label: &str) -> Result<TargetInfo>;
}

/// A client/server family's target: a managed server tidemark started, or
/// an external one reached by URL.
pub struct ServerTarget<F: Family> {
    managed: Option<ManagedServer<F>>,
    opts: F::Options,
    info: TargetInfo,
}

impl<F: Family> ServerTarget<F> {
    /// Wraps a started managed server.
    pub fn managed(server: ManagedServer<F>, spec: &str, label: &str) -> Result<Self> {
        let info = server.info(spec, label)?;
        Ok(ServerTarget {
            opts: server.connect_options(),
            managed: Some(server),
            info,
        })
    }

    /// An external server reached with `opts`, recorded as `info`.
    pub(super) fn reached(opts: F::Options, info: TargetInfo) -> Self {
        ServerTarget {
            managed: None,
            opts,
            info,
        }
    }
}

impl<F: Family> TargetServer for ServerTarget<F> {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    fn dialect(&self) -> Dialect {
        F::DIALECT
    }

    fn connector(&self) -> Arc<dyn Connector> {
        F::connector(&self.opts)
    }

    fn server_pid(&self) -> Option<u32> {
        self.managed.as_ref().map(ManagedServer::pid)
    }

    fn data_dir(&self) -> Option<PathBuf> {
        self.managed.as_ref().map(|m| m.datadir().to_path_buf())
    }

    fn memory_note(&self) -> Option<String> {
        self.managed.as_ref()?.memory_note()
    }

    fn stop(&mut self, keep_data: bool) -> Result<()> {
        let Some(mut server) = self.managed.take() else {
            return Ok(());
        };
        stop_and_clean(server.datadir().to_path_buf(), keep_data, || server.stop())
    }
}
