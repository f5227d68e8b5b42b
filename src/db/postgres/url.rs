//! Connection options for PostgreSQL and their `postgres://` URL form.

use std::fmt;

use crate::db::passwords;
use crate::db::url::{HostPart, decode, default_user, encode, parse_port, query_pairs, split_url};

/// How to reach a PostgreSQL server.
#[derive(Clone, PartialEq)]
pub struct PgConnectOptions {
    /// Hostname or IP address, or an absolute path: the directory of the
    /// server's unix socket (`{host}/.s.PGSQL.{port}`).
    pub host: String,
    /// TCP port, or the number in the unix socket's file name.
    pub port: u16,
    /// Role to log in as.
    pub user: String,
    /// Needed for password, md5 and SCRAM authentication; never displayed.
    pub password: Option<String>,
    /// Database to connect to.
    pub dbname: String,
    /// Shown in `pg_stat_activity`.
    pub application_name: String,
}

const DEFAULT_APP: &str = "tidemark";
const EXAMPLE: &str = "postgres://user:password@localhost:5432/dbname";

impl PgConnectOptions {
    /// Parses `postgres://user[:password]@host[:port]/db` (or `postgresql://`).
    /// Defaults: host localhost, port 5432, user `$USER` or `postgres`,
    /// db = user. User, password, host and db are percent-decoded, so a unix
    /// socket directory can be given as `postgres://u@%2Ftmp/db`. Query
    /// parameters `host`, `port`, `application_name` and `sslmode=disable`
    /// (or `prefer`/`allow`) are accepted, and `password_env=NAME` (the
    /// password from environment variable `NAME`). Without a password the
    /// places libpq reads are tried ([`crate::db::passwords`]).
    pub fn from_url(url: &str) -> Result<PgConnectOptions, String> {
        let rest = match url.split_once("://") {
            Some(("postgres" | "postgresql", rest)) => rest,
            Some((scheme, _)) => {
                return Err(format!(
                    "database URL scheme `{scheme}` is not supported; use postgres://, e.g. {EXAMPLE}"
                ));
            }
            None => {
                return Err(format!(
                    "database URL must start with postgres://, e.g. {EXAMPLE}"
                ));
            }
        };
        let parts = split_url(rest)?;
        let (host, port) = match parts.host {
            HostPart::Bracketed(v6) => {
                let (h, after) = v6.split_once(']').ok_or(
                    "IPv6 host in database URL lacks its closing `]`, e.g. postgres://u@[::1]:5432/db",
                )?;
                let port = match after {
                    "" => None,
                    p => Some(
                        p.strip_prefix(':')
                            .ok_or("unexpected text after `]` in database URL; expected `:port`")?,
                    ),
                };
                (h.to_string(), port)
            }
            HostPart::Plain(host, port) => (host, port),
        };
        let mut opts = PgConnectOptions {
            host: if host.is_empty() {
                "localhost".to_string()
            } else {
                host
            },
            port: 5432,
            user: if parts.user.is_empty() {
                default_user("postgres")
            } else {
                parts.user
            },
            password: passwords::given(parts.password),
            dbname: decode(parts.path, "database name")?,
            application_name: DEFAULT_APP.to_string(),
        };
        if let Some(p) = port.filter(|p| !p.is_empty()) {
            opts.port = parse_port(p, EXAMPLE)?;
        }
        for pair in query_pairs(parts.query) {
            let (k, v) = pair?;
            match k {
                "host" => opts.host = v,
                "port" => opts.port = parse_port(&v, EXAMPLE)?,
                "application_name" => opts.application_name = v,
                "password_env" => opts.password = Some(passwords::from_env_named(&v)?),
                "sslmode" if matches!(v.as_str(), "disable" | "allow" | "prefer") => {}
                "sslmode" => {
                    return Err(format!(
                        "sslmode={v} is not supported (no TLS in this client); use sslmode=disable"
                    ));
                }
                _ => {
                    return Err(format!(
                        "unknown database URL parameter `{k}`; supported: host, port, application_name, password_env, sslmode=disable"
                    ));
                }
            }
        }
        if opts.dbname.is_empty() {
            opts.dbname = opts.user.clone();
        }
        if opts.password.is_none() {
            opts.password = passwords::postgres(&passwords::PgKey {
                host: &opts.host,
                port: opts.port,
                dbname: &opts.dbname,
                user: &opts.user,
            });
        }
        Ok(opts)
    }

