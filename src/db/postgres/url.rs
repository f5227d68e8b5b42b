//! Connection options for PostgreSQL and their `postgres://` URL form.

use std::fmt;

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
    /// (or `prefer`/`allow`) are accepted.
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
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            Some(u) => match u.split_once(':') {
                Some((u, p)) => (decode(u, "user name")?, Some(decode(p, "password")?)),
                None => (decode(u, "user name")?, None),
            },
            None => (String::new(), None),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
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
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (decode(h, "host")?, Some(p)),
                None => (decode(hostport, "host")?, None),
            }
        };
        let mut opts = PgConnectOptions {
            host: if host.is_empty() {
                "localhost".to_string()
            } else {
                host
            },
            port: 5432,
            user: if user.is_empty() {
                default_user()
            } else {
                user
            },
            password,
            dbname: decode(path, "database name")?,
            application_name: DEFAULT_APP.to_string(),
        };
        if let Some(p) = port.filter(|p| !p.is_empty()) {
            opts.port = parse_port(p)?;
        }
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = decode(v, k)?;
            match k {
                "host" => opts.host = v,
                "port" => opts.port = parse_port(&v)?,
                "application_name" => opts.application_name = v,
                "sslmode" if matches!(v.as_str(), "disable" | "allow" | "prefer") => {}
                "sslmode" => {
                    return Err(format!(
                        "sslmode={v} is not supported (no TLS in this client); use sslmode=disable"
                    ));
                }
                _ => {
                    return Err(format!(
                        "unknown database URL parameter `{k}`; supported: host, port, application_name, sslmode=disable"
                    ));
                }
            }
        }
        if opts.dbname.is_empty() {
            opts.dbname = opts.user.clone();
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

fn default_user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "postgres".to_string())
}

fn parse_port(p: &str) -> Result<u16, String> {
    match p.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!(
            "port in database URL is not a number from 1 to 65535 (percent-encode `/`, `@`, `?` in the password); e.g. {EXAMPLE}"
        )),
    }
}

/// Percent-decodes one URL component; `what` names it in errors.
pub(crate) fn decode(s: &str, what: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(v) => out.push(v),
                None => {
                    return Err(format!(
                        "bad percent-escape in the {what} of the database URL; write `%` as %25"
                    ));
                }
            }
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| format!("the {what} in the database URL is not UTF-8 after percent-decoding"))
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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
        assert_eq!(o.user, default_user());
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
