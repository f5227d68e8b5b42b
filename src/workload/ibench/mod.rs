//! The Insert Benchmark (reference section B): ten steps over one table per
//! client (`pi1..piN`), from a PK-ordered load to query steps with
//! rate-limited background inserts and deletes.
//!
//! Steps as data ([`StepDef`]), the rows and statements they send
//! ([`rows`], [`sql`]), the role threads of a client ([`client`]), the
//! tables ([`schema`]), the pause after l.i2 ([`housekeeping`]) and what is
//! derived from a step's measurements ([`metrics`]). Threads and timing
//! belong to the runner: [`Ibench::roles_plan`] hands it one
//! [`RolesPlan`] per step.

pub mod client;
pub mod housekeeping;
pub mod metrics;
pub mod rows;
pub mod schema;
pub mod sql;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::db::{Conn, Dialect};
use crate::runner::{Gate, RolesPlan, ThreadPlan};
use crate::workload::StepInfo;
use client::{ClientShared, Deleter, IdsHelper, IndexBuilder, Inserter, Querier, QueryKind};
use rows::RowGen;

/// The knobs of an Insert Benchmark run (a profile's values after
/// overrides). Row counts are per client (= per table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IbenchParams {
    /// Clients, each with its own table `piN` (dop).
    pub clients: u32,
    /// l.i0: rows loaded per table (X).
    pub rows_load: u64,
    /// l.i1: rows inserted (and deleted) per table (Y).
    pub rows_l_i1: u64,
    /// l.i2: rows inserted (and deleted) per table (Z).
    pub rows_l_i2: u64,
    /// Nominal seconds of each query step: its inserter's quota is
    /// `query_secs × rate` rows.
    pub query_secs: f64,
    /// Background insert (and delete) rates of the query steps, rows per
    /// second per client: one qr and one qp step each.
    pub insert_rates: Vec<u32>,
    /// Fraction of the reference's wait after l.i2 to sleep (1 = full).
    pub wait_scale: f64,
    /// All clients on table `pi1` instead of one table each.
    pub one_table: bool,
    pub seed: u64,
}

/// What a step does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    /// l.i0: inserts only, no secondary indexes.
    Load,
    /// l.x: a few rows, then the three secondary indexes.
    CreateIndexes,
    /// l.i1, l.i2: inserts with a deleter that keeps the row count.
    InsertDelete,
    /// qrN / qpN: queries as fast as possible with paced inserts and deletes.
    Query(QueryKind),
}

/// One step of the benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct StepDef {
    /// `l.i0`, `l.x`, `l.i1`, `l.i2`, `qr100`, `qp100`…
    pub name: String,
    pub kind: StepKind,
    /// Rows each client inserts.
    pub rows_per_client: u64,
    pub rows_per_commit: u32,
    /// Rows per second per client of the inserter (and so the deleter).
    pub rate: Option<u32>,
}

impl StepDef {
    pub fn deletes(&self) -> bool {
        matches!(self.kind, StepKind::InsertDelete | StepKind::Query(_))
    }

    /// Role names of the step's threads, one thread each per client.
    pub fn roles(&self) -> &'static [&'static str] {
        match self.kind {
            StepKind::Load => &["insert"],
            StepKind::CreateIndexes => &["index"],
            StepKind::InsertDelete => &["insert", "delete", "ids"],
            StepKind::Query(_) => &["insert", "delete", "query", "ids"],
        }
    }

    /// The role the step is reported by: queries in q steps, the index
    /// build in l.x, inserts otherwise.
    pub fn primary_role(&self) -> &'static str {
        match self.kind {
            StepKind::Load | StepKind::InsertDelete => "insert",
            StepKind::CreateIndexes => "index",
            StepKind::Query(_) => "query",
        }
    }
}

/// Rows inserted in l.x over all clients before the indexes are built.
pub const LX_ROWS: u64 = 100;
/// Rows per commit of the q steps' inserter (capped at the rate).
pub const Q_ROWS_PER_COMMIT: u32 = 50;
/// An inserter may be this many batches ahead of its deleter (iibench's
/// statement queues hold 8).
pub const MAX_LEAD_BATCHES: u64 = 8;
/// A thread gives up after this many failed events in a row.
pub const STORM_LIMIT: u32 = 100;

