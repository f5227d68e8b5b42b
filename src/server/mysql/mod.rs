//! A MySQL or MariaDB server that tidemark starts itself, in its own data
//! directory, on loopback.
//!
//! As with PostgreSQL, the default is a private server so results do not
//! depend on what the host's own server has been tuned or loaded with. This
//! module finds the binaries ([`find_binaries`]), composes the option file
//! from the shipped files and `-c` overrides ([`base_config`],
//! [`compose_config`]) and lets the server binary check it before the slow
//! steps, initialises the data directory (`mariadb-install-db` for MariaDB,
//! `mysqld --initialize-insecure` for MySQL 8+), starts the server through
//! [`super::process`] as an unprivileged account when tidemark is root,
//! waits until it answers, and creates tidemark's user and database.
//! [`ManagedMysql`] stops the server (SIGTERM, a clean InnoDB shutdown) on
//! [`ManagedMysql::stop`] and on drop, so it never outlives the run.

mod binaries;
mod config;
pub mod debian;
pub mod install;
pub mod named;
pub mod oracle;
pub mod seeds;
mod target;
pub mod verify;
pub mod versions;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use nix::sys::signal::Signal;

pub use self::binaries::{Flavor, MyBinaries, find_binaries, parse_version};
pub use self::config::{PROFILES, base_config, check_override_syntax, compose_config, config_text};
pub use self::named::{DEFAULT_CONFIG, MyNamedConfig, my_config_names, my_named_config};
pub use self::target::MysqlTarget;
use self::verify::Source;
use super::TargetInfo;
use super::datadir::{
    Scratch, checked_datadir_path, choose_port, create_datadir, log_file, scratch_dir,
    sibling_file, socket_dir_for,
};
use super::lifecycle::{check_binaries_reachable, wait_until_ready};
use super::managed::{Family, ManagedServer, Setup};
use super::process::{ServerUser, log_tail};
use crate::db::mysql::{MyConn, MyConnectOptions, MyConnector};
use crate::db::{Conn, Connector, Dialect, first_value, name_value_pairs};
use crate::server::is_executable;
use crate::util::redact::Secret;

/// The account tidemark creates and connects as (loopback only, with the
/// server's random password).
pub const USER: &str = "tidemark";
/// How long a clean shutdown may take before [`ManagedMysql::stop`]
/// escalates (InnoDB flushes the buffer pool's dirty pages first).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(120);
/// The option file's name inside the data directory.
const OPTION_FILE: &str = "tidemark.cnf";
const SOCKET: &str = "mysql.sock";

/// Everything [`ManagedMysql::start`] needs.
#[derive(Clone, Debug)]
pub struct ManagedMyOptions {
    pub binaries: MyBinaries,
    /// Data directory to create; must not exist or be empty.
    pub datadir: PathBuf,
    /// TCP port on 127.0.0.1; `None` picks a free one.
    pub port: Option<u16>,
    /// Name of the configuration (`base`, `binlog`, `z12a`), for the record.
    pub config_name: String,
    /// Option file text before tidemark's lines and the overrides.
    pub base_config: String,
    /// `-c name=value` overrides, in command-line order.
    pub overrides: Vec<(String, String)>,
    /// Database to create for the benchmark.
    pub dbname: String,
    /// Connection character set of every client connection.
    pub charset: String,
    /// How long the server may take to accept connections.
    pub start_timeout: Duration,
    /// Run the server under Valgrind's callgrind writing into this
    /// directory (`run --instructions`, see [`crate::server::valgrind`]).
    pub callgrind_dir: Option<PathBuf>,
}

impl ManagedMyOptions {
    /// Options for a shipped profile and config with a free port, no
    /// overrides, database `tidemark`, latin1 and a 120 s start timeout.
    pub fn for_profile(
        binaries: MyBinaries,
        datadir: PathBuf,
        profile: &str,
        config: &str,
    ) -> Result<Self> {
        let base_config = config_text(binaries.flavor, &binaries.version, profile, config)
            .map_err(anyhow::Error::msg)?;
        Ok(ManagedMyOptions {
            binaries,
            datadir,
            port: None,
            config_name: config.to_string(),
            base_config,
            overrides: Vec::new(),
            dbname: "tidemark".to_string(),
            charset: crate::db::mysql::DEFAULT_CHARSET.to_string(),
            start_timeout: Duration::from_secs(120),
            callgrind_dir: None,
        })
    }
}

