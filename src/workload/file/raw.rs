//! A workload file as TOML gives it, and its compilation into a checked
//! [`Workload`]: every value parsed, every name resolved, each problem a
//! one-line error with the line it is on.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::expr::Expr;
use super::values::GenSpec;
use super::{ErrorClass, RetryRules, Sql, Statement, Table, Transaction, Workload, line_of};

type Text = Spanned<String>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    name: Text,
    description: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, Spanned<i64>>,
    #[serde(default, rename = "table")]
    tables: Vec<RawTable>,
    #[serde(default, rename = "transaction")]
    transactions: Vec<RawTransaction>,
    retry: Option<RawRetry>,
    rate: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    name: Text,
    sql: Option<Text>,
    postgres: Option<Text>,
    mysql: Option<Text>,
    sqlite: Option<Text>,
    #[serde(default)]
    after_load: Vec<Text>,
    rows: Option<Spanned<RawNumber>>,
    #[serde(default)]
    columns: BTreeMap<String, Text>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawNumber {
    Int(i64),
    Expr(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTransaction {
    name: Text,
    weight: Option<Spanned<i64>>,
    think_ms: Option<u64>,
    #[serde(default)]
    set: BTreeMap<String, Text>,
    #[serde(default, rename = "statement")]
    statements: Vec<Spanned<RawStatement>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStatement {
    sql: Option<Text>,
    postgres: Option<Text>,
    mysql: Option<Text>,
    sqlite: Option<Text>,
    into: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetry {
    max_tries: Option<u32>,
    #[serde(default)]
    on: Vec<Text>,
}

/// Compiles the parsed file (see [`super::parse`]).
pub(super) fn compile(
    f: File,
    source: &str,
    text: &str,
    overrides: &[String],
) -> Result<Workload, String> {
    let line = |s: &std::ops::Range<usize>| line_of(text, s.start);
    let err = |l: usize, msg: String| format!("{source}:{l}: {msg}");
    let mut params: BTreeMap<String, i64> = f
        .params
        .iter()
        .map(|(k, v)| (k.clone(), *v.get_ref()))
        .collect();
    for o in overrides {
        let (k, v) = o
            .split_once('=')
            .ok_or_else(|| format!("--workload-param {o}: write NAME=VALUE, as in scale=10"))?;
        let k = k.trim();
        if !params.contains_key(k) {
            return Err(format!(
                "--workload-param {o}: {source} has no param '{k}' (it has: {}): use one of those",
                params.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        let v = v.trim().parse::<i64>().map_err(|_| {
            format!("--workload-param {o}: '{v}' is not an integer: give a whole number")
        })?;
        params.insert(k.to_string(), v);
    }
    let lookup = |n: &str| params.get(n).copied();
    let value = |t: &Text, allowed: &dyn Fn(&str) -> bool, what: &str| -> Result<GenSpec, String> {
        let l = line(&t.span());
        let spec = GenSpec::parse(t.get_ref()).map_err(|e| err(l, format!("{what}: {e}")))?;
        for n in spec.names() {
            if !allowed(&n) {
                return Err(err(
                    l,
                    format!(
                        "{what}: unknown name '{n}': declare it under [params] (have: {})",
                        params.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        // Bounds must evaluate now (a load value may read `row`).
        if !spec.names().iter().any(|n| n == "row") {
            spec.build(&lookup, 0, 0, 1)
                .map_err(|e| err(l, format!("{what}: {e}")))?;
        }
        Ok(spec)
    };
    let sql = |r: [&Option<Text>; 4], l: usize, what: &str| -> Result<Sql, String> {
        let s = |t: &Option<Text>| t.as_ref().map(|t| t.get_ref().clone());
        if r.iter().all(|t| t.is_none()) {
            return Err(err(
                l,
                format!("{what} has no SQL: add sql = \"…\" (or postgres/mysql/sqlite = \"…\")"),
            ));
        }
        let first = r
            .into_iter()
            .flatten()
            .map(|t| line(&t.span()))
            .min()
            .unwrap_or(l);
        Ok(Sql {
            generic: s(r[0]),
            variants: [s(r[1]), s(r[2]), s(r[3])],
            line: first,
        })
    };

    let mut tables = Vec::new();
    for t in &f.tables {
        let l = line(&t.name.span());
        let name = t.name.get_ref().clone();
        let rows = match &t.rows {
            None => None,
            Some(r) => {
                let e = match r.get_ref() {
                    RawNumber::Int(n) => Expr::Num(*n),
                    RawNumber::Expr(s) => Expr::parse(s)
                        .map_err(|e| err(line(&r.span()), format!("rows of table {name}: {e}")))?,
                };
                let n = e.eval(&lookup).map_err(|e| {
                    err(
                        line(&r.span()),
                        format!("rows of table {name}: {e}: declare it under [params]"),
                    )
                })?;
                if n < 0 {
                    return Err(err(
                        line(&r.span()),
                        format!("rows of table {name} is {n}: give zero or more"),
                    ));
                }
                Some(e)
            }
        };
        if rows.is_some() && t.columns.is_empty() {
            return Err(err(
                l,
                format!(
                    "table {name} has rows but no columns: add [table.columns] with a value per column"
                ),
            ));
        }
        let columns = t
            .columns
            .iter()
            .map(|(c, v)| {
                let spec = value(
                    v,
                    &|n| n == "row" || params.contains_key(n),
                    &format!("column {c} of table {name}"),
                )?;
                Ok((c.clone(), spec))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let after_load = t
            .after_load
            .iter()
            .map(|a| Sql {
                generic: Some(a.get_ref().clone()),
                variants: [None, None, None],
                line: line(&a.span()),
            })
            .collect();
        tables.push(Table {
            create: sql(
                [&t.sql, &t.postgres, &t.mysql, &t.sqlite],
                l,
                &format!("table {name}"),
            )?,
            name,
            after_load,
            rows,
            columns,
        });
    }

    if f.transactions.is_empty() {
        return Err(err(
            line(&f.name.span()),
            "the file has no [[transaction]]: add one with a name and [[transaction.statement]] entries".into(),
        ));
    }
    let mut transactions = Vec::new();
    for t in &f.transactions {
        let l = line(&t.name.span());
        let name = t.name.get_ref().clone();
        if transactions.iter().any(|x: &Transaction| x.name == name) {
            return Err(err(
                l,
                format!("a second transaction named '{name}': give each its own name"),
            ));
        }
        let weight = match &t.weight {
            None => 1,
            Some(w) => u32::try_from(*w.get_ref())
                .ok()
                .filter(|w| *w > 0)
                .ok_or_else(|| {
                    err(
                        line(&w.span()),
                        format!(
                            "weight {} of transaction '{name}': give a whole number from 1 up",
                            w.get_ref()
                        ),
                    )
                })?,
        };
        let set = t
            .set
            .iter()
            .map(|(v, g)| {
                Ok((
                    v.clone(),
                    value(
                        g,
                        &|n| params.contains_key(n),
                        &format!("{v} of transaction '{name}'"),
                    )?,
                ))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let mut known: Vec<String> = set.iter().map(|(n, _)| n.clone()).collect();
        known.extend(params.keys().cloned());
        if t.statements.is_empty() {
            return Err(err(
                l,
                format!(
                    "transaction '{name}' has no statements: add [[transaction.statement]] entries"
                ),
            ));
        }
        let mut statements = Vec::new();
        for (i, s) in t.statements.iter().enumerate() {
            let what = format!("statement {} of transaction '{name}'", i + 1);
            let r = s.get_ref();
            let compiled = sql(
                [&r.sql, &r.postgres, &r.mysql, &r.sqlite],
                line(&s.span()),
                &what,
            )?;
            for text in compiled
                .generic
                .iter()
                .chain(compiled.variants.iter().flatten())
            {
                let r = super::dialect::render(text, crate::db::Dialect::Postgres)
                    .or_else(|_| super::dialect::render(text, crate::db::Dialect::Mysql))
                    .or_else(|_| super::dialect::render(text, crate::db::Dialect::Sqlite));
                let r = r.map_err(|e| err(compiled.line, format!("{what}: {e}")))?;
                if let Some(p) = r.params.iter().find(|p| !known.contains(p)) {
                    return Err(err(
                        compiled.line,
                        format!(
                            "{what} uses :{p}, which is not set: add {p} = \"uniform(…)\" to [transaction.set] or into = \"{p}\" to an earlier statement"
                        ),
                    ));
                }
            }
            if let Some(v) = &s.get_ref().into {
                known.push(v.clone());
            }
            statements.push(Statement {
                sql: compiled,
                into: s.get_ref().into.clone(),
            });
        }
        transactions.push(Transaction {
            name,
            weight,
            think: Duration::from_millis(t.think_ms.unwrap_or(0)),
            set,
            statements,
        });
    }
    let retry = match &f.retry {
        None => RetryRules {
            max_tries: 1,
            on: vec![ErrorClass::Serialization, ErrorClass::Deadlock],
        },
        Some(r) => {
            let on = if r.on.is_empty() {
                vec![ErrorClass::Serialization, ErrorClass::Deadlock]
            } else {
                r.on.iter()
                    .map(|c| {
                        ErrorClass::parse(c.get_ref()).ok_or_else(|| {
                            err(
                                line(&c.span()),
                                format!(
                                    "unknown error class '{}': use serialization, deadlock or busy",
                                    c.get_ref()
                                ),
                            )
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?
            };
            RetryRules {
                max_tries: r.max_tries.unwrap_or(1).max(1),
                on,
            }
        }
    };
    let rate = match &f.rate {
        None => None,
        Some(r) => {
            let v = match r.get_ref() {
                toml::Value::Integer(i) => *i as f64,
                toml::Value::Float(x) => *x,
                _ => f64::NAN,
            };
            if !(v > 0.0 && v.is_finite()) {
                return Err(err(
                    line(&r.span()),
                    "rate: give transactions per second over all clients, a number above 0".into(),
                ));
            }
            Some(v)
        }
    };
    Ok(Workload {
        rate,
        name: f.name.get_ref().clone(),
        source: source.to_string(),
        description: f.description,
        params,
        tables,
        transactions,
        retry,
    })
}
