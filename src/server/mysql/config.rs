//! The option file of a managed MySQL/MariaDB server: the shipped files,
//! composition with tidemark's own lines and `-c` overrides, and the check
//! of the finished file by the server binary itself before anything starts.
//!
//! `mariadbd --defaults-file=F --verbose --help` (and MySQL's `mysqld`)
//! parses every option of F the way the server would, names an unknown
//! variable or a bad value, and starts nothing; that catches a typo in a
//! `-c` setting in well under a second instead of after initialising a data
//! directory.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::binaries::{Flavor, MyBinaries};
use super::named::my_named_config;
use super::verify::{Source, check_help_output};
use crate::server::process::ServerUser;
use crate::server::{compose_config_file, size_file};

/// Size profiles [`base_config`] knows.
pub use crate::server::SERVER_SIZES as PROFILES;

const BASE: &str = include_str!("../../../config/mysql/base.cnf");
const MARIADB: &str = include_str!("../../../config/mysql/mariadb.cnf");
const MYSQL: &str = include_str!("../../../config/mysql/mysql.cnf");
const QUICK: &str = include_str!("../../../config/mysql/quick.cnf");
const SMALL: &str = include_str!("../../../config/mysql/small.cnf");
const LARGE: &str = include_str!("../../../config/mysql/large.cnf");

/// Options tidemark writes itself; overriding them would make the server
/// unreachable, put it somewhere else, or run it as another account.
const RESERVED: &[&str] = &[
    "port",
    "socket",
    "datadir",
    "basedir",
    "bind_address",
    "pid_file",
    "user",
    "skip_networking",
    "log_error",
    "defaults_file",
    "defaults_extra_file",
    "no_defaults",
];

/// The shipped text for `flavor`, `profile` and named `config`
/// (`config/mysql/configs.toml`): base, the family's lines, the profile's
/// sizes, the config's lines. `None` for an unknown profile or config.
pub fn base_config(flavor: Flavor, profile: &str, config: &str) -> Option<String> {
    let sizes = size_file(profile, [QUICK, SMALL, LARGE])?;
    let named = my_named_config(config)?.text();
    let family = match flavor {
        Flavor::MariaDb => MARIADB,
        Flavor::Mysql => MYSQL,
    };
    let mut text = String::new();
    for part in [BASE, family, sizes, &named] {
        if !part.trim().is_empty() {
            text.push_str(part.trim_end());
            text.push_str("\n\n");
        }
    }
    Some(text)
}

/// The shipped text a target of `flavor` at `version` gets for `profile`
/// and named `config`: [`base_config`] for a diff config, the scaled file of
/// its version range for a complete one ([`super::seeds`]). The error is
/// one line.
pub fn config_text(
    flavor: Flavor,
    version: &str,
    profile: &str,
    config: &str,
) -> Result<String, String> {
    let named = super::named::resolve_my_config(config)?;
    let unknown_profile = || {
        format!(
            "unknown MySQL profile '{profile}': profiles {}",
            PROFILES.join(", ")
        )
    };
    if !named.complete {
        return base_config(flavor, profile, config).ok_or_else(unknown_profile);
    }
    let sizes = size_file(profile, [QUICK, SMALL, LARGE]).ok_or_else(unknown_profile)?;
    let file = super::seeds::pick(config, flavor, version)?;
    super::seeds::scaled_text(file, sizes)
}

/// Where the server puts its files and listens.
pub struct Placement<'a> {
    pub basedir: &'a Path,
    pub datadir: &'a Path,
    pub port: u16,
    pub socket: &'a Path,
    /// A directory of this server's own: every server deletes the `#sql*`
    /// files in its tmpdir when it starts, so servers sharing /tmp would
    /// delete each other's temporary tables mid-statement.
    pub tmpdir: &'a Path,
}

/// The option file tidemark writes for `flavor` `version`: `base`,
/// tidemark's lines, the overrides in order (the server uses the last
/// occurrence), and what the version needs to start as tidemark runs it
/// ([`super::versions::redo_lines`]: MySQL 9's redo log capacity in place
/// of the log file size; [`super::versions::version_lines`]: MySQL 8.0+'s `disable_log_bin`
/// unless something above turned the binary log on, MySQL's
/// `secure_file_priv` in the server's private tmpdir).
pub fn compose_config(
    flavor: Flavor,
    version: (u32, u32),
    base: &str,
    at: &Placement<'_>,
    overrides: &[(String, String)],
) -> String {
    let mut own = String::new();
    let _ = writeln!(own, "basedir = {}", at.basedir.display());
    let _ = writeln!(own, "datadir = {}", at.datadir.display());
    let _ = writeln!(own, "port = {}", at.port);
    own.push_str("bind_address = 127.0.0.1\n");
    let _ = writeln!(own, "socket = {}", at.socket.display());
    let _ = writeln!(
        own,
        "pid_file = {}",
        at.datadir.join("server.pid").display()
    );
    let _ = writeln!(own, "tmpdir = {}", at.tmpdir.display());
    let text = compose_config_file(base, "[mysqld]\n", &own, overrides, str::to_string);
    let mut text = super::versions::redo_lines(flavor, version, &text);
    super::versions::version_lines(flavor, version, at.tmpdir, &mut text);
    text
}

/// Whether an active line of `text` sets `option` (`log_bin`; dashes and
/// underscores alike).
pub(super) fn names_option(text: &str, option: &str) -> bool {
    text.lines().any(|l| {
        let name = l.split('=').next().unwrap_or("").trim();
        !l.trim_start().starts_with('#') && normalize(name) == option
    })
}

/// Option names with dashes and underscores mean the same.
pub(super) fn normalize(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('-', "_")
}