    /// The URL without the password (for display and for storing with results).
    pub fn display_url(&self) -> String {
        let host = if self.host.contains(':') && !self.host.starts_with('/') {
            format!("[{}]", self.host)
        } else {
            encode(&self.host)
        };
        let mut url = format!(
            "postgres://{}@{host}:{}/{}",
            encode(&self.user),
            self.port,
            encode(&self.dbname)
        );
        if self.application_name != DEFAULT_APP {
            url.push_str("?application_name=");
            url.push_str(&encode(&self.application_name));
        }
        url
    }
}

impl fmt::Debug for PgConnectOptions {
    /// Like a derived `Debug`, but never shows the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgConnectOptions")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("dbname", &self.dbname)
            .field("application_name", &self.application_name)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_url() {
        let o = PgConnectOptions::from_url(
            "postgresql://bob:p%40ss%2Fw@db.example:6543/sb?application_name=x",
        )
        .unwrap();
        assert_eq!(
            (o.host.as_str(), o.port, o.user.as_str()),
            ("db.example", 6543, "bob")
        );
        assert_eq!(
            (o.password.as_deref(), o.dbname.as_str()),
            (Some("p@ss/w"), "sb")
        );
        assert_eq!(o.application_name, "x");
        assert_eq!(
            o.display_url(),
            "postgres://bob@db.example:6543/sb?application_name=x"
        );
        assert!(!format!("{o:?}").contains("p@ss"));
    }

    #[test]
    fn defaults() {
        let o = PgConnectOptions::from_url("postgres://alice@localhost").unwrap();
        assert_eq!(
            (o.port, o.dbname.as_str(), o.password),
            (5432, "alice", None)
        );
        let o = PgConnectOptions::from_url("postgres://h/").unwrap();
        assert_eq!(o.user, default_user("postgres"));
        assert_eq!(o.dbname, o.user);
        assert_eq!(o.application_name, "tidemark");
    }

    #[test]
    fn unix_socket_and_ipv6() {
        let o = PgConnectOptions::from_url("postgres://u@%2Ftmp%2Fpg:55432/d").unwrap();
        assert_eq!((o.host.as_str(), o.port), ("/tmp/pg", 55432));
        assert_eq!(o.display_url(), "postgres://u@%2Ftmp%2Fpg:55432/d");
        assert_eq!(PgConnectOptions::from_url(&o.display_url()).unwrap(), o);
        let o = PgConnectOptions::from_url("postgres://u@/d?host=/run/pg&port=7").unwrap();
        assert_eq!((o.host.as_str(), o.port), ("/run/pg", 7));
        let o = PgConnectOptions::from_url("postgres://u:pw@[::1]:5433/d").unwrap();
        assert_eq!((o.host.as_str(), o.port), ("::1", 5433));
        assert_eq!(o.display_url(), "postgres://u@[::1]:5433/d");
    }

    #[test]
    fn errors_name_the_part() {
        let err = |u: &str| PgConnectOptions::from_url(u).unwrap_err();
        assert!(err("mysql://u@h/d").contains("scheme `mysql`"));
        assert!(err("localhost:5432").contains("must start with postgres://"));
        assert!(err("postgres://u@h:99999/d").contains("port"));
        assert!(err("postgres://u:secret@h:x/d").contains("port"));
        assert!(!err("postgres://u:secret@h:secret/d").contains("secret"));
        assert!(err("postgres://u%zz@h/d").contains("user name"));
        assert!(err("postgres://u@h/d?sslmode=require").contains("sslmode"));
        assert!(err("postgres://u@h/d?foo=1").contains("`foo`"));
        assert!(err("postgres://u@[::1/d").contains("`]`"));
    }
}
