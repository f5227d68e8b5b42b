//! The two databases a store can live in — a local SQLite file or a shared
//! PostgreSQL database — behind one small interface: run a statement with
//! parameters, read rows by column name, group statements in a transaction.
//!
//! The store's SQL is written once, with `?N` placeholders, in the subset
//! both dialects share (`INSERT … RETURNING id`, `ON CONFLICT`, standard
//! types after [`super::schema`] translates the DDL). SQLite binds the
//! parameters; for PostgreSQL they are rendered as quoted literals and the
//! statement goes over tidemark's own wire client ([`PgConn`]) as a simple
//! query, which every server version and pooler accepts.

use anyhow::{Context, Result, anyhow, bail};
use rusqlite::types::{Value as SqlValue, ValueRef};

use crate::db::Conn;
use crate::db::postgres::PgConn;

/// One value sent to or read from the store.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::Int(v as i64)
            }
        }
    )*};
}
from_int!(i64, i32, u32, u16, usize);

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(v.into())
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Real(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}
impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Text(v.clone())
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Blob(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// The parameters of a statement, each converted with `Value::from`.
#[macro_export]
#[doc(hidden)]
macro_rules! store_params {
    ($($v:expr),* $(,)?) => {
        [$($crate::store::backend::Value::from($v)),*]
    };
}
pub(crate) use store_params as params;

/// A type a stored value reads back as. PostgreSQL values arrive as text
/// and are parsed here, so both backends read alike.
pub trait FromValue: Sized {
    fn from_value(v: &Value) -> Result<Self, String>;
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Int(i) => Ok(*i),
            Value::Real(x) if x.fract() == 0.0 => Ok(*x as i64),
            Value::Text(s) => s
                .trim()
                .parse()
                .map_err(|_| format!("{s:?} is not an integer")),
            other => Err(format!("{other:?} is not an integer")),
        }
    }
}

macro_rules! from_i64 {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: &Value) -> Result<Self, String> {
                let i = i64::from_value(v)?;
                <$t>::try_from(i).map_err(|_| format!("{i} is out of range"))
            }
        }
    )*};
}
from_i64!(i32, u32, u64, u16, usize);

impl FromValue for bool {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Text(s) if s == "t" || s == "true" => Ok(true),
            Value::Text(s) if s == "f" || s == "false" => Ok(false),
            _ => Ok(i64::from_value(v)? != 0),
        }
    }
}

impl FromValue for f64 {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Real(x) => Ok(*x),
            Value::Int(i) => Ok(*i as f64),
            Value::Text(s) => s
                .trim()
                .parse()
                .map_err(|_| format!("{s:?} is not a number")),
            other => Err(format!("{other:?} is not a number")),
        }
    }
}

impl FromValue for String {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Text(s) => Ok(s.clone()),
            Value::Int(i) => Ok(i.to_string()),
            Value::Real(x) => Ok(x.to_string()),
            other => Err(format!("{other:?} is not text")),
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Blob(b) => Ok(b.clone()),
            // PostgreSQL's bytea output: `\x` and two hex digits a byte.
            Value::Text(s) => s
                .strip_prefix("\\x")
                .and_then(decode_hex)
                .ok_or_else(|| "a blob that is not bytea hex".to_string()),
            other => Err(format!("{other:?} is not a blob")),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// Rows a query returned, with their column names.
#[derive(Debug, Default)]
pub struct Rows {
    columns: Vec<String>,
    rows: Vec<Vec<Value>>,
}

impl Rows {
    /// Each row, in order.
    pub fn iter(&self) -> impl Iterator<Item = Row<'_>> {
        self.rows.iter().map(|values| Row {
            columns: &self.columns,
            values,
        })
    }

    /// The first row, if any.
    pub fn first(&self) -> Option<Row<'_>> {
        self.iter().next()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// One row of [`Rows`].
#[derive(Clone, Copy)]
pub struct Row<'a> {
    columns: &'a [String],
    values: &'a [Value],
}

impl Row<'_> {
    /// The value of column `name`, read as `T`.
    pub fn get<T: FromValue>(&self, name: &str) -> Result<T> {
        let i = self
            .columns
            .iter()
            .position(|c| c == name)
            .ok_or_else(|| anyhow!("the store has no column {name}"))?;
        T::from_value(&self.values[i]).map_err(|e| anyhow!("column {name}: {e}"))
    }

    /// The value of the `i`-th column (0-based), read as `T`.
    pub fn at<T: FromValue>(&self, i: usize) -> Result<T> {
        let v = self
            .values
            .get(i)
            .ok_or_else(|| anyhow!("the query has no column {i}"))?;
        T::from_value(v).map_err(|e| anyhow!("column {i}: {e}"))
    }
}

