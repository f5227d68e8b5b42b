//! Running the tidemark binary as a user does, shared by the CLI tests:
//! short runs, the export, bad input that must fail in one line, and a run
//! watched line by line and interrupted with Ctrl-C (SIGINT).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use super::{assert_success, pids_mentioning, run_tidemark, stderr, tidemark};

/// Arguments of a very short run of `tests` into `results` (2000-row
/// tables, half-second steps, no warm-up), on each of `targets`, then
/// `extra`.
pub fn short_run(results: &str, tests: &str, targets: &[&str], extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--results",
        results,
        "--tests",
        tests,
        "--table-size",
        "2000",
        "--read-secs",
        "0.5",
        "--write-secs",
        "0.5",
        "--warmup-secs",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for t in targets {
        args.push("--target".into());
        args.push(t.to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// `tidemark run --suite sysbench --instructions` of `tests` on `targets`
/// (a short run, `extra` added), which must succeed. Valgrind must be
/// installed: `.ci/run` installs Debian's package.
pub fn counted_run(results: &str, tests: &str, targets: &[&str], extra: &[&str]) -> Output {
    assert!(
        ::tidemark::server::valgrind::unavailable().is_none(),
        "valgrind is not installed: .ci/run installs Debian's package valgrind"
    );
    let mut args = vec!["--instructions", "--suite", "sysbench"];
    args.extend_from_slice(extra);
    let o = run_tidemark(&short_run(results, tests, targets, &args));
    assert_success(&o);
    o
}

/// After a counted run: its Markdown report has the instruction section
/// and no Valgrind process is left. Returns the report.
pub fn counted_report_and_nothing_left(results: &str) -> String {
    let report =
        std::fs::read_to_string(std::path::Path::new(results).join("reports/run-1/report.md"))
            .unwrap();
    assert!(
        report.contains("## Instructions per query (Valgrind)"),
        "{report}"
    );
    assert!(
        pids_mentioning("valgrind", results).is_empty(),
        "no Valgrind process left"
    );
    report
}

/// The JSON export of everything in `results`.
pub fn export_json(results: &str) -> serde_json::Value {
    let o = run_tidemark(&["export", "--format", "json", "--results", results]);
    assert!(o.status.success(), "export failed: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("export is JSON")
}

/// `tidemark report` of the latest run in `results`, written to `out`:
/// its report.json.
pub fn report_json(results: &str, out: &std::path::Path) -> serde_json::Value {
    let o = run_tidemark(&["report", "--results", results, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "report failed: {}", stderr(&o));
    let text = std::fs::read_to_string(out.join("report.json")).expect("report.json written");
    serde_json::from_str(&text).expect("report.json is JSON")
}

/// Steps stored over every run and target of an export.
pub fn step_count(doc: &serde_json::Value) -> usize {
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["targets"].as_array().unwrap())
        .map(|t| t["steps"].as_array().unwrap().len())
        .sum()
}

/// Runs tidemark with `args`, which must fail within `within` with one
/// line on stderr containing each of `wants`; returns that line.
pub fn fails_in_one_line(args: &[&str], wants: &[&str], within: Duration) -> String {
    let started = Instant::now();
    let o = run_tidemark(args);
    let took = started.elapsed();
    let err = stderr(&o);
    assert!(!o.status.success(), "{args:?} must fail");
    for want in wants {
        assert!(
            err.contains(want),
            "{args:?}: {err:?} should contain {want:?}"
        );
    }
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line: {err:?}"
    );
    assert!(
        took < within,
        "{args:?} took {took:?}: it must fail before anything slow starts"
    );
    err
}

/// A tidemark run whose stderr lines arrive on a channel as it prints them.
pub struct Watched {
    pub child: Child,
    pub lines: Receiver<String>,
}

impl Watched {
    /// Starts `cmd` (stdout and stderr piped).
    pub fn spawn(mut cmd: Command) -> Watched {
        let mut child = cmd
            .stderr(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pipe = child.stderr.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Watched { child, lines }
    }

    /// Starts tidemark with `args`.
    pub fn tidemark<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Watched {
        let mut cmd = tidemark();
        cmd.args(args);
        Watched::spawn(cmd)
    }

    /// Waits until `times` lines have satisfied `pred`, up to 120 s.
    pub fn wait_for(&self, times: usize, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut seen = 0;
        while seen < times {
            let line = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the awaited line is printed");
            if pred(&line) {
                seen += 1;
            }
        }
    }

    /// Sends SIGINT (Ctrl-C) and waits up to 60 s for tidemark to exit.
    pub fn interrupt(&mut self) -> ExitStatus {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let started = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "tidemark exits after Ctrl-C"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The lines printed since the last one read.
    pub fn rest(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }
}

/// Ctrl-C during a long read step after a short write step on `targets`
/// (none: the default PostgreSQL): tidemark exits with 130, the server it
/// started (whose pids `server_pids` finds by the results directory) runs
/// before and is gone after, the run is stored as interrupted with the
/// finished step ok and the interrupted one last. Returns the export.
pub fn ctrl_c_mid_step(
    results: &str,
    targets: &[&str],
    server_pids: fn(&str) -> Vec<u32>,
) -> serde_json::Value {
    let mut args = short_run(results, "update-index,point-query", targets, &[]);
    // The read step runs 30 s (an option may be given once).
    let read_secs = args.iter().position(|a| a == "--read-secs").unwrap() + 1;
    args[read_secs] = "30".into();
    let mut run = Watched::tidemark(&args);
    // Wait for the first finished step, then two seconds more.
    run.wait_for(1, |l| l.starts_with("[1/"));
    std::thread::sleep(Duration::from_secs(2));
    assert!(!server_pids(results).is_empty(), "the server runs");
    let status = run.interrupt();
    assert_eq!(status.code(), Some(130), "exit code of an interrupted run");
    assert!(server_pids(results).is_empty(), "no server is left behind");
    let doc = export_json(results);
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "interrupted");
    let steps = run["targets"][0]["steps"].as_array().unwrap();
    assert!(
        steps.len() >= 2,
        "the finished step and the interrupted one are stored"
    );
    assert_eq!(steps[0]["status"], "ok");
    assert_eq!(steps.last().unwrap()["status"], "interrupted");
    doc
}

/// The stderr of `o` (a failed run) has exactly one `tidemark:` line;
/// returns it.
pub fn one_line_error(o: &Output) -> String {
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("tidemark:")).collect();
    assert_eq!(lines.len(), 1, "one error line: {err}");
    lines[0].to_string()
}

/// The lines `tidemark gate` printed on standard error for the cells that
/// broke its rule (`tidemark: gate: …`), one per cell.
pub fn gate_failures(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.starts_with("tidemark: gate: "))
        .collect()
}
