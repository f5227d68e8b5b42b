//! The role threads of one Insert Benchmark client (reference B.2–B.5): the
//! inserter, the deleter that keeps the table a constant size, the query
//! thread, the helper that reads min/max ids, and the l.x index builder.
//!
//! The threads of a client share a few atomics ([`ClientShared`]): the
//! deleter's current oldest id (the lower bound of point queries), the
//! newest id the helper read, and counts that tell the helper when a
//! re-read is due. Each event reuses the thread's buffers and allocates
//! nothing (the helper's rare id reads aside).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::rows::RowGen;
use super::sql::{self, Arg, ROWS_PER_QUERY, RangeShape};
use crate::db::{Conn, DbError, Dialect, ErrorKind, Param, StmtId};
use crate::runner::{ClientWork, Done};

/// The deleter re-reads `min(transactionid)` every this many batches
/// (`resync_get_min`).
pub const RESYNC_MIN_BATCHES: u64 = 1_000;
/// The point query thread re-reads `max(transactionid)` every this many
/// queries.
pub const MAX_EVERY_QUERIES: u64 = 100;

const NONE: i64 = i64::MIN;

/// State the role threads of one client share, lock-free.
#[derive(Debug)]
pub struct ClientShared {
    /// The oldest id the deleter works from; point queries draw ids from
    /// `[min_id, max_id)`.
    pub min_id: AtomicI64,
    /// The newest id the helper read.
    pub max_id: AtomicI64,
    /// A fresh `min(transactionid)` for the deleter to adopt, or NONE.
    resync_min: AtomicI64,
    /// Batches the deleter has done, and queries the query thread has done.
    delete_batches: AtomicU64,
    queries: AtomicU64,
    /// Re-reads the helper has done.
    min_reads: AtomicU64,
    max_reads: AtomicU64,
    /// Whether the helper reads max ids at all (point query steps).
    wants_max: bool,
}

impl ClientShared {
    pub fn new(wants_max: bool) -> Arc<ClientShared> {
        Arc::new(ClientShared {
            min_id: AtomicI64::new(0),
            max_id: AtomicI64::new(0),
            resync_min: AtomicI64::new(NONE),
            delete_batches: AtomicU64::new(0),
            queries: AtomicU64::new(0),
            min_reads: AtomicU64::new(0),
            max_reads: AtomicU64::new(0),
            wants_max,
        })
    }

    fn min_due(&self) -> bool {
        self.delete_batches.load(Ordering::Relaxed) / RESYNC_MIN_BATCHES
            > self.min_reads.load(Ordering::Relaxed)
    }

    fn max_due(&self) -> bool {
        self.wants_max
            && self.queries.load(Ordering::Relaxed) / MAX_EVERY_QUERIES
                > self.max_reads.load(Ordering::Relaxed)
    }

    /// Whether the helper has a re-read to do (its gate).
    pub fn helper_due(&self) -> bool {
        self.min_due() || self.max_due()
    }
}

/// A `Done` for one statement.
fn one(rows: u64) -> Done {
    Done {
        statements: 1,
        rows,
    }
}

/// Inserts `rows_per_commit` generated rows per event, one multi-row
/// INSERT sent as text (autocommit), until `rows` rows are in.
pub struct Inserter {
    head: String,
    rows: RowGen,
    buf: String,
    rows_per_commit: u32,
    rows_left: u64,
}

impl Inserter {
    pub fn new(table: &str, rows_gen: RowGen, rows_per_commit: u32, rows: u64) -> Inserter {
        Inserter {
            head: sql::insert_head(table),
            rows: rows_gen,
            buf: String::with_capacity(64 + rows_per_commit as usize * 80),
            rows_per_commit: rows_per_commit.max(1),
            rows_left: rows,
        }
    }

    /// Events needed for `rows` rows at `rows_per_commit` per event.
    pub fn batches(rows: u64, rows_per_commit: u32) -> u64 {
        rows.div_ceil(u64::from(rows_per_commit.max(1)))
    }
}

impl ClientWork for Inserter {
    fn prepare(&mut self, _conn: &mut dyn Conn) -> Result<(), DbError> {
        Ok(())
    }

    fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
        let n = self.rows_left.min(u64::from(self.rows_per_commit)).max(1) as u32;
        self.buf.clear();
        self.buf.push_str(&self.head);
        self.rows.push_rows(&mut self.buf, n);
        let rows = conn.execute_text(&self.buf)?;
        self.rows_left = self.rows_left.saturating_sub(u64::from(n));
        Ok(one(rows))
    }
}

