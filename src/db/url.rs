//! The pieces of a database URL that every wire client reads the same way:
//! `user[:password]@host[:port]/db?key=value&…` after the scheme, percent
//! escapes, the port number and the default user. The families
//! ([`super::postgres`], [`super::mysql`]) keep their own schemes, defaults,
//! bracketed-IPv6 rules and query parameters.

/// A URL after its `scheme://`, split into its parts; user, password and
/// host are percent-decoded.
pub(crate) struct UrlParts<'a> {
    /// Empty when the URL names no user.
    pub user: String,
    pub password: Option<String>,
    /// The host and the text after it, or the bracketed IPv6 form.
    pub host: HostPart<'a>,
    /// The database name as written (still percent-encoded: decoding it
    /// may fail, which the caller reports in its own order).
    pub path: &'a str,
    /// What follows `?`, not yet split or decoded (see [`query_pairs`]).
    pub query: &'a str,
}

/// The host part of a URL's authority.
pub(crate) enum HostPart<'a> {
    /// `host[:port]`: the decoded host (possibly empty) and the port text.
    Plain(String, Option<&'a str>),
    /// `[v6…`: what follows the opening bracket, as written.
    Bracketed(&'a str),
}

/// Splits `rest` (a URL after `scheme://`) into its parts.
pub(crate) fn split_url(rest: &str) -> Result<UrlParts<'_>, String> {
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
    let host = if let Some(v6) = hostport.strip_prefix('[') {
        HostPart::Bracketed(v6)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => HostPart::Plain(decode(h, "host")?, Some(p)),
            None => HostPart::Plain(decode(hostport, "host")?, None),
        }
    };
    Ok(UrlParts {
        user,
        password,
        host,
        path,
        query,
    })
}

/// The `key=value` pairs of a URL's query, values percent-decoded.
pub(crate) fn query_pairs(query: &str) -> impl Iterator<Item = Result<(&str, String), String>> {
    query.split('&').filter(|p| !p.is_empty()).map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        Ok((k, decode(v, k)?))
    })
}

/// A port from 1 to 65535; the error shows `example`, never the text
/// (which may be part of a password).
pub(crate) fn parse_port(p: &str, example: &str) -> Result<u16, String> {
    match p.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!(
            "port in database URL is not a number from 1 to 65535 (percent-encode `/`, `@`, `?` in the password); e.g. {example}"
        )),
    }
}

/// `$USER` when set, else `fallback`.
pub(crate) fn default_user(fallback: &str) -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| fallback.to_string())
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
    fn parts_are_split_and_decoded() {
        let p = split_url("b%40b:p%2Fw@h%2Fx:12/d%20b?k=v%26").unwrap();
        assert_eq!(
            (p.user.as_str(), p.password.as_deref()),
            ("b@b", Some("p/w"))
        );
        assert!(matches!(p.host, HostPart::Plain(ref h, Some("12")) if h == "h/x"));
        assert_eq!(
            (decode(p.path, "db").unwrap().as_str(), p.query),
            ("d b", "k=v%26")
        );
        let pairs: Vec<_> = query_pairs("a=1&&b").collect::<Result<_, _>>().unwrap();
        assert_eq!(pairs, [("a", "1".to_string()), ("b", String::new())]);
        let p = split_url("[::1]:5/").unwrap();
        assert!(matches!(p.host, HostPart::Bracketed("::1]:5")));
        assert_eq!(encode("a b/é"), "a%20b%2F%C3%A9");
        assert!(parse_port("0", "x").is_err());
    }
}
