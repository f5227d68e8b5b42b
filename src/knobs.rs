//! The run-time knobs: every number a user may set over a profile's
//! (tables, rows, threads, seconds, seed, the Insert Benchmark's sizes),
//! each defined once, in the [`knobs!`] list below.
//!
//! A knob's name is its field in [`Overrides`], its `tidemark run` flag
//! (`--` and the name with `-` for `_`), its key under a plan file's
//! `[params]`, the field of the workload parameters it overrides and the
//! key those parameters are stored under, which the report's context
//! reads. The command line (clap), plan files (serde), the profiles
//! ([`Overrides::apply_to`]) and the report ([`KNOBS`] and the named
//! constants) all take it from here. Each knob names the suites whose
//! parameters it overrides ([`crate::record::SuiteName`]). This module
//! imports only the shared `record`, so the report may use it without
//! importing the plan.

pub mod thread_counts;

use clap::Args;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
pub use thread_counts::ThreadCounts;

use crate::record::SuiteName;

/// One knob's definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnobDef {
    /// Field of [`Overrides`], plan-file key, parameter and stored name.
    pub name: &'static str,
    /// The suites whose parameters it overrides.
    pub applies: &'static [SuiteName],
}

impl KnobDef {
    /// Whether it overrides the parameters of `suite`.
    pub fn covers(&self, suite: SuiteName) -> bool {
        self.applies.contains(&suite)
    }

    /// Its `tidemark run` flag, e.g. `--table-size`.
    pub fn flag(&self) -> String {
        format!("--{}", self.name.replace('_', "-"))
    }
}