/// The ten steps in the reference's order (B.4) for these parameters.
pub fn steps(p: &IbenchParams) -> Vec<StepDef> {
    let step = |name: &str, kind, rows, rpc, rate| StepDef {
        name: name.to_string(),
        kind,
        rows_per_client: rows,
        rows_per_commit: rpc,
        rate,
    };
    let mut v = vec![
        step("l.i0", StepKind::Load, p.rows_load, 100, None),
        step(
            "l.x",
            StepKind::CreateIndexes,
            LX_ROWS / u64::from(if p.one_table { 1 } else { p.clients.max(1) }),
            100,
            None,
        ),
        step("l.i1", StepKind::InsertDelete, p.rows_l_i1, 50, None),
        step("l.i2", StepKind::InsertDelete, p.rows_l_i2, 5, None),
    ];
    for &rate in &p.insert_rates {
        let rows = (p.query_secs * f64::from(rate)).round().max(1.0) as u64;
        let rpc = Q_ROWS_PER_COMMIT.min(rate.max(1));
        for (prefix, kind) in [("qr", QueryKind::Range), ("qp", QueryKind::Point)] {
            v.push(step(
                &format!("{prefix}{rate}"),
                StepKind::Query(kind),
                rows,
                rpc,
                Some(rate),
            ));
        }
    }
    v
}

/// A per-client seed for step `seq`, derived from the run seed (stored in
/// the step's params so its rows and queries can be reproduced).
pub fn client_seed(base: u64, seq: u32, client: u32) -> u64 {
    crate::workload::keys::mix64(base ^ (u64::from(seq) << 32) ^ u64::from(client))
}

/// The suite bound to its parameters and the target's dialect.
pub struct Ibench {
    pub params: IbenchParams,
    pub dialect: Dialect,
    random: Arc<[u8]>,
}

impl Ibench {
    pub fn new(params: IbenchParams, dialect: Dialect) -> Ibench {
        let random = rows::random_buffer(params.seed);
        Ibench {
            params,
            dialect,
            random,
        }
    }

    /// The table client `client` (0-based) works on.
    pub fn table(&self, client: u32) -> String {
        sql::table_name(if self.params.one_table { 1 } else { client + 1 })
    }

    /// The distinct tables of the run.
    pub fn tables(&self) -> Vec<String> {
        let n = if self.params.one_table {
            1
        } else {
            self.params.clients
        };
        (0..n).map(|c| self.table(c)).collect()
    }

    /// Clients that run a step: in l.x with one table, only the first
    /// builds the indexes.
    fn clients_of(&self, step: &StepDef) -> u32 {
        if self.params.one_table && step.kind == StepKind::CreateIndexes {
            1
        } else {
            self.params.clients
        }
    }

    /// Rows in all tables after l.i0 (the reference's nr1).
    pub fn rows_loaded(&self) -> u64 {
        self.params.rows_load * u64::from(self.params.clients)
    }

    /// What the store records about step `seq`.
    pub fn step_info(&self, step: &StepDef, seq: u32) -> StepInfo {
        let clients = self.clients_of(step);
        let seeds: Vec<u64> = (0..clients)
            .map(|c| client_seed(self.params.seed, seq, c))
            .collect();
        StepInfo {
            suite: crate::record::SuiteName::Ibench.as_str().into(),
            name: step.name.clone(),
            test: step.name.clone(),
            range: None,
            group: None,
            reported: true,
            note: self.note(step),
            params: serde_json::json!({
                "kind": step.kind,
                "clients": clients,
                "tables": self.tables(),
                "rows_per_client": step.rows_per_client,
                "rows_per_commit": step.rows_per_commit,
                "deletes": step.deletes(),
                "insert_rate_per_client": step.rate,
                "roles": step.roles(),
                "rows_loaded": self.rows_loaded(),
                "seed": self.params.seed,
                "client_seeds": seeds,
            }),
            sweep_threads: None,
        }
    }

