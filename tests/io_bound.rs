//! `--sizing io-bound` on managed servers reads from storage: PostgreSQL
//! runs in a memory cgroup (page cache included) a little above its shared
//! buffers, MariaDB gets a buffer pool of the same size and reads with
//! O_DIRECT. Quick point queries then read from the disk on every query or
//! so, where the cached run of the same data reads nothing; the cgroup is
//! gone after the run.

mod common;

use common::sampler_checks::{export_steps, num};
use common::*;

/// Storage reads per query (the watched disks') and KB the server's own
/// processes read from storage per query, of one quick point-query run
/// with `sizing` on `target`, and the target's stored `io_bound` fact.
/// The disks are shared with the rest of the machine; the server's own
/// reads are its alone.
fn reads_per_query(target: &str, sizing: &str) -> ((f64, f64), Option<String>) {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let o = run_tidemark(&[
        "run",
        "--results",
        results,
        "--target",
        target,
        "--tests",
        "point-query",
        "--table-size",
        "300000",
        "--read-secs",
        "4",
        "--warmup-secs",
        "1",
        "--sizing",
        sizing,
        "--no-report",
    ]);
    assert_success(&o);
    if sizing == "io-bound" {
        assert!(
            stderr(&o)
                .lines()
                .any(|l| l.starts_with("io-bound: managed")),
            "the run says how it keeps the data out of memory: {}",
            stderr(&o)
        );
    }
    let steps = export_steps(results);
    let doc = common::cli_runs::export_json(results);
    let fact = doc["runs"][0]["targets"][0]["extra"]["io_bound"]
        .as_str()
        .map(str::to_string);
    let hw = &steps[0]["hw"];
    ((num(hw, "rpq"), num(hw, "srkbpq")), fact)
}

fn no_cgroup_left() {
    for root in [
        "/sys/fs/cgroup/memory",
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/unified",
    ] {
        let left: Vec<String> = std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("tidemark-"))
            .collect();
        assert!(left.is_empty(), "cgroups left in {root}: {left:?}");
    }
}

#[test]
fn io_bound_postgres_reads_from_storage_where_cached_does_not() {
    let _turn = serial();
    let (io, fact) = reads_per_query("pg@system", "io-bound");
    no_cgroup_left();
    let (cached, none) = reads_per_query("pg@system", "cached");
    eprintln!(
        "PostgreSQL reads, KB read by the server per query: io-bound {io:?}, cached {cached:?}"
    );
    assert!(fact.unwrap().contains("memory cgroup"));
    assert_eq!(none, None, "no limit in a cached run");
    assert!(
        io.0 > 0.1 && io.1 > 2.0,
        "io-bound reads from storage: {io:?}"
    );
    assert!(
        cached.1 < 0.05,
        "the cached server reads nothing: {cached:?}"
    );
    assert!(io.0 > 10.0 * cached.0, "{io:?} vs {cached:?}");
}

#[test]
fn io_bound_mariadb_reads_from_storage_where_cached_does_not() {
    let _turn = serial();
    let (io, fact) = reads_per_query("mariadb@system", "io-bound");
    let (cached, none) = reads_per_query("mariadb@system", "cached");
    eprintln!("MariaDB reads, KB read by the server per query: io-bound {io:?}, cached {cached:?}");
    // The server itself says its data bypasses the page cache, with the
    // buffer pool the sizing chose (300k rows ≈ 77 MiB: a 16 MiB pool).
    let fact = fact.expect("an IO-bound MariaDB records how it reads");
    assert!(
        fact.starts_with("InnoDB's buffer pool of 16 MiB with innodb_flush_method = O_DIRECT")
            && fact.ends_with("past the OS page cache"),
        "{fact}"
    );
    assert_eq!(none, None, "nothing to say in a cached run");
    assert!(
        io.0 > 0.1 && io.1 > 2.0,
        "io-bound reads from storage: {io:?}"
    );
    assert!(
        cached.1 < 0.05,
        "the cached server reads nothing: {cached:?}"
    );
    assert!(io.0 > 10.0 * cached.0, "{io:?} vs {cached:?}");
}

