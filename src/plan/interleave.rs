//! In which order a plan's measurements run: whole passes over the
//! targets, each on a fresh server (`servers`), or one test at a time with
//! every target's server kept up (`steps`), so that A and B are measured
//! seconds apart and slow drift of the machine cancels in their ratio, or
//! with the targets' slices of each test measured at the same time
//! (`together`), so that the machine's second-to-second noise falls on all
//! of them alike.

use serde::{Deserialize, Serialize};

/// The order of measurements across targets and repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interleave {
    /// Each (target, repetition) on its own fresh server, passes A B A B.
    Servers,
    /// All targets' servers up together; each sysbench test runs on every
    /// target and repetition before the next test starts, alternating
    /// which target goes first. The Insert Benchmark (whose steps build on
    /// each other) still runs per server.
    Steps,
    /// As `Steps`, but each slice of a test runs on every target at the
    /// same time, the servers and clients sharing their CPUs: what slows
    /// the machine for a moment slows every target alike. Measured on a
    /// 2-vCPU VM (two servers of one build, point selects, one client
    /// each, one CPU): the per-second ratio between them varied by 0.4 %
    /// at once against 2.2-3.8 % in alternate seconds. The rates are the
    /// shared CPU's: for comparing targets, not for their throughput.
    Together,
}

impl Interleave {
    /// Parses `servers`, `steps` or `together`.
    pub fn parse(s: &str) -> Result<Interleave, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "servers" => Ok(Interleave::Servers),
            "steps" => Ok(Interleave::Steps),
            "together" => Ok(Interleave::Together),
            _ => Err(format!(
                "--interleave {s:?}: give steps (all servers up, targets alternate per test), \
                 together (all servers up, each test's slices measured on all at once) \
                 or servers (one fresh server per target and repetition)"
            )),
        }
    }

    /// Whether every target's server is up at once (`steps`, `together`).
    pub fn servers_up_together(self) -> bool {
        self != Interleave::Servers
    }

    /// The name as the CLI and the store spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Interleave::Servers => "servers",
            Interleave::Steps => "steps",
            Interleave::Together => "together",
        }
    }

    /// The default: `steps` when sysbench tests run on more than one cell
    /// (targets × repetitions), every target is a server tidemark starts
    /// (two external URLs or SQLite files may be one database, whose tables
    /// two live targets would share), no fixed `--port` forbids two
    /// servers at once and their buffer pools fit in memory together
    /// (`fit_together`); `servers` otherwise.
    pub fn default_for(
        runs_sysbench: bool,
        cells: usize,
        all_managed: bool,
        fixed_port: bool,
        fit_together: bool,
    ) -> Interleave {
        if runs_sysbench && cells > 1 && all_managed && !fixed_port && fit_together {
            Interleave::Steps
        } else {
            Interleave::Servers
        }
    }
}

/// The order a run takes: `--interleave` when given (refused in one line
/// where it cannot work), else [`Interleave::default_for`]. `together` says
/// whether the managed servers fit in memory at once, and why not.
pub fn choose(
    given: Option<&str>,
    runs_sysbench: bool,
    cells: usize,
    all_managed: bool,
    fixed_port: bool,
    together: Result<(), String>,
) -> Result<Interleave, String> {
    let Some(text) = given else {
        return Ok(Interleave::default_for(
            runs_sysbench,
            cells,
            all_managed,
            fixed_port,
            together.is_ok(),
        ));
    };
    let chosen = Interleave::parse(text)?;
    let name = chosen.as_str();
    if chosen.servers_up_together() && fixed_port && cells > 1 {
        return Err(format!(
            "--interleave {name} keeps several servers up at once, so one --port cannot \
             serve them: drop --port or pass --interleave servers"
        ));
    }
    if chosen.servers_up_together()
        && let Err(e) = together
    {
        return Err(format!(
            "--interleave {name}: {e}: pass --interleave servers (one server at a time), fewer targets or a smaller --table-size"
        ));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_defaults() {
        assert_eq!(Interleave::parse("Steps"), Ok(Interleave::Steps));
        assert_eq!(Interleave::parse("servers"), Ok(Interleave::Servers));
        assert_eq!(Interleave::parse("together"), Ok(Interleave::Together));
        assert!(Interleave::Together.servers_up_together());
        assert!(!Interleave::Servers.servers_up_together());
        let e = Interleave::parse("slices").unwrap_err();
        assert!(e.starts_with("--interleave \"slices\"") && !e.contains('\n'));
        let d = Interleave::default_for;
        assert_eq!(d(true, 2, true, false, true), Interleave::Steps);
        assert_eq!(d(true, 1, true, false, true), Interleave::Servers);
        assert_eq!(d(false, 4, true, false, true), Interleave::Servers);
        assert_eq!(
            d(true, 4, false, false, true),
            Interleave::Servers,
            "an external target"
        );
        assert_eq!(
            d(true, 4, true, true, true),
            Interleave::Servers,
            "a fixed port"
        );
        assert_eq!(
            d(true, 4, true, false, false),
            Interleave::Servers,
            "buffer pools that do not fit in memory together"
        );
    }
}