/// Rejects override names that are not option names at all, values that
/// would break the file, and the options tidemark sets itself.
pub fn check_override_syntax(flavor: Flavor, overrides: &[(String, String)]) -> Result<()> {
    for (name, value) in overrides {
        let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !ok {
            bail!(
                "'{name}' is not a {} option name (from -c {name}={value})",
                flavor.title()
            );
        }
        if value.contains('\n') {
            bail!("-c {name}=… has a line break in its value: write the value on one line");
        }
        if RESERVED.contains(&normalize(name).as_str()) {
            bail!(
                "-c {name}={value} is not allowed: tidemark sets {name} itself (the server \
                 listens on 127.0.0.1 and a socket in its data directory; choose the port \
                 with --port)"
            );
        }
    }
    Ok(())
}

/// Runs `server --defaults-file=FILE --verbose --help` as the server's
/// account and fails, with the server's complaints on one line, on a
/// non-zero exit, any `[ERROR]` line (bad values of plugin options only
/// disable the plugin), a warning that it ignores or adjusts one of the
/// `checked` settings, or a checked setting whose value the server would
/// not run with (see [`check_help_output`]); the message names where the
/// setting came from.
pub fn check_config(
    bin: &MyBinaries,
    user: &ServerUser,
    file: &Path,
    checked: &[Source],
) -> Result<()> {
    let out = bin
        .command(&bin.server, user)
        .arg(format!("--defaults-file={}", file.display()))
        .args(["--verbose", "--help"])
        .output()
        .with_context(|| format!("cannot run {} --help", bin.server.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut msg = check_help_output(out.status.success(), &stdout, &stderr, checked);
    if msg.is_none() && super::versions::help_ignores_unknown(bin.flavor, bin.major_minor()) {
        // The redo file settings are rewritten as capacity, not unknown.
        let named: Vec<Source> = checked
            .iter()
            .filter(|s| !super::versions::REDO_FILE_SETTINGS.contains(&normalize(&s.name).as_str()))
            .cloned()
            .collect();
        let unknown = super::verify::unknown_settings(&stdout, &named);
        msg = (!unknown.is_empty()).then(|| unknown.join("; "));
    }
    let Some(msg) = msg else {
        return Ok(());
    };
    bail!(
        "{} {} rejected the configuration in {}: {msg}",
        bin.flavor.title(),
        bin.version,
        file.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_and_configs_compose() {
        let q = base_config(Flavor::MariaDb, "quick", "base").unwrap();
        assert!(q.starts_with(BASE.trim_end()));
        assert!(q.contains("innodb_buffer_pool_size = 256M"));
        assert!(q.contains("query_cache_type = 0"));
        assert!(!q.contains("log_bin"));
        let b = base_config(Flavor::Mysql, "large", "binlog").unwrap();
        assert!(b.contains("innodb_buffer_pool_size = 24G") && b.contains("log_bin = binlog"));
        assert!(base_config(Flavor::Mysql, "huge", "base").is_none());
        assert!(base_config(Flavor::Mysql, "quick", "z99").is_none());
        let named: Vec<String> = super::super::named::my_named_configs()
            .iter()
            .map(|c| c.text())
            .collect();
        for file in [BASE, MARIADB, MYSQL, QUICK, SMALL, LARGE]
            .into_iter()
            .chain(named.iter().map(String::as_str))
        {
            for l in file
                .lines()
                .filter(|l| !l.starts_with('#') && l.contains('='))
            {
                let name = normalize(l.split('=').next().unwrap());
                assert!(!RESERVED.contains(&name.as_str()), "{l}");
            }
        }
    }

    #[test]
    fn tidemark_lines_then_overrides_and_binlog_handling() {
        let at = Placement {
            basedir: Path::new("/usr"),
            datadir: Path::new("/d"),
            port: 3399,
            socket: Path::new("/d/mysql.sock"),
            tmpdir: Path::new("/t"),
        };
        let o = vec![("innodb_io_capacity".to_string(), "500".to_string())];
        let t = compose_config(Flavor::MariaDb, (10, 11), "[mysqld]\na = 1\n", &at, &o);
        let lines: Vec<&str> = t
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .collect();
        assert_eq!(
            lines,
            [
                "[mysqld]",
                "a = 1",
                "[mysqld]",
                "basedir = /usr",
                "datadir = /d",
                "port = 3399",
                "bind_address = 127.0.0.1",
                "socket = /d/mysql.sock",
                "pid_file = /d/server.pid",
                "tmpdir = /t",
                "innodb_io_capacity = 500",
            ]
        );
        let my = compose_config(Flavor::Mysql, (8, 0), "", &at, &[]);
        assert!(my.ends_with("disable_log_bin\n"));
        assert!(my.contains("\nsecure_file_priv = /t\n"), "{my}");
        let on = vec![("log-bin".to_string(), "b".to_string())];
        assert!(!compose_config(Flavor::Mysql, (8, 4), "", &at, &on).contains("disable_log_bin"));
        let binlog = base_config(Flavor::Mysql, "quick", "binlog").unwrap();
        assert!(
            !compose_config(Flavor::Mysql, (8, 0), &binlog, &at, &[]).contains("disable_log_bin")
        );
    }

    #[test]
    fn override_names_are_checked() {
        let one = |n: &str| vec![(n.to_string(), "1".to_string())];
        assert!(check_override_syntax(Flavor::MariaDb, &one("innodb-io-capacity")).is_ok());
        assert!(check_override_syntax(Flavor::MariaDb, &one("a b")).is_err());
        let e = check_override_syntax(Flavor::MariaDb, &one("bind-address"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("-c bind-address=1 is not allowed"), "{e}");
        assert!(check_override_syntax(Flavor::Mysql, &one("Port")).is_err());
    }
}
