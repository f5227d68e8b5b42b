//! Instructions the server executed during a step's measured interval,
//! counted under Valgrind (`tidemark run --instructions`): the client
//! backends' count apart from the background processes', and the functions
//! that executed them. Produced by `metrics::instructions`, stored in
//! `step_instructions`, compared by `report::instructions`.

use serde::{Deserialize, Serialize};

/// One function's instructions in a step's client backends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionIr {
    /// Symbol name, or `object+0xADDR` where the binary has no symbol.
    pub name: String,
    /// Instructions executed in the function itself.
    #[serde(rename = "self")]
    pub self_ir: u64,
    /// Instructions executed in the function and everything it called.
    #[serde(rename = "incl")]
    pub incl_ir: u64,
}

/// What a step counted under Valgrind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepInstructions {
    /// Events (transactions) the clients completed in the interval.
    pub events: u64,
    /// Statements (BEGIN and COMMIT included) in the interval.
    pub statements: u64,
    /// Instructions of the client backends in the interval (the marker
    /// cycle already subtracted).
    pub client_ir: u64,
    /// Instructions of one marker cycle per client, subtracted from
    /// `client_ir` (kept to show how small it is).
    pub marker_ir: u64,
    /// Instructions of the background processes (postmaster,
    /// checkpointer, WAL writer, …) between the interval's two reloads.
    pub background_ir: u64,
    /// How many background processes `background_ir` covers.
    pub background_procs: u32,
    /// Client backends counted.
    pub clients: u32,
    /// The client backends' functions with the most inclusive
    /// instructions, largest first.
    pub functions: Vec<FunctionIr>,
}

impl StepInstructions {
    /// Client instructions per statement (per query, as QPS counts).
    pub fn per_statement(&self) -> Option<f64> {
        (self.statements > 0).then(|| self.client_ir as f64 / self.statements as f64)
    }

    /// Client instructions per event (per transaction).
    pub fn per_event(&self) -> Option<f64> {
        (self.events > 0).then(|| self.client_ir as f64 / self.events as f64)
    }

    /// Background instructions per statement.
    pub fn background_per_statement(&self) -> Option<f64> {
        (self.statements > 0).then(|| self.background_ir as f64 / self.statements as f64)
    }
}