/// Deletes the oldest `rows_per_commit` rows per event, matching the
/// inserter batch for batch (its gate), so the table keeps its size.
pub struct Deleter {
    table: String,
    dialect: Dialect,
    shared: Arc<ClientShared>,
    buf: String,
    rows_per_commit: u32,
    rows_left: u64,
}

impl Deleter {
    pub fn new(
        table: &str,
        dialect: Dialect,
        shared: Arc<ClientShared>,
        rows_per_commit: u32,
        rows: u64,
    ) -> Deleter {
        Deleter {
            table: table.to_string(),
            dialect,
            shared,
            buf: String::with_capacity(256),
            rows_per_commit: rows_per_commit.max(1),
            rows_left: rows,
        }
    }
}

impl ClientWork for Deleter {
    fn prepare(&mut self, _conn: &mut dyn Conn) -> Result<(), DbError> {
        Ok(())
    }

    fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
        let resynced = self.shared.resync_min.swap(NONE, Ordering::Relaxed);
        if resynced != NONE {
            self.shared.min_id.fetch_max(resynced, Ordering::Relaxed);
        }
        let n = self.rows_left.min(u64::from(self.rows_per_commit)).max(1) as u32;
        // Claim the next ids: with one table for all clients, deleters
        // sharing it take successive ranges instead of the same rows.
        let min = self
            .shared
            .min_id
            .fetch_add(i64::from(n), Ordering::Relaxed);
        sql::write_delete(&mut self.buf, self.dialect, &self.table, min, n);
        let rows = match conn.execute_text(&self.buf) {
            Ok(rows) => rows,
            Err(e) => {
                // Not deleted: give the range back (unless another deleter
                // moved on meanwhile; the next resync corrects that).
                let _ = self.shared.min_id.compare_exchange(
                    min + i64::from(n),
                    min,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                return Err(e);
            }
        };
        self.shared.delete_batches.fetch_add(1, Ordering::Relaxed);
        self.rows_left = self.rows_left.saturating_sub(u64::from(n));
        Ok(one(rows))
    }
}

/// What a query thread asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryKind {
    /// qr: one of the three covering-index range shapes at random.
    Range,
    /// qp: ten ids on the PK, not covering.
    Point,
}

/// Runs queries as fast as it can until its client's inserter is done.
/// PostgreSQL and SQLite use prepared statements; MySQL gets text with
/// `FORCE INDEX`, as iibench sends it.
pub struct Querier {
    kind: QueryKind,
    table: String,
    dialect: Dialect,
    shared: Arc<ClientShared>,
    rng: SmallRng,
    /// Range: one per shape; point: one.
    stmts: Vec<StmtId>,
    buf: String,
    ids: [i64; ROWS_PER_QUERY],
}

impl Querier {
    pub fn new(
        kind: QueryKind,
        table: &str,
        dialect: Dialect,
        shared: Arc<ClientShared>,
        seed: u64,
    ) -> Querier {
        Querier {
            kind,
            table: table.to_string(),
            dialect,
            shared,
            rng: SmallRng::seed_from_u64(seed),
            stmts: Vec::new(),
            buf: String::with_capacity(256),
            ids: [0; ROWS_PER_QUERY],
        }
    }

    fn prepared(&self) -> bool {
        self.dialect != Dialect::Mysql
    }
}

impl ClientWork for Querier {
    fn prepare(&mut self, conn: &mut dyn Conn) -> Result<(), DbError> {
        if !self.prepared() {
            return Ok(());
        }
        let d = self.dialect;
        self.stmts = match self.kind {
            QueryKind::Range => RangeShape::ALL
                .iter()
                .map(|s| conn.prepare(&sql::range_query(d, &self.table, *s)))
                .collect::<Result<_, _>>()?,
            QueryKind::Point => vec![conn.prepare(&sql::point_query(d, &self.table))?],
        };
        Ok(())
    }

    fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
        let rows = match self.kind {
            QueryKind::Range => {
                let i = self.rng.random_range(0..RangeShape::ALL.len());
                let shape = RangeShape::ALL[i];
                let v = self.rng.random_range(0..shape.upper());
                if self.prepared() {
                    conn.execute(self.stmts[i], &[Param::Int(v)])?
                } else {
                    sql::write_range_query(
                        &mut self.buf,
                        self.dialect,
                        &self.table,
                        shape,
                        Arg::Int(v),
                    );
                    conn.execute_text(&self.buf)?
                }
            }
            QueryKind::Point => {
                let lo = self.shared.min_id.load(Ordering::Relaxed);
                let hi = self.shared.max_id.load(Ordering::Relaxed).max(lo + 1);
                for id in &mut self.ids {
                    *id = self.rng.random_range(lo..hi);
                }
                if self.prepared() {
                    let p = self.ids.map(Param::Int);
                    conn.execute(self.stmts[0], &p)?
                } else {
                    let a = self.ids.map(Arg::Int);
                    sql::write_point_query(&mut self.buf, self.dialect, &self.table, &a);
                    conn.execute_text(&self.buf)?
                }
            }
        };
        self.shared.queries.fetch_add(1, Ordering::Relaxed);
        Ok(one(rows))
    }
}

