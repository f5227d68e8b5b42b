//! Workload files: a user's own benchmark as TOML, the same on every
//! family — tables (created per dialect through [`dialect`]'s macros, or
//! with a variant per family), row generators that load them, and
//! weighted transactions whose statements take `:name` parameters drawn
//! from named generators ([`values`]) or returned by an earlier statement
//! (`into`). pgbench's built-ins ship as such files (`tpcb-like`,
//! `simple-update`, `select-only`). Everything is checked here, before any
//! server starts, with one-line errors naming the file, the line and the
//! fix. The format is described in `workloads/README.md`.

pub mod client;
pub mod dialect;
pub mod expr;
pub mod load;
mod raw;
pub mod values;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::db::Dialect;
use expr::Expr;
use values::GenSpec;

/// The workload files tidemark ships, by name: pgbench's built-in scripts.
pub const SHIPPED: [(&str, &str); 3] = [
    (
        "tpcb-like",
        include_str!("../../../workloads/pgbench/tpcb-like.toml"),
    ),
    (
        "simple-update",
        include_str!("../../../workloads/pgbench/simple-update.toml"),
    ),
    (
        "select-only",
        include_str!("../../../workloads/pgbench/select-only.toml"),
    ),
];

/// SQL with an optional variant per family.
#[derive(Clone, Debug, PartialEq)]
pub struct Sql {
    /// The text every family runs unless it has its own.
    pub generic: Option<String>,
    /// Per family: PostgreSQL, MySQL/MariaDB, SQLite.
    pub variants: [Option<String>; 3],
    /// Line in the file.
    pub line: usize,
}

impl Sql {
    /// The text `d` runs, `None` when the file gives none for it.
    pub fn for_dialect(&self, d: Dialect) -> Option<&str> {
        self.variants[slot(d)]
            .as_deref()
            .or(self.generic.as_deref())
    }
}

fn slot(d: Dialect) -> usize {
    match d {
        Dialect::Postgres => 0,
        Dialect::Mysql => 1,
        Dialect::Sqlite => 2,
    }
}

/// A table: how it is created and, optionally, loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub name: String,
    pub create: Sql,
    /// Statements after loading (indexes), each per family.
    pub after_load: Vec<Sql>,
    /// Rows to load (an expression of the params).
    pub rows: Option<Expr>,
    /// Column name and value (`row` is the 1-based row number).
    pub columns: Vec<(String, GenSpec)>,
}

/// One statement of a transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub sql: Sql,
    /// A variable that takes the first column of the first row returned.
    pub into: Option<String>,
}

/// A transaction: drawn with probability weight / sum of weights.
#[derive(Clone, Debug, PartialEq)]
pub struct Transaction {
    pub name: String,
    pub weight: u32,
    /// Sleep after the statements (inside the event, as pgbench's `\sleep`).
    pub think: Duration,
    /// Variables drawn once per transaction, before its statements.
    pub set: Vec<(String, GenSpec)>,
    pub statements: Vec<Statement>,
}

/// Error classes a transaction can be retried on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorClass {
    /// PostgreSQL 40001 (serialization failure).
    Serialization,
    /// PostgreSQL 40P01, MySQL 1213 (deadlock), MySQL 1205 (lock wait timeout).
    Deadlock,
    /// SQLite's SQLITE_BUSY after the busy handler gave up.
    Busy,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 3] = [
        ErrorClass::Serialization,
        ErrorClass::Deadlock,
        ErrorClass::Busy,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Serialization => "serialization",
            ErrorClass::Deadlock => "deadlock",
            ErrorClass::Busy => "busy",
        }
    }

    pub fn parse(s: &str) -> Option<ErrorClass> {
        ErrorClass::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The class of a database error, `None` for one never retried.
    pub fn of(e: &crate::db::DbError) -> Option<ErrorClass> {
        match (e.kind, e.code.as_str()) {
            (crate::db::ErrorKind::Busy, _) => Some(ErrorClass::Busy),
            (_, "40001") => Some(ErrorClass::Serialization),
            (_, "40P01" | "1213" | "1205") => Some(ErrorClass::Deadlock),
            _ => None,
        }
    }
}

