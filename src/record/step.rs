//! What executing one step produced: how it ended, its counts, per-second
//! samples, per-client finish times, per-role results and the merged
//! latency histogram. The runner fills these in; the store writes them as
//! they are and the report reads them back.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// How a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    /// Ran its full duration (or work) without errors.
    Ok,
    /// Ran to the end but some statements failed; `errors` says how many.
    Errors,
    /// Stopped early by Ctrl-C; what was measured until then is kept.
    Interrupted,
    /// Could not go on (server died, every client failed); `failure` says why.
    Failed,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Ok => "ok",
            StepStatus::Errors => "errors",
            StepStatus::Interrupted => "interrupted",
            StepStatus::Failed => "failed",
        }
    }

    /// How bad an ending is (ok 0 … failed 3): a step merged from parts
    /// (shards, slices) takes its worst part's.
    pub fn severity(self) -> u8 {
        match self {
            StepStatus::Ok => 0,
            StepStatus::Errors => 1,
            StepStatus::Interrupted => 2,
            StepStatus::Failed => 3,
        }
    }

    pub fn parse(s: &str) -> Option<StepStatus> {
        Some(match s {
            "ok" => StepStatus::Ok,
            "errors" => StepStatus::Errors,
            "interrupted" => StepStatus::Interrupted,
            "failed" => StepStatus::Failed,
            _ => return None,
        })
    }
}

/// What a step, a role, a client or a second counted: the one set of
/// counters every result embeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Events (transactions, loop iterations) completed.
    pub events: u64,
    /// Statements sent, BEGIN and COMMIT included.
    pub statements: u64,
    /// Rows returned or changed.
    pub rows: u64,
    /// Statements that failed.
    pub errors: u64,
    /// Events retried after a retryable error.
    pub retries: u64,
}

impl Counts {
    /// Adds `other` to these counts.
    pub fn add(&mut self, other: &Counts) {
        self.events += other.events;
        self.statements += other.statements;
        self.rows += other.rows;
        self.errors += other.errors;
        self.retries += other.retries;
    }

    /// What was counted since `earlier` (running totals read twice).
    pub fn since(&self, earlier: &Counts) -> Counts {
        Counts {
            events: self.events - earlier.events,
            statements: self.statements - earlier.statements,
            rows: self.rows - earlier.rows,
            errors: self.errors - earlier.errors,
            retries: self.retries - earlier.retries,
        }
    }
}

/// Counters for one second of the measured interval, summed over clients.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondSample {
    /// Seconds since the measured interval began (0-based).
    pub sec: u32,
    #[serde(flatten)]
    pub counts: Counts,
    /// The largest single event latency seen in this second, microseconds.
    pub max_latency_us: u64,
}

/// One client thread's share of the step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientResult {
    pub client: u32,
    pub events: u64,
    pub statements: u64,
    pub errors: u64,
    /// Seconds from the start of the measured interval to this client's last
    /// event (the fairness table of fixed-work steps is built from it).
    pub finish_secs: f64,
}

