//! A PostgreSQL server that tidemark starts itself, in its own data
//! directory, on loopback.
//!
//! The default benchmark target is a private server, so results do not
//! depend on whatever the host's own PostgreSQL has been tuned or loaded
//! with. This module finds the binaries ([`find_bindir`]), composes
//! `postgresql.conf` from the shipped base, a size profile and `-c`
//! overrides ([`base_config`], [`compose_config`]), checks every input before
//! the slow steps (port free, data directory usable, setting names and
//! values known to this PostgreSQL), runs `initdb`, starts `postgres` through
//! [`super::process`] and waits until it answers. [`ManagedPostgres`] stops
//! the server on [`ManagedPostgres::stop`] and on drop, so it never outlives
//! the run.

mod binaries;
pub mod build;
mod config;
pub mod install;
pub mod layers;
pub mod named;
mod preflight;
pub mod seed_files;
mod target;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use nix::sys::signal::Signal;

pub use self::binaries::{PgBinaries, find_bindir, parse_version};
use self::binaries::{tool, tool_wrapped};
use self::config::{NameCheck, check_config_values, probe_name, unknown_setting, unlisted_names};
pub use self::config::{PROFILES, base_config, check_override_syntax, compose_config};
pub use self::preflight::{
    FEATURES, Preflight, ProbeDir, feature_for, lacking_features, runs_as_server_user,
};
pub use self::target::PostgresTarget;
use super::TargetInfo;
pub use super::datadir::FALLBACK_ROOT;
use super::datadir::{
    Scratch, checked_datadir_path, choose_port, create_datadir, log_file, scratch_dir,
    sibling_file, socket_dir_for,
};
use super::lifecycle::{check_binaries_reachable, wait_until_ready};
use super::managed::{Family, ManagedServer, Setup};
use super::process::{ServerUser, log_tail};
use crate::db::postgres::{PgConn, PgConnectOptions, PgConnector};
use crate::db::{Conn, Connector, Dialect, first_value, name_value_pairs};
use crate::util::redact::Secret;

/// The superuser `initdb` creates and tidemark connects as.
pub const SUPERUSER: &str = "tidemark";
/// How long a fast shutdown may take before [`ManagedPostgres::stop`]
/// escalates (a shutdown checkpoint of a large buffer pool takes a while).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(60);

/// The settings the configuration set (not defaults, not per session), by
/// name, as `SHOW` prints them; what the store records of a PostgreSQL
/// server, managed or external.
pub const NON_DEFAULT_SETTINGS: &str = "SELECT name, current_setting(name) FROM pg_settings \
     WHERE source NOT IN ('default', 'client', 'session', 'override') ORDER BY name";

/// Everything [`ManagedPostgres::start`] needs.
#[derive(Clone, Debug)]
pub struct ManagedPgOptions {
    /// The binaries to run.
    pub bindir: PgBinaries,
    /// Data directory to create; must not exist or be empty.
    pub datadir: PathBuf,
    /// TCP port on 127.0.0.1; `None` picks a free one.
    pub port: Option<u16>,
    /// Name of the configuration (`quick`, `cx10b`), for the record.
    pub config_name: String,
    /// postgresql.conf text before tidemark's lines and the overrides.
    pub base_config: String,
    /// `-c name=value` overrides, in command-line order.
    pub overrides: Vec<(String, String)>,
    /// Database to create for the benchmark (e.g. `tidemark`).
    pub dbname: String,
    /// How long the server may take to accept connections.
    pub start_timeout: Duration,
    /// Run the server under Valgrind's callgrind writing into this
    /// directory (`run --instructions`, see [`crate::server::valgrind`]).
    pub callgrind_dir: Option<PathBuf>,
}

impl ManagedPgOptions {
    /// Options for a shipped profile (see [`PROFILES`]) with a free port,
    /// no overrides, database `tidemark` and a 60 s start timeout.
    pub fn for_profile(bindir: PgBinaries, datadir: PathBuf, profile: &str) -> Result<Self> {
        let base_config = base_config(profile).ok_or_else(|| {
            anyhow!(
                "unknown PostgreSQL profile '{profile}': use one of {}",
                PROFILES.join(", ")
            )
        })?;
        Ok(ManagedPgOptions {
            bindir,
            datadir,
            port: None,
            config_name: profile.to_string(),
            base_config,
            overrides: Vec::new(),
            dbname: "tidemark".to_string(),
            start_timeout: Duration::from_secs(60),
            callgrind_dir: None,
        })
    }
}

/// The PostgreSQL part of a [`ManagedPostgres`].
#[derive(Debug)]
pub struct PgFamily {
    bin: PgBinaries,
    socket_dir: PathBuf,
    /// The superuser's password, drawn for this server and held only here.
    password: Secret,
}

/// A running PostgreSQL server owned by tidemark; stopped on
/// [`ManagedServer::stop`] (fast shutdown: SIGINT, up to
/// [`SHUTDOWN_GRACE`], then SIGQUIT and SIGKILL) or drop.
pub type ManagedPostgres = ManagedServer<PgFamily>;