/// Rows one PostgreSQL `INSERT` carries in [`Backend::insert_many`].
pub const ROWS_PER_INSERT: usize = 500;

/// Which database engine a store is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// An open connection to a store's database.
pub enum Backend {
    Sqlite(rusqlite::Connection),
    Postgres(Box<PgConn>),
}

impl Backend {
    pub fn engine(&self) -> Engine {
        match self {
            Backend::Sqlite(_) => Engine::Sqlite,
            Backend::Postgres(_) => Engine::Postgres,
        }
    }

    /// Runs one statement and returns the rows it changed.
    pub fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        match self {
            Backend::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let n = stmt.execute(rusqlite::params_from_iter(params.iter().map(to_sqlite)))?;
                Ok(n as u64)
            }
            Backend::Postgres(c) => Ok(c.execute_text(&inline(sql, params)?)?),
        }
    }

    /// Runs one query and reads each of its rows with `read`, in order;
    /// the first row `read` fails on fails the whole.
    pub fn query_map<T>(
        &mut self,
        sql: &str,
        params: &[Value],
        read: impl FnMut(Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.query(sql, params)?.iter().map(read).collect()
    }

    /// Runs one query and returns its rows.
    pub fn query(&mut self, sql: &str, params: &[Value]) -> Result<Rows> {
        match self {
            Backend::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let columns: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
                let n = columns.len();
                let mut rows = Vec::new();
                let mut cursor =
                    stmt.query(rusqlite::params_from_iter(params.iter().map(to_sqlite)))?;
                while let Some(r) = cursor.next()? {
                    let mut values = Vec::with_capacity(n);
                    for i in 0..n {
                        values.push(from_sqlite(r.get_ref(i)?));
                    }
                    rows.push(values);
                }
                Ok(Rows { columns, rows })
            }
            Backend::Postgres(c) => {
                let (columns, text) = c.query_named(&inline(sql, params)?)?;
                let rows = text
                    .into_iter()
                    .map(|r| {
                        r.into_iter()
                            .map(|v| v.map_or(Value::Null, Value::Text))
                            .collect()
                    })
                    .collect();
                Ok(Rows { columns, rows })
            }
        }
    }

    /// The first column of the first row of `sql` (`None`: no row).
    pub fn query_value<T: FromValue>(&mut self, sql: &str, params: &[Value]) -> Result<Option<T>> {
        let rows = self.query(sql, params)?;
        rows.first().map(|r| r.at(0)).transpose()
    }

    /// Runs an `INSERT … RETURNING id` and returns the id.
    pub fn insert_id(&mut self, sql: &str, params: &[Value]) -> Result<i64> {
        self.query_value(sql, params)?
            .ok_or_else(|| anyhow!("the insert returned no id"))
    }

    /// Inserts `rows` (values in `columns` order) into `table`: on SQLite
    /// one prepared statement per row, on PostgreSQL multi-row `INSERT`s
    /// of up to [`ROWS_PER_INSERT`] rows, one round trip each.
    pub fn insert_many(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &[Vec<Value>],
    ) -> Result<()> {
        let head = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
        match self {
            Backend::Sqlite(_) => {
                let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
                let sql = format!("{head}({})", marks.join(", "));
                for row in rows {
                    self.execute(&sql, row)?;
                }
            }
            Backend::Postgres(c) => {
                for chunk in rows.chunks(ROWS_PER_INSERT) {
                    let mut sql = head.clone();
                    for (i, row) in chunk.iter().enumerate() {
                        if row.len() != columns.len() {
                            bail!(
                                "{table}: a row of {} values for {} columns",
                                row.len(),
                                columns.len()
                            );
                        }
                        sql.push_str(if i == 0 { "(" } else { ", (" });
                        for (j, v) in row.iter().enumerate() {
                            if j > 0 {
                                sql.push_str(", ");
                            }
                            push_literal(&mut sql, v);
                        }
                        sql.push(')');
                    }
                    c.execute_text(&sql)?;
                }
            }
        }
        Ok(())
    }

    /// Runs several statements without parameters (a migration script).
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Backend::Sqlite(c) => c.execute_batch(sql)?,
            Backend::Postgres(c) => {
                c.execute_text(sql)?;
            }
        }
        Ok(())
    }

    /// Runs `f` in one transaction: all of it is stored, or none. SQLite
    /// takes the write lock at the start (IMMEDIATE) rather than fail to
    /// upgrade a read lock halfway.
    pub fn transaction<T>(&mut self, f: impl FnOnce(&mut Backend) -> Result<T>) -> Result<T> {
        self.batch(match self.engine() {
            Engine::Sqlite => "BEGIN IMMEDIATE",
            Engine::Postgres => "BEGIN",
        })?;
        match f(self) {
            Ok(v) => {
                self.batch("COMMIT").context("committing")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

fn to_sqlite(v: &Value) -> SqlValue {
    match v {
        Value::Null => SqlValue::Null,
        Value::Int(i) => SqlValue::Integer(*i),
        Value::Real(x) => SqlValue::Real(*x),
        Value::Text(s) => SqlValue::Text(s.clone()),
        Value::Blob(b) => SqlValue::Blob(b.clone()),
    }
}

fn from_sqlite(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(x) => Value::Real(x),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

/// `sql` with each `?N` outside a quoted string replaced by parameter N as
/// a PostgreSQL literal.
pub fn inline(sql: &str, params: &[Value]) -> Result<String> {
    let mut out = String::with_capacity(sql.len() + params.len() * 8);
    let mut chars = sql.char_indices().peekable();
    let mut quote: Option<char> = None;
    while let Some((_, c)) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                out.push(c);
            }
            (Some(_), c) => out.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                out.push(c);
            }
            (None, '?') => {
                let mut n = 0usize;
                while let Some(&(_, d)) = chars.peek() {
                    let Some(digit) = d.to_digit(10) else { break };
                    n = n * 10 + digit as usize;
                    chars.next();
                }
                let Some(v) = n.checked_sub(1).and_then(|i| params.get(i)) else {
                    bail!("statement parameter ?{n} has no value");
                };
                push_literal(&mut out, v);
            }
            (None, c) => out.push(c),
        }
    }
    Ok(out)
}