    /// What step `step` means on this target where it differs from the
    /// other families: SQLite has one write lock per database file, taken
    /// in turn by the writers of every client (one table each, but one
    /// file), and no server, so its queries run on the client's CPU.
    pub fn note(&self, step: &StepDef) -> Option<String> {
        if self.dialect != Dialect::Sqlite {
            return None;
        }
        const TURNS: &str = "wait for it in the busy handler (busy_waits in params) \
             or fail with SQLITE_BUSY after the busy timeout (counted as retries and sent again)";
        let clients = self.clients_of(step);
        let files = if self.params.one_table {
            "table pi1"
        } else {
            "their own tables but one database file"
        };
        match step.kind {
            StepKind::Load | StepKind::CreateIndexes if clients < 2 => None,
            StepKind::Load => Some(format!(
                "SQLite allows one writer per database file: the {clients} inserters \
                 ({files}) take turns, so rows/s is one writer's, not {clients} in parallel; \
                 they {TURNS}"
            )),
            StepKind::CreateIndexes => Some(format!(
                "SQLite allows one writer per database file: the {clients} clients' index \
                 builds run one after another, so the finish spread is the wait for the lock"
            )),
            StepKind::InsertDelete => Some(format!(
                "SQLite allows one writer per database file: the inserters and deleters of \
                 all {clients} clients ({files}) take turns; they {TURNS}"
            )),
            StepKind::Query(_) => Some(format!(
                "SQLite has no server: the query threads run the engine in the client process \
                 (client CPU is the engine's work) and read alongside the writers with a \
                 write-ahead log (a rollback journal blocks them at each commit); the \
                 background inserters and deleters of all {clients} clients ({files}) share \
                 one write lock and {TURNS}"
            )),
        }
    }