/// Reads `min(transactionid)` and `max(transactionid)` on its own
/// connection: once before the step starts, then whenever the deleter or
/// the point query thread is due a fresh value (its gate). One connection
/// for the whole step, never one per read (reference D.1).
pub struct IdsHelper {
    table: String,
    shared: Arc<ClientShared>,
}

impl IdsHelper {
    pub fn new(table: &str, shared: Arc<ClientShared>) -> IdsHelper {
        IdsHelper {
            table: table.to_string(),
            shared,
        }
    }

    fn read(&self, conn: &mut dyn Conn, sql: &str) -> Result<Option<i64>, DbError> {
        let rows = conn.query_text(sql)?;
        let v = rows
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten());
        v.map(|s| {
            s.parse::<i64>()
                .map_err(|_| DbError::new(ErrorKind::Other, "", format!("{sql} returned {s:?}")))
        })
        .transpose()
    }
}

impl ClientWork for IdsHelper {
    fn prepare(&mut self, conn: &mut dyn Conn) -> Result<(), DbError> {
        let min = self.read(conn, &sql::min_id(&self.table))?.unwrap_or(0);
        let max = self.read(conn, &sql::max_id(&self.table))?.unwrap_or(min);
        self.shared.min_id.store(min, Ordering::Relaxed);
        self.shared.max_id.store(max + 1, Ordering::Relaxed);
        Ok(())
    }

    fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
        let mut done = Done::default();
        if self.shared.min_due() {
            if let Some(min) = self.read(conn, &sql::min_id(&self.table))? {
                self.shared.resync_min.store(min, Ordering::Relaxed);
            }
            self.shared.min_reads.fetch_add(1, Ordering::Relaxed);
            done.statements += 1;
            done.rows += 1;
        }
        if self.shared.max_due() {
            if let Some(max) = self.read(conn, &sql::max_id(&self.table))? {
                // Ids are drawn from [min, max): include the newest row.
                self.shared.max_id.store(max + 1, Ordering::Relaxed);
            }
            self.shared.max_reads.fetch_add(1, Ordering::Relaxed);
            done.statements += 1;
            done.rows += 1;
        }
        Ok(done)
    }
}

/// Step l.x for one client: insert its share of the step's 100 rows, then
/// build the three secondary indexes (one event).
pub struct IndexBuilder {
    inserter: Option<Inserter>,
    ddl: Vec<String>,
}

impl IndexBuilder {
    pub fn new(table: &str, dialect: Dialect, inserter: Option<Inserter>) -> IndexBuilder {
        IndexBuilder {
            inserter,
            ddl: sql::create_indexes(dialect, table),
        }
    }
}

impl ClientWork for IndexBuilder {
    fn prepare(&mut self, _conn: &mut dyn Conn) -> Result<(), DbError> {
        Ok(())
    }

    fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
        let mut done = Done::default();
        if let Some(ins) = self.inserter.as_mut() {
            done = ins.event(conn)?;
        }
        for stmt in &self.ddl {
            conn.execute_text(stmt)?;
            done.statements += 1;
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_is_due_on_the_reference_cadence() {
        let s = ClientShared::new(true);
        assert!(!s.helper_due());
        s.queries.store(99, Ordering::Relaxed);
        assert!(!s.helper_due());
        s.queries.store(100, Ordering::Relaxed);
        assert!(s.max_due() && !s.min_due());
        s.max_reads.store(1, Ordering::Relaxed);
        assert!(!s.helper_due());
        s.delete_batches
            .store(RESYNC_MIN_BATCHES, Ordering::Relaxed);
        assert!(s.min_due());
        let range = ClientShared::new(false);
        range.queries.store(1_000, Ordering::Relaxed);
        assert!(!range.helper_due(), "range steps never read max ids");
    }

    #[test]
    fn batches_round_up() {
        assert_eq!(Inserter::batches(100, 50), 2);
        assert_eq!(Inserter::batches(101, 50), 3);
        assert_eq!(Inserter::batches(0, 50), 0);
        assert_eq!(Inserter::batches(7, 0), 7);
    }
}