/// The MySQL/MariaDB part of a [`ManagedMysql`].
#[derive(Debug)]
pub struct MyFamily {
    bin: MyBinaries,
    socket: PathBuf,
    charset: String,
    /// The password of `tidemark` and `root`, drawn for this server and
    /// held only here.
    password: Secret,
    /// An IO-bound run: the record says how InnoDB keeps its data out of
    /// the OS page cache ([`io_bound_fact`]).
    io_bound: bool,
}

/// A running MySQL or MariaDB server owned by tidemark; stopped on
/// [`ManagedServer::stop`] (clean shutdown: SIGTERM, up to
/// [`SHUTDOWN_GRACE`], then SIGQUIT and SIGKILL) or drop.
pub type ManagedMysql = ManagedServer<MyFamily>;

impl ManagedMysql {
    /// Validates `opts`, checks the option file with the server binary,
    /// initialises the data directory, starts the server, waits until it
    /// answers and creates tidemark's user and database.
    pub fn start(opts: ManagedMyOptions) -> Result<ManagedMysql> {
        let bin = &opts.binaries;
        let title = bin.flavor.title();
        check_override_syntax(bin.flavor, &opts.overrides)?;
        crate::db::mysql::check_charset(&opts.charset).map_err(anyhow::Error::msg)?;
        let port = choose_port(opts.port)?;
        let user = ServerUser::detect("mysql")?;
        check_binaries_reachable(&user, &bin.server, &bin.basedir, title)?;
        let requested = checked_datadir_path(&opts.datadir)?;
        let mut scratch = Scratch::default();
        let datadir = create_datadir(&requested, &user, title, &mut scratch)?;
        let socket_dir = socket_dir_for(&datadir, SOCKET, "my", &user, &mut scratch)?;
        let socket = socket_dir.join(SOCKET);
        // Servers delete the `#sql*` files in their tmpdir at startup (the
        // initialising run too): a shared /tmp lets one server's start
        // delete another's temporary tables mid-statement.
        let tmpdir = scratch_dir("mytmp", &user, &mut scratch)?;
        let placement = config::Placement {
            basedir: &bin.basedir,
            datadir: &datadir,
            port,
            socket: &socket,
            tmpdir: &tmpdir,
        };
        let mut config_text = compose_config(
            bin.flavor,
            bin.major_minor(),
            &opts.base_config,
            &placement,
            &opts.overrides,
        );
        if opts.callgrind_dir.is_some() {
            config_text.push_str(&super::valgrind::mariadb_config_lines(&config_text));
        }

        // Check the option file before initialising; MySQL wants an empty
        // data directory to initialise, so the file goes in afterwards.
        let conf = datadir.join(OPTION_FILE);
        write_owned(&conf, &config_text, &user)?;
        let mut checked = config_sources(&opts.config_name, &opts.base_config);
        checked.extend(
            opts.overrides
                .iter()
                .map(|(n, v)| Source::new(n, v, format!("-c {n}={v}"))),
        );
        config::check_config(bin, &user, &conf, &checked)?;
        std::fs::remove_file(&conf).with_context(|| format!("removing {}", conf.display()))?;
        let init_log = sibling_file(&requested, "init.log");
        initialise(bin, &user, &datadir, &tmpdir, &init_log, &config_text)?;
        write_owned(&conf, &config_text, &user)?;

        let mut cmd = match &opts.callgrind_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                user.chown_tree(dir)?;
                let wrapper = super::valgrind::mariadb_wrapper(dir);
                let mut cmd = bin.command(Path::new(&wrapper[0]), &user);
                // Through a path of one length for every install, as
                // PostgreSQL always is (`server::stack`): under Valgrind the
                // stack's offsets follow the path's length. Only here: the
                // option file names the real basedir, and without Valgrind
                // the kernel randomises the stack anyway.
                let exe = super::stack::fixed_length_path(&bin.server)
                    .unwrap_or_else(|_| bin.server.clone());
                cmd.args(&wrapper[1..]).arg(exe);
                cmd.envs(super::valgrind::VGDB_ENV);
                cmd
            }
            None => bin.command(&bin.server, &user),
        };
        cmd.arg(format!("--defaults-file={}", conf.display()));
        let name = bin
            .server
            .file_name()
            .map_or("mysqld".into(), |n| n.to_string_lossy().into_owned());
        let setup = Setup {
            scratch,
            datadir,
            requested_datadir: requested,
            port,
            config_name: opts.config_name.clone(),
            config_text,
            dbname: opts.dbname.clone(),
            user,
            title,
            stop_signal: Signal::SIGTERM,
            grace: SHUTDOWN_GRACE,
        };
        let family = MyFamily {
            bin: bin.clone(),
            socket,
            charset: opts.charset.clone(),
            password: Secret::random().context("cannot draw the server's password")?,
            io_bound: false,
        };
        let mut my = ManagedServer::spawn(cmd, name, setup, family)?;
        let mut root = my.wait_ready(opts.start_timeout)?;
        my.create_user_and_database(&mut root)?;
        Ok(my)
    }

    /// Marks the server as serving an IO-bound run: its record then says,
    /// as the server reports it, whether InnoDB reads past the page cache.
    pub fn mark_io_bound(&mut self) {
        self.family.io_bound = true;
    }

    /// Options of the server's own superuser over the unix socket, as
    /// initialised (without a password, until [`Self::lock_accounts`]).
    fn root_options(&self) -> MyConnectOptions {
        MyConnectOptions {
            user: "root".to_string(),
            password: None,
            dbname: String::new(),
            socket: Some(self.family.socket.clone()),
            ..self.connect_options()
        }
    }

    /// Polls until root can log in over the socket, the server exits, or
    /// `timeout` passes.
    fn wait_ready(&mut self, timeout: Duration) -> Result<MyConn> {
        let opts = self.root_options();
        let title = self.setup.title;
        let pause = Duration::from_millis(100);
        wait_until_ready(&mut self.server, title, timeout, pause, || {
            MyConn::connect_timeout(&opts, Duration::from_secs(5))
        })
    }

    fn create_user_and_database(&mut self, root: &mut MyConn) -> Result<()> {
        let bin = &self.family.bin;
        let statements = versions::account_statements(
            bin.flavor,
            bin.major_minor(),
            USER,
            self.family.password.expose(),
            &self.setup.dbname,
        );
        for sql in statements {
            // The statement holds the password: the error names it only.
            root.execute_text(&sql)
                .map_err(|e| anyhow!("creating tidemark's account and database: {e}"))?;
        }
        // MySQL 8's caching_sha2_password: the first TCP login is its full
        // authentication (the client encrypts the password with the
        // server's RSA key), later ones its fast path.
        self.lock_accounts(root)
    }

    /// Only tidemark gets in: anonymous accounts and `root` for other hosts
    /// go, and `root@localhost` gets the server's password (the
    /// initialisation left it without one).
    fn lock_accounts(&mut self, root: &mut MyConn) -> Result<()> {
        let accounts = root
            .query_text("SELECT user, host FROM mysql.user WHERE user IN ('', 'root')")
            .map_err(|e| anyhow!("listing the server's accounts: {e}"))?;
        let pw = self.family.password.expose();
        for row in accounts {
            let [Some(user), Some(host)] = [&row[0], &row[1]] else {
                continue;
            };
            let account = format!(
                "'{}'@'{}'",
                user.replace('\'', "''"),
                host.replace('\'', "''")
            );
            // Only root@localhost stays (the socket); its copies for other
            // hosts go, as anonymous accounts do.
            let sql = if user.is_empty() || host != "localhost" {
                format!("DROP USER {account}")
            } else {
                let bin = &self.family.bin;
                versions::set_password(bin.flavor, bin.major_minor(), &account, pw)
            };
            root.execute_text(&sql)
                .map_err(|e| anyhow!("locking account {account}: {e}"))?;
        }
        Ok(())
    }

    /// Connection options over the server's unix socket.
    pub fn socket_options(&self) -> MyConnectOptions {
        MyConnectOptions {
            socket: Some(self.family.socket.clone()),
            ..self.connect_options()
        }
    }

    /// The unix socket.
    pub fn socket(&self) -> &Path {
        &self.family.socket
    }

    /// The binaries this server runs.
    pub fn binaries(&self) -> &MyBinaries {
        &self.family.bin
    }
}