    /// The threads of step `seq`: per client, one per role, wired to each
    /// other (the deleter follows the inserter, the inserter stays at most
    /// [`MAX_LEAD_BATCHES`] ahead, queries and the helper stop with the
    /// inserter).
    pub fn roles_plan(&self, step: &StepDef, seq: u32, label: &str) -> RolesPlan<'static> {
        self.roles_plan_for(step, seq, label, 0..self.clients_of(step))
    }

    /// [`Ibench::roles_plan`] for the clients `clients` only (a client
    /// shard's part of the step: each client keeps its table and seed).
    pub fn roles_plan_for(
        &self,
        step: &StepDef,
        seq: u32,
        label: &str,
        clients: std::ops::Range<u32>,
    ) -> RolesPlan<'static> {
        let roles = step.roles();
        let per = roles.len();
        let wants_max = step.kind == StepKind::Query(QueryKind::Point);
        // With one table, its clients share one oldest-id cursor.
        let shared_all = self.params.one_table.then(|| ClientShared::new(wants_max));
        let mut threads = Vec::new();
        let d = self.dialect;
        let rpc = step.rows_per_commit;
        let batches = Inserter::batches(step.rows_per_client, rpc);
        for c in clients.clone() {
            let table = self.table(c);
            let seed = client_seed(self.params.seed, seq, c);
            let base = (c - clients.start) as usize * per;
            let (ins, del) = (base, base + 1);
            let shared = shared_all
                .clone()
                .unwrap_or_else(|| ClientShared::new(wants_max));
            let pace = step.rate.map(|r| f64::from(r) / f64::from(rpc));
            for (r, name) in roles.iter().enumerate() {
                let index = base + r;
                let t = match *name {
                    "insert" => ThreadPlan {
                        client: c,
                        role: r,
                        work: Box::new(Inserter::new(
                            &table,
                            RowGen::new(seed, self.random.clone()),
                            rpc,
                            step.rows_per_client,
                        )),
                        quota: Some(batches),
                        until_ended: None,
                        pace,
                        gate: step.deletes().then(|| -> Gate {
                            Box::new(move |n, p| p.done(del) + MAX_LEAD_BATCHES > n || p.ended(del))
                        }),
                        wakes: if step.deletes() { vec![del] } else { vec![] },
                    },
                    "delete" => ThreadPlan {
                        client: c,
                        role: r,
                        work: Box::new(Deleter::new(
                            &table,
                            d,
                            shared.clone(),
                            rpc,
                            step.rows_per_client,
                        )),
                        quota: Some(batches),
                        until_ended: None,
                        pace: None,
                        gate: Some(Box::new(move |n, p| p.done(ins) > n || p.ended(ins))),
                        wakes: vec![ins],
                    },
                    "query" => {
                        let kind = match step.kind {
                            StepKind::Query(k) => k,
                            _ => QueryKind::Range,
                        };
                        ThreadPlan {
                            client: c,
                            role: r,
                            work: Box::new(Querier::new(
                                kind,
                                &table,
                                d,
                                shared.clone(),
                                seed ^ 0x51,
                            )),
                            quota: None,
                            until_ended: Some(ins),
                            pace: None,
                            gate: None,
                            wakes: vec![],
                        }
                    }
                    "ids" => {
                        let s = shared.clone();
                        // With one table, the first client's helper serves all.
                        let idle = self.params.one_table && c > 0;
                        ThreadPlan {
                            client: c,
                            role: r,
                            work: Box::new(IdsHelper::new(&table, shared.clone())),
                            quota: idle.then_some(0),
                            until_ended: Some(ins),
                            pace: None,
                            gate: Some(Box::new(move |_, _| s.helper_due())),
                            wakes: vec![],
                        }
                    }
                    _ => ThreadPlan {
                        client: c,
                        role: r,
                        work: Box::new(IndexBuilder::new(
                            &table,
                            d,
                            (step.rows_per_client > 0).then(|| {
                                Inserter::new(
                                    &table,
                                    RowGen::new(seed, self.random.clone()),
                                    rpc,
                                    step.rows_per_client,
                                )
                            }),
                        )),
                        quota: Some(1),
                        until_ended: None,
                        pace: None,
                        gate: None,
                        wakes: vec![],
                    },
                };
                debug_assert_eq!(threads.len(), index);
                threads.push(t);
            }
        }
        RolesPlan {
            label: format!("{label} {}", step.name),
            roles: roles.iter().map(|r| r.to_string()).collect(),
            primary_role: roles
                .iter()
                .position(|r| *r == step.primary_role())
                .unwrap_or(0),
            threads,
            storm_limit: STORM_LIMIT,
            hold: None,
        }
    }

    /// EXPLAIN of the statements a query step runs on table `pi1`, with
    /// representative values inlined.
    pub fn explain(&self, step: &StepDef, conn: &mut dyn Conn) -> Vec<(String, String)> {
        let StepKind::Query(kind) = step.kind else {
            return Vec::new();
        };
        let t = self.table(0);
        let d = self.dialect;
        let mut out = Vec::new();
        let mut texts = Vec::new();
        match kind {
            QueryKind::Range => {
                for shape in sql::RangeShape::ALL {
                    let mut b = String::new();
                    sql::write_range_query(&mut b, d, &t, shape, sql::Arg::Int(shape.upper() / 2));
                    texts.push(b);
                }
            }
            QueryKind::Point => {
                let ids: Vec<sql::Arg> = (1..=sql::ROWS_PER_QUERY as i64)
                    .map(sql::Arg::Int)
                    .collect();
                let mut b = String::new();
                sql::write_point_query(&mut b, d, &t, &ids);
                texts.push(b);
            }
        }
        for text in texts {
            let plan = crate::workload::sysbench::explain_one(conn, &text);
            out.push((text, plan));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> IbenchParams {
        IbenchParams {
            clients: 2,
            rows_load: 200_000,
            rows_l_i1: 80_000,
            rows_l_i2: 20_000,
            query_secs: 10.0,
            insert_rates: vec![100, 500, 1000],
            wait_scale: 0.05,
            one_table: false,
            seed: 1,
        }
    }

    #[test]
    fn the_ten_steps_follow_the_reference() {
        let s = steps(&params());
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100", "qr500", "qp500", "qr1000",
                "qp1000"
            ]
        );
        let rpc: Vec<u32> = s.iter().map(|s| s.rows_per_commit).collect();
        assert_eq!(rpc, [100, 100, 50, 5, 50, 50, 50, 50, 50, 50]);
        assert_eq!(s[0].rows_per_client, 200_000);
        assert_eq!(s[1].rows_per_client, 50, "100 rows over 2 clients");
        assert_eq!(s[2].rows_per_client, 80_000);
        assert_eq!(s[3].rows_per_client, 20_000);
        assert_eq!(s[8].rows_per_client, 10_000, "10 s at 1000/s");
        assert_eq!(s[8].rate, Some(1000));
        assert!(!s[0].deletes() && !s[1].deletes() && s[2].deletes() && s[9].deletes());
        assert_eq!(s[5].kind, StepKind::Query(QueryKind::Point));
        // A rate below 50 rows/s caps the batch at the rate.
        let mut p = params();
        p.insert_rates = vec![20];
        assert_eq!(steps(&p)[4].rows_per_commit, 20);
    }

    #[test]
    fn each_client_gets_one_thread_per_role_and_its_own_seed() {
        let ib = Ibench::new(params(), Dialect::Postgres);
        let s = steps(&ib.params);
        let plan = ib.roles_plan(&s[4], 4, "pg");
        assert_eq!(plan.roles, ["insert", "delete", "query", "ids"]);
        assert_eq!(plan.threads.len(), 8);
        assert_eq!(plan.roles[plan.primary_role], "query");
        let ins = &plan.threads[4];
        assert_eq!((ins.client, ins.role), (1, 0));
        assert_eq!(ins.quota, Some(20), "1000 rows in batches of 50");
        assert_eq!(ins.pace, Some(2.0), "100 rows/s in batches of 50");
        assert_eq!(plan.threads[5].quota, Some(20));
        assert_eq!(plan.threads[6].until_ended, Some(4));
        assert_eq!(plan.threads[7].until_ended, Some(4));
        let load = ib.roles_plan(&s[0], 0, "pg");
        assert_eq!(load.threads.len(), 2);
        assert_eq!(load.threads[0].quota, Some(2_000));
        assert!(load.threads[0].pace.is_none() && load.threads[0].gate.is_none());
        assert_ne!(client_seed(1, 0, 0), client_seed(1, 0, 1));
        assert_ne!(client_seed(1, 0, 0), client_seed(1, 1, 0));
        assert_eq!(client_seed(1, 2, 3), client_seed(1, 2, 3));
        let info = ib.step_info(&s[0], 0);
        assert_eq!(info.params["client_seeds"].as_array().unwrap().len(), 2);
        assert_eq!(ib.tables(), ["pi1", "pi2"]);
    }

    #[test]
    fn sqlite_steps_say_that_the_writers_take_turns() {
        let s = steps(&params());
        let pg = Ibench::new(params(), Dialect::Postgres);
        assert!(s.iter().all(|st| pg.note(st).is_none()));
        let lite = Ibench::new(params(), Dialect::Sqlite);
        let notes: Vec<String> = s.iter().map(|st| lite.note(st).unwrap()).collect();
        assert!(notes[0].contains("the 2 inserters (their own tables but one database file)"));
        assert!(notes[1].contains("one after another"));
        assert!(notes[2].contains("inserters and deleters of all 2 clients"));
        assert!(notes[4].starts_with("SQLite has no server"));
        assert!(notes[4].contains("busy_waits in params"));
        assert_eq!(lite.step_info(&s[4], 4).note, Some(notes[4].clone()));
        let mut one = params();
        one.clients = 1;
        let single = Ibench::new(one, Dialect::Sqlite);
        let s1 = steps(&single.params);
        assert!(single.note(&s1[0]).is_none() && single.note(&s1[1]).is_none());
        assert!(
            single.note(&s1[2]).is_some(),
            "its inserter and deleter take turns"
        );
    }

    #[test]
    fn one_table_puts_every_client_on_pi1() {
        let mut p = params();
        p.one_table = true;
        let ib = Ibench::new(p, Dialect::Mysql);
        assert_eq!(ib.tables(), ["pi1"]);
        assert_eq!(ib.table(1), "pi1");
        let s = steps(&ib.params);
        assert_eq!(s[1].rows_per_client, 100);
        assert_eq!(ib.roles_plan(&s[1], 1, "x").threads.len(), 1);
    }
}
