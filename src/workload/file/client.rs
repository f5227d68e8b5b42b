//! One client of a workload file: each event draws a transaction by
//! weight, draws its variables, runs its statements (prepared when they
//! take parameters, as text when they do not, with literals when they
//! return a value `into` a variable), and retries it by the file's retry
//! rules. Per-transaction counts, retries and failures per error class,
//! and each statement's executions and time (pgbench -r's per-statement
//! latencies) are tallied from the first measured event on.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::dialect::{self, Rendered};
use super::values::{Gen, Value};
use super::{ErrorClass, Workload};
use crate::db::{Conn, DbError, Dialect, ErrorKind, Param, StmtId};
use crate::runner::{ClientWork, Done};
use crate::workload::keys::{KeyDist, KeyGen, stream_seed};

/// Parameters a statement binds from a stack buffer (more: a `Vec`).
const STACK_PARAMS: usize = 16;

/// A workload's statements rendered for one family, shared by its clients.
pub struct Compiled {
    pub workload: Workload,
    pub dialect: Dialect,
    /// Per transaction, per statement.
    statements: Vec<Vec<CompiledStatement>>,
    /// Cumulative weights, for drawing a transaction.
    cumulative: Vec<u64>,
    /// Per transaction, the tally slot of its first statement's count
    /// (its time follows it; the next statement's pair follows that).
    statement_slots: Vec<usize>,
}

struct CompiledStatement {
    rendered: Rendered,
    /// Where each parameter comes from.
    args: Vec<Arg>,
    /// The variable slot the first returned value goes to.
    into: Option<usize>,
}

#[derive(Clone, Copy)]
enum Arg {
    Var(usize),
    Const(i64),
}