/// Latency percentiles of the merged histogram, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub avg: f64,
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl LatencySummary {
    pub fn from_histogram(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            avg: h.mean(),
            p50: h.value_at_quantile(0.50),
            p95: h.value_at_quantile(0.95),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// Everything one step measured.
#[derive(Clone, Debug)]
pub struct StepResult {
    pub status: StepStatus,
    /// Why the step failed or stopped, or a note on what it means here.
    pub failure: Option<String>,
    /// Length of the measured interval (warm-up excluded), seconds.
    pub secs: f64,
    pub threads: u32,
    pub counts: Counts,
    /// The first few distinct error messages, for the user to read.
    pub error_samples: Vec<String>,
    /// Event latency, microseconds, merged over all clients.
    pub histogram: Histogram<u64>,
    pub per_second: Vec<SecondSample>,
    pub clients: Vec<ClientResult>,
    /// User + system CPU seconds of the client threads over the measured
    /// interval (from getrusage per thread).
    pub client_cpu_secs: f64,
    /// Per role (insert, delete, query…) when the step ran several roles
    /// per client (`runner::run_roles`); empty otherwise.
    pub roles: Vec<RoleResult>,
    /// Metrics a suite derives from the measurements and stores with the
    /// step (the Insert Benchmark's rates, SLA and fairness); `None` if none.
    pub metrics: Option<serde_json::Value>,
}

impl StepResult {
    /// A step of `threads` clients with nothing measured yet (status `ok`,
    /// zero counts, an empty histogram): what the runner, the role runner
    /// and the shard merge add their clients' results into.
    pub fn empty(threads: u32) -> StepResult {
        StepResult {
            status: StepStatus::Ok,
            failure: None,
            secs: 0.0,
            threads,
            counts: Counts::default(),
            error_samples: Vec::new(),
            histogram: new_histogram(),
            per_second: Vec::new(),
            clients: Vec::new(),
            client_cpu_secs: 0.0,
            roles: Vec::new(),
            metrics: None,
        }
    }

    /// A step that could not run at all (clients could not connect, the
    /// server was gone): stored as failed with `reason` and nothing measured.
    pub fn failed(threads: u32, reason: impl Into<String>) -> StepResult {
        StepResult {
            status: StepStatus::Failed,
            failure: Some(reason.into()),
            ..StepResult::empty(threads)
        }
    }

    /// A step the user interrupted before it measured anything (Ctrl-C
    /// before its first slice): stored as interrupted with `reason`.
    pub fn interrupted(threads: u32, reason: impl Into<String>) -> StepResult {
        StepResult {
            status: StepStatus::Interrupted,
            failure: Some(reason.into()),
            ..StepResult::empty(threads)
        }
    }

    /// The role named `name`, if the step ran one.
    pub fn role(&self, name: &str) -> Option<&RoleResult> {
        self.roles.iter().find(|r| r.role == name)
    }

    /// Statements per second, counting BEGIN and COMMIT as sysbench does.
    pub fn qps(&self) -> f64 {
        per_sec(self.counts.statements, self.secs)
    }

    /// Events (transactions) per second.
    pub fn tps(&self) -> f64 {
        per_sec(self.counts.events, self.secs)
    }

    /// Rows returned or changed per second.
    pub fn rows_per_sec(&self) -> f64 {
        per_sec(self.counts.rows, self.secs)
    }

    pub fn latency(&self) -> LatencySummary {
        LatencySummary::from_histogram(&self.histogram)
    }

    /// Client CPU microseconds per statement.
    pub fn client_cpu_us_per_statement(&self) -> Option<f64> {
        (self.counts.statements > 0)
            .then(|| self.client_cpu_secs * 1e6 / self.counts.statements as f64)
    }
}

/// One role of a multi-role step, over all clients: what its threads did,
/// how long each event took, and how well paced threads kept their schedule.
#[derive(Clone, Debug)]
pub struct RoleResult {
    /// `insert`, `delete`, `query`, `ids`, `index`…
    pub role: String,
    pub threads: u32,
    pub counts: Counts,
    /// Intended events per second per thread, when the role is paced.
    pub target_rate: Option<f64>,
    /// Latency from each event's actual start (service time), µs.
    pub histogram: Histogram<u64>,
    /// Latency from each event's intended start on the schedule, µs: the
    /// coordinated-omission-corrected view; `None` when not paced.
    pub intended: Option<Histogram<u64>>,
    /// User + system CPU seconds of the role's threads.
    pub cpu_secs: f64,
    /// One entry per client, in client order.
    pub clients: Vec<RoleClient>,
    /// One entry per client and second, by second then client.
    pub per_second: Vec<RoleSecond>,
}

impl RoleResult {
    /// Latency percentiles from the actual start.
    pub fn latency(&self) -> LatencySummary {
        LatencySummary::from_histogram(&self.histogram)
    }

    /// Latency percentiles from the intended start (paced roles).
    pub fn intended_latency(&self) -> Option<LatencySummary> {
        self.intended.as_ref().map(LatencySummary::from_histogram)
    }
}

/// One client's thread of a role.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleClient {
    pub client: u32,
    #[serde(flatten)]
    pub counts: Counts,
    /// Seconds from the step's start to the thread's last event (or the end
    /// of its last slot, when paced).
    pub finish_secs: f64,
    /// Largest delay of an event's actual start behind its intended start,
    /// µs (the shortfall of a paced thread that fell behind; 0 otherwise).
    pub max_behind_us: u64,
    /// Events that started 1 ms or more after their intended start.
    pub late_events: u64,
}

/// One client's thread of a role during one second.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleSecond {
    pub client: u32,
    pub sec: u32,
    pub events: u64,
    pub rows: u64,
    pub errors: u64,
    pub retries: u64,
    /// Largest latency from the actual start in this second, µs.
    pub max_latency_us: u64,
    /// Largest latency from the intended start in this second, µs.
    pub max_intended_us: u64,
    /// Largest delay behind the schedule of an event started in this second.
    pub max_behind_us: u64,
}

fn per_sec(n: u64, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

/// How many different error messages a thread, and a step merged from
/// threads or shards, keeps in its `error_samples`.
pub const MAX_ERROR_SAMPLES: usize = 5;

/// Keeps `text` among `samples` unless they hold it already or are full
/// ([`MAX_ERROR_SAMPLES`]): the first different messages are kept.
pub fn keep_error_sample(samples: &mut Vec<String>, text: &str) {
    if samples.len() < MAX_ERROR_SAMPLES && !samples.iter().any(|s| s == text) {
        samples.push(text.to_string());
    }
}

/// A new, empty latency histogram: 1 µs to 1 hour, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds are valid")
}

/// A progress report, sent about once a second while a step runs.
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    pub label: &'a str,
    pub warming_up: bool,
    /// Seconds since the step started (warm-up included).
    pub elapsed: f64,
    /// Warm-up plus measured duration, seconds.
    pub total: f64,
    /// Statements per second in the last second.
    pub qps: f64,
    pub errors: u64,
}