/// Defines [`Overrides`] (the clap flags and the `[params]` table), one
/// [`KnobDef`] constant per knob and [`KNOBS`], from one list of
/// `/// help  #[arg(…)] CONST field: Type => [Suite, …];` (the
/// [`SuiteName`]s whose parameters the knob overrides).
macro_rules! knobs {
    ($(
        $(#[doc = $doc:literal])*
        #[arg($($arg:tt)*)]
        $konst:ident $field:ident: $ty:ty => [$($applies:ident),+];
    )*) => {
        /// Overrides of a profile's numbers, each `None` (or `false`) when
        /// not given: the `tidemark run` flags, a plan file's `[params]`
        /// and the stored plan's `overrides`.
        #[derive(Args, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct Overrides {
            $(
                $(#[doc = $doc])*
                #[arg($($arg)*)]
                pub $field: $ty,
            )*
        }

        $(
            #[doc = concat!("The `", stringify!($field), "` knob.")]
            pub const $konst: KnobDef = KnobDef {
                name: stringify!($field),
                applies: &[$(SuiteName::$applies),+],
            };
        )*

        /// Every knob, in the order of the flags' help.
        pub const KNOBS: &[KnobDef] = &[$($konst),*];

        impl Overrides {
            /// Takes each knob not given here from `other` (a plan file's
            /// `[params]`, which the command line wins over).
            pub fn fill_from(&mut self, other: Overrides) {
                $(Knob::fill(&mut self.$field, other.$field);)*
            }
        }
    };
}

knobs! {
    /// Number of sbtest tables.
    #[arg(long)]
    TABLES tables: Option<u32> => [Sysbench];
    /// Rows per table.
    #[arg(long)]
    TABLE_SIZE table_size: Option<u64> => [Sysbench];
    /// Client threads (one connection each): one count, or a sweep every
    /// test runs at in turn, e.g. 1,4,64 or pow2:1..1024 or
    /// pow2+cores:1..1024 or 1..250/10 (see docs/runs.md).
    #[arg(long)]
    THREADS threads: Option<ThreadCounts> => [Sysbench];
    /// Clients from which a test whose events are single read statements
    /// (point-query, random-points, ranges) multiplexes its connections on
    /// one event loop per CPU instead of one thread each (PostgreSQL,
    /// MySQL/MariaDB; default 64, 0 = never).
    #[arg(long)]
    MUX_FROM mux_from: Option<u32> => [Sysbench];
    /// Measured seconds of each read test.
    #[arg(long)]
    READ_SECS read_secs: Option<f64> => [Sysbench];
    /// Measured seconds of each write test.
    #[arg(long)]
    WRITE_SECS write_secs: Option<f64> => [Sysbench];
    /// Unmeasured warm-up seconds before each test.
    #[arg(long)]
    WARMUP_SECS warmup_secs: Option<f64> => [Sysbench];
    /// Slices each test's measured time is cut into when targets or
    /// repetitions are interleaved: the targets take turns slice by slice
    /// (A B B A …) and the interval comes from the slices' pairs (default:
    /// two a second, at most 40; 1 = whole steps).
    #[arg(long)]
    SLICES slices: Option<u32> => [Sysbench];
    /// Milliseconds of each turn within a slice when targets are
    /// interleaved by step: their clients stay up through the slice and
    /// take turns this short (A B A B …), so the host's moment-to-moment
    /// noise falls on all of them alike (default 10; 0 = each slice whole
    /// on one target, then the next).
    #[arg(long)]
    TURN_MS turn_ms: Option<u32> => [Sysbench];
    /// Seconds of the unreported scan warm-ups.
    #[arg(long)]
    SCAN_WARM_SECS scan_warm_secs: Option<f64> => [Sysbench];
    /// Fraction of the reference's postwrite wait to sleep (1 = full).
    #[arg(long)]
    POSTWRITE_SCALE postwrite_scale: Option<f64> => [Sysbench];
    /// Run seed of the key and row generators (default: a fresh one,
    /// printed and stored with the run); the same seed draws the same keys.
    #[arg(long)]
    SEED seed: Option<u64> => [Sysbench, Ibench];
    /// Insert Benchmark: clients, each with its own table piN.
    #[arg(long)]
    CLIENTS clients: Option<u32> => [Ibench];
    /// Insert Benchmark: rows per table loaded in l.i0 (X).
    #[arg(long)]
    ROWS_LOAD rows_load: Option<u64> => [Ibench];
    /// Insert Benchmark: rows per table inserted and deleted in l.i1 (Y).
    #[arg(long = "rows-l-i1")]
    ROWS_L_I1 rows_l_i1: Option<u64> => [Ibench];
    /// Insert Benchmark: rows per table inserted and deleted in l.i2 (Z).
    #[arg(long = "rows-l-i2")]
    ROWS_L_I2 rows_l_i2: Option<u64> => [Ibench];
    /// Insert Benchmark: nominal seconds of each query step (its inserts
    /// are seconds × rate rows per client).
    #[arg(long)]
    QUERY_SECS query_secs: Option<f64> => [Ibench];
    /// Insert Benchmark: background insert rates of the query steps, rows
    /// per second per client (comma-separated; one qr and one qp step each).
    #[arg(long, value_delimiter = ',')]
    INSERT_RATES insert_rates: Option<Vec<u32>> => [Ibench];
    /// Insert Benchmark: fraction of the wait after l.i2 to sleep (1 = full).
    #[arg(long)]
    WAIT_SCALE wait_scale: Option<f64> => [Ibench];
    /// Insert Benchmark: all clients on table pi1 instead of one table each.
    #[arg(long)]
    ONE_TABLE one_table: bool => [Ibench];
}

/// How a knob's value merges: an `Option` is given or not, a flag is on
/// or off.
trait Knob {
    /// Takes `other` when `self` was not given.
    fn fill(&mut self, other: Self);
}

impl<T> Knob for Option<T> {
    fn fill(&mut self, other: Self) {
        if self.is_none() {
            *self = other;
        }
    }
}

impl Knob for bool {
    fn fill(&mut self, other: Self) {
        *self |= other;
    }
}

impl Overrides {
    /// Writes each given knob that covers `suite` over the field of the
    /// same name in `params` (a suite's workload parameters); a flag only
    /// when it is on.
    ///
    /// # Panics
    /// When `params` has no such field or a field of another type: the
    /// knob list and the parameter structs disagree (a unit test checks).
    pub fn apply_to<P: Serialize + DeserializeOwned>(&self, suite: SuiteName, params: &mut P) {
        use serde_json::Value;
        let Value::Object(given) = serde_json::to_value(self).expect("overrides serialize") else {
            unreachable!("overrides serialize to an object")
        };
        let mut value = serde_json::to_value(&*params).expect("parameters serialize");
        let Value::Object(fields) = &mut value else {
            panic!("workload parameters serialize to an object")
        };
        for knob in KNOBS.iter().filter(|k| k.covers(suite)) {
            match &given[knob.name] {
                Value::Null | Value::Bool(false) => {}
                v => {
                    let slot = fields
                        .get_mut(knob.name)
                        .unwrap_or_else(|| panic!("no parameter {} to override", knob.name));
                    *slot = v.clone();
                }
            }
        }
        *params = serde_json::from_value(value)
            .unwrap_or_else(|e| panic!("a knob does not fit its parameter: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        knobs: Overrides,
    }

    #[test]
    fn every_knob_is_a_flag_of_its_name() {
        let cmd = Flags::command();
        let ids: Vec<&str> = cmd
            .get_arguments()
            .map(|a| a.get_id().as_str())
            .filter(|id| *id != "help")
            .collect();
        let names: Vec<&str> = KNOBS.iter().map(|k| k.name).collect();
        assert_eq!(ids, names);
        for k in KNOBS {
            let arg = cmd.get_arguments().find(|a| a.get_id() == k.name).unwrap();
            assert_eq!(format!("--{}", arg.get_long().unwrap()), k.flag());
        }
    }

    #[test]
    fn the_plan_file_fills_what_the_command_line_left() {
        let mut o = Overrides {
            threads: Some(ThreadCounts::one(4)),
            ..Overrides::default()
        };
        o.fill_from(Overrides {
            threads: Some(ThreadCounts::one(2)),
            tables: Some(3),
            one_table: true,
            ..Overrides::default()
        });
        assert_eq!(
            (o.threads, o.tables, o.one_table),
            (Some(ThreadCounts::one(4)), Some(3), true)
        );
    }

    #[test]
    fn given_knobs_override_same_named_fields_of_their_suite() {
        #[derive(Serialize, Deserialize)]
        struct P {
            tables: u32,
            seed: u64,
            clients: u32,
            one_table: bool,
        }
        let o = Overrides {
            tables: Some(5),
            seed: Some(9),
            clients: Some(7),
            ..Overrides::default()
        };
        let mut p = P {
            tables: 1,
            seed: 1,
            clients: 2,
            one_table: true,
        };
        o.apply_to(SuiteName::Ibench, &mut p);
        assert_eq!((p.tables, p.seed, p.clients, p.one_table), (1, 9, 7, true));
    }
}
