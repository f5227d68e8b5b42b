//! The SQL text of every Insert Benchmark statement, per dialect (reference
//! B.1, B.3, B.5, B.6).
//!
//! MySQL gets what iibench sends it: text statements with `FORCE INDEX` and
//! `DELETE … ORDER BY … LIMIT`. PostgreSQL gets prepared queries without
//! hints, a delete through an `IN (SELECT … LIMIT n)` subquery and a sequence
//! cache of 1000. SQLite gets the closest equivalents: prepared queries with
//! `INDEXED BY` (its index hint, which fails rather than scan if the index
//! cannot be used) and the subquery delete (its `DELETE … LIMIT` is a
//! compile-time option). Inserts are never prepared, in any dialect.
//!
//! Statement text that changes per event is written into a caller's reused
//! buffer, so the hot path allocates nothing.

use std::fmt::Write as _;

use crate::db::Dialect;

/// Rows each query returns (`rows_per_query`).
pub const ROWS_PER_QUERY: usize = 10;

/// The columns every insert fills, in the reference's order.
pub const INSERT_COLUMNS: &str = "dateandtime,cashregisterid,customerid,productid,price,data";

/// The name of client table `n` (1-based): `pi1`, `pi2`…
pub fn table_name(n: u32) -> String {
    format!("pi{n}")
}

/// The three covering secondary indexes, as (name suffix, columns).
pub const INDEXES: [(&str, &str); 3] = [
    ("marketsegment", "productid, customerid, price"),
    ("registersegment", "cashregisterid, customerid, price"),
    ("pdc", "price, dateandtime, customerid"),
];

/// Statements that create table `t` (B.1), in order.
pub fn create_table(d: Dialect, t: &str) -> Vec<String> {
    match d {
        Dialect::Mysql => vec![format!(
            "CREATE TABLE {t} (transactionid bigint NOT NULL AUTO_INCREMENT, dateandtime datetime, \
             cashregisterid int NOT NULL, customerid int NOT NULL, productid int NOT NULL, \
             price int NOT NULL, data varchar(4000), PRIMARY KEY (transactionid)) ENGINE=InnoDB"
        )],
        Dialect::Postgres => vec![
            format!(
                "CREATE TABLE {t} (transactionid bigserial PRIMARY KEY, \
                 dateandtime timestamp without time zone, cashregisterid int NOT NULL, \
                 customerid int NOT NULL, productid int NOT NULL, price int NOT NULL, \
                 data varchar(4000))"
            ),
            format!("ALTER SEQUENCE {t}_transactionid_seq CACHE 1000"),
        ],
        // INTEGER PRIMARY KEY is the rowid: auto-assigned as max + 1, so new
        // rows go to the head of the key as with auto-increment.
        Dialect::Sqlite => vec![format!(
            "CREATE TABLE {t} (transactionid INTEGER PRIMARY KEY, dateandtime TEXT, \
             cashregisterid INTEGER NOT NULL, customerid INTEGER NOT NULL, \
             productid INTEGER NOT NULL, price INTEGER NOT NULL, data TEXT)"
        )],
    }
}

/// Statements that build the secondary indexes of `t` in step l.x: one
/// ALTER with three ADD INDEX on MySQL (a single pass, as iibench does for
/// InnoDB), one CREATE INDEX per index elsewhere.
pub fn create_indexes(d: Dialect, t: &str) -> Vec<String> {
    match d {
        Dialect::Mysql => {
            let adds: Vec<String> = INDEXES
                .iter()
                .map(|(name, cols)| format!("ADD INDEX {t}_{name} ({cols})"))
                .collect();
            vec![format!("ALTER TABLE {t} {}", adds.join(", "))]
        }
        Dialect::Postgres | Dialect::Sqlite => INDEXES
            .iter()
            .map(|(name, cols)| format!("CREATE INDEX {t}_{name} ON {t} ({cols})"))
            .collect(),
    }
}

/// The head of a multi-row insert into `t`; rows follow as `(…),(…)`.
pub fn insert_head(t: &str) -> String {
    format!("INSERT INTO {t} ({INSERT_COLUMNS}) VALUES ")
}

/// Writes the delete of the `n` oldest rows of `t` with ids `>= min` (B.3).
pub fn write_delete(buf: &mut String, d: Dialect, t: &str, min: i64, n: u32) {
    buf.clear();
    let _ = match d {
        Dialect::Mysql => write!(
            buf,
            "DELETE FROM {t} WHERE transactionid >= {min} ORDER BY transactionid ASC LIMIT {n}"
        ),
        Dialect::Postgres | Dialect::Sqlite => write!(
            buf,
            "DELETE FROM {t} WHERE transactionid IN (SELECT transactionid FROM {t} \
             WHERE transactionid >= {min} ORDER BY transactionid ASC LIMIT {n})"
        ),
    };
}

