//! Connection options for MySQL/MariaDB, their `mysql://` URL form, and the
//! connection character sets tidemark can pin.

use std::fmt;
use std::path::PathBuf;

use crate::db::passwords;
use crate::db::url::{HostPart, decode, default_user, encode, parse_port, query_pairs, split_url};

/// The connection character set when none is chosen: the seeds run every
/// MySQL and MariaDB version with latin1, so a changed client default never
/// shows up as a server regression.
pub const DEFAULT_CHARSET: &str = "latin1";

/// Character sets a connection can be pinned to, with the collation id the
/// handshake announces for each (the charset's default collation).
const CHARSETS: &[(&str, u8)] = &[
    ("latin1", 8),
    ("utf8mb4", 45),
    ("utf8mb3", 33),
    ("utf8", 33),
    ("ascii", 11),
    ("binary", 63),
];

/// The names [`collation_id`] knows, for error messages.
pub fn charset_names() -> String {
    CHARSETS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The handshake collation id of `charset`, `None` if it is not supported.
pub fn collation_id(charset: &str) -> Option<u8> {
    CHARSETS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(charset))
        .map(|(_, id)| *id)
}

/// Checks a charset name; the error is one line naming the accepted ones.
pub fn check_charset(charset: &str) -> Result<(), String> {
    match collation_id(charset) {
        Some(_) => Ok(()),
        None => Err(format!(
            "MySQL character set '{charset}' is not supported: use one of {}",
            charset_names()
        )),
    }
}

/// How to reach a MySQL or MariaDB server.
#[derive(Clone, PartialEq)]
pub struct MyConnectOptions {
    /// Hostname or IP address for TCP (ignored when `socket` is set).
    pub host: String,
    pub port: u16,
    /// Unix socket path; when set, tidemark connects through it.
    pub socket: Option<PathBuf>,
    pub user: String,
    /// Never displayed.
    pub password: Option<String>,
    /// Database to use; empty for none.
    pub dbname: String,
    /// Connection character set, pinned with `SET NAMES` after login.
    pub charset: String,
    /// The URL scheme the user wrote (`mysql` or `mariadb`), for display.
    pub scheme: String,
}

const EXAMPLE: &str = "mysql://user:password@127.0.0.1:3306/dbname";

impl MyConnectOptions {
    /// Parses `mysql://user[:password]@host[:port]/db` (or `mariadb://`).
    /// Defaults: host 127.0.0.1, port 3306, user `$USER` or `root`, the
    /// charset [`DEFAULT_CHARSET`]. Query parameters: `socket=/path` (a unix
    /// socket), `charset=NAME`, `password_env=NAME` (the password from
    /// environment variable `NAME`). Components are percent-decoded. Without
    /// a password, `~/.my.cnf` and `MYSQL_PWD` are tried
    /// ([`crate::db::passwords`]).
    pub fn from_url(url: &str) -> Result<MyConnectOptions, String> {
        let (scheme, rest) = match url.split_once("://") {
            Some((s @ ("mysql" | "mariadb"), rest)) => (s, rest),
            Some((scheme, _)) => {
                return Err(format!(
                    "database URL scheme `{scheme}` is not a MySQL one; use mysql:// or mariadb://, e.g. {EXAMPLE}"
                ));
            }
            None => {
                return Err(format!(
                    "database URL must start with mysql:// or mariadb://, e.g. {EXAMPLE}"
                ));
            }
        };
        let parts = split_url(rest)?;
        let (host, port) = match parts.host {
            HostPart::Bracketed(v6) => {
                let (h, after) = v6
                    .split_once(']')
                    .ok_or("IPv6 host in database URL lacks its closing `]`")?;
                (h.to_string(), after.strip_prefix(':'))
            }
            HostPart::Plain(host, port) => (host, port),
        };
        let mut opts = MyConnectOptions {
            host: if host.is_empty() {
                "127.0.0.1".to_string()
            } else {
                host
            },
            port: 3306,
            socket: None,
            user: if parts.user.is_empty() {
                default_user("root")
            } else {
                parts.user
            },
            password: passwords::given(parts.password),
            dbname: decode(parts.path, "database name")?,
            charset: DEFAULT_CHARSET.to_string(),
            scheme: scheme.to_string(),
        };
        if let Some(p) = port.filter(|p| !p.is_empty()) {
            opts.port = parse_port(p, EXAMPLE)?;
        }
        for pair in query_pairs(parts.query) {
            let (k, v) = pair?;
            match k {
                "socket" if v.starts_with('/') => opts.socket = Some(PathBuf::from(v)),
                "socket" => {
                    return Err(format!(
                        "socket={v} in the database URL is not an absolute path; e.g. ?socket=/run/mysqld/mysqld.sock"
                    ));
                }
                "password_env" => opts.password = Some(passwords::from_env_named(&v)?),
                "charset" => {
                    check_charset(&v)?;
                    opts.charset = v.to_ascii_lowercase();
                }
                _ => {
                    return Err(format!(
                        "unknown database URL parameter `{k}`; supported: socket, charset, password_env"
                    ));
                }
            }
        }
        if opts.password.is_none() {
            opts.password = passwords::mysql();
        }
        Ok(opts)
    }

