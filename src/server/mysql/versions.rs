//! What differs between the oldest and newest MySQL/MariaDB versions
//! tidemark manages (MySQL 5.6 → 9.x, MariaDB 10.2 → 11.x), as data and
//! commands built from the version, so each difference is one unit-tested
//! function:
//!
//! - initialising a data directory: `mariadb-install-db` /
//!   `mysql_install_db` (MariaDB, MySQL 5.6; a 5.6 build shipping a ready
//!   data directory copies that instead) or `mysqld
//!   --initialize-insecure` (MySQL 5.7+);
//! - the binary log: on by default from MySQL 8.0 only, so only there does
//!   the option file need `disable_log_bin` (5.7 does not know it);
//! - accounts: MySQL 5.6 has neither `CREATE USER IF NOT EXISTS` nor
//!   `ALTER USER … IDENTIFIED BY` (it sets passwords with `SET PASSWORD`);
//! - the variables the configuration set: MariaDB's
//!   `information_schema.SYSTEM_VARIABLES` and MySQL 8's
//!   `performance_schema.variables_info` say where each value came from;
//!   MySQL 5.6/5.7 have neither, so there the option file's names are read
//!   back with `SHOW GLOBAL VARIABLES`.

use std::path::Path;

use super::binaries::{Flavor, MyBinaries};
use super::config::{names_option, normalize};

/// `(major, minor)` at or after `(want_major, want_minor)`.
fn at_least(have: (u32, u32), want: (u32, u32)) -> bool {
    have >= want
}

/// Whether this server logs binary unless told not to (MySQL 8.0+).
pub fn logs_binary_by_default(flavor: Flavor, version: (u32, u32)) -> bool {
    flavor == Flavor::Mysql && at_least(version, (8, 0))
}

/// Appends to the option file `text` what this version needs to start as
/// tidemark runs it: `disable_log_bin` where the binary log is on by
/// default (MySQL 8.0+) and no line above turned it on, and for MySQL a
/// `secure_file_priv` in the server's private `tmpdir` (builds compiled
/// with the default `/var/lib/mysql-files` refuse to start where that
/// directory is missing), unless the text sets one.
pub fn version_lines(flavor: Flavor, version: (u32, u32), tmpdir: &Path, text: &mut String) {
    if flavor == Flavor::Mysql && !names_option(text, "secure_file_priv") {
        text.push_str("# MySQL: LOAD DATA / SELECT INTO OUTFILE only in the private tmpdir\n");
        text.push_str(&format!("secure_file_priv = {}\n", tmpdir.display()));
    }
    if logs_binary_by_default(flavor, version) && !names_option(text, "log_bin") {
        text.push_str("# MySQL 8 logs binary by default; no config asked for it\n");
        text.push_str("disable_log_bin\n");
    }
}

/// Whether `mysqld --verbose --help` says nothing about an unknown
/// variable in the option file (MySQL 9.x: it exits 0, and only the start
/// fails), so the check must look for each setting in its variable table.
pub fn help_ignores_unknown(flavor: Flavor, version: (u32, u32)) -> bool {
    flavor == Flavor::Mysql && at_least(version, (9, 0))
}

/// The redo log settings [`redo_lines`] turns into
/// `innodb_redo_log_capacity` on MySQL 9.x.
pub const REDO_FILE_SETTINGS: [&str; 2] = ["innodb_log_file_size", "innodb_log_files_in_group"];

/// Whether this server sizes its redo log only with
/// `innodb_redo_log_capacity` (MySQL 9.0+ no longer knows
/// `innodb_log_file_size` and `innodb_log_files_in_group`; 8.0.30-8.4 take
/// them, deprecated, as capacity = size × files).
pub fn redo_capacity_only(flavor: Flavor, version: (u32, u32)) -> bool {
    flavor == Flavor::Mysql && at_least(version, (9, 0))
}