impl Family for MyFamily {
    type Options = MyConnectOptions;
    const DIALECT: Dialect = Dialect::Mysql;

    fn connector(opts: &MyConnectOptions) -> Arc<dyn Connector> {
        Arc::new(MyConnector(opts.clone()))
    }

    /// Connection options over TCP (127.0.0.1:port, user `tidemark`, the
    /// benchmark database, the configured charset).
    fn connect_options(server: &ManagedServer<Self>) -> MyConnectOptions {
        MyConnectOptions {
            host: "127.0.0.1".to_string(),
            port: server.port(),
            socket: None,
            user: USER.to_string(),
            password: Some(server.family.password.expose().to_string()),
            dbname: server.setup.dbname.clone(),
            charset: server.family.charset.clone(),
            scheme: server.family.bin.flavor.as_str().to_string(),
        }
    }

    /// What the store records about this server (queries it): version,
    /// the variables the option file or the server's auto-sizing set, the
    /// option file, and the session character set a client connection has.
    fn info(server: &ManagedServer<Self>, spec: &str, label: &str) -> Result<TargetInfo> {
        let bin = &server.family.bin;
        let mut conn = MyConn::connect(&server.connect_options())
            .map_err(|e| anyhow!("cannot connect to {}: {e}", bin.flavor.title()))?;
        let settings = non_default_variables(
            &mut conn,
            bin.flavor,
            bin.major_minor(),
            Some(&server.setup.config_text),
        )?;
        let mut extra = describe_connection(&mut conn)?;
        let version = extra["version"].as_str().unwrap_or_default().to_string();
        extra["flavor"] = serde_json::json!(bin.flavor);
        extra["server_binary"] = serde_json::json!(bin.server);
        extra["basedir"] = serde_json::json!(bin.basedir);
        extra["source"] = serde_json::json!(bin.source);
        extra["binary_version"] = serde_json::json!(bin.version_text);
        extra["socket"] = serde_json::json!(server.family.socket);
        if let Some(lib) = &bin.preload {
            extra["allocator"] = serde_json::json!(lib);
        }
        if server.family.io_bound {
            let sql = "SHOW GLOBAL VARIABLES WHERE Variable_name IN \
                       ('innodb_buffer_pool_size', 'innodb_flush_method', 'innodb_data_file_buffering')";
            let vars = name_value_pairs(conn.query_text(sql).map_err(|e| anyhow!("{sql}: {e}"))?);
            extra["io_bound"] = serde_json::json!(io_bound_fact(&vars));
        }
        Ok(TargetInfo {
            dbms: bin.flavor.as_str().to_string(),
            version,
            version_number: bin.version.clone(),
            settings,
            ..server.info_base(spec, label, extra)
        })
    }
}