    /// The URL without the password (for display and for storing).
    pub fn display_url(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            encode(&self.host)
        };
        let mut url = format!(
            "{}://{}@{host}:{}/{}",
            self.scheme,
            encode(&self.user),
            self.port,
            encode(&self.dbname)
        );
        let mut sep = '?';
        if let Some(s) = &self.socket {
            url.push_str(&format!("{sep}socket={}", encode(&s.to_string_lossy())));
            sep = '&';
        }
        if self.charset != DEFAULT_CHARSET {
            url.push_str(&format!("{sep}charset={}", self.charset));
        }
        url
    }
}

impl fmt::Debug for MyConnectOptions {
    /// Like a derived `Debug`, but never shows the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MyConnectOptions")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("socket", &self.socket)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("dbname", &self.dbname)
            .field("charset", &self.charset)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_url_and_display() {
        let o = MyConnectOptions::from_url(
            "mariadb://bob:p%40ss@db.example:3307/sb?charset=utf8mb4&socket=%2Frun%2Fm.sock",
        )
        .unwrap();
        assert_eq!(
            (o.host.as_str(), o.port, o.user.as_str()),
            ("db.example", 3307, "bob")
        );
        assert_eq!(
            (o.password.as_deref(), o.dbname.as_str()),
            (Some("p@ss"), "sb")
        );
        assert_eq!(o.charset, "utf8mb4");
        assert_eq!(o.socket, Some(PathBuf::from("/run/m.sock")));
        assert_eq!(
            o.display_url(),
            "mariadb://bob@db.example:3307/sb?socket=%2Frun%2Fm.sock&charset=utf8mb4"
        );
        assert_eq!(
            MyConnectOptions::from_url(&o.display_url()).unwrap().socket,
            o.socket
        );
        assert!(!format!("{o:?}").contains("p@ss"));
        let o = MyConnectOptions::from_url("mysql://u@h/d").unwrap();
        assert_eq!((o.port, o.charset.as_str()), (3306, "latin1"));
        assert_eq!(o.display_url(), "mysql://u@h:3306/d");
    }

    #[test]
    fn errors_name_the_part() {
        let err = |u: &str| MyConnectOptions::from_url(u).unwrap_err();
        assert!(err("postgres://u@h/d").contains("scheme `postgres`"));
        assert!(err("h:3306").contains("must start with mysql://"));
        assert!(err("mysql://u:secret@h:x/d").contains("port"));
        assert!(!err("mysql://u:secret@h:secret/d").contains("secret"));
        assert!(err("mysql://u@h/d?charset=klingon").contains("'klingon' is not supported"));
        assert!(err("mysql://u@h/d?socket=rel").contains("absolute"));
        assert!(err("mysql://u@h/d?ssl=1").contains("`ssl`"));
    }

    #[test]
    fn charsets_have_collations() {
        assert_eq!(collation_id("latin1"), Some(8));
        assert_eq!(collation_id("UTF8MB4"), Some(45));
        assert_eq!(collation_id("klingon"), None);
        assert!(check_charset("ascii").is_ok());
        assert!(charset_names().starts_with("latin1, utf8mb4"));
    }
}
