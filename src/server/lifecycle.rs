//! The parts of a managed server's life that do not depend on its family:
//! refusing binaries the server account cannot run, waiting until a freshly
//! started server answers, and stopping it with an error that says how the
//! stop went. PostgreSQL ([`super::postgres`]) and MySQL/MariaDB
//! ([`super::mysql`]) differ in the signal, the grace period and how they
//! are reached, which the callers pass in.

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sys::signal::Signal;

use super::datadir::Scratch;
use super::process::{ServerProcess, ServerUser, StopOutcome, log_tail};

/// Lines of the server log an error message quotes.
const LOG_LINES: usize = 20;

/// Fails when `user` cannot search a directory on the way to `program`;
/// `title` names the server family, `bindir` the binaries' place.
pub fn check_binaries_reachable(
    user: &ServerUser,
    program: &Path,
    bindir: &Path,
    title: &str,
) -> Result<()> {
    if let Some(dir) = user.blocked_ancestor(program) {
        bail!(
            "the {title} binaries in {} cannot be run by user '{}' ({} is not searchable \
             for it): use binaries installed where '{}' can reach them",
            bindir.display(),
            user.name(),
            dir.display(),
            user.name()
        );
    }
    Ok(())
}

/// Calls `try_connect` every `pause` until it succeeds, the server exits,
/// or `timeout` passes; the errors name the server (`title`) and quote the
/// end of its log.
pub fn wait_until_ready<T, E: Display>(
    server: &mut ServerProcess,
    title: &str,
    timeout: Duration,
    pause: Duration,
    mut try_connect: impl FnMut() -> Result<T, E>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        let log = server.log_path().to_path_buf();
        if let Some(status) = server.exit_status() {
            bail!(
                "{title} exited during startup ({status}); last lines of {}:\n{}",
                log.display(),
                log_tail(&log, LOG_LINES)
            );
        }
        let err = match try_connect() {
            Ok(ready) => return Ok(ready),
            Err(err) => err,
        };
        if Instant::now() >= deadline {
            bail!(
                "{title} did not accept connections within {} s (last error: {err}); \
                 last lines of {}:\n{}",
                timeout.as_secs(),
                log.display(),
                log_tail(&log, LOG_LINES)
            );
        }
        std::thread::sleep(pause);
    }
}

/// Stops `server`: `signal`, up to `grace`, then escalation (see
/// [`ServerProcess::stop`]); then removes `scratch`. An error says the
/// server had crashed before, or had to be forced.
pub fn stop_server(
    server: &mut ServerProcess,
    title: &str,
    signal: Signal,
    grace: Duration,
    scratch: &mut Scratch,
) -> Result<()> {
    let outcome = server.stop(signal, grace);
    scratch.remove();
    let log = server.log_path();
    match outcome {
        StopOutcome::Stopped(_) => Ok(()),
        StopOutcome::AlreadyExited(status) => bail!(
            "{title} (pid {}) had already exited ({status}) before tidemark stopped it; \
             last lines of {}:\n{}",
            server.pid(),
            log.display(),
            log_tail(log, LOG_LINES)
        ),
        StopOutcome::Forced(forced, _) => bail!(
            "{title} (pid {}) did not shut down within {} s of {signal} and was stopped \
             with {forced}; see {}",
            server.pid(),
            grace.as_secs(),
            log.display()
        ),
    }
}

/// A target's end of a managed server: runs `stop`, then removes the data
/// directory `datadir` unless `keep_data`.
pub fn stop_and_clean(
    datadir: PathBuf,
    keep_data: bool,
    stop: impl FnOnce() -> Result<()>,
) -> Result<()> {
    stop()?;
    if !keep_data && datadir.exists() {
        std::fs::remove_dir_all(&datadir)
            .with_context(|| format!("removing the data directory {}", datadir.display()))?;
    }
    Ok(())
}