/// How an IO-bound run's InnoDB keeps data beyond its buffer pool out of
/// the OS page cache, from the server's variables (`vars`): O_DIRECT
/// (`innodb_flush_method`, or MariaDB 11's `innodb_data_file_buffering =
/// OFF`), or a warning that the page cache may serve its reads.
fn io_bound_fact(vars: &[(String, String)]) -> String {
    let var = |name: &str| {
        vars.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let pool = var("innodb_buffer_pool_size")
        .and_then(|v| v.parse::<u64>().ok())
        .map_or("unknown".to_string(), |b| format!("{} MiB", b >> 20));
    let (how, direct) = match (
        var("innodb_data_file_buffering"),
        var("innodb_flush_method"),
    ) {
        (Some(b), _) => (
            format!("innodb_data_file_buffering = {b}"),
            b.eq_ignore_ascii_case("OFF"),
        ),
        (None, Some(m)) => (format!("innodb_flush_method = {m}"), m.contains("O_DIRECT")),
        (None, None) => ("no flush method reported".to_string(), false),
    };
    if direct {
        format!(
            "InnoDB's buffer pool of {pool} with {how}: data beyond it is read from storage, past \
             the OS page cache"
        )
    } else {
        format!(
            "InnoDB's buffer pool of {pool} with {how}: the OS page cache may serve reads beyond \
             it, so storage reads per query are understated; set innodb_flush_method = O_DIRECT"
        )
    }
}

/// The settings of named config `name` as checked sources (none for an
/// unknown name); a complete config's are those of its file, `text`.
fn config_sources(name: &str, text: &str) -> Vec<Source> {
    let Some(named) = my_named_config(name) else {
        return Vec::new();
    };
    let settings = if named.complete {
        seeds::settings_of(text)
    } else {
        named.settings.clone()
    };
    settings
        .iter()
        .map(|(n, v)| Source::new(n, v, format!("config {name}")))
        .collect()
}

/// Checks, before anything is created, that the server binary has and
/// accepts the option file `profile`, `config`, the run-wide `-c` settings
/// and the target's `own` settings make: the config must be one this family
/// and version have (`needs`, `removed_in`), and the server itself must
/// neither reject nor silently ignore or adjust a setting of the config or
/// the user. The error is one line naming the setting and where it came
/// from. The file is written to a scratch directory under /tmp that is
/// removed again.
pub fn check_settings(
    bin: &MyBinaries,
    profile: &str,
    config: &str,
    run_wide: &[(String, String)],
    own: &[(String, String)],
) -> Result<()> {
    let overrides: Vec<(String, String)> = run_wide.iter().chain(own).cloned().collect();
    check_override_syntax(bin.flavor, &overrides)?;
    let named = named::resolve_my_config(config).map_err(anyhow::Error::msg)?;
    named
        .supports(bin.flavor, &bin.version)
        .map_err(anyhow::Error::msg)?;
    let base =
        config_text(bin.flavor, &bin.version, profile, config).map_err(anyhow::Error::msg)?;
    let mut checked = config_sources(config, &base);
    checked.extend(
        run_wide
            .iter()
            .map(|(n, v)| Source::new(n, v, format!("-c {n}={v}"))),
    );
    checked.extend(
        own.iter()
            .map(|(n, v)| Source::new(n, v, format!("the target's :{n}={v}"))),
    );
    let user = ServerUser::detect("mysql")?;
    let mut scratch = Scratch::default();
    let dir = scratch_dir("mycheck", &user, &mut scratch)?;
    let at = config::Placement {
        basedir: &bin.basedir,
        datadir: &dir,
        port: 3306,
        socket: &dir.join(SOCKET),
        tmpdir: &dir,
    };
    let file = dir.join(OPTION_FILE);
    write_owned(
        &file,
        &compose_config(bin.flavor, bin.major_minor(), &base, &at, &overrides),
        &user,
    )?;
    let result = config::check_config(bin, &user, &file, &checked);
    scratch.remove();
    result.map_err(|e| {
        // The scratch file is gone; name the setting, not the file.
        anyhow!(
            e.to_string()
                .replace(&format!(" in {}", file.display()), "")
        )
    })
}

/// Writes `text` to `path`, owned by the server account.
fn write_owned(path: &Path, text: &str, user: &ServerUser) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    user.chown_tree(path)?;
    Ok(())
}

