//! Redaction of secrets in text that tidemark records or shows: the
//! password of every `scheme://user:password@host…` URL becomes
//! [`REDACTED`], so a command line, a stored plan, an error message or a
//! report never carries a database password.
//!
//! This is the one place that decides what a secret looks like; the store,
//! the report, the console and the error printer all call
//! [`redact_url_passwords`].

/// What a password is replaced with.
pub const REDACTED: &str = "***";

/// `text` with the password of every URL in it replaced by [`REDACTED`]:
/// `postgres://bob:S3cret@h/db` → `postgres://bob:***@h/db`. A URL's
/// authority ends at `/`, `?`, `#`, white space or a quote; inside it the
/// user information ends at the last `@` (as the URL parsers read it), and
/// the password is what follows its first `:`. Text without such a URL is
/// returned unchanged.
pub fn redact_url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let end = after
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '`' | '<' | '>' | '\\')
                    || c.is_whitespace()
            })
            .unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rsplit_once('@') {
            Some((userinfo, host)) => match userinfo.split_once(':') {
                Some((user, _password)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(REDACTED);
                    out.push('@');
                    out.push_str(host);
                }
                None => out.push_str(authority),
            },
            None => out.push_str(authority),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Whether `text` still holds a URL password (anything but [`REDACTED`]).
pub fn has_url_password(text: &str) -> bool {
    redact_url_passwords(text) != text
}

/// A secret held in memory only: `Debug` and `Display` show [`REDACTED`],
/// so a derived `Debug` of whatever holds it never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A fresh random password: 32 hex digits from the kernel's random
    /// source (128 bits).
    pub fn random() -> std::io::Result<Secret> {
        use std::io::Read as _;
        let mut bytes = [0u8; 16];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(Secret(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_replaced() {
        let r = redact_url_passwords;
        assert_eq!(
            r("tidemark run --target postgres://postgres:S3cret@127.0.0.1:5432/db --x"),
            "tidemark run --target postgres://postgres:***@127.0.0.1:5432/db --x"
        );
        assert_eq!(r("mysql://u:p@ss@h"), "mysql://u:***@h");
        assert_eq!(
            r(r#"{"targets":["mariadb://u:pw@h:3306/d?charset=utf8mb4"]}"#),
            r#"{"targets":["mariadb://u:***@h:3306/d?charset=utf8mb4"]}"#
        );
        assert_eq!(r("a://x:1@h b://y:2@k"), "a://x:***@h b://y:***@k");
        assert_eq!(r("postgres://u:***@h/d"), "postgres://u:***@h/d");
    }

    #[test]
    fn text_without_a_password_is_unchanged() {
        for t in [
            "",
            "pg@17.10+cx10b",
            "postgres://u@h:5/d",
            "http://example.org/a:b@c",
            "postgres://h:5432/d",
            "://",
            "x://",
            "sqlite:/tmp/a.db",
        ] {
            assert_eq!(redact_url_passwords(t), t, "{t}");
            assert!(!has_url_password(t));
        }
        assert!(has_url_password("postgres://u:p@h"));
    }

    #[test]
    fn secrets_are_random_and_never_shown() {
        let (a, b) = (Secret::random().unwrap(), Secret::random().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), 32);
        assert_eq!(format!("{a:?} {a}"), "*** ***");
    }

    #[test]
    fn store_urls_and_flags_lose_their_passwords() {
        let f = redact_url_passwords;
        assert_eq!(f("postgres://u:s3cr@t@h:5/db"), "postgres://u:***@h:5/db");
        assert_eq!(
            f("--store=postgres://u:p@h/db"),
            "--store=postgres://u:***@h/db"
        );
        assert_eq!(f("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            f("mysql://u:p@[::1]:3306/d?x=1"),
            "mysql://u:***@[::1]:3306/d?x=1"
        );
        assert_eq!(f("point-query"), "point-query");
    }
}
