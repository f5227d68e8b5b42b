//! PostgreSQL built from a real source tree: `servers build pg` configures,
//! builds and installs it into the install cache, a second build of the
//! same inputs does nothing, `servers list` shows the build, a quick suite
//! runs on `pg@VERSION_o2nofp` beside the same release with one patch
//! (`pg@VERSION_o2nofp_pHASH`), and the store and the report carry the
//! flags, compiler and source; a patch that does not apply fails in one
//! line naming the log and leaves no tree behind, and so does Ctrl-C.
//!
//! The source is Debian's source package of the installed PostgreSQL,
//! unpacked by `.ci/run` into `/tmp/tidemark-test-cache/src` (or a tree
//! named by `TIDEMARK_PG_SRC`). The build lands in the shared test cache,
//! so CI pays for it once.

#[allow(unused_imports)]
mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::cli_runs::*;
use common::pg_source::{CACHE, source_tree, source_version, tm};
use common::*;

/// A patch that applies to PostgreSQL 12-18 sources: a comment line in
/// main.c (the build differs only by it, as the seeds' patched builds
/// differ from their release by one patch).
const COMMENT_PATCH: &str = concat!(
    "--- a/src/backend/main/main.c\n",
    "+++ b/src/backend/main/main.c\n",
    "@@ -1,5 +1,6 @@\n",
    " /*-------------------------------------------------------------------------\n",
    "  *\n",
    "+ * (patched by tidemark's source-build check)\n",
    "  * main.c\n",
    "  *\t  Stub main() routine for the postgres executable.\n",
    "  *\n",
);

fn tm_run(args: &[&str]) -> Output {
    tm().args(args).output().expect("tidemark runs")
}

