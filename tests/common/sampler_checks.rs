//! Checks of the samplers shared by the PostgreSQL and MariaDB tests: CPU
//! lands on the side that spent it, and a sysbench run stores the cost per
//! query with nothing missing.
//!
//! The CPU checks compare CPU seconds with the CPU seconds the working side
//! demonstrably used, not with a share of wall time: on two cores shared
//! with other builds, how much of a core a side gets varies, what it spent
//! does not.

use std::time::{Duration, Instant};

use tidemark::metrics::procfs::{clock_ticks_per_sec, process_and_thread_cpu_secs};
use tidemark::metrics::sampler::{Sampler, SamplerConfig};
use tidemark::metrics::summary::{HostSecond, Phase};

/// CPU seconds each side spends in [`attribute_cpu`].
pub const SPEND_SECS: f64 = 0.5;

/// User + system CPU seconds of process `pid` (all its threads), from
/// `/proc/PID/stat`.
pub fn proc_cpu_secs(pid: u32) -> f64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/stat: {e}"));
    // Fields after the command name: state is 0, utime 11, stime 12.
    let rest = &text[text.rfind(')').expect("a stat line") + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / clock_ticks_per_sec()
}

/// Computes in this thread until it has used `cpu_secs` of CPU.
fn burn_cpu(cpu_secs: f64) -> f64 {
    let start = process_and_thread_cpu_secs().1;
    let mut x = 1u64;
    while process_and_thread_cpu_secs().1 - start < cpu_secs {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    std::hint::black_box(x);
    process_and_thread_cpu_secs().1 - start
}

/// The thread id of the one sampler thread of this process.
fn sampler_tid() -> String {
    let tids: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|t| {
            std::fs::read_to_string(format!("/proc/self/task/{t}/comm"))
                .is_ok_and(|c| c.trim() == "sampler")
        })
        .collect();
    assert_eq!(tids.len(), 1, "one sampler thread: {tids:?}");
    tids.into_iter().next().unwrap()
}

/// The thread's state letter and its voluntary context switches.
fn thread_state(tid: &str) -> (char, u64) {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("{name} in {status}"))
            .trim()
            .to_string()
    };
    let state = field("State:").chars().next().unwrap();
    (state, field("voluntary_ctxt_switches:").parse().unwrap())
}

/// Closes the sampler's interval and waits until its thread has read the
/// counters, so work after this call cannot land in the interval closed
/// here however late the loaded machine runs the thread: the thread waits
/// for the tick asleep, wakes, reads, and sleeps again (one more voluntary
/// context switch).
pub fn tick_and_wait(sampler: &Sampler, phase: Phase) {
    let tid = sampler_tid();
    let deadline = Instant::now() + Duration::from_secs(60);
    let waiting = || {
        assert!(Instant::now() < deadline, "the sampler thread never slept");
        std::thread::sleep(Duration::from_millis(1));
    };
    let before = loop {
        match thread_state(&tid) {
            ('S', switches) => break switches,
            _ => waiting(),
        }
    };
    sampler.tick(phase);
    while thread_state(&tid).1 == before {
        waiting();
    }
}

/// Two measured intervals of one sampler watching `server_pid`, and what
/// each side spent in them.
#[derive(Debug)]
pub struct Attribution {
    /// This thread computed [`SPEND_SECS`], the server idled.
    pub client_step: HostSecond,
    /// `serve` ran statements on the server until the process executing
    /// them had used [`SPEND_SECS`]; this thread waited for the answers.
    pub server_step: HostSecond,
    /// CPU seconds this thread used in the first interval.
    pub burned: f64,
    /// CPU seconds `executor_cpu` grew by in the second.
    pub served: f64,
}

/// Runs the two intervals of [`Attribution`]: `serve` runs one statement
/// that makes the server compute, `executor_cpu` is the CPU seconds of the
/// server process that executes it.
pub fn attribute_cpu(
    server_pid: u32,
    mut serve: impl FnMut(),
    executor_cpu: impl Fn() -> f64,
) -> Attribution {
    let sampler = Sampler::start(SamplerConfig {
        server_pid: Ok(server_pid),
        devices: Ok(vec![]),
        interval: Duration::from_secs(3600),
    })
    .unwrap();
    tick_and_wait(&sampler, Phase::Warmup);
    let burned = burn_cpu(SPEND_SECS);
    tick_and_wait(&sampler, Phase::Measured);
    let start = executor_cpu();
    while executor_cpu() - start < SPEND_SECS {
        serve();
    }
    let served = executor_cpu() - start;
    tick_and_wait(&sampler, Phase::Measured);
    let out = sampler.stop();
    let m: Vec<&HostSecond> = out
        .rows
        .iter()
        .filter(|r| r.phase == Phase::Measured)
        .collect();
    assert!(m.len() >= 2, "{:?}", out.rows);
    Attribution {
        client_step: m[0].clone(),
        server_step: m[1].clone(),
        burned,
        served,
    }
}

