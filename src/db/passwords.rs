//! Where a database password comes from when the URL does not carry one:
//! the places users already keep them, so a command line (which tidemark
//! records) need not hold a secret.
//!
//! - any family: `?password_env=NAME` in the URL reads environment variable
//!   `NAME` (a plan file can name the variable instead of the secret);
//! - PostgreSQL, as libpq reads them: `PGPASSWORD`, the `password` of the
//!   service `PGSERVICE` names in `PGSERVICEFILE` (or `~/.pg_service.conf`,
//!   then `PGSYSCONFDIR/pg_service.conf`), then the first matching line of
//!   `PGPASSFILE` (or `~/.pgpass`), which is ignored, as libpq does, when
//!   group or others can read it;
//! - MySQL/MariaDB: `password` in the `[client]` (or `[client-server]`,
//!   `[client-mariadb]`) group of `~/.my.cnf`, then `MYSQL_PWD`.
//!
//! A URL password equal to [`REDACTED`] (a stored run's URL, for
//! `--resume`) counts as no password.

use std::path::{Path, PathBuf};

use crate::util::redact::REDACTED;

/// The password a URL gave, unless it is the redaction marker.
pub(crate) fn given(password: Option<String>) -> Option<String> {
    password.filter(|p| p != REDACTED)
}

/// The value of environment variable `name` for `?password_env=NAME`; the
/// error names the variable, never a value.
pub(crate) fn from_env_named(name: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err(
            "password_env= in the database URL names no variable; e.g. ?password_env=BENCH_PW"
                .into(),
        );
    }
    std::env::var(name).map_err(|_| {
        format!(
            "the database URL takes its password from environment variable {name} (password_env), which is not set: export it"
        )
    })
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn home_file(name: &str) -> Option<PathBuf> {
    env("HOME").map(|h| Path::new(&h).join(name))
}

/// What a PostgreSQL password is looked up for.
pub struct PgKey<'a> {
    pub host: &'a str,
    pub port: u16,
    pub dbname: &'a str,
    pub user: &'a str,
}

/// The PostgreSQL password from `PGPASSWORD`, the `PGSERVICE` service or the
/// password file, in libpq's order.
pub(crate) fn postgres(key: &PgKey<'_>) -> Option<String> {
    if let Some(p) = env("PGPASSWORD") {
        return Some(p);
    }
    if let Some(service) = env("PGSERVICE") {
        let files = [
            env("PGSERVICEFILE").map(PathBuf::from),
            home_file(".pg_service.conf"),
            env("PGSYSCONFDIR").map(|d| Path::new(&d).join("pg_service.conf")),
        ];
        for file in files.into_iter().flatten() {
            if let Ok(text) = std::fs::read_to_string(&file)
                && let Some(p) = ini_value(&text, &[service.as_str()], "password")
            {
                return Some(p);
            }
        }
    }
    let file = env("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| home_file(".pgpass"))?;
    if !private_file(&file) {
        return None;
    }
    pgpass_lookup(&std::fs::read_to_string(file).ok()?, key)
}

/// Whether only the owner may read `file` (libpq's rule for `.pgpass`).
fn private_file(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o077 == 0)
}

/// The password of the first `host:port:db:user:password` line matching
/// `key` (`*` matches anything; `\:` and `\\` escape; `localhost` also
/// matches a unix socket directory).
pub fn pgpass_lookup(text: &str, key: &PgKey<'_>) -> Option<String> {
    let host = if key.host.starts_with('/') {
        "localhost"
    } else {
        key.host
    };
    let port = key.port.to_string();
    let want = [host, port.as_str(), key.dbname, key.user];
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass(line);
            if fields.len() < 5 {
                return None;
            }
            let matches = want
                .iter()
                .zip(&fields)
                .all(|(w, f)| f == "*" || f == w || (*w == key.host && f == key.host));
            matches.then(|| fields[4..].join(":"))
        })
}

/// A `.pgpass` line split at unescaped colons, escapes removed.
fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    fields.last_mut().expect("one field").push(n);
                }
            }
            ':' => fields.push(String::new()),
            c => fields.last_mut().expect("one field").push(c),
        }
    }
    fields
}

/// The MySQL password from `~/.my.cnf` or `MYSQL_PWD`.
pub(crate) fn mysql() -> Option<String> {
    let from_file = home_file(".my.cnf")
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| {
            ini_value(
                &t,
                &["client", "client-server", "client-mariadb"],
                "password",
            )
        });
    from_file.or_else(|| env("MYSQL_PWD"))
}

/// The last `key = value` of any of `groups` in an INI-style option file
/// (`[group]` headers, `#`/`;` comments, values optionally quoted).
pub fn ini_value(text: &str, groups: &[&str], key: &str) -> Option<String> {
    let mut inside = false;
    let mut found = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = groups.contains(&name.trim());
            continue;
        }
        if !inside {
            continue;
        }
        let (k, v) = line.split_once('=').unwrap_or((line, ""));
        if k.trim().replace('_', "-") == key {
            let v = v.trim();
            let unquoted = [('"', '"'), ('\'', '\'')]
                .iter()
                .find_map(|(a, b)| v.strip_prefix(*a).and_then(|v| v.strip_suffix(*b)));
            found = Some(unquoted.unwrap_or(v).to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(host: &'a str, dbname: &'a str) -> PgKey<'a> {
        PgKey {
            host,
            port: 5432,
            dbname,
            user: "bob",
        }
    }

    #[test]
    fn pgpass_lines_match_with_wildcards_and_escapes() {
        let text = "# comment\nother:5432:*:bob:no\n127.0.0.1:5432:db:bob:a\\:b\\\\c\n*:*:*:bob:any:colon\n";
        assert_eq!(
            pgpass_lookup(text, &key("127.0.0.1", "db")).as_deref(),
            Some("a:b\\c")
        );
        assert_eq!(
            pgpass_lookup(text, &key("h", "x")).as_deref(),
            Some("any:colon")
        );
        let sock = "localhost:5432:db:bob:s\n";
        assert_eq!(
            pgpass_lookup(sock, &key("/run/pg", "db")).as_deref(),
            Some("s")
        );
        assert_eq!(pgpass_lookup("h:1:d:u\n", &key("h", "d")), None);
    }

    #[test]
    fn option_file_values_by_group() {
        let text = "[mysqld]\npassword=server\n[client]\nuser = bob\npassword = \"pw 1\"\n[mysql]\npassword=other\n";
        assert_eq!(
            ini_value(text, &["client"], "password").as_deref(),
            Some("pw 1")
        );
        let svc = "[bench]\nhost=h\npassword=x\n[other]\npassword=y\n";
        assert_eq!(ini_value(svc, &["bench"], "password").as_deref(), Some("x"));
        assert_eq!(ini_value(svc, &["none"], "password"), None);
    }

    #[test]
    fn redacted_marker_is_no_password() {
        assert_eq!(given(Some(REDACTED.into())), None);
        assert_eq!(given(Some("p".into())).as_deref(), Some("p"));
        assert!(from_env_named("TIDEMARK_TEST_SURELY_UNSET_VAR").is_err());
    }
}
