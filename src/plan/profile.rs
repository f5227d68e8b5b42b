//! The named sizes of a run and the numbers a user may override: the
//! suites, the profiles with their sysbench and Insert Benchmark numbers,
//! and the validated result of applying [`Overrides`] to them.

use serde::{Deserialize, Serialize};

pub use crate::knobs::Overrides;
use crate::knobs::ThreadCounts;
use crate::record::SuiteName;
use crate::workload::ibench::IbenchParams;
use crate::workload::sysbench::{
    DEFAULT_MUX_FROM, DEFAULT_TURN_MS, MAX_TURN_MS, MIN_SLICE_SECS, SysbenchParams,
};

/// The suite choice of a run (`--suite`): one suite, or `all` of the
/// built-in ones. The suites themselves and their stored names are
/// [`SuiteName`]s, so a new suite adds nothing here; [`Suite::suites`] is
/// the list a run carries out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// One suite alone (`--suite sysbench`, `ibench`, `workload`).
    One(SuiteName),
    /// sysbench, then the Insert Benchmark, on each target.
    All,
}

impl Suite {
    /// The choice written `s` after `--suite`.
    pub fn parse(s: &str) -> Result<Suite, String> {
        match (s, SuiteName::parse(s)) {
            ("all", _) => Ok(Suite::All),
            (_, Some(name)) => Ok(Suite::One(name)),
            (other, None) => Err(format!(
                "unknown suite '{other}'{}: use --suite sysbench, ibench or all",
                crate::util::suggest::did_you_mean(other, ["sysbench", "ibench", "all"])
            )),
        }
    }

    /// The suites this choice runs on each target, in order.
    pub fn suites(&self) -> &[SuiteName] {
        match self {
            Suite::One(name) => std::slice::from_ref(name),
            Suite::All => &[SuiteName::Sysbench, SuiteName::Ibench],
        }
    }

    /// Whether suite `name` is among those this choice runs.
    pub fn runs(self, name: SuiteName) -> bool {
        self.suites().contains(&name)
    }

    /// Whether this choice is suite `name` alone.
    pub fn is_only(self, name: SuiteName) -> bool {
        self == Suite::One(name)
    }

    /// The choice as written after `--suite` and stored with the run.
    pub fn as_str(self) -> &'static str {
        match self {
            Suite::One(name) => name.as_str(),
            Suite::All => "all",
        }
    }

    /// Whether the sysbench suite runs.
    pub fn runs_sysbench(self) -> bool {
        self.runs(SuiteName::Sysbench)
    }

    /// Whether the Insert Benchmark runs.
    pub fn runs_ibench(self) -> bool {
        self.runs(SuiteName::Ibench)
    }
}

/// Named sizes of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// CI-sized: the whole suite in a few minutes on 2 cores.
    Quick,
    /// The seeds' small server: 1 table × 50M rows, 1 client, 600 s / 900 s.
    Small,
    /// The seeds' large servers: 8 tables × 10M rows, many clients.
    Large,
    /// Insert Benchmark with the database cached: 8 clients, 10M/16M/4M rows.
    CpuBound,
    /// Insert Benchmark larger than memory: 8 clients, 250M/4M/1M rows.
    IoBound,
}

impl Profile {
    pub const NAMES: &'static str = "quick, small, large, cpu-bound, io-bound";