impl Compiled {
    /// Renders every statement for `dialect` (checked before the run, so
    /// an error here is a bug or an unchecked family).
    pub fn new(workload: Workload, dialect: Dialect) -> Result<Compiled, String> {
        let mut statements = Vec::new();
        for tx in &workload.transactions {
            let mut vars: Vec<String> = tx.set.iter().map(|(n, _)| n.clone()).collect();
            let mut out = Vec::new();
            for s in &tx.statements {
                let text = s.sql.for_dialect(dialect).ok_or_else(|| {
                    format!(
                        "transaction '{}' has a statement without SQL for {}",
                        tx.name,
                        dialect::family(dialect)
                    )
                })?;
                let rendered = dialect::render(text, dialect)?;
                let args = rendered
                    .params
                    .iter()
                    .map(|p| match vars.iter().position(|v| v == p) {
                        Some(i) => Ok(Arg::Var(i)),
                        None => workload
                            .param(p)
                            .map(Arg::Const)
                            .ok_or_else(|| format!(":{p} is not set")),
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                let into = s
                    .into
                    .as_ref()
                    .map(|v| match vars.iter().position(|x| x == v) {
                        Some(i) => i,
                        None => {
                            vars.push(v.clone());
                            vars.len() - 1
                        }
                    });
                out.push(CompiledStatement {
                    rendered,
                    args,
                    into,
                });
            }
            statements.push(out);
        }
        let cumulative = workload
            .transactions
            .iter()
            .scan(0u64, |sum, t| {
                *sum += u64::from(t.weight);
                Some(*sum)
            })
            .collect();
        let mut next = workload.transactions.len() + 2 * ErrorClass::ALL.len();
        let statement_slots = statements
            .iter()
            .map(|tx| {
                let first = next;
                next += 2 * tx.len();
                first
            })
            .collect();
        Ok(Compiled {
            workload,
            dialect,
            statements,
            cumulative,
            statement_slots,
        })
    }

    /// Slots per client in a [`Tally`]: transactions, retries and failures
    /// per error class, then a (count, nanoseconds) pair per statement.
    pub fn tally_width(&self) -> usize {
        self.workload.transactions.len()
            + 2 * ErrorClass::ALL.len()
            + 2 * self.statements.iter().map(Vec::len).sum::<usize>()
    }

    /// The key a statement's latency is stored under: its transaction and
    /// its position, zero-padded so the keys sort in the file's order.
    pub fn statement_key(&self, t: usize, i: usize) -> String {
        format!("{}#{:02}", self.workload.transactions[t].name, i + 1)
    }
}

/// Counters every client adds to, read once at the end of a step.
pub struct Tally {
    width: usize,
    slots: Vec<AtomicU64>,
}

impl Tally {
    pub fn new(compiled: &Compiled, clients: u32) -> Tally {
        // Whole 64-byte lines per client, so clients counting at once do
        // not share many cache lines.
        let width = compiled.tally_width().next_multiple_of(8);
        Tally {
            width,
            slots: (0..width * clients as usize)
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    fn add(&self, client: u32, slot: usize) {
        self.add_n(client, slot, 1);
    }

    fn add_n(&self, client: u32, slot: usize, n: u64) {
        self.slots[client as usize * self.width + slot].fetch_add(n, Ordering::Relaxed);
    }

    fn sum(&self, slot: usize) -> u64 {
        self.slots
            .iter()
            .skip(slot)
            .step_by(self.width)
            .map(|a| a.load(Ordering::Relaxed))
            .sum()
    }

    /// The step's counts as stored with it: transactions by name, retries
    /// and failures (after the last try) by error class, and per statement
    /// (`read#01`) its executions, their nanoseconds and its SQL.
    pub fn to_json(&self, compiled: &Compiled) -> serde_json::Value {
        let mut statements = serde_json::Map::new();
        let mut sql = serde_json::Map::new();
        for (t, tx) in compiled.statements.iter().enumerate() {
            for (i, s) in tx.iter().enumerate() {
                let slot = compiled.statement_slots[t] + 2 * i;
                let key = compiled.statement_key(t, i);
                statements.insert(
                    key.clone(),
                    serde_json::json!({"count": self.sum(slot), "ns": self.sum(slot + 1)}),
                );
                sql.insert(key, s.rendered.sql.clone().into());
            }
        }
        let n = compiled.workload.transactions.len();
        let by_class = |base: usize| {
            ErrorClass::ALL
                .iter()
                .enumerate()
                .map(|(i, c)| (c.as_str().to_string(), self.sum(base + i).into()))
                .collect::<serde_json::Map<_, _>>()
        };
        serde_json::json!({
            "transactions": compiled.workload.transactions.iter().enumerate()
                .map(|(i, t)| (t.name.clone(), self.sum(i).into()))
                .collect::<serde_json::Map<_, _>>(),
            "retries": by_class(n),
            "failed": by_class(n + ErrorClass::ALL.len()),
            "statements": statements,
            "statement_sql": sql,
        })
    }
}

/// One client thread's work.
pub struct WorkloadClient {
    compiled: Arc<Compiled>,
    tally: Arc<Tally>,
    client: u32,
    /// Per transaction: the generators of its `set` variables.
    gens: Vec<Vec<Gen>>,
    /// Per transaction: its variables' current values.
    vars: Vec<Vec<Value>>,
    prepared: Vec<Vec<Option<StmtId>>>,
    pick: KeyGen,
    measuring: bool,
    literal: String,
}

impl WorkloadClient {
    /// Client `client` of `clients`, its random streams seeded from `seed`.
    pub fn new(
        compiled: Arc<Compiled>,
        tally: Arc<Tally>,
        seed: u64,
        client: u32,
        clients: u32,
    ) -> Result<WorkloadClient, String> {
        let w = &compiled.workload;
        let params = |n: &str| w.param(n);
        let mut gens = Vec::new();
        let mut vars = Vec::new();
        for (t, tx) in w.transactions.iter().enumerate() {
            let g = tx
                .set
                .iter()
                .map(|(name, spec)| {
                    spec.build(
                        &params,
                        stream_seed(seed, &format!("{}/{}/{name}", w.name, tx.name), client),
                        client,
                        clients,
                    )
                })
                .collect::<Result<Vec<_>, String>>()?;
            let slots = compiled.statements[t]
                .iter()
                .filter_map(|s| s.into)
                .max()
                .map_or(0, |m| m + 1)
                .max(g.len());
            vars.push(vec![Value::Int(0); slots]);
            gens.push(g);
        }
        Ok(WorkloadClient {
            pick: KeyGen::new(
                stream_seed(seed, &format!("{}/pick", w.name), client),
                KeyDist::Uniform,
                1,
            ),
            prepared: Vec::new(),
            compiled,
            tally,
            client,
            gens,
            vars,
            measuring: false,
            literal: String::new(),
        })
    }

    fn choose(&mut self) -> usize {
        let c = &self.compiled.cumulative;
        let r = self
            .pick
            .uniform(1, *c.last().expect("a transaction") as i64) as u64;
        c.iter().position(|&s| r <= s).expect("within the sum")
    }

    /// Runs transaction `t`'s statements once; returns (statements, rows).
    fn attempt(&mut self, conn: &mut dyn Conn, t: usize) -> Result<(u32, u64), DbError> {
        let compiled = Arc::clone(&self.compiled);
        let (mut n, mut rows) = (0u32, 0u64);
        for (i, s) in compiled.statements[t].iter().enumerate() {
            let started = self.measuring.then(Instant::now);
            rows += self.statement(conn, &compiled, t, i, s)?;
            n += 1;
            if let Some(at) = started {
                let slot = compiled.statement_slots[t] + 2 * i;
                self.tally.add(self.client, slot);
                self.tally
                    .add_n(self.client, slot + 1, at.elapsed().as_nanos() as u64);
            }
        }
        Ok((n, rows))
    }

    /// Runs statement `i` of transaction `t`; returns the rows it touched.
    fn statement(
        &mut self,
        conn: &mut dyn Conn,
        compiled: &Compiled,
        t: usize,
        i: usize,
        s: &CompiledStatement,
    ) -> Result<u64, DbError> {
        let mut rows = 0u64;
        {
            let vars = &self.vars[t];
            let value = |a: &Arg| match *a {
                Arg::Var(v) => &vars[v],
                Arg::Const(_) => &Value::Int(0),
            };
            if let Some(slot) = s.into {
                self.literal.clear();
                for (k, piece) in s.rendered.pieces.iter().enumerate() {
                    self.literal.push_str(piece);
                    if let Some(a) = s.args.get(k) {
                        match (a, value(a)) {
                            (Arg::Const(c), _) | (_, Value::Int(c)) => {
                                self.literal.push_str(&c.to_string())
                            }
                            (_, Value::Text(t)) => {
                                self.literal.push('\'');
                                for ch in t.chars() {
                                    match ch {
                                        '\'' => self.literal.push_str("''"),
                                        '\\' if compiled.dialect == Dialect::Mysql => {
                                            self.literal.push_str("\\\\")
                                        }
                                        c => self.literal.push(c),
                                    }
                                }
                                self.literal.push('\'');
                            }
                        }
                    }
                }
                let result = conn.query_text(&self.literal)?;
                rows += result.len() as u64;
                let got = crate::db::first_value(result).ok_or_else(|| {
                    DbError::new(
                        ErrorKind::Other,
                        "",
                        format!(
                            "statement {} of transaction '{}' returned no value for into",
                            i + 1,
                            compiled.workload.transactions[t].name
                        ),
                    )
                })?;
                self.vars[t][slot] = got
                    .parse::<i64>()
                    .map(Value::Int)
                    .unwrap_or(Value::Text(got));
            } else if let Some(id) = self.prepared[t][i] {
                let param = |a: &Arg| match (a, value(a)) {
                    (Arg::Const(c), _) => Param::Int(*c),
                    (_, Value::Int(v)) => Param::Int(*v),
                    (_, Value::Text(t)) => Param::Text(t),
                };
                // Up to STACK_PARAMS parameters without a heap allocation.
                if s.args.len() <= STACK_PARAMS {
                    let mut buf = [Param::Int(0); STACK_PARAMS];
                    for (b, a) in buf.iter_mut().zip(&s.args) {
                        *b = param(a);
                    }
                    rows += conn.execute(id, &buf[..s.args.len()])?;
                } else {
                    let params: Vec<Param<'_>> = s.args.iter().map(param).collect();
                    rows += conn.execute(id, &params)?;
                }
            } else {
                rows += conn.execute_text(&s.rendered.sql)?;
            }
        }
        Ok(rows)
    }
}

impl ClientWork for WorkloadClient {
    fn prepare(&mut self, conn: &mut dyn Conn) -> Result<(), DbError> {
        let compiled = Arc::clone(&self.compiled);
        self.prepared = compiled
            .statements
            .iter()
            .map(|tx| {
                tx.iter()
                    .map(|s| {
                        if s.into.is_some() || s.args.is_empty() {
                            Ok(None)
                        } else {
                            conn.prepare(&s.rendered.sql).map(Some)
                        }
                    })
                    .collect::<Result<Vec<_>, DbError>>()
            })
            .collect::<Result<Vec<_>, DbError>>()?;
        Ok(())
    }

    fn measuring(&mut self) {
        self.measuring = true;
    }

    fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
        let t = self.choose();
        let params = {
            let w = &self.compiled.workload;
            move |n: &str| w.param(n)
        };
        for (g, v) in self.gens[t].iter_mut().zip(self.vars[t].iter_mut()) {
            g.draw(v, &params)
                .map_err(|e| DbError::new(ErrorKind::Other, "", e))?;
        }
        let retry = &self.compiled.workload.retry;
        let (max_tries, width) = (retry.max_tries, self.compiled.workload.transactions.len());
        let mut tries = 0;
        loop {
            tries += 1;
            match self.attempt(conn, t) {
                Ok((statements, rows)) => {
                    if self.measuring {
                        self.tally.add(self.client, t);
                    }
                    let think = self.compiled.workload.transactions[t].think;
                    if !think.is_zero() {
                        std::thread::sleep(think);
                    }
                    return Ok(Done { statements, rows });
                }
                Err(e) => {
                    if e.kind != ErrorKind::Connection {
                        let _ = conn.execute_text("ROLLBACK");
                    }
                    let class = ErrorClass::of(&e);
                    let pos = class.and_then(|c| ErrorClass::ALL.iter().position(|x| *x == c));
                    let retried =
                        class.is_some_and(|c| self.compiled.workload.retry.on.contains(&c));
                    if let Some(p) = pos
                        && self.measuring
                    {
                        let slot = if retried && tries < max_tries {
                            width + p
                        } else {
                            width + ErrorClass::ALL.len() + p
                        };
                        self.tally.add(self.client, slot);
                    }
                    if retried && tries < max_tries {
                        continue;
                    }
                    return Err(e);
                }
            }
        }
    }
}
