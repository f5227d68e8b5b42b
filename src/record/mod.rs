//! Every type a run records: how each step ended and what it counted
//! ([`step`]), which step it was ([`step_info`]), the server each target
//! ran on ([`target`]), the host ([`host`]) and its cost per operation
//! ([`host_cost`]), the Insert Benchmark's derived metrics ([`ibench`]),
//! the slices a step was measured in ([`slices`]), and the instructions
//! counted under Valgrind ([`instructions`]).
//!
//! A leaf: it imports nothing of ours. The runner, metrics and workloads
//! produce these types, the store writes and reads them, and the report
//! consumes them, so no module downstream needs an upstream one's internals.

pub mod host;
pub mod host_cost;
pub mod ibench;
pub mod instructions;
pub mod server_counters;
pub mod slices;
pub mod step;
pub mod step_info;
pub mod target;

pub use host::{HostFacts, StorageFacts};
pub use host_cost::{
    BASIS_INDEXED_ROWS, BASIS_INSERTS, BASIS_QUERIES, DiskRates, HostAverages, HostCost,
    HostSecond, OpRates, PerOp, Phase, StepHost,
};
pub use ibench::{ClientRates, Fairness, IbenchMetrics, SLA_FRACTION, Sla};
pub use instructions::{FunctionIr, StepInstructions};
pub use server_counters::{CounterKind, CounterReading, CpuProfile, ServerCounters};
pub use step::{
    ClientResult, Counts, LatencySummary, Progress, RoleClient, RoleResult, RoleSecond,
    SecondSample, StepResult, StepStatus, new_histogram,
};
pub use step_info::{Group, StepInfo, SuiteName};
pub use target::TargetInfo;