/// The option file `text` as this version takes its redo log size: on
/// MySQL 9.0+ the `innodb_log_file_size` and `innodb_log_files_in_group`
/// lines (the shipped profiles', a `-c` override's) become one
/// `innodb_redo_log_capacity` of size × files (2 files unless a line says
/// otherwise), as 8.0.30+ computes it; other versions get `text` as it is.
pub fn redo_lines(flavor: Flavor, version: (u32, u32), text: &str) -> String {
    if !redo_capacity_only(flavor, version) {
        return text.to_string();
    }
    let value = |line: &str, name: &str| {
        let (n, v) = line.split_once('=')?;
        (!line.trim_start().starts_with('#') && normalize(n) == name).then(|| v.trim().to_string())
    };
    let [size_name, files_name] = REDO_FILE_SETTINGS;
    let files: u64 = text
        .lines()
        .filter_map(|l| value(l, files_name))
        .next_back()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let mut out = String::new();
    for line in text.lines() {
        if value(line, files_name).is_some() {
            continue;
        }
        match value(line, size_name)
            .and_then(|v| Some((super::seeds::size_bytes(&v)?, v)))
        {
            Some((bytes, v)) => out.push_str(&format!(
                "# MySQL 9 sizes the redo log by capacity: innodb_log_file_size = {v} x {files} files\n\
                 innodb_redo_log_capacity = {}M\n",
                (bytes * files) >> 20
            )),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// Whether initialising runs a separate install script (MariaDB, MySQL
/// before 5.7) rather than the server's `--initialize-insecure`.
pub fn initialises_with_script(flavor: Flavor, version: (u32, u32)) -> bool {
    flavor == Flavor::MariaDb || !at_least(version, (5, 7))
}

/// The program and arguments that initialise `datadir`. `script_help` is
/// the install script's `--help` text (options differ between releases).
pub fn init_command(
    bin: &MyBinaries,
    datadir: &Path,
    tmpdir: &Path,
    script_help: &str,
) -> (std::path::PathBuf, Vec<String>) {
    let common = [
        "--no-defaults".to_string(),
        format!("--basedir={}", bin.basedir.display()),
        format!("--datadir={}", datadir.display()),
        format!("--tmpdir={}", tmpdir.display()),
    ];
    match (
        &bin.install_db,
        initialises_with_script(bin.flavor, bin.major_minor()),
    ) {
        (Some(script), true) => {
            let mut args = common.to_vec();
            args.push("--skip-name-resolve".into());
            if bin.flavor == Flavor::MariaDb {
                args.push("--auth-root-authentication-method=normal".into());
            }
            // Only newer scripts know these; older ones stop on them.
            if script_help.contains("--skip-test-db") {
                args.push("--skip-test-db".into());
            }
            // MySQL 5.6 writes a my.cnf into the basedir unless told not to.
            if script_help.contains("--keep-my-cnf") {
                args.push("--keep-my-cnf".into());
            }
            (script.clone(), args)
        }
        _ => {
            let mut args = vec![common[0].clone(), "--initialize-insecure".into()];
            args.extend_from_slice(&common[1..]);
            (bin.server.clone(), args)
        }
    }
}

/// Settings InnoDB fixes when the data directory is created and refuses to
/// change later (the seeds' 32 undo tablespaces, a 512M first data file).
const INIT_TIME: &[&str] = &[
    "innodb_undo_tablespaces",
    "innodb_data_file_path",
    "innodb_page_size",
];

/// The option file's init-time settings as `--name=value` options for the
/// initialisation, which otherwise reads no option file (the last
/// occurrence of each wins, as in the server).
pub fn init_time_options(text: &str) -> Vec<String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = normalize(name);
        if INIT_TIME.contains(&name.as_str()) {
            out.retain(|(n, _)| *n != name);
            out.push((name, value.trim().to_string()));
        }
    }
    out.into_iter().map(|(n, v)| format!("--{n}={v}")).collect()
}

/// Whether the server has `CREATE USER IF NOT EXISTS` and `ALTER USER …
/// IDENTIFIED BY` (MySQL 5.7+, MariaDB 10.2+).
fn has_alter_user(flavor: Flavor, version: (u32, u32)) -> bool {
    flavor == Flavor::MariaDb || at_least(version, (5, 7))
}

/// The statements that create `user` for 127.0.0.1 and localhost with
/// password `pw`, grant it everything and create database `db`.
pub fn account_statements(
    flavor: Flavor,
    version: (u32, u32),
    user: &str,
    pw: &str,
    db: &str,
) -> Vec<String> {
    let db = db.replace('`', "``");
    let create = if has_alter_user(flavor, version) {
        format!(
            "CREATE USER IF NOT EXISTS '{user}'@'127.0.0.1' IDENTIFIED BY '{pw}', \
             '{user}'@'localhost' IDENTIFIED BY '{pw}'"
        )
    } else {
        format!(
            "CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{pw}', '{user}'@'localhost' \
             IDENTIFIED BY '{pw}'"
        )
    };
    vec![
        // Statements naming the password stay out of the binary log.
        "SET SESSION sql_log_bin = 0".to_string(),
        create,
        format!("GRANT ALL PRIVILEGES ON *.* TO '{user}'@'127.0.0.1' WITH GRANT OPTION"),
        format!("GRANT ALL PRIVILEGES ON *.* TO '{user}'@'localhost' WITH GRANT OPTION"),
        format!("CREATE DATABASE IF NOT EXISTS `{db}`"),
    ]
}

/// The statement giving existing `account` (`'root'@'localhost'`)
/// password `pw`.
pub fn set_password(flavor: Flavor, version: (u32, u32), account: &str, pw: &str) -> String {
    if has_alter_user(flavor, version) {
        format!("ALTER USER {account} IDENTIFIED BY '{pw}'")
    } else {
        format!("SET PASSWORD FOR {account} = PASSWORD('{pw}')")
    }
}

/// The query listing the variables whose value did not come from the
/// compiled-in default, for servers that record where values came from;
/// `None` for MySQL before 8.0 (use [`option_file_names`]).
pub fn variables_origin_query(flavor: Flavor, version: (u32, u32)) -> Option<&'static str> {
    match flavor {
        Flavor::MariaDb => Some(
            "SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE FROM information_schema.SYSTEM_VARIABLES \
             WHERE GLOBAL_VALUE_ORIGIN IN ('CONFIG', 'COMMAND-LINE', 'AUTO', 'SQL') ORDER BY 1",
        ),
        Flavor::Mysql if at_least(version, (8, 0)) => Some(
            "SELECT LOWER(i.VARIABLE_NAME), g.VARIABLE_VALUE FROM performance_schema.variables_info i \
             JOIN performance_schema.global_variables g ON g.VARIABLE_NAME = i.VARIABLE_NAME \
             WHERE i.VARIABLE_SOURCE <> 'COMPILED' ORDER BY 1",
        ),
        Flavor::Mysql => None,
    }
}

