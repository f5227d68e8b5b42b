//! `--client-hosts k8s:2`: the Indexed Job manifest tidemark writes is
//! valid against the Kubernetes Job schema (strict: no unknown field), and
//! its pods' command works: the test plays the cluster, running the
//! container's command once per completion index with the Secret's values
//! in the environment, against a real PostgreSQL server (target and store).
//! The step then merges both shards exactly.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{PgConnector, pg_url, server_tempdir, start_pg};
use tidemark::db::{Conn, Connector};

#[test]
fn the_job_manifest_is_valid_and_its_pods_run_the_shards() {
    let dir = server_tempdir();
    let pg = start_pg(dir.path(), &[]);
    let opts = pg.connect_options();
    let target = pg_url(&opts);
    let mut admin = PgConnector(opts.clone()).connect().unwrap();
    admin.execute_text("CREATE DATABASE shard_store").unwrap();
    let mut store_opts = opts.clone();
    store_opts.dbname = "shard_store".into();
    let store = pg_url(&store_opts);
    let results = dir.path().join("results");
    let mut args = common::cli_runs::short_run(
        results.to_str().unwrap(),
        "point-query",
        &[&target],
        &[
            "--client-hosts",
            "k8s:2,image=registry.test/tidemark:0.1.0",
            "--threads",
            "2",
            "--store",
            &store,
            "--no-report",
        ],
    );
    let i = args.iter().position(|a| a == "--read-secs").unwrap();
    args[i + 1] = "1".into();
    // No kubectl on this PATH: the manifest is written for the user.
    let run = common::tidemark()
        .args(&args)
        .env("PATH", "/usr/bin:/bin")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let started = Instant::now();
    let file = loop {
        let found = std::fs::read_dir(&results).ok().and_then(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.to_string_lossy().ends_with(".json"))
        });
        if let Some(f) = found {
            break f;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no manifest written"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_millis(200));
    let job: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();

    // Valid against the Job schema, strictly.
    let v = Command::new("kubernetes-validate")
        .args(["--strict", "--no-warn"])
        .arg(&file)
        .output()
        .expect("kubernetes-validate (pip install kubernetes-validate)");
    assert!(
        v.status.success(),
        "{}{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    assert_eq!(job["spec"]["completions"], 2);
    let text = job.to_string();
    assert!(
        !text.contains(opts.password.as_deref().unwrap()),
        "no password in the manifest"
    );

    // The cluster's part: each index runs the container's command.
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let command: Vec<String> = container["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    let bindir = dir.path().join("image-bin");
    std::fs::create_dir(&bindir).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_tidemark"), bindir.join("tidemark")).unwrap();
    let pods: Vec<_> = (0..2)
        .map(|index| {
            let mut c = Command::new(&command[0]);
            c.args(&command[1..])
                .env("PATH", format!("{}:/usr/bin:/bin", bindir.display()))
                .env("JOB_COMPLETION_INDEX", index.to_string());
            for e in container["env"].as_array().unwrap() {
                let key = e["valueFrom"]["secretKeyRef"]["key"].as_str().unwrap();
                let value = match key {
                    "store" => store.clone(),
                    "password" => opts.password.clone().unwrap(),
                    other => panic!("unknown secret key {other}"),
                };
                c.env(e["name"].as_str().unwrap(), value);
            }
            c.stdout(Stdio::null()).spawn().unwrap()
        })
        .collect();
    for mut p in pods {
        assert!(p.wait().unwrap().success(), "a pod failed");
    }
    let o = run.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let mut board = PgConnector(store_opts).connect().unwrap();
    let rows = |conn: &mut dyn Conn, sql: &str| -> Vec<String> {
        conn.query_text(sql)
            .unwrap()
            .into_iter()
            .map(|r| r[0].clone().unwrap_or_default())
            .collect()
    };
    let step_events: u64 = rows(
        board.as_mut(),
        "SELECT events FROM steps ORDER BY id DESC LIMIT 1",
    )[0]
    .parse()
    .unwrap();
    let shard_events: u64 = rows(
        board.as_mut(),
        "SELECT (result_json::json->'counts'->>'events') FROM shard_members \
         WHERE shard_step_id = (SELECT max(id) FROM shard_steps)",
    )
    .iter()
    .map(|e| e.parse::<u64>().unwrap())
    .sum();
    assert!(step_events > 0);
    assert_eq!(step_events, shard_events);
}