/// When a failed transaction runs again (pgbench's `--max-tries`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RetryRules {
    /// Tries in all, the first included (1: never retry).
    pub max_tries: u32,
    /// The error classes retried.
    pub on: Vec<ErrorClass>,
}

/// A checked workload file.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub name: String,
    /// Where it came from: a path, or `shipped:NAME`.
    pub source: String,
    pub description: Option<String>,
    /// Named integers (`scale`), after `--workload-param` overrides.
    pub params: BTreeMap<String, i64>,
    pub tables: Vec<Table>,
    pub transactions: Vec<Transaction>,
    pub retry: RetryRules,
    /// Transactions a second over all clients, started on an open-loop
    /// schedule (pgbench's `--rate`); `None`: as fast as they go.
    pub rate: Option<f64>,
}

/// Reads `spec` (a shipped name or a path), applies `overrides`
/// (`name=value`), and checks everything; the error is one line,
/// `FILE:LINE: problem: fix`.
pub fn load(spec: &str, overrides: &[String]) -> Result<Workload, String> {
    let (source, text) = match SHIPPED.iter().find(|(n, _)| *n == spec) {
        Some((name, text)) => (format!("shipped:{name}"), (*text).to_string()),
        None => {
            let path = Path::new(spec);
            let text = std::fs::read_to_string(path).map_err(|e| {
                format!(
                    "workload file {spec}: {e}: give a readable file or one of the shipped workloads ({})",
                    SHIPPED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                )
            })?;
            (spec.to_string(), text)
        }
    };
    parse(&source, &text, overrides)
}

/// Parses and checks the text of a workload file named `source`.
pub fn parse(source: &str, text: &str, overrides: &[String]) -> Result<Workload, String> {
    let at = |span: Option<std::ops::Range<usize>>| {
        let line = span.map_or(1, |s| line_of(text, s.start));
        format!("{source}:{line}")
    };
    let raw: raw::File = toml::from_str(text).map_err(|e| {
        let msg = e.message().lines().next().unwrap_or("").trim().to_string();
        format!(
            "{}: {msg}: fix the TOML there (see workloads/README.md for the format)",
            at(e.span())
        )
    })?;
    raw::compile(raw, source, text, overrides)
}

/// 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

impl Workload {
    /// Checks that every family in `dialects` can run every statement:
    /// the error names the file, line, statement and family.
    pub fn check_families(&self, dialects: &[Dialect]) -> Result<(), String> {
        for &d in dialects {
            let fam = dialect::family(d);
            let check = |sql: &Sql, what: &str| -> Result<(), String> {
                let text = sql.for_dialect(d).ok_or_else(|| {
                    format!(
                        "{}:{}: {what} has no SQL for {fam}: add sql = \"…\" for every family or {fam} = \"…\"",
                        self.source, sql.line
                    )
                })?;
                dialect::render(text, d)
                    .map(|_| ())
                    .map_err(|e| format!("{}:{}: {what}: {e}", self.source, sql.line))
            };
            for t in &self.tables {
                check(&t.create, &format!("table {}", t.name))?;
                for s in &t.after_load {
                    check(s, &format!("after_load of table {}", t.name))?;
                }
            }
            for tx in &self.transactions {
                for (i, s) in tx.statements.iter().enumerate() {
                    check(
                        &s.sql,
                        &format!("statement {} of transaction '{}'", i + 1, tx.name),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// The value of param `name`.
    pub fn param(&self, name: &str) -> Option<i64> {
        self.params.get(name).copied()
    }

    /// What the store keeps about the workload (name, source, params,
    /// weights, retry rules).
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "workload": self.name,
            "source": self.source,
            "params": self.params,
            "weights": self.transactions.iter().map(|t| (t.name.clone(), t.weight)).collect::<BTreeMap<_, _>>(),
            "max_tries": self.retry.max_tries,
            "retry_on": self.retry.on,
            "rate": self.rate,
        })
    }
}

#[cfg(test)]
mod tests;