/// The memory cgroups of the tidemark process `pid` (named
/// `tidemark-<pid>-<server pid>`), wherever the host keeps them.
fn cgroups_of(pid: u32) -> Vec<String> {
    let prefix = format!("tidemark-{pid}-");
    [
        "/sys/fs/cgroup/memory",
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/unified",
    ]
    .iter()
    .flat_map(|root| std::fs::read_dir(root).into_iter().flatten().flatten())
    .map(|e| e.file_name().to_string_lossy().into_owned())
    .filter(|n| n.starts_with(&prefix))
    .collect()
}

#[test]
fn a_ctrl_c_or_a_dead_server_under_an_io_bound_step_leaves_no_cgroup() {
    // Its cgroups must not show in the other tests' check for leftovers.
    let _turn = serial();
    use common::cli_runs::{Watched, short_run};
    use std::time::{Duration, Instant};
    for kill_server in [false, true] {
        let dir = server_tempdir();
        let results = dir.path().join("results");
        let results = results.to_str().unwrap();
        let mut args = short_run(results, "point-query", &[], &["--sizing", "io-bound"]);
        let read_secs = args.iter().position(|a| a == "--read-secs").unwrap() + 1;
        args[read_secs] = "30".into();
        let mut run = Watched::tidemark(&args);
        let pid = run.child.id();
        let deadline = Instant::now() + Duration::from_secs(120);
        while cgroups_of(pid).is_empty() {
            assert!(Instant::now() < deadline, "the server never got its cgroup");
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(2));
        let status = if kill_server {
            for p in postgres_pids_mentioning(results) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let deadline = Instant::now() + Duration::from_secs(90);
            loop {
                if let Some(s) = run.child.try_wait().unwrap() {
                    break s;
                }
                assert!(Instant::now() < deadline, "the run ends");
                std::thread::sleep(Duration::from_millis(100));
            }
        } else {
            run.interrupt()
        };
        assert!(!status.success(), "kill_server {kill_server}: {status:?}");
        assert!(
            cgroups_of(pid).is_empty(),
            "kill_server {kill_server}: {:?}",
            cgroups_of(pid)
        );
        assert!(postgres_pids_mentioning(results).is_empty());
    }
}

/// A hard `--memory-limit` far below the buffer pool: the kernel kills a
/// server process during the load, and the failure says so in one line
/// (the kernel's reason, the limit, how to size the run), stored with the
/// target; no server or cgroup is left.
#[test]
fn a_kernel_oom_kill_of_the_server_is_named_in_one_line() {
    let _turn = serial();
    use common::cli_runs::{export_json, short_run};
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let mut args = short_run(results, "point-query", &[], &["--memory-limit", "24MiB"]);
    let size = args.iter().position(|a| a == "--table-size").unwrap() + 1;
    args[size] = "100000".into();
    let o = run_tidemark(&args);
    assert!(!o.status.success());
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.contains("killed"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("the kernel killed")
            && line.contains("out of memory in its memory cgroup")
            && line.contains("24 MiB")
            && line.contains("--memory-limit"),
        "{line}"
    );
    let raw = export_json(results);
    let target = &raw["runs"][0]["targets"][0];
    assert_eq!(target["status"], "failed");
    assert!(
        target["failure"]
            .as_str()
            .unwrap_or_default()
            .contains("the kernel killed"),
        "{target}"
    );
    assert!(postgres_pids_mentioning(results).is_empty());
}

#[test]
fn a_bad_server_memory_is_one_line_before_any_server_starts() {
    for (args, want) in [
        (
            &["run", "--sizing", "io-bound", "--server-memory", "lots"][..],
            &["--server-memory \"lots\"", "at least 16 MiB"][..],
        ),
        (
            &["run", "--server-memory", "256MiB"][..],
            &["--server-memory", "add --sizing io-bound"][..],
        ),
    ] {
        let err =
            common::cli_runs::fails_in_one_line(args, want, std::time::Duration::from_secs(10));
        assert!(!err.contains("starting"), "{err}");
    }
}

#[test]
fn a_bad_memory_limit_is_one_line_before_any_server_starts() {
    let err = common::cli_runs::fails_in_one_line(
        &["run", "--memory-limit", "5MiB"],
        &["--memory-limit", "at least 16 MiB"],
        std::time::Duration::from_secs(10),
    );
    assert!(!err.contains("starting"), "{err}");
}
