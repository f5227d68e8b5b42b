//! Limits a client-count sweep must fit, checked before any server
//! starts: this process's open-file limit (one socket per client) and an
//! external server's `max_connections`. Each failure is one line naming
//! the setting to change.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

use crate::db::{Conn, Dialect, first_value};
use crate::plan::Plan;
use crate::plan::connections::{RESERVED_CONNECTIONS, needed};

/// File descriptors tidemark keeps open beside the client sockets (the
/// results store, samplers' /proc files, server pipes and logs).
const OTHER_FILES: u64 = 128;

/// Raises the soft open-file limit to the hard one, then refuses a plan
/// whose largest client count would not fit in it.
pub fn check_open_files(plan: &Plan) -> anyhow::Result<()> {
    if !plan.suite.runs_sysbench() {
        return Ok(());
    }
    let largest = plan.sysbench.threads.largest();
    let need = u64::from(largest) + OTHER_FILES;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    let soft = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    if need > soft {
        anyhow::bail!(
            "--threads {}: {largest} client connections need about {need} open files, but the open-file limit (RLIMIT_NOFILE) is {soft}: raise it (ulimit -n {need}, or nofile in limits.conf) or lower --threads",
            plan.sysbench.threads
        );
    }
    Ok(())
}

/// Refuses an external server whose `max_connections` (less PostgreSQL's
/// `superuser_reserved_connections`) cannot hold the plan's largest count
/// plus tidemark's own connections.
pub fn check_server_connections(
    plan: &Plan,
    target: &str,
    conn: &mut dyn Conn,
) -> anyhow::Result<()> {
    if !plan.suite.runs_sysbench() {
        return Ok(());
    }
    let largest = plan.sysbench.threads.largest();
    let need = needed(largest);
    let number = |conn: &mut dyn Conn, sql: &str| -> anyhow::Result<u32> {
        let text = first_value(conn.query_text(sql)?).unwrap_or_default();
        text.trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("target {target}: {sql} gave {text:?}, not a number"))
    };
    let (max, reserved, reserved_name) = match conn.dialect() {
        Dialect::Postgres => (
            number(conn, "SELECT current_setting('max_connections')")?,
            number(
                conn,
                "SELECT current_setting('superuser_reserved_connections')",
            )?,
            " less superuser_reserved_connections",
        ),
        Dialect::Mysql => (number(conn, "SELECT @@max_connections")?, 0, ""),
        Dialect::Sqlite => return Ok(()),
    };
    let allowed = max.saturating_sub(reserved);
    if allowed < need {
        anyhow::bail!(
            "target {target}: max_connections = {max}{reserved_name} allows {allowed} connections, but --threads needs {need} ({largest} clients + {RESERVED_CONNECTIONS} reserved): raise max_connections on the server or lower --threads"
        );
    }
    Ok(())
}