impl ManagedPostgres {
    /// Validates `opts`, creates and initialises the data directory, starts
    /// the server, waits until it answers and creates the database.
    pub fn start(opts: ManagedPgOptions) -> Result<ManagedPostgres> {
        let bin = &opts.bindir;
        check_override_syntax(&opts.overrides)?;
        let port = choose_port(opts.port)?;
        let user = ServerUser::detect("postgres")?;
        check_binaries_reachable(&user, &bin.program("postgres"), &bin.bindir, "PostgreSQL")?;
        let requested = checked_datadir_path(&opts.datadir)?;
        let unlisted = unlisted_names(bin, &user, &opts.overrides)?;

        // Create the data directory, then the remaining name checks.
        let mut scratch = Scratch::default();
        let datadir = create_datadir(&requested, &user, "PostgreSQL", &mut scratch)?;
        let mut unsure = Vec::new();
        for (name, value) in unlisted {
            match probe_name(bin, &user, &datadir, &name, true) {
                NameCheck::Known => {}
                NameCheck::Unknown => bail!(unknown_setting(bin, &name, &value)),
                NameCheck::Unsure => unsure.push((name, value)),
            }
        }
        let password = Secret::random().context("cannot draw the server's password")?;
        run_initdb(
            bin,
            &user,
            &datadir,
            &password,
            &sibling_file(&requested, "initdb.log"),
        )?;
        for (name, value) in &unsure {
            if probe_name(bin, &user, &datadir, name, false) != NameCheck::Known {
                bail!(unknown_setting(bin, name, value));
            }
        }

        // Write the configuration and let the server binary check it.
        let socket_dir = pg_socket_dir(&datadir, port, &user, &mut scratch)?;
        let socket_str = socket_dir.to_str().context("socket path is not UTF-8")?;
        let config_text = compose_config(&opts.base_config, port, socket_str, &opts.overrides);
        let conf_path = datadir.join("postgresql.conf");
        std::fs::write(&conf_path, &config_text)
            .with_context(|| format!("cannot write {}", conf_path.display()))?;
        user.chown_tree(&conf_path)?;
        check_config_values(bin, &user, &datadir, &conf_path)?;

        // Start the postmaster and wait for it, through a path of the same
        // length for every install (see `server::stack`).
        let exe = super::stack::fixed_length_path(&bin.program("postgres"))
            .unwrap_or_else(|_| bin.program("postgres"));
        let wrapper = match &opts.callgrind_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                user.chown_tree(dir)?;
                super::valgrind::postgres_wrapper(dir)
            }
            None => Vec::new(),
        };
        let mut cmd = tool_wrapped(bin, &exe, &user, &wrapper);
        cmd.arg("-D").arg(&datadir);
        let setup = Setup {
            scratch,
            datadir,
            requested_datadir: requested,
            port,
            config_name: opts.config_name.clone(),
            config_text,
            dbname: opts.dbname.clone(),
            user,
            title: "PostgreSQL",
            stop_signal: Signal::SIGINT,
            grace: SHUTDOWN_GRACE,
        };
        let family = PgFamily {
            bin: bin.clone(),
            socket_dir,
            password,
        };
        let mut pg = ManagedServer::spawn(cmd, "postgres".to_string(), setup, family)?;
        pg.wait_ready(opts.start_timeout)?;
        pg.create_database()?;
        Ok(pg)
    }

    /// Polls until `SELECT 1` works, the server exits, or `timeout` passes.
    fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let mut opts = self.connect_options();
        opts.dbname = "postgres".to_string();
        let pause = Duration::from_millis(50);
        wait_until_ready(&mut self.server, "PostgreSQL", timeout, pause, || {
            PgConn::connect(&opts).and_then(|mut c| c.query_text("SELECT 1"))
        })?;
        Ok(())
    }

    fn create_database(&mut self) -> Result<()> {
        let mut opts = self.connect_options();
        opts.dbname = "postgres".to_string();
        let mut conn =
            PgConn::connect(&opts).map_err(|e| anyhow!("cannot connect to PostgreSQL: {e}"))?;
        let dbname = &self.setup.dbname;
        let name = dbname.replace('\'', "''");
        let exists = format!("SELECT 1 FROM pg_database WHERE datname = '{name}'");
        let rows = conn
            .query_text(&exists)
            .map_err(|e| anyhow!("{exists}: {e}"))?;
        if rows.is_empty() {
            let create = format!("CREATE DATABASE \"{}\"", dbname.replace('"', "\"\""));
            conn.execute_text(&create)
                .map_err(|e| anyhow!("{create}: {e}"))?;
        }
        Ok(())
    }

    /// Connection options over the server's unix socket.
    pub fn socket_options(&self) -> PgConnectOptions {
        PgConnectOptions {
            host: self.family.socket_dir.to_string_lossy().into_owned(),
            ..self.connect_options()
        }
    }

    /// The binaries this server runs.
    pub fn binaries(&self) -> &PgBinaries {
        &self.family.bin
    }
}

impl Family for PgFamily {
    type Options = PgConnectOptions;
    const DIALECT: Dialect = Dialect::Postgres;