/// The three range query shapes of qr steps (B.5), each served by one
/// covering index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeShape {
    /// `productid >= ?` on `piN_marketsegment`, ? in [0, 10000).
    Market,
    /// `cashregisterid > ?` on `piN_registersegment`, ? in [0, 1000).
    Register,
    /// `price >= ?` on `piN_pdc`, ? in [0, 500).
    Pdc,
}

impl RangeShape {
    pub const ALL: [RangeShape; 3] = [RangeShape::Market, RangeShape::Register, RangeShape::Pdc];

    /// The index that serves it (name suffix).
    pub fn index(self) -> &'static str {
        match self {
            RangeShape::Market => "marketsegment",
            RangeShape::Register => "registersegment",
            RangeShape::Pdc => "pdc",
        }
    }

    /// The parameter is uniform in `0..upper`.
    pub fn upper(self) -> i64 {
        match self {
            RangeShape::Market => 10_000,
            RangeShape::Register => 1_000,
            RangeShape::Pdc => 500,
        }
    }

    fn select_where(self) -> (&'static str, &'static str) {
        match self {
            RangeShape::Market => ("productid, customerid, price", "productid >="),
            RangeShape::Register => ("cashregisterid, customerid, price", "cashregisterid >"),
            RangeShape::Pdc => ("price, dateandtime, customerid", "price >="),
        }
    }
}

/// A parameter slot in statement text: a placeholder (prepared) or a value.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    Placeholder(usize),
    Int(i64),
}

fn write_arg(buf: &mut String, d: Dialect, a: Arg) {
    let _ = match (a, d) {
        (Arg::Int(v), _) => write!(buf, "{v}"),
        (Arg::Placeholder(n), Dialect::Postgres) => write!(buf, "${n}"),
        (Arg::Placeholder(_), Dialect::Mysql) => write!(buf, "?"),
        (Arg::Placeholder(n), Dialect::Sqlite) => write!(buf, "?{n}"),
    };
}

fn hint(buf: &mut String, d: Dialect, t: &str, index: &str) {
    let _ = match d {
        Dialect::Mysql => write!(buf, " FORCE INDEX ({t}_{index})"),
        Dialect::Sqlite => write!(buf, " INDEXED BY {t}_{index}"),
        Dialect::Postgres => Ok(()),
    };
}

/// Writes a range query of `shape` on `t` with `arg`.
pub fn write_range_query(buf: &mut String, d: Dialect, t: &str, shape: RangeShape, arg: Arg) {
    buf.clear();
    let (cols, cond) = shape.select_where();
    let _ = write!(buf, "SELECT {cols} FROM {t}");
    hint(buf, d, t, shape.index());
    let _ = write!(buf, " WHERE ({cond} ");
    write_arg(buf, d, arg);
    let _ = write!(buf, ") ORDER BY {cols} LIMIT {ROWS_PER_QUERY}");
}

/// Writes the point query of qp steps: 10 ids on the PK, not covering.
pub fn write_point_query(buf: &mut String, d: Dialect, t: &str, args: &[Arg]) {
    buf.clear();
    let _ = write!(
        buf,
        "SELECT transactionid, productid, data FROM {t} WHERE transactionid IN ("
    );
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            buf.push(',');
        }
        write_arg(buf, d, *a);
    }
    buf.push(')');
}

/// The smallest id of `t` (where the deleter starts).
pub fn min_id(t: &str) -> String {
    format!("SELECT min(transactionid) FROM {t}")
}

/// The largest id of `t` (the upper bound of point query ids).
pub fn max_id(t: &str) -> String {
    format!("SELECT max(transactionid) FROM {t}")
}

/// A prepared range query of `shape` (PostgreSQL, SQLite).
pub fn range_query(d: Dialect, t: &str, shape: RangeShape) -> String {
    let mut s = String::new();
    write_range_query(&mut s, d, t, shape, Arg::Placeholder(1));
    s
}

