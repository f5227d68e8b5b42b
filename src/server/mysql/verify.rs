//! Reading what `mariadbd --verbose --help` (or `mysqld`) says about an
//! option file: its error lines, the warnings that mean a setting will not
//! be what was asked, and the table of values it would run with.
//!
//! Not every bad value is an error to the server: a boolean option given
//! `DETECT_ONLY` is "ignored due to invalid value" and an out-of-range
//! number is "adjusted", both only as warnings, and the server would start
//! with something else. A benchmark of a config that is not in effect is
//! worse than no benchmark, so for the settings a named config or the user
//! gave, these warnings fail the check, and so does a value the table shows
//! differently from what was asked.

use std::collections::HashMap;

use super::config::normalize;

/// A setting whose effect is checked, and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub name: String,
    pub value: String,
    /// For messages: `config bl0_sync1_dwDO`, `-c x=1`, `the target's :x=1`.
    pub origin: String,
}

impl Source {
    /// A setting from `origin`.
    pub fn new(name: &str, value: &str, origin: impl Into<String>) -> Source {
        Source {
            name: name.to_string(),
            value: value.to_string(),
            origin: origin.into(),
        }
    }
}

/// Why the server would not run with the checked settings, as one line; or
/// `None` when it would. `ok` is whether the command exited with 0.
pub fn check_help_output(
    ok: bool,
    stdout: &str,
    stderr: &str,
    checked: &[Source],
) -> Option<String> {
    let mut problems = complaints(stderr, checked);
    if problems.is_empty() && ok {
        problems = value_mismatches(stdout, checked);
    }
    if problems.is_empty() && ok {
        return None;
    }
    let mut msg = if problems.is_empty() {
        stderr.trim().replace('\n', "; ")
    } else {
        problems.join("; ")
    };
    if let Some(s) = checked.iter().rev().find(|s| mentions(&msg, &s.name)) {
        msg.push_str(&format!(" (from {})", s.origin));
    }
    Some(msg)
}

/// Whether `msg` names option `name` in any of its spellings.
fn mentions(msg: &str, name: &str) -> bool {
    let under = normalize(name);
    let dashed = under.replace('_', "-");
    msg.contains(&format!("'{name}"))
        || msg.contains(&format!("'{under}"))
        || msg.contains(&format!("'{dashed}"))
        || msg.contains(&format!("'--{dashed}"))
        || msg.contains(&format!("{under} ="))
}

/// The `[ERROR]` messages of the server's stderr, and its warnings that a
/// checked setting is ignored, not recognised or adjusted; without
/// timestamps, tags and generic follow-ups.
pub fn complaints(stderr: &str, checked: &[Source]) -> Vec<String> {
    const IGNORED: &[&str] = &[
        "ignoring option",
        "wasn't recognized",
        "adjusted to",
        "invalid value",
        "unknown option",
        "unknown variable",
        // MariaDB 10.2-10.4 on MySQL 5.6 options they only parse.
        "To be implemented in later versions",
    ];
    let mut out = Vec::new();
    for line in stderr.lines() {
        let (msg, error) = match (line.split_once("[ERROR]"), line.split_once("[Warning]")) {
            (Some((_, m)), _) => (m, true),
            (None, Some((_, m))) => (m, false),
            (None, None) => continue,
        };
        let msg = strip_prefixes(msg);
        // MySQL 5.6 reads its plugin table even for --help, and the data
        // directory the check runs against is empty.
        let benign = msg.starts_with("Can't open the mysql.plugin table");
        if msg.starts_with("Aborting") || msg.contains("Disabling plugin") || benign {
            continue;
        }
        let relevant = error
            || (IGNORED.iter().any(|w| msg.contains(w))
                && checked.iter().any(|s| mentions(msg, &s.name)));
        if relevant {
            out.push(msg.to_string());
        }
    }
    out
}

/// `[MY-000067] [Server] /usr/sbin/mysqld: unknown …` → `unknown …`.
fn strip_prefixes(msg: &str) -> &str {
    let mut m = msg.trim();
    while m.starts_with('[') {
        match m.find(']') {
            Some(end) => m = m[end + 1..].trim_start(),
            None => break,
        }
    }
    match m.split_once(": ") {
        Some((prog, rest)) if !prog.contains(' ') && prog.contains('/') => rest,
        Some((prog, rest)) if prog.ends_with("mariadbd") || prog.ends_with("mysqld") => rest,
        _ => m,
    }
}