    fn connector(opts: &PgConnectOptions) -> Arc<dyn Connector> {
        Arc::new(PgConnector(opts.clone()))
    }

    /// Connection options over TCP (127.0.0.1:port, user `tidemark` with
    /// the server's password, the benchmark database).
    fn connect_options(server: &ManagedServer<Self>) -> PgConnectOptions {
        PgConnectOptions {
            host: "127.0.0.1".to_string(),
            port: server.port(),
            user: SUPERUSER.to_string(),
            password: Some(server.family.password.expose().to_string()),
            dbname: server.setup.dbname.clone(),
            application_name: "tidemark".to_string(),
        }
    }

    /// What the store records about this server (queries the server).
    /// `settings` holds what the configuration set, as `SHOW` prints it
    /// (`256MB`, not `32768`); session and per-connection values and the
    /// file paths the server derives itself are left out.
    fn info(server: &ManagedServer<Self>, spec: &str, label: &str) -> Result<TargetInfo> {
        let mut conn = PgConn::connect(&server.connect_options())
            .map_err(|e| anyhow!("cannot connect to PostgreSQL: {e}"))?;
        let mut one = |sql: &str| -> Result<String> {
            let rows = conn.query_text(sql).map_err(|e| anyhow!("{sql}: {e}"))?;
            first_value(rows).context(sql.to_string())
        };
        let version = one("SELECT version()")?;
        let server_version = one("SHOW server_version")?;
        let version_number = server_version
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        let sql = NON_DEFAULT_SETTINGS;
        let settings = name_value_pairs(conn.query_text(sql).map_err(|e| anyhow!("{sql}: {e}"))?);
        let bin = &server.family.bin;
        let mut extra = serde_json::json!({
            "bindir": bin.bindir,
            "source": bin.source,
            "binary_version": bin.version,
            "socket_dir": server.family.socket_dir,
        });
        if let Some(record) = build::record_for_bindir(&bin.bindir) {
            extra["build"] = record;
        }
        if let Some(lib) = &bin.preload {
            extra["allocator"] = serde_json::json!(lib);
        }
        Ok(TargetInfo {
            dbms: "postgres".to_string(),
            version,
            version_number,
            settings,
            ..server.info_base(spec, label, extra)
        })
    }
}

/// The authentication method of every `pg_hba.conf` line (socket and
/// TCP): SCRAM-SHA-256 from PostgreSQL 10 on, md5 before.
pub fn auth_method(major: u32) -> &'static str {
    if major >= 10 { "scram-sha-256" } else { "md5" }
}

/// Runs initdb with `password` for the superuser and password
/// authentication on every line of `pg_hba.conf`; the password reaches
/// initdb in a file in a private directory, removed as soon as initdb is
/// done. initdb's output goes to `log`, which the error names.
fn run_initdb(
    bin: &PgBinaries,
    user: &ServerUser,
    datadir: &Path,
    password: &Secret,
    log: &Path,
) -> Result<()> {
    let mut pw_dir = Scratch::default();
    let pwfile = scratch_dir("pw", user, &mut pw_dir)?.join("pwfile");
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&pwfile)
            .with_context(|| format!("cannot create {}", pwfile.display()))?;
        std::io::Write::write_all(&mut f, password.expose().as_bytes())?;
    }
    user.chown_tree(&pwfile)?;
    let method = auth_method(bin.major);
    let mut initdb = tool(bin, "initdb", user);
    initdb
        .arg("-D")
        .arg(datadir)
        .args(["-U", SUPERUSER])
        .arg(format!("--pwfile={}", pwfile.display()))
        .arg(format!("--auth={method}"))
        .args(["--encoding=UTF8", "--locale=C"]);
    let status = initdb
        .stdout(log_file(log)?)
        .stderr(log_file(log)?)
        .status()
        .context("cannot run initdb");
    pw_dir.remove();
    let status = status?;
    if !status.success() {
        bail!(
            "initdb of {} failed ({status}); its output is in {}:\n{}",
            datadir.display(),
            log.display(),
            log_tail(log, 10)
        );
    }
    Ok(())
}

/// The data directory as socket directory, unless the socket path would be
/// too long; then a fresh directory under /tmp, registered in `scratch`.
fn pg_socket_dir(
    datadir: &Path,
    port: u16,
    user: &ServerUser,
    scratch: &mut Scratch,
) -> Result<PathBuf> {
    let socket_name = format!(".s.PGSQL.{port}");
    socket_dir_for(datadir, &socket_name, &format!("pg-{port}"), user, scratch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_socket_dir_only_for_long_paths() {
        let mut scratch = Scratch::default();
        let short = Path::new("/tmp/x/data");
        let dir = pg_socket_dir(short, 5432, &ServerUser::Current, &mut scratch).unwrap();
        assert_eq!(dir, short);
        let long = PathBuf::from(format!("/tmp/{}", "d".repeat(100)));
        let dir = pg_socket_dir(&long, 5432, &ServerUser::Current, &mut scratch).unwrap();
        assert!(dir.starts_with("/tmp") && dir.is_dir(), "{}", dir.display());
        scratch.remove();
        assert!(!dir.exists());
    }
}
