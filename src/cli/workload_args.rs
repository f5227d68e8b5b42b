//! The options of `tidemark run --workload`: a workload file instead of a
//! suite, overrides of its params, and its retry rule.

use clap::Args;

/// Options of a workload file run.
#[derive(Args, Debug, Default)]
pub struct WorkloadArgs {
    /// Run a workload file instead of a suite: a TOML file (see
    /// workloads/README.md) or a shipped one (tpcb-like, simple-update,
    /// select-only: pgbench's built-ins).
    #[arg(long, value_name = "FILE")]
    pub workload: Option<String>,
    /// Override a param of the workload file (scale=10), repeatable.
    #[arg(long = "workload-param", value_name = "NAME=VALUE")]
    pub workload_params: Vec<String>,
    /// Tries per transaction of a workload file on a retryable error
    /// (serialization failure, deadlock), as pgbench's --max-tries;
    /// overrides the file's [retry] max_tries.
    #[arg(long, value_name = "N")]
    pub max_tries: Option<u32>,
    /// Transactions a second over all clients of a workload file, on an
    /// open-loop schedule (pgbench's --rate); overrides the file's rate.
    #[arg(long, value_name = "TPS")]
    pub rate: Option<f64>,
}