/// The variable names an option file sets, normalised (`innodb-x` →
/// `innodb_x`), sorted and without repeats; section headers, comments and
/// bare flags count too (a bare `disable_log_bin` names no value).
pub fn option_file_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('=').map(|(n, _)| normalize(n)))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bins(flavor: Flavor, version: &str, script: Option<&str>) -> MyBinaries {
        MyBinaries {
            server: "/b/bin/mysqld".into(),
            basedir: "/b".into(),
            install_db: script.map(Into::into),
            data_template: None,
            flavor,
            version: version.into(),
            version_text: String::new(),
            source: String::new(),
            library_path: None,
            preload: None,
        }
    }

    fn init(b: &MyBinaries, help: &str) -> String {
        let (program, args) = init_command(b, Path::new("/d"), Path::new("/t"), help);
        format!("{} {}", program.display(), args.join(" "))
    }

    #[test]
    fn each_version_initialises_its_own_way() {
        let common = "--no-defaults --basedir=/b --datadir=/d --tmpdir=/t";
        assert_eq!(
            init(&bins(Flavor::Mysql, "8.4.7", None), ""),
            "/b/bin/mysqld --no-defaults --initialize-insecure --basedir=/b --datadir=/d --tmpdir=/t"
        );
        assert_eq!(
            init(&bins(Flavor::Mysql, "5.7.44", None), ""),
            "/b/bin/mysqld --no-defaults --initialize-insecure --basedir=/b --datadir=/d --tmpdir=/t"
        );
        let my56 = bins(Flavor::Mysql, "5.6.51", Some("/b/scripts/mysql_install_db"));
        assert_eq!(
            init(&my56, "  --keep-my-cnf  Don't try to create my.cnf"),
            format!("/b/scripts/mysql_install_db {common} --skip-name-resolve --keep-my-cnf")
        );
        let ma102 = bins(
            Flavor::MariaDb,
            "10.2.11",
            Some("/b/scripts/mysql_install_db"),
        );
        assert_eq!(
            init(&ma102, "--auth-root-authentication-method=normal|socket"),
            format!(
                "/b/scripts/mysql_install_db {common} --skip-name-resolve \
                 --auth-root-authentication-method=normal"
            )
        );
        let ma1011 = bins(
            Flavor::MariaDb,
            "10.11.19",
            Some("/usr/bin/mariadb-install-db"),
        );
        assert!(init(&ma1011, "--skip-test-db").ends_with("normal --skip-test-db"));
    }

    #[test]
    fn mysql_9_sizes_its_redo_log_by_capacity() {
        let text = "[mysqld]\ninnodb_log_file_size = 256M\n# innodb_log_file_size = 1G\n";
        let nine = redo_lines(Flavor::Mysql, (9, 7), text);
        assert!(nine.contains("innodb_redo_log_capacity = 512M\n"), "{nine}");
        assert!(!nine.lines().any(|l| l.starts_with("innodb_log_file_size")));
        let three = "innodb_log_files_in_group = 3\ninnodb-log-file-size = 1G\n";
        assert!(redo_lines(Flavor::Mysql, (9, 0), three).contains("= 3072M"));
        for (flavor, v) in [(Flavor::Mysql, (8, 0)), (Flavor::MariaDb, (11, 8))] {
            assert_eq!(redo_lines(flavor, v, text), text);
        }
    }

    #[test]
    fn binary_log_and_accounts_follow_the_version() {
        assert!(logs_binary_by_default(Flavor::Mysql, (8, 0)));
        assert!(!logs_binary_by_default(Flavor::Mysql, (5, 7)));
        assert!(!logs_binary_by_default(Flavor::MariaDb, (11, 4)));
        let old = account_statements(Flavor::Mysql, (5, 6), "tm", "pw", "d`b");
        assert!(
            old[1].starts_with("CREATE USER 'tm'@'127.0.0.1'"),
            "{}",
            old[1]
        );
        assert_eq!(old[4], "CREATE DATABASE IF NOT EXISTS `d``b`");
        let new = account_statements(Flavor::MariaDb, (10, 2), "tm", "pw", "db");
        assert!(new[1].starts_with("CREATE USER IF NOT EXISTS"));
        assert_eq!(
            set_password(Flavor::Mysql, (5, 6), "'root'@'localhost'", "pw"),
            "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('pw')"
        );
        assert_eq!(
            set_password(Flavor::Mysql, (5, 7), "'root'@'localhost'", "pw"),
            "ALTER USER 'root'@'localhost' IDENTIFIED BY 'pw'"
        );
    }

    #[test]
    fn old_mysql_reads_the_option_files_names_back() {
        assert!(variables_origin_query(Flavor::Mysql, (5, 7)).is_none());
        assert!(variables_origin_query(Flavor::Mysql, (8, 0)).is_some());
        assert!(variables_origin_query(Flavor::MariaDb, (10, 2)).is_some());
        let text = "[mysqld]\n# x = 1\ninnodb-io-capacity = 5\ninnodb_io_capacity=6\n\
                    disable_log_bin\nport = 3306\n";
        assert_eq!(option_file_names(text), ["innodb_io_capacity", "port"]);
        let t = "innodb_undo_tablespaces = 8\n# innodb_page_size = 4k\ninnodb-data-file-path = \
                 ibdata1:512M:autoextend\ninnodb_undo_tablespaces=32\nport = 1\n";
        assert_eq!(
            init_time_options(t),
            [
                "--innodb_data_file_path=ibdata1:512M:autoextend",
                "--innodb_undo_tablespaces=32"
            ]
        );
    }
}
