//! The SQL text of every sysbench statement, per dialect (reference A.2, A.4).
//! Statement shapes are exactly the reference's; only placeholders, the
//! auto-increment column and the insert form differ between DBMS families.

use crate::db::Dialect;

/// `CREATE TABLE sbtestN`, as oltp_common.lua creates it (usepk=1).
pub fn create_table(d: Dialect, table: u32) -> String {
    match d {
        Dialect::Postgres => format!(
            "CREATE TABLE sbtest{table}(\n  id SERIAL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id))"
        ),
        Dialect::Mysql => format!(
            "CREATE TABLE sbtest{table}(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)) ENGINE = innodb"
        ),
        Dialect::Sqlite => format!(
            "CREATE TABLE sbtest{table}(\n  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL)"
        ),
    }
}

/// The secondary index created after the bulk load.
pub fn create_k_index(table: u32) -> String {
    format!("CREATE INDEX k_{table} ON sbtest{table}(k)")
}

/// The head of a multi-row bulk-load INSERT with explicit ids.
pub fn load_insert_head(table: u32) -> String {
    format!("INSERT INTO sbtest{table} (id, k, c, pad) VALUES ")
}

/// After loading explicit ids, moves the id sequence past them (PostgreSQL).
pub fn after_load(d: Dialect, table: u32, rows: u64) -> Option<String> {
    match d {
        Dialect::Postgres if rows > 0 => {
            Some(format!("SELECT setval('sbtest{table}_id_seq', {rows})"))
        }
        _ => None,
    }
}

fn placeholders(d: Dialect, from: usize, count: usize) -> String {
    let mut s = String::with_capacity(count * 5);
    for i in 0..count {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(&d.placeholder(from + i));
    }
    s
}

pub fn point_select(d: Dialect, t: u32) -> String {
    format!("SELECT c FROM sbtest{t} WHERE id={}", d.placeholder(1))
}

/// `SELECT <cols> FROM sbtestN WHERE <col> IN (…n)` for random-points,
/// hot-points and points-*.
pub fn in_list_select(d: Dialect, t: u32, cols: &str, col: &str, n: usize) -> String {
    format!(
        "SELECT {cols} FROM sbtest{t} WHERE {col} IN ({})",
        placeholders(d, 1, n)
    )
}

/// `SELECT <cols> FROM sbtestN WHERE <col> BETWEEN ? AND ?` (range-*, and the
/// read-only simple range).
pub fn between_select(d: Dialect, t: u32, cols: &str, col: &str) -> String {
    format!(
        "SELECT {cols} FROM sbtest{t} WHERE {col} BETWEEN {} AND {}",
        d.placeholder(1),
        d.placeholder(2)
    )
}

pub fn sum_range(d: Dialect, t: u32) -> String {
    format!(
        "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN {} AND {}",
        d.placeholder(1),
        d.placeholder(2)
    )
}

pub fn order_range(d: Dialect, t: u32) -> String {
    format!(
        "SELECT c FROM sbtest{t} WHERE id BETWEEN {} AND {} ORDER BY c",
        d.placeholder(1),
        d.placeholder(2)
    )
}

pub fn distinct_range(d: Dialect, t: u32) -> String {
    format!(
        "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN {} AND {} ORDER BY c",
        d.placeholder(1),
        d.placeholder(2)
    )
}

pub fn count_range(d: Dialect, t: u32) -> String {
    format!(
        "SELECT count(c) FROM sbtest{t} WHERE id BETWEEN {} AND {}",
        d.placeholder(1),
        d.placeholder(2)
    )
}

pub fn scan(t: u32) -> String {
    format!("SELECT * from sbtest{t} WHERE LENGTH(c) < 0")
}

pub fn update_index(d: Dialect, t: u32) -> String {
    format!("UPDATE sbtest{t} SET k=k+1 WHERE id={}", d.placeholder(1))
}

pub fn update_non_index(d: Dialect, t: u32) -> String {
    format!(
        "UPDATE sbtest{t} SET c={} WHERE id={}",
        d.placeholder(1),
        d.placeholder(2)
    )
}

pub fn update_inlist(d: Dialect, t: u32, n: usize) -> String {
    format!(
        "UPDATE sbtest{t} set c={} WHERE id IN ({})",
        d.placeholder(1),
        placeholders(d, 2, n)
    )
}

pub fn delete(d: Dialect, t: u32) -> String {
    format!("DELETE FROM sbtest{t} WHERE id={}", d.placeholder(1))
}

/// The read-write / write-only re-insert of a deleted id.
pub fn insert_with_id(d: Dialect, t: u32) -> String {
    format!(
        "INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({})",
        placeholders(d, 1, 4)
    )
}

/// The head of the plain-text `insert` test statement, up to `VALUES (`;
/// the caller appends the values. MySQL passes id 0 (auto-increment); the
/// others omit the id.
pub fn insert_text_head(d: Dialect, t: u32) -> String {
    match d {
        Dialect::Mysql => format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES (0, "),
        Dialect::Postgres | Dialect::Sqlite => {
            format!("INSERT INTO sbtest{t} (k, c, pad) VALUES (")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_the_reference() {
        assert_eq!(
            point_select(Dialect::Postgres, 1),
            "SELECT c FROM sbtest1 WHERE id=$1"
        );
        assert_eq!(
            point_select(Dialect::Mysql, 2),
            "SELECT c FROM sbtest2 WHERE id=?"
        );
        assert_eq!(
            in_list_select(Dialect::Postgres, 1, "k, c", "k", 3),
            "SELECT k, c FROM sbtest1 WHERE k IN ($1, $2, $3)"
        );
        assert_eq!(
            update_inlist(Dialect::Postgres, 1, 2),
            "UPDATE sbtest1 set c=$1 WHERE id IN ($2, $3)"
        );
        assert_eq!(
            distinct_range(Dialect::Sqlite, 3),
            "SELECT DISTINCT c FROM sbtest3 WHERE id BETWEEN ?1 AND ?2 ORDER BY c"
        );
        assert_eq!(scan(1), "SELECT * from sbtest1 WHERE LENGTH(c) < 0");
        assert_eq!(
            insert_text_head(Dialect::Mysql, 1),
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, "
        );
        assert!(create_table(Dialect::Postgres, 1).contains("id SERIAL"));
        assert!(create_table(Dialect::Mysql, 1).contains("AUTO_INCREMENT"));
    }
}