/// The variable table at the end of `--verbose --help`: normalized name →
/// value the server would run with.
pub fn help_values(stdout: &str) -> HashMap<String, String> {
    let mut values = HashMap::new();
    let mut in_table = false;
    for line in stdout.lines() {
        if !in_table {
            // "Variables (--variable-name=value)" then a line of dashes.
            in_table = line.starts_with("---") && line.contains(' ');
            continue;
        }
        if line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(char::is_whitespace) {
            values.insert(normalize(name), value.trim().to_string());
        }
    }
    values
}

/// Checked settings the variable table of `stdout` does not list, as
/// `unknown variable 'name=value'`, for servers whose `--help` does not
/// complain about them itself (MySQL 9.x exits 0 and says nothing). Names
/// that are options rather than variables (`skip_…`, `disable_…`,
/// `enable_…`) and `loose_…` ones (meant to be ignored where unknown) are
/// left out; so is everything when there is no table to read.
pub fn unknown_settings(stdout: &str, checked: &[Source]) -> Vec<String> {
    let table = help_values(stdout);
    if table.is_empty() {
        return Vec::new();
    }
    let option_only = ["skip_", "disable_", "enable_", "loose_"];
    let mut out: Vec<String> = Vec::new();
    for s in checked {
        let key = normalize(&s.name);
        if table.contains_key(&key) || option_only.iter().any(|p| key.starts_with(p)) {
            continue;
        }
        let line = format!(
            "unknown variable '{}={}' (from {})",
            s.name, s.value, s.origin
        );
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// Checked settings (the last one of each name counts) whose value the
/// table shows differently, for words and plain numbers; sizes with
/// suffixes and paths are left to the server's own errors.
fn value_mismatches(stdout: &str, checked: &[Source]) -> Vec<String> {
    let table = help_values(stdout);
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for s in checked.iter().rev() {
        let key = normalize(&s.name);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key.clone());
        let Some(server) = table.get(&key) else {
            continue;
        };
        if server.starts_with('(') || same_value(&s.value, server) {
            continue;
        }
        out.push(format!("{} = {} would run as {server}", s.name, s.value));
    }
    out
}

/// Whether the server's `shown` value is what `asked` means; `true` when
/// it cannot tell (sizes like `256M`, paths).
fn same_value(asked: &str, shown: &str) -> bool {
    let (a, s) = (
        asked.trim().to_ascii_lowercase(),
        shown.to_ascii_lowercase(),
    );
    if a == s {
        return true;
    }
    let boolean = |v: &str| match v {
        "on" | "true" | "yes" | "1" => Some(true),
        "off" | "false" | "no" | "0" => Some(false),
        _ => None,
    };
    // MySQL 8.0.30+: ON is DETECT_AND_RECOVER.
    let alias = |v: &str| {
        if v == "detect_and_recover" {
            "on".to_string()
        } else {
            v.to_string()
        }
    };
    let (a, s) = (alias(&a), alias(&s));
    if let (Some(x), Some(y)) = (boolean(&a), boolean(&s)) {
        return x == y;
    }
    let integer = |v: &str| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit());
    let word = |v: &str| v.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    if integer(&a) && integer(&s) {
        return a.trim_start_matches('0') == s.trim_start_matches('0');
    }
    if word(&a) && !a.contains('/') {
        return a == s;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELP: &str = "\
/usr/sbin/mariadbd  Ver 10.11.19-MariaDB
  --innodb-doublewrite  Enable InnoDB doublewrite buffer

Variables (--variable-name=value)
and boolean options {FALSE|TRUE}                             Value (after reading options)
------------------------------------------------------------ -------------
innodb-doublewrite                                           TRUE
innodb-flush-log-at-trx-commit                               3
innodb-flush-method                                          O_DIRECT_NO_FSYNC
innodb-buffer-pool-size                                      268435456
log-bin                                                      binlog
server-id                                                    1

To see what values a running MariaDB server is using, type
";

    #[test]
    fn the_value_table_is_read() {
        let t = help_values(HELP);
        assert_eq!(t["innodb_doublewrite"], "TRUE");
        assert_eq!(t["log_bin"], "binlog");
        assert_eq!(t.len(), 6);
    }

    #[test]
    fn silently_changed_values_are_caught() {
        let ok = [
            Source::new("innodb_doublewrite", "ON", "config bl0_sync1_dw1"),
            Source::new("innodb-flush-method", "o_direct_no_fsync", "config z12a"),
            Source::new(
                "innodb_buffer_pool_size",
                "256M",
                "-c innodb_buffer_pool_size=256M",
            ),
            Source::new("log_bin", "binlog", "config binlog"),
            Source::new("server_id", "1", "config binlog"),
            Source::new("loose_no_such", "x", "-c loose_no_such=x"),
        ];
        assert_eq!(check_help_output(true, HELP, "", &ok), None);
        let dwdo = [Source::new(
            "innodb_doublewrite",
            "DETECT_ONLY",
            "the target's :innodb_doublewrite=DETECT_ONLY",
        )];
        let stderr = "2026-11-21  2:44:36 0 [Warning] Could not increase number of max_open_files\n\
            2026-11-21  2:44:36 0 [Warning] /usr/sbin/mariadbd: ignoring option '--innodb-doublewrite' due to invalid value 'DETECT_ONLY'\n";
        assert_eq!(
            check_help_output(true, HELP, stderr, &dwdo).unwrap(),
            "ignoring option '--innodb-doublewrite' due to invalid value 'DETECT_ONLY' \
             (from the target's :innodb_doublewrite=DETECT_ONLY)"
        );
        // No warning, but the table shows something else.
        assert_eq!(
            check_help_output(true, HELP, "", &dwdo).unwrap(),
            "innodb_doublewrite = DETECT_ONLY would run as TRUE (from the target's :innodb_doublewrite=DETECT_ONLY)"
        );
        let seven = [
            Source::new(
                "innodb_flush_log_at_trx_commit",
                "2",
                "config bl0_sync0_dw1",
            ),
            Source::new(
                "innodb_flush_log_at_trx_commit",
                "7",
                "-c innodb_flush_log_at_trx_commit=7",
            ),
        ];
        let compat = "x [Warning] 'eq-range-index-dive-limit' is MySQL 5.6 compatible option. \
                      To be implemented in later versions.\n";
        let dive = [Source::new(
            "eq_range_index_dive_limit",
            "10",
            "config cz12a",
        )];
        assert!(
            check_help_output(true, HELP, compat, &dive)
                .unwrap()
                .ends_with("To be implemented in later versions. (from config cz12a)")
        );
        let adjusted = "x 0 [Warning] option 'innodb-flush-log-at-trx-commit': unsigned value 7 adjusted to 3\n";
        assert_eq!(
            check_help_output(true, HELP, adjusted, &seven).unwrap(),
            "option 'innodb-flush-log-at-trx-commit': unsigned value 7 adjusted to 3 (from -c innodb_flush_log_at_trx_commit=7)"
        );
        assert!(
            check_help_output(true, HELP, "", &seven)
                .unwrap()
                .starts_with("innodb_flush_log_at_trx_commit = 7 would run as 3")
        );
        // Warnings about settings nobody asked for are not ours to fail on.
        assert_eq!(check_help_output(true, HELP, adjusted, &ok), None);
    }

    #[test]
    fn settings_missing_from_the_table_are_unknown() {
        let out = "Variables (--variable-name=value)\n\
                   and boolean options {FALSE|TRUE}  Value (after reading options)\n\
                   --------------------------------- ----------------\n\
                   innodb-redo-log-capacity          104857600\n\
                   log-bin                           (No default value)\n\n";
        let checked = [
            Source::new("innodb_redo_log_capacity", "1G", "config cz12a"),
            Source::new("log_bin", "binlog", "config cz12a"),
            Source::new(
                "innodb_log_file_size",
                "256M",
                "-c innodb_log_file_size=256M",
            ),
            Source::new("skip_name_resolve", "1", "config x"),
            Source::new("loose_x", "1", "config x"),
        ];
        assert_eq!(
            unknown_settings(out, &checked),
            ["unknown variable 'innodb_log_file_size=256M' (from -c innodb_log_file_size=256M)"]
        );
        assert!(unknown_settings("no table\n", &checked).is_empty());
    }

    #[test]
    fn complaints_are_the_error_lines() {
        let stderr = "\
2026-11-21  0:42:14 0 [Warning] Could not increase number of max_open_files
2026-11-21  0:42:14 0 [ERROR] /usr/sbin/mariadbd: Error while setting value 'banana' to 'innodb-flush-method'
2026-11-21  0:42:14 0 [ERROR] Parsing options for plugin 'InnoDB' failed. Disabling plugin
2026-11-21  0:42:14 0 [ERROR] Aborting
2024-01-01T00:00:00.000000Z 0 [ERROR] [MY-000067] [Server] unknown variable 'no_such_var=1'.
";
        assert_eq!(
            complaints(stderr, &[]),
            [
                "Error while setting value 'banana' to 'innodb-flush-method'",
                "unknown variable 'no_such_var=1'."
            ]
        );
        let msg = check_help_output(
            false,
            "",
            stderr,
            &[Source::new("no_such_var", "1", "-c no_such_var=1")],
        )
        .unwrap();
        assert!(msg.ends_with("(from -c no_such_var=1)"), "{msg}");
    }
}