/// Initialises `datadir` with the family's tool, as the server account,
/// with the server's private `tmpdir`; the tool's output goes to `log`,
/// which the error quotes.
fn initialise(
    bin: &MyBinaries,
    user: &ServerUser,
    datadir: &Path,
    tmpdir: &Path,
    log: &Path,
    config_text: &str,
) -> Result<()> {
    if let Some(template) = &bin.data_template {
        copy_tree(template, datadir).with_context(|| {
            format!(
                "copying the ready data directory {} to {}",
                template.display(),
                datadir.display()
            )
        })?;
        user.chown_tree(datadir)?;
        return Ok(());
    }
    let help = match &bin.install_db {
        Some(tool) => bin
            .command(tool, user)
            .arg("--help")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default(),
        None => String::new(),
    };
    let (program, args) = versions::init_command(bin, datadir, tmpdir, &help);
    let mut cmd = bin.command(&program, user);
    cmd.args(args)
        .args(versions::init_time_options(config_text));
    let status = cmd
        .stdout(log_file(log)?)
        .stderr(log_file(log)?)
        .status()
        .with_context(|| format!("cannot run {:?}", cmd.get_program()))?;
    if !status.success() {
        bail!(
            "initialising the {} data directory {} failed ({status}); the output is in {}:\n{}",
            bin.flavor.title(),
            datadir.display(),
            log.display(),
            log_tail(log, 10)
        );
    }
    Ok(())
}

