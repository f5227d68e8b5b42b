//! The `piN` tables: guarding tables tidemark did not create, dropping the
//! ones it did, and creating them again before l.i0 (the reference drops
//! and recreates its database at that point).
//!
//! Ownership is recorded in the marker table every suite uses
//! ([`crate::workload::owned_tables`]), so tidemark never drops a `piN`
//! table someone else made.

use super::Ibench;
use super::sql;
use crate::db::{Conn, DbError};
use crate::workload::owned_tables::{
    drop_tables, foreign_tables, record_owned, refuse_foreign, tables_like,
};
use crate::workload::sysbench::load::ExistingTables;

/// Whether `name` is an Insert Benchmark table name (`pi` + digits).
fn is_ibench_table(name: &str) -> bool {
    name.strip_prefix("pi")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The `piN` tables of the connection's current schema/database.
pub fn existing_tables(conn: &mut dyn Conn) -> Result<Vec<String>, DbError> {
    let mut tables = tables_like(conn, "pi")?;
    tables.retain(|t| is_ibench_table(t));
    Ok(tables)
}

fn foreign_message(tables: &[String]) -> String {
    format!(
        "the target database already has table(s) {} that tidemark did not create: pass --drop-existing to drop them before the Insert Benchmark loads its own, or use another database",
        tables.join(", ")
    )
}

/// Refuses, without changing anything, when the database has `piN` tables
/// tidemark did not create (checked before any server work starts).
pub fn refuse_foreign_tables(conn: &mut dyn Conn) -> anyhow::Result<()> {
    let existing = existing_tables(conn)?;
    refuse_foreign(conn, existing, foreign_message)
}

/// Drops the `piN` tables the policy allows and creates the run's tables,
/// recording them as tidemark's. The error is one line naming the flag.
pub fn setup_tables(
    conn: &mut dyn Conn,
    ib: &Ibench,
    policy: ExistingTables,
) -> anyhow::Result<()> {
    let existing = existing_tables(conn)?;
    let foreign = foreign_tables(conn, &existing)?;
    // Only --drop-existing may drop a table tidemark did not create.
    if policy != ExistingTables::Drop && !foreign.is_empty() {
        anyhow::bail!(foreign_message(&foreign));
    }
    drop_tables(conn, &existing)?;
    for t in ib.tables() {
        for stmt in sql::create_table(ib.dialect, &t) {
            conn.execute_text(&stmt)?;
        }
        record_owned(conn, &t)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pi_and_digits_are_ours_to_consider() {
        assert!(is_ibench_table("pi1"));
        assert!(is_ibench_table("pi12"));
        assert!(!is_ibench_table("pi"));
        assert!(!is_ibench_table("pizza"));
        assert!(!is_ibench_table("pi1_old"));
        assert!(!is_ibench_table("sbtest1"));
    }
}
