//! The per-client event bodies of the sysbench tests (reference A.4): which
//! statements an event sends, with which keys, inside which transaction.
//! Statements are prepared once per connection and table; an event reuses
//! the client's buffers and allocates nothing.

use std::fmt::Write as _;

use super::catalog::{Keys, Kind, RangeSelects, TestDef};
use super::sql;
use crate::db::{Conn, DbError, Dialect, Param, StmtId};
use crate::runner::mux::MuxWork;
use crate::runner::{ClientWork, Done};
use crate::workload::keys::{C_LEN, KeyDist, KeyGen, PAD_LEN, SYSBENCH_ZIPF_EXP, stream_seed};

/// Settings every client of a test shares.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub dialect: Dialect,
    pub tables: u32,
    pub table_size: u64,
    /// The run seed; each client's keys come from [`stream_seed`] of it,
    /// the test's name and the client number.
    pub seed: u64,
}

/// Statement handles of one table, in the order `prepare` creates them.
#[derive(Default)]
struct TableStmts {
    point: Option<StmtId>,
    main: Option<StmtId>,
    simple: Option<StmtId>,
    sum: Option<StmtId>,
    order: Option<StmtId>,
    distinct: Option<StmtId>,
    update_index: Option<StmtId>,
    update_non_index: Option<StmtId>,
    delete: Option<StmtId>,
    insert: Option<StmtId>,
}

/// One client thread's state for one sysbench test.
pub struct SysbenchClient {
    test: TestDef,
    cfg: ClientConfig,
    client: u32,
    keys: KeyGen,
    stmts: Vec<TableStmts>,
    /// Integer parameters of IN lists, reused across events.
    ints: Vec<Param<'static>>,
    c: [u8; C_LEN],
    pad: [u8; PAD_LEN],
    /// Plain-text statement buffer (insert, scan), reused.
    text: String,
    insert_heads: Vec<String>,
    scan_sql: Vec<String>,
}

impl SysbenchClient {
    pub fn new(test: &TestDef, cfg: &ClientConfig, client: u32) -> SysbenchClient {
        let dist = match test.keys {
            Keys::Zipfian => KeyDist::Zipfian(SYSBENCH_ZIPF_EXP),
            Keys::Uniform | Keys::TableSizeOne => KeyDist::Uniform,
        };
        let seed = stream_seed(cfg.seed, &test.name(), client);
        SysbenchClient {
            test: test.clone(),
            cfg: cfg.clone(),
            client,
            keys: KeyGen::new(seed, dist, cfg.table_size),
            stmts: Vec::new(),
            ints: Vec::with_capacity(test.range as usize + 1),
            c: [b'0'; C_LEN],
            pad: [b'0'; PAD_LEN],
            text: String::with_capacity(512),
            insert_heads: Vec::new(),
            scan_sql: Vec::new(),
        }
    }

    /// The key space: run.sh forces `--table-size=1` for update-one.
    fn key_space(&self) -> u64 {
        match self.test.keys {
            Keys::TableSizeOne => 1,
            _ => self.cfg.table_size,
        }
    }

    #[inline]
    fn table(&mut self) -> usize {
        (self.keys.uniform(1, i64::from(self.cfg.tables)) - 1) as usize
    }

    #[inline]
    fn id(&mut self) -> i64 {
        let n = self.key_space();
        self.keys.key(n)
    }

    fn c_str(&self) -> &str {
        std::str::from_utf8(&self.c).unwrap_or("")
    }