/// A prepared point query (PostgreSQL, SQLite).
pub fn point_query(d: Dialect, t: &str) -> String {
    let args: Vec<Arg> = (1..=ROWS_PER_QUERY).map(Arg::Placeholder).collect();
    let mut s = String::new();
    write_point_query(&mut s, d, t, &args);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_follow_the_reference_schema() {
        let pg = create_table(Dialect::Postgres, "pi3");
        assert!(pg[0].starts_with("CREATE TABLE pi3 (transactionid bigserial PRIMARY KEY, dateandtime timestamp without time zone, cashregisterid int NOT NULL"));
        assert!(pg[0].ends_with("price int NOT NULL, data varchar(4000))"));
        assert_eq!(pg[1], "ALTER SEQUENCE pi3_transactionid_seq CACHE 1000");
        let my = create_table(Dialect::Mysql, "pi1");
        assert_eq!(my.len(), 1);
        assert!(
            my[0].contains("transactionid bigint NOT NULL AUTO_INCREMENT, dateandtime datetime")
        );
        assert!(my[0].ends_with("PRIMARY KEY (transactionid)) ENGINE=InnoDB"));
        let lite = create_table(Dialect::Sqlite, "pi1");
        assert!(lite[0].contains("transactionid INTEGER PRIMARY KEY"));
    }

    #[test]
    fn indexes_are_one_alter_on_mysql_and_three_creates_elsewhere() {
        assert_eq!(
            create_indexes(Dialect::Mysql, "pi2"),
            [
                "ALTER TABLE pi2 ADD INDEX pi2_marketsegment (productid, customerid, price), \
              ADD INDEX pi2_registersegment (cashregisterid, customerid, price), \
              ADD INDEX pi2_pdc (price, dateandtime, customerid)"
            ]
        );
        for d in [Dialect::Postgres, Dialect::Sqlite] {
            assert_eq!(
                create_indexes(d, "pi1"),
                [
                    "CREATE INDEX pi1_marketsegment ON pi1 (productid, customerid, price)",
                    "CREATE INDEX pi1_registersegment ON pi1 (cashregisterid, customerid, price)",
                    "CREATE INDEX pi1_pdc ON pi1 (price, dateandtime, customerid)",
                ]
            );
        }
        assert_eq!(
            insert_head("pi1"),
            "INSERT INTO pi1 (dateandtime,cashregisterid,customerid,productid,price,data) VALUES "
        );
    }

    #[test]
    fn deletes_take_the_oldest_rows_per_dialect() {
        let mut b = String::new();
        write_delete(&mut b, Dialect::Mysql, "pi1", 1234, 50);
        assert_eq!(
            b,
            "DELETE FROM pi1 WHERE transactionid >= 1234 ORDER BY transactionid ASC LIMIT 50"
        );
        for d in [Dialect::Postgres, Dialect::Sqlite] {
            write_delete(&mut b, d, "pi2", 7, 5);
            assert_eq!(
                b,
                "DELETE FROM pi2 WHERE transactionid IN (SELECT transactionid FROM pi2 \
                 WHERE transactionid >= 7 ORDER BY transactionid ASC LIMIT 5)"
            );
        }
    }

    #[test]
    fn range_queries_match_the_reference_shapes() {
        assert_eq!(
            range_query(Dialect::Postgres, "pi1", RangeShape::Market),
            "SELECT productid, customerid, price FROM pi1 WHERE (productid >= $1) \
             ORDER BY productid, customerid, price LIMIT 10"
        );
        assert_eq!(
            range_query(Dialect::Postgres, "pi1", RangeShape::Register),
            "SELECT cashregisterid, customerid, price FROM pi1 WHERE (cashregisterid > $1) \
             ORDER BY cashregisterid, customerid, price LIMIT 10"
        );
        assert_eq!(
            range_query(Dialect::Postgres, "pi1", RangeShape::Pdc),
            "SELECT price, dateandtime, customerid FROM pi1 WHERE (price >= $1) \
             ORDER BY price, dateandtime, customerid LIMIT 10"
        );
        let mut b = String::new();
        write_range_query(&mut b, Dialect::Mysql, "pi4", RangeShape::Pdc, Arg::Int(17));
        assert_eq!(
            b,
            "SELECT price, dateandtime, customerid FROM pi4 FORCE INDEX (pi4_pdc) \
             WHERE (price >= 17) ORDER BY price, dateandtime, customerid LIMIT 10"
        );
        assert_eq!(
            range_query(Dialect::Sqlite, "pi1", RangeShape::Register),
            "SELECT cashregisterid, customerid, price FROM pi1 INDEXED BY pi1_registersegment \
             WHERE (cashregisterid > ?1) ORDER BY cashregisterid, customerid, price LIMIT 10"
        );
        let uppers: Vec<i64> = RangeShape::ALL.iter().map(|s| s.upper()).collect();
        assert_eq!(uppers, [10_000, 1_000, 500]);
    }

    #[test]
    fn point_queries_ask_for_ten_ids() {
        assert_eq!(
            point_query(Dialect::Postgres, "pi1"),
            "SELECT transactionid, productid, data FROM pi1 WHERE transactionid IN \
             ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)"
        );
        assert!(
            point_query(Dialect::Sqlite, "pi1").ends_with("IN (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)")
        );
        let mut b = String::new();
        let ids: Vec<Arg> = (100..110).map(Arg::Int).collect();
        write_point_query(&mut b, Dialect::Mysql, "pi2", &ids);
        assert_eq!(
            b,
            "SELECT transactionid, productid, data FROM pi2 WHERE transactionid IN \
             (100,101,102,103,104,105,106,107,108,109)"
        );
        assert_eq!(min_id("pi1"), "SELECT min(transactionid) FROM pi1");
        assert_eq!(max_id("pi1"), "SELECT max(transactionid) FROM pi1");
    }
}