/// Copies the directory tree `from` into the existing directory `to`
/// (directories and regular files; modes 0700 and 0600).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir(&dest)?;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o700))?;
            copy_tree(&entry.path(), &dest)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &dest)?;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

/// Variables whose global value did not come from the compiled-in default:
/// from the option file, the command line or the server's own sizing. MySQL
/// before 8.0 does not say where a value came from: there the names the
/// option file `option_text` sets are read back (an error without one).
pub fn non_default_variables(
    conn: &mut MyConn,
    flavor: Flavor,
    version: (u32, u32),
    option_text: Option<&str>,
) -> Result<Vec<(String, String)>> {
    if let Some(sql) = versions::variables_origin_query(flavor, version) {
        let rows = conn.query_text(sql).map_err(|e| anyhow!("{sql}: {e}"))?;
        return Ok(name_value_pairs(rows));
    }
    let Some(text) = option_text else {
        bail!("MySQL before 8.0 does not record where a variable's value came from");
    };
    let wanted = versions::option_file_names(text);
    let sql = "SHOW GLOBAL VARIABLES";
    let rows = conn.query_text(sql).map_err(|e| anyhow!("{sql}: {e}"))?;
    Ok(name_value_pairs(rows)
        .into_iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v))
        .filter(|(n, _)| wanted.binary_search(n).is_ok())
        .collect())
}

/// Version text and the session character set variables of a client
/// connection (the seeds lost weeks to a client that silently changed it).
pub fn describe_connection(conn: &mut MyConn) -> Result<serde_json::Value> {
    let mut one = |sql: &str| -> Result<String> {
        let rows = conn.query_text(sql).map_err(|e| anyhow!("{sql}: {e}"))?;
        Ok(first_value(rows).unwrap_or_default())
    };
    let version = one("SELECT VERSION()")?;
    let comment = one("SELECT @@version_comment")?;
    let sql = "SHOW SESSION VARIABLES LIKE 'character_set_%'";
    let charsets: serde_json::Map<String, serde_json::Value> = conn
        .query_text(sql)
        .map_err(|e| anyhow!("{sql}: {e}"))?
        .into_iter()
        .filter_map(|row| {
            let mut cols = row.into_iter();
            let name = cols.next()??;
            Some((name, serde_json::json!(cols.next()?.unwrap_or_default())))
        })
        .collect();
    Ok(serde_json::json!({
        "version": if comment.is_empty() { version } else { format!("{version} ({comment})") },
        "session_character_sets": charsets,
    }))
}

#[cfg(test)]
mod tests {
    use super::io_bound_fact;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_io_bound_fact_says_whether_innodb_bypasses_the_page_cache() {
        let direct = io_bound_fact(&vars(&[
            ("innodb_buffer_pool_size", "335544320"),
            ("innodb_flush_method", "O_DIRECT"),
        ]));
        assert_eq!(
            direct,
            "InnoDB's buffer pool of 320 MiB with innodb_flush_method = O_DIRECT: data beyond it \
             is read from storage, past the OS page cache"
        );
        let cached = io_bound_fact(&vars(&[("innodb_flush_method", "fsync")]));
        assert!(
            cached.contains("buffer pool of unknown") && cached.ends_with("= O_DIRECT"),
            "{cached}"
        );
        // MariaDB 11: the buffering switch decides, not the deprecated method.
        let eleven = io_bound_fact(&vars(&[
            ("innodb_data_file_buffering", "OFF"),
            ("innodb_flush_method", "fsync"),
        ]));
        assert!(eleven.contains("past the OS page cache"), "{eleven}");
        assert!(io_bound_fact(&[]).contains("understated"));
    }
}