/// CPU seconds of the client (tidemark's threads but the sampler) in `row`.
pub fn client_secs(row: &HostSecond) -> f64 {
    row.client_cpu_pct / 100.0 * row.secs
}

/// CPU seconds of the server's processes in `row`.
pub fn server_secs(row: &HostSecond) -> f64 {
    row.server_cpu_pct.expect("server CPU is read") / 100.0 * row.secs
}

/// Each interval holds all the CPU its working side spent (less the
/// 10 ms rounding of `/proc` CPU times), and that side spent over four
/// times what the waiting side did.
pub fn check_attribution(a: &Attribution) {
    let (c, s) = (&a.client_step, &a.server_step);
    eprintln!(
        "client burns {:.2} s: client {:.2} s server {:.2} s in {:.2} s; server computes \
         {:.2} s: client {:.2} s server {:.2} s in {:.2} s",
        a.burned,
        client_secs(c),
        server_secs(c),
        c.secs,
        a.served,
        client_secs(s),
        server_secs(s),
        s.secs
    );
    assert!(client_secs(c) >= 0.95 * a.burned, "{a:?}");
    assert!(client_secs(c) > 4.0 * server_secs(c), "{a:?}");
    assert!(server_secs(s) >= 0.95 * a.served - 0.02, "{a:?}");
    assert!(server_secs(s) > 4.0 * client_secs(s), "{a:?}");
}

/// The steps of the last run in the results at `results`, as exported.
pub fn export_steps(results: &str) -> Vec<serde_json::Value> {
    let doc = super::cli_runs::export_json(results);
    doc["runs"].as_array().unwrap().last().unwrap()["targets"][0]["steps"]
        .as_array()
        .unwrap()
        .clone()
}

/// The number at `key` of `v`.
pub fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is missing: {v}"))
}

/// Runs `point-query,update-index` into `results` (20,000 rows, 3 s
/// steps after a 1 s warm-up) with `extra` arguments, checks the stored
/// costs ([`check_point_query_and_update_index_costs`]) and returns the
/// exported steps.
pub fn run_point_query_and_update_index(results: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec![
        "run",
        "--results",
        results,
        "--tests",
        "point-query,update-index",
        "--table-size",
        "20000",
        "--read-secs",
        "3",
        "--write-secs",
        "3",
        "--warmup-secs",
        "1",
    ];
    args.extend(extra);
    let o = super::run_tidemark(&args);
    assert!(
        o.status.success(),
        "{}\n{}",
        super::stderr(&o),
        super::stdout(&o)
    );
    let steps = export_steps(results);
    check_point_query_and_update_index_costs(&steps);
    steps
}

/// Checks the stored costs of a `point-query,update-index` run on a
/// managed server: nothing missing, costs per query, the server's CPU a
/// part of the host's, the sampler's client CPU close to the runner's,
/// writes and flushes for the write test and (almost) no reads for the
/// cached read test.
pub fn check_point_query_and_update_index_costs(steps: &[serde_json::Value]) {
    assert_eq!(steps.len(), 2);
    for s in steps {
        let hw = &s["hw"];
        let name = s["name"].as_str().unwrap();
        eprintln!("{name}: {hw}");
        assert_eq!(
            hw["missing"],
            serde_json::json!({}),
            "{name}: nothing missing"
        );
        assert_eq!(hw["rate_basis"], "qps");
        assert_eq!(num(hw, "rate"), num(s, "qps"));
        let (cpupq, scpupq, ccpupq) = (num(hw, "cpupq"), num(hw, "scpupq"), num(hw, "ccpupq"));
        assert!(
            scpupq > 0.0 && scpupq < cpupq,
            "{name}: server {scpupq} < host {cpupq}"
        );
        // The client's CPU is the client's: the sampler's (the process but
        // itself) is close to the runner's per-thread count of its clients.
        let runner = num(s, "client_cpu_us_per_query");
        assert!(
            ccpupq >= 0.8 * runner && ccpupq <= 1.5 * runner + 2.0,
            "{name}: sampler {ccpupq} vs runner {runner} µs/query"
        );
        assert!(num(hw, "dbgb1") > 0.0 && num(hw, "rss") > 0.0);
    }
    let write = &steps.iter().find(|s| s["test"] == "update-index").unwrap()["hw"];
    assert!(
        num(write, "wps") > 0.0 && num(write, "f/s") > 0.0,
        "a commit per statement writes and flushes: {write}"
    );
    assert!(num(write, "wpi") > 0.0);
    let read = &steps.iter().find(|s| s["test"] == "point-query").unwrap()["hw"];
    // A cached point query reads nothing from storage. The disk's r/s also
    // counts whoever else uses it, so the strict check is on the server's
    // own reads; the disk's must still be far from the one read per query
    // an uncached point query needs.
    assert!(
        num(read, "srkbpq") < 0.01,
        "the server reads (almost) nothing from storage: {read}"
    );
    assert!(num(read, "rpq") < 0.5, "{read}");
}