    pub fn parse(s: &str) -> Result<Profile, String> {
        match s {
            "quick" => Ok(Profile::Quick),
            "small" => Ok(Profile::Small),
            "large" => Ok(Profile::Large),
            "cpu-bound" => Ok(Profile::CpuBound),
            "io-bound" => Ok(Profile::IoBound),
            other => Err(format!(
                "unknown profile '{other}'{}: use one of {}",
                crate::util::suggest::did_you_mean(other, Profile::NAMES.split(", ")),
                Profile::NAMES
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Small => "small",
            Profile::Large => "large",
            Profile::CpuBound => "cpu-bound",
            Profile::IoBound => "io-bound",
        }
    }

    /// The size of the server configuration this profile ships with
    /// (`config/postgres/<size>.conf`).
    pub fn server_size(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Small => "small",
            Profile::Large | Profile::CpuBound | Profile::IoBound => "large",
        }
    }

    /// The profile's Insert Benchmark numbers before overrides; `None` for
    /// the sysbench-only profiles. Row counts are per client table (X, Y,
    /// Z in the seeds).
    pub fn ibench(self) -> Option<IbenchParams> {
        let (clients, x, y, z, secs, scale) = match self {
            Profile::Quick => (2, 200_000, 80_000, 20_000, 10.0, 0.05),
            Profile::CpuBound => (8, 10_000_000, 16_000_000, 4_000_000, 1800.0, 1.0),
            Profile::IoBound => (8, 250_000_000, 4_000_000, 1_000_000, 1800.0, 1.0),
            Profile::Small | Profile::Large => return None,
        };
        Some(IbenchParams {
            clients,
            rows_load: x,
            rows_l_i1: y,
            rows_l_i2: z,
            query_secs: secs,
            insert_rates: vec![100, 500, 1000],
            wait_scale: scale,
            one_table: false,
            seed: 1,
        })
    }

    /// Whether the profile has sysbench sizes.
    pub fn has_sysbench(self) -> bool {
        matches!(self, Profile::Quick | Profile::Small | Profile::Large)
    }

    /// Default seconds between targets: none for the CI-sized profile, a
    /// minute for the others so write-back of the last server settles.
    pub fn settle_secs(self) -> f64 {
        match self {
            Profile::Quick => 0.0,
            Profile::Small | Profile::Large | Profile::CpuBound | Profile::IoBound => 60.0,
        }
    }

    /// The profile's sysbench numbers before overrides (the Insert
    /// Benchmark profiles, which have none, get `large`'s).
    pub fn sysbench(self) -> SysbenchParams {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        match self {
            Profile::Quick => SysbenchParams {
                tables: 1,
                table_size: 100_000,
                threads: ThreadCounts::one(1),
                mux_from: DEFAULT_MUX_FROM,
                read_secs: 5.0,
                write_secs: 5.0,
                warmup_secs: 1.0,
                slices: 0,
                turn_ms: DEFAULT_TURN_MS,
                scan_warm_secs: 5.0,
                postwrite_scale: 0.05,
                seed: 1,
            },
            Profile::Small => SysbenchParams {
                tables: 1,
                table_size: 50_000_000,
                threads: ThreadCounts::one(1),
                mux_from: DEFAULT_MUX_FROM,
                read_secs: 600.0,
                write_secs: 900.0,
                warmup_secs: 5.0,
                slices: 0,
                turn_ms: DEFAULT_TURN_MS,
                scan_warm_secs: 60.0,
                postwrite_scale: 1.0,
                seed: 1,
            },
            // `small`'s durations and settings, with more tables and clients.
            Profile::Large | Profile::CpuBound | Profile::IoBound => SysbenchParams {
                tables: 8,
                table_size: 10_000_000,
                threads: ThreadCounts::one(cores.max(2)),
                ..Profile::Small.sysbench()
            },
        }
    }
}

/// A fresh run seed from the operating system's entropy, below 2^32 so
/// it is short to type back as `--seed N`.
pub fn fresh_seed() -> u64 {
    rand::random_range(1..=u64::from(u32::MAX))
}

/// The sysbench numbers: the profile's, then the overrides, validated.
pub(super) fn sysbench_params(profile: Profile, o: &Overrides) -> Result<SysbenchParams, String> {
    let mut p = profile.sysbench();
    o.apply_to(SuiteName::Sysbench, &mut p);
    if p.tables == 0 {
        return Err("--tables must be at least 1".into());
    }
    if p.table_size == 0 {
        return Err("--table-size must be at least 1".into());
    }
    for (name, v) in [
        ("--read-secs", p.read_secs),
        ("--write-secs", p.write_secs),
        ("--scan-warm-secs", p.scan_warm_secs),
    ] {
        if !(v > 0.0 && v.is_finite()) {
            return Err(format!("{name} must be a positive number of seconds"));
        }
    }
    if !(p.warmup_secs >= 0.0 && p.warmup_secs.is_finite()) {
        return Err("--warmup-secs must be zero or a positive number of seconds".into());
    }
    if p.slices > 0 {
        let shortest = p.read_secs.min(p.write_secs);
        let most = (shortest / MIN_SLICE_SECS).floor().max(1.0) as u32;
        if p.slices > most {
            return Err(format!(
                "--slices {} cuts {shortest} s tests into slices of {:.2} s: give --slices {most} or fewer (slices of at least {MIN_SLICE_SECS} s), or longer --read-secs/--write-secs",
                p.slices,
                shortest / f64::from(p.slices)
            ));
        }
    } else if o.slices == Some(0) {
        return Err("--slices must be at least 1 (1: whole steps, no slices)".into());
    }
    if p.turn_ms > MAX_TURN_MS {
        return Err(format!(
            "--turn-ms {}: give 1 to {MAX_TURN_MS} (turns this long within a slice) or 0 (each slice whole on one target)",
            p.turn_ms
        ));
    }
    if !(p.postwrite_scale >= 0.0 && p.postwrite_scale.is_finite()) {
        return Err("--postwrite-scale must be zero or a positive factor".into());
    }
    Ok(p)
}

/// The Insert Benchmark numbers: the profile's, then the overrides,
/// validated when the suite runs it.
pub(super) fn ibench_params(
    suite: Suite,
    profile: Profile,
    o: &Overrides,
) -> Result<IbenchParams, String> {
    let mut p = match profile.ibench() {
        Some(p) => p,
        None if suite.runs_ibench() => {
            return Err(format!(
                "profile {} has no Insert Benchmark sizes: use --profile quick, cpu-bound or io-bound with --suite {}",
                profile.as_str(),
                suite.as_str()
            ));
        }
        None => Profile::Quick.ibench().expect("quick has ibench sizes"),
    };
    o.apply_to(SuiteName::Ibench, &mut p);
    if !suite.runs_ibench() {
        return Ok(p);
    }
    if p.clients == 0 {
        return Err("--clients must be at least 1".into());
    }
    if p.rows_load == 0 {
        return Err("--rows-load must be at least 1 (the deleters need rows to delete)".into());
    }
    if !(p.query_secs > 0.0 && p.query_secs.is_finite()) {
        return Err("--query-secs must be a positive number of seconds".into());
    }
    if p.insert_rates.is_empty() || p.insert_rates.contains(&0) {
        return Err("--insert-rates must list rates of at least 1 row/s, e.g. 100,500,1000".into());
    }
    if !(p.wait_scale >= 0.0 && p.wait_scale.is_finite()) {
        return Err("--wait-scale must be zero or a positive factor".into());
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sysbench_knob_reaches_its_parameter() {
        let o = Overrides {
            tables: Some(2),
            table_size: Some(30),
            threads: Some(ThreadCounts::parse_with_cores("1,3", 2).unwrap()),
            mux_from: Some(5),
            read_secs: Some(1.5),
            write_secs: Some(2.5),
            warmup_secs: Some(0.0),
            slices: Some(3),
            turn_ms: Some(20),
            scan_warm_secs: Some(0.5),
            postwrite_scale: Some(0.0),
            seed: Some(7),
            clients: Some(9),
            ..Overrides::default()
        };
        let p = sysbench_params(Profile::Quick, &o).unwrap();
        assert_eq!(
            p,
            SysbenchParams {
                tables: 2,
                table_size: 30,
                threads: ThreadCounts::parse_with_cores("1,3", 2).unwrap(),
                mux_from: 5,
                read_secs: 1.5,
                write_secs: 2.5,
                warmup_secs: 0.0,
                slices: 3,
                turn_ms: 20,
                scan_warm_secs: 0.5,
                postwrite_scale: 0.0,
                seed: 7,
            }
        );
        // Slices of at least half a second, and at least one.
        let too_many = Overrides {
            slices: Some(4),
            read_secs: Some(1.5),
            ..Overrides::default()
        };
        let e = sysbench_params(Profile::Quick, &too_many).unwrap_err();
        assert!(
            e.starts_with(
                "--slices 4 cuts 1.5 s tests into slices of 0.38 s: give --slices 3 or fewer"
            ),
            "{e}"
        );
        let zero = Overrides {
            slices: Some(0),
            ..Overrides::default()
        };
        let e = sysbench_params(Profile::Quick, &zero).unwrap_err();
        assert!(
            e.contains("--slices must be at least 1") && !e.contains('\n'),
            "{e}"
        );
        // Turns of at most a second.
        let long_turns = Overrides {
            turn_ms: Some(1001),
            ..Overrides::default()
        };
        let e = sysbench_params(Profile::Quick, &long_turns).unwrap_err();
        assert!(
            e.starts_with("--turn-ms 1001: give 1 to 1000") && !e.contains('\n'),
            "{e}"
        );
        assert_eq!(Profile::Quick.sysbench().turn_ms, DEFAULT_TURN_MS);
        // The default: two a second, at most 40.
        let p = Profile::Quick.sysbench();
        assert_eq!(
            (
                p.slices_for(5.0),
                p.slices_for(0.5),
                p.slices_for(0.3),
                p.slices_for(600.0)
            ),
            (10, 1, 1, 40)
        );
        let p = ibench_params(Suite::One(SuiteName::Sysbench), Profile::Quick, &o).unwrap();
        assert_eq!((p.clients, p.seed, p.rows_load), (9, 7, 200_000));
    }
}