/// Appends `v` as a PostgreSQL literal (standard-conforming strings, the
/// default since 9.1: a backslash in quotes is just a backslash).
fn push_literal(out: &mut String, v: &Value) {
    use std::fmt::Write as _;
    match v {
        Value::Null => out.push_str("NULL"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Real(x) if x.is_finite() => {
            let _ = write!(out, "{x:?}::float8");
        }
        Value::Real(x) => {
            let _ = write!(out, "'{x}'::float8");
        }
        Value::Text(s) => {
            out.push('\'');
            for c in s.chars() {
                match c {
                    '\'' => out.push_str("''"),
                    '\0' => out.push('\u{fffd}'),
                    c => out.push(c),
                }
            }
            out.push('\'');
        }
        Value::Blob(b) => {
            out.push_str("'\\x");
            for byte in b {
                let _ = write!(out, "{byte:02x}");
            }
            out.push_str("'::bytea");
        }
    }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_become_literals_outside_quotes_only() {
        let sql = inline(
            "INSERT INTO t VALUES (?1, ?2, '?3', ?3, ?4, ?5, ?10)",
            &[
                Value::Int(-4),
                Value::Text("it's \\ here".into()),
                Value::Real(0.1),
                Value::Null,
                Value::Blob(vec![0, 255]),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Int(10),
            ],
        )
        .unwrap();
        assert_eq!(
            sql,
            "INSERT INTO t VALUES (-4, 'it''s \\ here', '?3', 0.1::float8, NULL, '\\x00ff'::bytea, 10)"
        );
        assert!(inline("SELECT ?2", &[Value::Int(1)]).is_err());
    }

    #[test]
    fn text_values_read_as_the_asked_type() {
        assert_eq!(i64::from_value(&Value::Text("-12".into())), Ok(-12));
        assert_eq!(f64::from_value(&Value::Text("1e-07".into())), Ok(1e-7));
        assert_eq!(
            Vec::<u8>::from_value(&Value::Text("\\x00ff".into())),
            Ok(vec![0, 255])
        );
        assert_eq!(Option::<u32>::from_value(&Value::Null), Ok(None));
        assert_eq!(bool::from_value(&Value::Text("1".into())), Ok(true));
        assert!(u32::from_value(&Value::Int(-1)).is_err());
    }
}
