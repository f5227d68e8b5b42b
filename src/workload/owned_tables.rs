//! The benchmark tables tidemark created, recorded in a marker table, so it
//! never drops or loads over a table someone else owns: every suite that
//! makes tables of its own (`sbtestN`, the Insert Benchmark's `piN`) lists
//! them, records them and refuses foreign ones here.

use crate::db::{Conn, DbError, Dialect, TextRows};

/// The marker table in which tidemark records the tables it created.
pub(crate) const MARKER: &str = "tidemark_owned_tables";

/// The tables of the connection's current schema/database whose names
/// start with `prefix`, in name order.
pub fn tables_like(conn: &mut dyn Conn, prefix: &str) -> Result<Vec<String>, DbError> {
    let q = match conn.dialect() {
        Dialect::Postgres => format!(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE '{prefix}%' ORDER BY 1"
        ),
        Dialect::Mysql => format!(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE '{prefix}%' ORDER BY 1"
        ),
        Dialect::Sqlite => format!(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '{prefix}%' ORDER BY 1"
        ),
    };
    Ok(first_column(conn.query_text(&q)?))
}

fn first_column(rows: TextRows) -> Vec<String> {
    rows.into_iter()
        .filter_map(|mut r| r.pop().flatten())
        .collect()
}

/// The tables the marker lists, creating the marker if it is missing.
pub(crate) fn owned_tables(conn: &mut dyn Conn) -> Result<Vec<String>, DbError> {
    conn.execute_text(&format!(
        "CREATE TABLE IF NOT EXISTS {MARKER} (table_name VARCHAR(64) PRIMARY KEY, created_at VARCHAR(40))"
    ))?;
    Ok(first_column(
        conn.query_text(&format!("SELECT table_name FROM {MARKER}"))?,
    ))
}

/// The tables of `existing` that the marker does not list, creating the
/// marker if it is missing (before a load or a drop).
pub(crate) fn foreign_tables(
    conn: &mut dyn Conn,
    existing: &[String],
) -> Result<Vec<String>, DbError> {
    let owned = owned_tables(conn)?;
    Ok(existing
        .iter()
        .filter(|t| !owned.contains(t))
        .cloned()
        .collect())
}

/// The tables of `existing` that the marker does not list. A dry look:
/// the marker may not exist yet (then none is tidemark's).
pub(crate) fn not_owned(conn: &mut dyn Conn, existing: Vec<String>) -> Vec<String> {
    let owned = conn
        .query_text(&format!("SELECT table_name FROM {MARKER}"))
        .map(first_column)
        .unwrap_or_default();
    existing
        .into_iter()
        .filter(|t| !owned.contains(t))
        .collect()
}

/// Refuses, without changing anything, when `existing` holds tables
/// tidemark did not create; the error is `message` of them. With no
/// tables there is nothing to ask the marker (which may not exist).
pub(crate) fn refuse_foreign(
    conn: &mut dyn Conn,
    existing: Vec<String>,
    message: fn(&[String]) -> String,
) -> anyhow::Result<()> {
    if existing.is_empty() {
        return Ok(());
    }
    let foreign = not_owned(conn, existing);
    if !foreign.is_empty() {
        anyhow::bail!(message(&foreign));
    }
    Ok(())
}

/// Records `table` as created by tidemark.
pub(crate) fn record_owned(conn: &mut dyn Conn, table: &str) -> Result<(), DbError> {
    conn.execute_text(&format!(
        "INSERT INTO {MARKER} (table_name, created_at) VALUES ('{table}', '{}')",
        crate::util::time::now_rfc3339()
    ))?;
    Ok(())
}

/// Drops `tables` and their marker rows.
pub(crate) fn drop_tables(conn: &mut dyn Conn, tables: &[String]) -> Result<(), DbError> {
    for t in tables {
        conn.execute_text(&format!("DROP TABLE {t}"))?;
        conn.execute_text(&format!("DELETE FROM {MARKER} WHERE table_name = '{t}'"))?;
    }
    Ok(())
}