    /// SQL of the statements this test prepares for one table, in order.
    fn statements(&self, t: u32) -> Vec<(&'static str, String)> {
        let d = self.cfg.dialect;
        let r = self.test.range as usize;
        let cols = |on_id: bool, covered: bool| match (on_id, covered) {
            (true, true) => "id",
            (true, false) => "id, c",
            (false, true) => "k",
            (false, false) => "k, c",
        };
        let col = |on_id: bool| if on_id { "id" } else { "k" };
        let ro = |v: &mut Vec<(&'static str, String)>, rs: RangeSelects| {
            v.push(("point", sql::point_select(d, t)));
            if rs.simple {
                v.push(("simple", sql::between_select(d, t, "c", "id")));
            }
            if rs.sum {
                v.push(("sum", sql::sum_range(d, t)));
            }
            if rs.order {
                v.push(("order", sql::order_range(d, t)));
            }
            if rs.distinct {
                v.push(("distinct", sql::distinct_range(d, t)));
            }
        };
        let writes = |v: &mut Vec<(&'static str, String)>| {
            v.push(("update_index", sql::update_index(d, t)));
            v.push(("update_non_index", sql::update_non_index(d, t)));
            v.push(("delete", sql::delete(d, t)));
            v.push(("insert", sql::insert_with_id(d, t)));
        };
        let mut v = Vec::new();
        match self.test.kind {
            Kind::PointQuery => v.push(("point", sql::point_select(d, t))),
            Kind::RandomPoints { .. } => v.push(("main", sql::in_list_select(d, t, "c", "id", r))),
            Kind::Points { on_id, covered } => v.push((
                "main",
                sql::in_list_select(d, t, cols(on_id, covered), col(on_id), r),
            )),
            Kind::Range { on_id, covered } => v.push((
                "main",
                sql::between_select(d, t, cols(on_id, covered), col(on_id)),
            )),
            Kind::Scan | Kind::Insert => {}
            Kind::ReadOnly(rs) => ro(&mut v, rs),
            Kind::ReadOnlyCount => v.push(("main", sql::count_range(d, t))),
            Kind::ReadWrite => {
                ro(&mut v, RangeSelects::ALL);
                writes(&mut v);
            }
            Kind::WriteOnly => writes(&mut v),
            Kind::UpdateIndex => v.push(("update_index", sql::update_index(d, t))),
            Kind::UpdateNonIndex => v.push(("update_non_index", sql::update_non_index(d, t))),
            Kind::UpdateInlist => v.push(("main", sql::update_inlist(d, t, r))),
            Kind::Delete => v.push(("delete", sql::delete(d, t))),
        }
        v
    }

    /// Every distinct statement text this test sends to table 1, with
    /// representative parameters filled in by the caller (EXPLAIN capture).
    pub fn statement_texts(&self) -> Vec<String> {
        let mut v: Vec<String> = self.statements(1).into_iter().map(|(_, s)| s).collect();
        match self.test.kind {
            Kind::Scan => v.push(sql::scan(1)),
            Kind::Insert => v.push(format!(
                "{}1, 'c', 'pad')",
                sql::insert_text_head(self.cfg.dialect, 1)
            )),
            _ => {}
        }
        v
    }

    fn point_selects(&mut self, conn: &mut dyn Conn, n: u32) -> Result<u64, DbError> {
        let t = self.table();
        let stmt = self.stmts[t].point.expect("prepared");
        let mut rows = 0;
        for _ in 0..n {
            let id = self.id();
            rows += conn.execute(stmt, &[Param::Int(id)])?;
        }
        Ok(rows)
    }

    /// A BETWEEN select on the id: bounds x and x+width.
    fn range_select(
        &mut self,
        conn: &mut dyn Conn,
        stmt: StmtId,
        width: i64,
    ) -> Result<u64, DbError> {
        let x = self.id();
        conn.execute(stmt, &[Param::Int(x), Param::Int(x + width)])
    }

    fn read_only_body(&mut self, conn: &mut dyn Conn, rs: RangeSelects) -> Result<u64, DbError> {
        let mut rows = self.point_selects(conn, 10)?;
        let w = i64::from(self.test.range) - 1;
        let pick = |s: &TableStmts| [s.simple, s.sum, s.order, s.distinct];
        let wanted = [rs.simple, rs.sum, rs.order, rs.distinct];
        for (i, _) in wanted.iter().enumerate().filter(|(_, on)| **on) {
            let t = self.table();
            let stmt = pick(&self.stmts[t])[i].expect("prepared");
            rows += self.range_select(conn, stmt, w)?;
        }
        Ok(rows)
    }