#[test]
fn a_source_build_is_cached_listed_and_runs_a_quick_suite() {
    let src = source_tree();
    let version = source_version(&src);
    let name = format!("{version}_o2nofp");
    let src_arg = src.to_str().unwrap();
    let build = [
        "servers", "build", "pg", "--src", src_arg, "--build", "o2nofp",
    ];

    // Build (or find the build a previous test run made), then again: the
    // second call must find the same inputs and do nothing.
    let o = tm_run(&build);
    assert!(o.status.success(), "build failed: {}", stderr(&o));
    let dir = PathBuf::from(CACHE).join("pg").join(&name);
    assert!(dir.join("bin/postgres").is_file(), "{}", stdout(&o));
    let o = tm_run(&build);
    assert!(o.status.success(), "{}", stderr(&o));
    let again = stdout(&o);
    assert!(
        again.contains(&format!("pg@{name} is built already")) && again.contains("nothing to do"),
        "{again}"
    );

    // Listed with its flags, compiler and source.
    let o = tm_run(&["servers", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list = stdout(&o);
    let line = list
        .lines()
        .find(|l| l.starts_with(&format!("pg@{name} ")))
        .unwrap_or_else(|| panic!("pg@{name} is listed: {list}"));
    assert!(
        line.contains("-O2 -fno-omit-frame-pointer") && line.contains("gcc"),
        "{line}"
    );
    assert!(
        line.contains("release tree") || line.contains("git "),
        "{line}"
    );
    // What the build lacks follows what configure was given (lz4, zstd
    // only when pkg-config found them).
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tidemark-build.json")).unwrap())
            .unwrap();
    let args = manifest["configure_args"].to_string();
    let lacks: Vec<&str> = manifest["lacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for feature in ["lz4", "zstd"] {
        assert_eq!(
            lacks.contains(&feature),
            !args.contains(&format!("--with-{feature}")),
            "{feature}: {manifest}"
        );
        assert_eq!(line.contains(feature), lacks.contains(&feature), "{line}");
    }
    if lacks.contains(&"lz4") {
        // The seeds' a27 (wal_compression = lz4) is refused on it at once.
        let tmp = server_tempdir();
        let results = tmp.path().join("results");
        let target = format!("pg@{name}+a27");
        let args = short_run(results.to_str().unwrap(), "point-query", &[&target], &[]);
        let o = tm().args(&args).output().unwrap();
        let refusal = one_line_error(&o);
        assert!(
            refusal.contains(&format!("target {target}")) && refusal.contains("lacks lz4"),
            "{refusal}"
        );
    }

    // The binaries say what the source said, and run a quick suite.
    let v = Command::new(dir.join("bin/postgres"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(stdout(&v).contains(&version), "{}", stdout(&v));
    let tmp = server_tempdir();
    let results = tmp.path().join("results");
    let results = results.to_str().unwrap();
    let target = format!("pg@{name}");
    // The same release with one patch: its own name, its patch recorded.
    let patch = tmp.path().join("comment.patch");
    std::fs::write(&patch, COMMENT_PATCH).unwrap();
    let patched_build = [&build[..], &["--patch", patch.to_str().unwrap()]].concat();
    let o = tm_run(&patched_build);
    assert!(o.status.success(), "patched build failed: {}", stderr(&o));
    let said = stdout(&o);
    let patched_name = said
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("pg@{name}_p")))
        .map(|hash| format!("{name}_p{hash}"))
        .unwrap_or_else(|| panic!("{said}"));
    assert_eq!(patched_name.len(), name.len() + 10, "{said}");
    assert!(said.contains("patches comment.patch (sha256 "), "{said}");
    let patched = format!("pg@{patched_name}");

    let args = short_run(
        results,
        "point-query,insert",
        &[&target, &patched, "pg@system"],
        &[],
    );
    let o = tm().args(&args).output().unwrap();
    assert_success(&o);

    // The store keeps how the server was built.
    let doc = export_json(results);
    let t = &doc["runs"][0]["targets"][0];
    assert_eq!(t["spec"], target.as_str());
    assert_eq!(t["version_number"], version.as_str());
    let label = format!("pg{}_o2nofp.base", version.replace('.', ""));
    assert_eq!(
        t["label"],
        label.as_str(),
        "labelled as the seeds label builds"
    );
    let b = &t["extra"]["build"];
    assert_eq!(b["build"], "o2nofp", "{t}");
    assert_eq!(b["cflags"], "-O2 -fno-omit-frame-pointer");
    assert!(b["compiler"].as_str().unwrap().contains("gcc"), "{b}");
    assert_eq!(b["patches"].as_array().unwrap().len(), 0);
    assert_eq!(b["fingerprint"].as_str().unwrap().len(), 64);
    let p = &doc["runs"][0]["targets"][1]["extra"]["build"];
    assert_eq!(p["name"], patched_name.as_str());
    assert_eq!(p["patches"][0]["name"], "comment.patch", "{p}");
    let sha = p["patches"][0]["sha256"].as_str().unwrap();
    assert_eq!(sha.len(), 64);
    assert_ne!(p["fingerprint"], b["fingerprint"]);

    // The report's context shows it.
    let out = tmp.path().join("report");
    let o = run_tidemark(&["report", "--results", results, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains(&format!(
            "({label}): built from source {version} o2nofp (-O2 -fno-omit-frame-pointer) with gcc"
        )),
        "{md}"
    );
    assert_eq!(
        md.matches("): built from source").count(),
        2,
        "pg@system is no build"
    );
    assert!(
        md.contains(&format!("patches comment.patch (sha256 {}", &sha[..12])),
        "{md}"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains(&format!("({label}): built from source")),
        "the HTML too"
    );
    assert!(
        html.contains(&format!(
            "<summary>Configuration file of base ({label})</summary>"
        )) && html.contains("shared_buffers = "),
        "the HTML context shows the configuration file"
    );
}

#[test]
fn a_bad_patch_bad_input_and_ctrl_c_fail_in_one_line_and_leave_no_tree() {
    let src = source_tree();
    let tmp = tempfile::tempdir().unwrap();
    let patch = tmp.path().join("nothing.patch");
    std::fs::write(
        &patch,
        "--- a/no-such-file.c\n+++ b/no-such-file.c\n@@ -1,1 +1,1 @@\n-old\n+new\n",
    )
    .unwrap();
    let o = tm_run(&[
        "servers",
        "build",
        "pg",
        "--src",
        src.to_str().unwrap(),
        "--build",
        "o2nofp",
        "--patch",
        patch.to_str().unwrap(),
        "--name",
        "0.0_brokenpatch",
    ]);
    assert!(!o.status.success());
    let line = one_line_error(&o);
    let log = format!("{CACHE}/pg/build-0.0_brokenpatch.log");
    assert!(
        line.contains("patch failed") && line.contains(&log),
        "{line}"
    );
    assert!(std::fs::metadata(&log).is_ok(), "the log is kept");
    assert!(
        !PathBuf::from(CACHE).join("pg/0.0_brokenpatch").exists(),
        "no tree is left"
    );
    let leftovers: Vec<_> = std::fs::read_dir(PathBuf::from(CACHE).join("pg"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".build-"))
        .filter(|e| e.path().join("src/no-such-file.c.rej").exists())
        .collect();
    assert!(leftovers.is_empty(), "no scratch directory is left");

    // A build the cache lacks is refused before any server starts, naming
    // the command that makes it; a directory without configure too.
    let results = tmp.path().join("results");
    let o = tm()
        .args(short_run(
            results.to_str().unwrap(),
            "point-query",
            &["pg@16.9_o3_native_lto"],
            &[],
        ))
        .output()
        .unwrap();
    let line = one_line_error(&o);
    assert!(
        line.contains("no PostgreSQL build 16.9_o3_native_lto")
            && line.contains("tidemark servers build pg --src DIR --build o3_native_lto"),
        "{line}"
    );
    assert!(!results.join("results.db").exists());
    let o = tm_run(&[
        "servers", "build", "pg", "--src", "/tmp", "--build", "o2nofp",
    ]);
    let line = one_line_error(&o);
    assert!(
        line.contains("--src /tmp has no readable configure script"),
        "{line}"
    );

    // Ctrl-C during configure stops it, installs nothing and removes the
    // scratch tree.
    let name = format!("{}_o2", source_version(&src));
    let log = PathBuf::from(format!("{CACHE}/pg/build-{name}.log"));
    let _ = std::fs::remove_file(&log);
    let child = tm()
        .args([
            "servers",
            "build",
            "pg",
            "--src",
            src.to_str().unwrap(),
            "--build",
            "o2",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("checking ")) {
        assert!(started.elapsed().as_secs() < 120, "configure never started");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success());
    let line = one_line_error(&o);
    assert!(
        line.contains("configure interrupted: nothing was installed"),
        "{line}"
    );
    assert!(!PathBuf::from(CACHE).join("pg").join(&name).exists());
    let ours = format!(".build-{}-", pid.as_raw());
    let left: Vec<_> = std::fs::read_dir(PathBuf::from(CACHE).join("pg"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&ours))
        .collect();
    assert!(left.is_empty(), "the scratch tree is removed");
    assert!(
        pids_mentioning("configure", &ours).is_empty(),
        "configure is stopped"
    );

    // An unknown flag set is refused before anything is copied.
    let o = tm_run(&[
        "servers",
        "build",
        "pg",
        "--src",
        src.to_str().unwrap(),
        "--build",
        "fast",
    ]);
    assert!(!o.status.success());
    let line = one_line_error(&o);
    assert!(
        line.contains("unknown build 'fast': use one of") && line.contains("o2nofp"),
        "{line}"
    );
}
