//! Creating and loading a workload file's tables: each table's CREATE for
//! the family, its rows from the column generators in multi-row INSERTs of
//! literals (each atomic on its own), then its `after_load` statements.
//! A table that already exists is an error: tidemark never drops a table
//! it did not create.

use super::Workload;
use super::dialect;
use super::values::Value;
use crate::db::{Conn, Dialect};
use crate::workload::keys::stream_seed;

/// Rows per INSERT statement.
const BATCH: i64 = 500;

/// Creates and loads every table of `w` on `conn`; `progress` gets rows
/// done and rows in all. Each table created is added to `created` (also
/// when a later one fails), so the caller can drop exactly those.
pub fn create_and_load(
    w: &Workload,
    conn: &mut dyn Conn,
    created: &mut Vec<String>,
    seed: u64,
    cancel: &std::sync::atomic::AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> anyhow::Result<()> {
    let d = conn.dialect();
    let params = |n: &str| w.param(n);
    let total: i64 = w
        .tables
        .iter()
        .filter_map(|t| t.rows.as_ref()?.eval(&params).ok())
        .sum();
    let mut done = 0i64;
    for t in &w.tables {
        let create = t.create.for_dialect(d).ok_or_else(|| {
            anyhow::anyhow!("table {} has no CREATE for {}", t.name, dialect::family(d))
        })?;
        if exists(conn, d, &t.name)? {
            anyhow::bail!(
                "table {} already exists on this target: tidemark never drops a table it did not create; drop it yourself or use a fresh database",
                t.name
            );
        }
        conn.execute_text(&dialect::render(create, d).map_err(anyhow::Error::msg)?.sql)?;
        created.push(t.name.clone());
        let rows = match &t.rows {
            Some(e) => e.eval(&params).map_err(anyhow::Error::msg)?,
            None => 0,
        };
        let mut gens = t
            .columns
            .iter()
            .map(|(c, spec)| {
                spec.build(
                    &params,
                    stream_seed(seed, &format!("{}/load/{}/{c}", w.name, t.name), 0),
                    0,
                    1,
                )
            })
            .collect::<Result<Vec<_>, String>>()
            .map_err(anyhow::Error::msg)?;
        let head = format!(
            "INSERT INTO {} ({}) VALUES ",
            t.name,
            t.columns
                .iter()
                .map(|(c, _)| c.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut value = Value::Int(0);
        let mut row = 1i64;
        while row <= rows {
            if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                anyhow::bail!("loading interrupted");
            }
            let end = (row + BATCH - 1).min(rows);
            let mut sql = head.clone();
            for r in row..=end {
                sql.push_str(if r == row { "(" } else { ", (" });
                for (i, g) in gens.iter_mut().enumerate() {
                    g.draw(&mut value, &|n| {
                        if n == "row" { Some(r) } else { w.param(n) }
                    })
                    .map_err(anyhow::Error::msg)?;
                    if i > 0 {
                        sql.push_str(", ");
                    }
                    match &value {
                        Value::Int(v) => sql.push_str(&v.to_string()),
                        Value::Text(s) => {
                            sql.push('\'');
                            sql.push_str(&s.replace('\'', "''"));
                            sql.push('\'');
                        }
                    }
                }
                sql.push(')');
            }
            conn.execute_text(&sql)?;
            done += end - row + 1;
            progress(done as u64, total as u64);
            row = end + 1;
        }
        for a in &t.after_load {
            let text = a.for_dialect(d).expect("after_load is generic");
            conn.execute_text(&dialect::render(text, d).map_err(anyhow::Error::msg)?.sql)?;
        }
    }
    Ok(())
}

/// Drops the tables this run created (`created`, from
/// [`create_and_load`]), last first; returns what could not be dropped.
pub fn drop_created(conn: &mut dyn Conn, created: &[String]) -> Vec<String> {
    created
        .iter()
        .rev()
        .filter_map(|t| {
            conn.execute_text(&format!("DROP TABLE {t}"))
                .err()
                .map(|e| format!("could not drop table {t}: {e}"))
        })
        .collect()
}

/// Whether table `name` exists in the connection's database.
fn exists(conn: &mut dyn Conn, d: Dialect, name: &str) -> anyhow::Result<bool> {
    let quoted = name.replace('\'', "''");
    let sql = match d {
        Dialect::Postgres => format!(
            "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = '{quoted}'"
        ),
        Dialect::Mysql => format!(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = '{quoted}'"
        ),
        Dialect::Sqlite => {
            format!("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{quoted}'")
        }
    };
    Ok(!conn.query_text(&sql)?.is_empty())
}