    fn writes(&mut self, conn: &mut dyn Conn) -> Result<u64, DbError> {
        let mut rows = 0;
        let t = self.table();
        let id = self.id();
        rows += conn.execute(
            self.stmts[t].update_index.expect("prepared"),
            &[Param::Int(id)],
        )?;
        let t = self.table();
        let id = self.id();
        self.keys.fill_digits(&mut self.c);
        let stmt = self.stmts[t].update_non_index.expect("prepared");
        rows += conn.execute(stmt, &[Param::Text(self.c_str()), Param::Int(id)])?;
        let t = self.table();
        let id = self.id();
        rows += conn.execute(self.stmts[t].delete.expect("prepared"), &[Param::Int(id)])?;
        let k = self.keys.uniform(1, self.cfg.table_size as i64);
        self.keys.fill_digits(&mut self.c);
        self.keys.fill_digits(&mut self.pad);
        let pad = std::str::from_utf8(&self.pad).unwrap_or("");
        let stmt = self.stmts[t].insert.expect("prepared");
        rows += conn.execute(
            stmt,
            &[
                Param::Int(id),
                Param::Int(k),
                Param::Text(self.c_str()),
                Param::Text(pad),
            ],
        )?;
        Ok(rows)
    }

    fn fill_ints(&mut self, n: usize, hot: bool) {
        self.ints.clear();
        let base = (self.cfg.table_size / 2) as i64;
        for i in 0..n {
            let v = if hot { base + 1 + i as i64 } else { self.id() };
            self.ints.push(Param::Int(v));
        }
    }

    fn in_list(&mut self, conn: &mut dyn Conn, hot: bool) -> Result<u64, DbError> {
        let t = self.table();
        self.fill_ints(self.test.range as usize, hot);
        conn.execute(self.stmts[t].main.expect("prepared"), &self.ints)
    }

    fn update_inlist(&mut self, conn: &mut dyn Conn) -> Result<u64, DbError> {
        let t = self.table();
        let n = self.test.range as usize;
        self.fill_ints(n, false);
        self.keys.fill_digits(&mut self.c);
        let stmt = self.stmts[t].main.expect("prepared");
        let c = std::str::from_utf8(&self.c).unwrap_or("");
        const STACK: usize = 128;
        if n < STACK {
            let mut params = [Param::Int(0); STACK];
            params[0] = Param::Text(c);
            params[1..=n].copy_from_slice(&self.ints);
            conn.execute(stmt, &params[..=n])
        } else {
            let mut params = Vec::with_capacity(n + 1);
            params.push(Param::Text(c));
            params.extend_from_slice(&self.ints);
            conn.execute(stmt, &params)
        }
    }

    fn insert(&mut self, conn: &mut dyn Conn) -> Result<u64, DbError> {
        let t = self.table();
        let k = self.keys.uniform(1, self.cfg.table_size as i64);
        self.keys.fill_digits(&mut self.c);
        self.keys.fill_digits(&mut self.pad);
        self.text.clear();
        self.text.push_str(&self.insert_heads[t]);
        let c = std::str::from_utf8(&self.c).unwrap_or("");
        let pad = std::str::from_utf8(&self.pad).unwrap_or("");
        let _ = write!(self.text, "{k}, '{c}', '{pad}')");
        conn.execute_text(&self.text)
    }
}

/// Runs `body` inside BEGIN … COMMIT, rolling back on error.
fn in_transaction(
    conn: &mut dyn Conn,
    body: impl FnOnce(&mut dyn Conn) -> Result<u64, DbError>,
) -> Result<u64, DbError> {
    conn.execute_text("BEGIN")?;
    match body(conn) {
        Ok(rows) => {
            conn.execute_text("COMMIT")?;
            Ok(rows)
        }
        Err(e) => {
            let _ = conn.execute_text("ROLLBACK");
            Err(e)
        }
    }
}

impl ClientWork for SysbenchClient {
    fn prepare(&mut self, conn: &mut dyn Conn) -> Result<(), DbError> {
        let d = self.cfg.dialect;
        for t in 1..=self.cfg.tables {
            let mut s = TableStmts::default();
            for (slot, text) in self.statements(t) {
                let id = Some(conn.prepare(&text)?);
                match slot {
                    "point" => s.point = id,
                    "main" => s.main = id,
                    "simple" => s.simple = id,
                    "sum" => s.sum = id,
                    "order" => s.order = id,
                    "distinct" => s.distinct = id,
                    "update_index" => s.update_index = id,
                    "update_non_index" => s.update_non_index = id,
                    "delete" => s.delete = id,
                    "insert" => s.insert = id,
                    other => unreachable!("unknown statement slot {other}"),
                }
            }
            self.stmts.push(s);
            self.insert_heads.push(sql::insert_text_head(d, t));
            self.scan_sql.push(sql::scan(t));
        }
        Ok(())
    }

    fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
        let statements = self.test.statements_per_event();
        let rows = match self.test.kind {
            Kind::PointQuery => self.point_selects(conn, 1)?,
            Kind::RandomPoints { hot } => self.in_list(conn, hot)?,
            Kind::Points { .. } => self.in_list(conn, false)?,
            Kind::Range { .. } => {
                let t = self.table();
                let stmt = self.stmts[t].main.expect("prepared");
                self.range_select(conn, stmt, i64::from(self.test.range))?
            }
            Kind::Scan => {
                // The table is fixed per thread: (thread id mod tables) + 1.
                let t = (self.client % self.cfg.tables) as usize;
                conn.execute_text(&self.scan_sql[t])?;
                self.cfg.table_size
            }
            Kind::ReadOnly(rs) => in_transaction(conn, |c| self.read_only_body(c, rs))?,
            Kind::ReadOnlyCount => {
                let t = self.table();
                let stmt = self.stmts[t].main.expect("prepared");
                let w = i64::from(self.test.range) - 1;
                self.range_select(conn, stmt, w)?
            }
            Kind::ReadWrite => in_transaction(conn, |c| {
                let r = self.read_only_body(c, RangeSelects::ALL)?;
                Ok(r + self.writes(c)?)
            })?,
            Kind::WriteOnly => in_transaction(conn, |c| self.writes(c))?,
            Kind::UpdateIndex => {
                let t = self.table();
                let id = self.id();
                conn.execute(
                    self.stmts[t].update_index.expect("prepared"),
                    &[Param::Int(id)],
                )?
            }
            Kind::UpdateNonIndex => {
                let t = self.table();
                let id = self.id();
                self.keys.fill_digits(&mut self.c);
                let stmt = self.stmts[t].update_non_index.expect("prepared");
                conn.execute(stmt, &[Param::Text(self.c_str()), Param::Int(id)])?
            }
            Kind::UpdateInlist => self.update_inlist(conn)?,
            Kind::Delete => {
                let t = self.table();
                let id = self.id();
                conn.execute(self.stmts[t].delete.expect("prepared"), &[Param::Int(id)])?
            }
            Kind::Insert => self.insert(conn)?,
        };
        Ok(Done { statements, rows })
    }
}

impl SysbenchClient {
    /// Whether every event of `test` is one read statement, so an event
    /// loop can multiplex its clients ([`MuxWork`]).
    pub fn is_single_read(test: &TestDef) -> bool {
        matches!(
            test.kind,
            Kind::PointQuery
                | Kind::RandomPoints { .. }
                | Kind::Points { .. }
                | Kind::Range { .. }
                | Kind::ReadOnlyCount
        )
    }
}

impl MuxWork for SysbenchClient {
    fn prepare(&mut self, conn: &mut dyn Conn) -> Result<(), DbError> {
        ClientWork::prepare(self, conn)
    }

    /// The same keys in the same order as [`ClientWork::event`] draws them.
    fn next_statement(&mut self) -> (StmtId, &[Param<'static>]) {
        let t = self.table();
        let s = &self.stmts[t];
        let (point, main) = (s.point, s.main);
        match self.test.kind {
            Kind::PointQuery => {
                let id = self.id();
                self.ints.clear();
                self.ints.push(Param::Int(id));
                (point.expect("prepared"), &self.ints)
            }
            Kind::RandomPoints { hot } => {
                self.fill_ints(self.test.range as usize, hot);
                (main.expect("prepared"), &self.ints)
            }
            Kind::Points { .. } => {
                self.fill_ints(self.test.range as usize, false);
                (main.expect("prepared"), &self.ints)
            }
            Kind::Range { .. } | Kind::ReadOnlyCount => {
                let width = match self.test.kind {
                    Kind::Range { .. } => i64::from(self.test.range),
                    _ => i64::from(self.test.range) - 1,
                };
                let x = self.id();
                self.ints.clear();
                self.ints.push(Param::Int(x));
                self.ints.push(Param::Int(x + width));
                (main.expect("prepared"), &self.ints)
            }
            _ => unreachable!("{} is not a single-read test", self.test.name()),
        }
    }
}
