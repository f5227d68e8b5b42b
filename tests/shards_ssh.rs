//! Client shards over SSH (`--client-hosts ssh:…`) on "hosts" made as
//! Linux network namespaces: a bridge namespace, the database server (and
//! the results store on it) in its own namespace, the coordinator in one,
//! and three client hosts each running Debian's OpenSSH server started by
//! the test (own host keys, own authorized_keys, `sshd -D -f cfg`). Only
//! addresses inside these namespaces (10.213.0.0/24) are used. One client
//! host lacks tidemark in its PATH, so the coordinator copies it with scp.
//! A 3-shard sysbench step merges exactly; a shard killed mid-step fails
//! the step and no shard process is left on any host; an unreachable host
//! is a one-line error before any step. Everything is removed at the end,
//! also on failure (the `Lab` guard).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const NS: &str = "tm17s";
const CLIENTS: [&str; 3] = ["10.213.0.11", "10.213.0.12", "10.213.0.13"];
const DB: &str = "10.213.0.2";
/// A client host without tidemark where scp cannot copy (no SFTP server).
const BARE: &str = "10.213.0.14";
/// The database's address on the coordinator-only link.
const DB_PRIVATE: &str = "10.213.1.2";

fn sh(args: &[&str]) -> Output {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn ns(name: &str) -> String {
    format!("{NS}-{name}")
}

/// Everything the test creates; dropping it removes all of it.
struct Lab {
    dir: tempfile::TempDir,
    namespaces: Vec<String>,
    children: Vec<Child>,
    made_run_sshd: bool,
}

impl Drop for Lab {
    fn drop(&mut self) {
        // runuser does not pass signals on to the server: pg_ctl stops it.
        let data = self.path("pgdata");
        if data.join("postmaster.pid").exists() {
            let _ = Command::new("runuser")
                .args(["-u", "postgres", "--", &pg_bin("pg_ctl"), "-D"])
                .arg(&data)
                .args(["-m", "immediate", "-w", "stop"])
                .stdout(Stdio::null())
                .status();
        }
        for c in &mut self.children {
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
        }
        let until = Instant::now() + Duration::from_secs(10);
        for c in &mut self.children {
            while Instant::now() < until && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in self.namespaces.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
        if self.made_run_sshd {
            let _ = std::fs::remove_dir("/run/sshd");
        }
        let _ = std::fs::remove_file(copied());
    }
}

fn copied() -> PathBuf {
    PathBuf::from(format!("/tmp/tidemark-{}", env!("CARGO_PKG_VERSION")))
}

impl Lab {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A namespace `name` on the bridge with address `addr`.
    fn host(&mut self, name: &str, addr: &str) {
        let n = ns(name);
        sh(&["ip", "netns", "add", &n]);
        self.namespaces.push(n.clone());
        let sw = ns("sw");
        let veth = format!("v{name}");
        sh(&[
            "ip", "-n", &sw, "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns",
            &n,
        ]);
        sh(&["ip", "-n", &sw, "link", "set", &veth, "master", "br0", "up"]);
        sh(&[
            "ip",
            "-n",
            &n,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            "eth0",
        ]);
        sh(&["ip", "-n", &n, "link", "set", "eth0", "up"]);
        sh(&["ip", "-n", &n, "link", "set", "lo", "up"]);
    }

    fn spawn_in(&mut self, name: &str, args: &[&str]) {
        let child = Command::new("ip")
            .args(["netns", "exec", &ns(name)])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.children.push(child);
    }

    /// psql in the database's namespace, unaligned rows.
    fn psql(&self, db: &str, sql: &str) -> Vec<Vec<String>> {
        let o = Command::new("ip")
            .args([
                "netns",
                "exec",
                &ns("db"),
                &pg_bin("psql"),
                "-XAt",
                "-F",
                "\t",
            ])
            .args(["-h", DB, "-U", "bench", "-d", db, "-c", sql])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    }

    /// tidemark in the coordinator's namespace with the test's ssh config.
    fn tidemark(&self, args: &[String]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &ns("co"), env!("CARGO_BIN_EXE_tidemark")])
            .args(args)
            .env("TIDEMARK_SSH_CONFIG", self.path("ssh_config"));
        c
    }
}

fn pg_bin(name: &str) -> String {
    let bins = tidemark::server::postgres::find_bindir(None).expect("PostgreSQL binaries");
    bins.bindir.join(name).to_str().unwrap().to_string()
}

fn build_lab() -> Lab {
    for n in
        std::iter::once("sw".to_string()).chain(["db", "co", "c0", "c1", "c2"].map(String::from))
    {
        let _ = Command::new("ip")
            .args(["netns", "del", &ns(&n)])
            .stderr(Stdio::null())
            .status();
    }
    let _ = std::fs::remove_file(copied());
    let mut lab = Lab {
        dir: common::server_tempdir(),
        namespaces: Vec::new(),
        children: Vec::new(),
        made_run_sshd: false,
    };
    let sw = ns("sw");
    sh(&["ip", "netns", "add", &sw]);
    lab.namespaces.push(sw.clone());
    sh(&["ip", "-n", &sw, "link", "add", "br0", "type", "bridge"]);
    sh(&["ip", "-n", &sw, "link", "set", "br0", "up"]);
    lab.host("db", DB);
    lab.host("co", "10.213.0.3");
    for (i, addr) in CLIENTS.iter().chain([&BARE]).enumerate() {
        lab.host(&format!("c{i}"), addr);
    }
    // A second link between the coordinator and the database only: an
    // address of the store the client hosts have no route to.
    sh(&[
        "ip",
        "-n",
        &ns("co"),
        "link",
        "add",
        "eth1",
        "type",
        "veth",
        "peer",
        "name",
        "eth1",
        "netns",
        &ns("db"),
    ]);
    for (n, addr) in [("co", "10.213.1.3/24"), ("db", "10.213.1.2/24")] {
        sh(&["ip", "-n", &ns(n), "addr", "add", addr, "dev", "eth1"]);
        sh(&["ip", "-n", &ns(n), "link", "set", "eth1", "up"]);
    }

    // PostgreSQL in the db namespace, trusting the lab's network.
    let data = lab.path("pgdata");
    let dir = lab.dir.path().to_str().unwrap().to_string();
    sh(&["chown", "postgres", &dir]);
    sh(&[
        "runuser",
        "-u",
        "postgres",
        "--",
        &pg_bin("initdb"),
        "-D",
        data.to_str().unwrap(),
        "-A",
        "trust",
        "-U",
        "bench",
    ]);
    let hba = data.join("pg_hba.conf");
    let mut text = std::fs::read_to_string(&hba).unwrap();
    text.push_str("host all all 10.213.0.0/24 trust\nhost all all 10.213.1.0/24 trust\n");
    std::fs::write(&hba, text).unwrap();
    lab.spawn_in(
        "db",
        &[
            "runuser",
            "-u",
            "postgres",
            "--",
            &pg_bin("postgres"),
            "-D",
            data.to_str().unwrap(),
            "-p",
            "5432",
            "-k",
            &dir,
            "-c",
            &format!("listen_addresses={DB},{DB_PRIVATE}"),
            "-c",
            "max_connections=60",
        ],
    );
    let started = Instant::now();
    while !Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns("db"),
            &pg_bin("pg_isready"),
            "-q",
            "-h",
            DB,
        ])
        .status()
        .unwrap()
        .success()
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "PostgreSQL did not start"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    lab.psql("postgres", "CREATE DATABASE bench");
    lab.psql("postgres", "CREATE DATABASE store");

    // Keys, the sshd of each client host, the coordinator's ssh config.
    let key = lab.path("id");
    sh(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-f",
        key.to_str().unwrap(),
    ]);
    std::fs::copy(lab.path("id.pub"), lab.path("authorized_keys")).unwrap();
    if !Path::new("/run/sshd").exists() {
        std::fs::create_dir("/run/sshd").unwrap();
        lab.made_run_sshd = true;
    }
    let bindir = lab.path("bin");
    std::fs::create_dir(&bindir).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_tidemark"), bindir.join("tidemark")).unwrap();
    for (i, addr) in CLIENTS.iter().chain([&BARE]).enumerate() {
        let hostkey = lab.path(&format!("hostkey{i}"));
        sh(&[
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-f",
            hostkey.to_str().unwrap(),
        ]);
        // Client hosts 0 and 3 have no tidemark in their PATH: 0 gets a
        // copy; 3 has no SFTP server, so the copy fails there.
        let path = if i == 0 || i == 3 {
            "/usr/bin:/bin".to_string()
        } else {
            format!("{}:/usr/bin:/bin", bindir.display())
        };
        let cfg = lab.path(&format!("sshd{i}.conf"));
        std::fs::write(
            &cfg,
            format!(
                "Port 22\nListenAddress {addr}\nHostKey {}\nAuthorizedKeysFile {}\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 PidFile {}\nSetEnv PATH={path}\n{}",
                hostkey.display(),
                lab.path("authorized_keys").display(),
                lab.path(&format!("sshd{i}.pid")).display(),
                if i == 3 {
                    ""
                } else {
                    "Subsystem sftp /usr/lib/openssh/sftp-server\n"
                },
            ),
        )
        .unwrap();
        lab.spawn_in(
            &format!("c{i}"),
            &["/usr/sbin/sshd", "-D", "-e", "-f", cfg.to_str().unwrap()],
        );
    }
    std::fs::write(
        lab.path("ssh_config"),
        format!(
            "Host *\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  \
             StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
            key.display()
        ),
    )
    .unwrap();
    // Wait for each sshd to answer.
    for addr in CLIENTS.into_iter().chain([BARE]) {
        let started = Instant::now();
        loop {
            let o = Command::new("ip")
                .args(["netns", "exec", &ns("co"), "ssh", "-F"])
                .arg(lab.path("ssh_config"))
                .args(["-o", "BatchMode=yes", addr, "true"])
                .stderr(Stdio::null())
                .status()
                .unwrap();
            if o.success() {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "sshd on {addr} did not answer"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    lab
}

fn run_args(lab: &Lab, hosts: &str, secs: &str) -> Vec<String> {
    run_args_on(lab, hosts, secs, DB)
}

/// [`run_args`] with the store at address `store_at`.
fn run_args_on(lab: &Lab, hosts: &str, secs: &str, store_at: &str) -> Vec<String> {
    let mut args = common::cli_runs::short_run(
        lab.path("results").to_str().unwrap(),
        "point-query",
        &[&format!("postgres://bench@{DB}:5432/bench")],
        &[
            "--client-hosts",
            hosts,
            "--threads",
            "3",
            "--store",
            &format!("postgres://bench@{store_at}:5432/store"),
            "--no-report",
        ],
    );
    let i = args.iter().position(|a| a == "--read-secs").unwrap();
    args[i + 1] = secs.to_string();
    args
}

/// Pids of `tidemark shard` processes of any host (one kernel, one /proc).
fn shard_processes() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains(" shard --step ") && cmd.contains("--lifeline")
        })
        .collect()
}

#[test]
fn three_ssh_shards_in_network_namespaces() {
    let lab = build_lab();
    let hosts = format!("ssh:{}", CLIENTS.join(","));

    // Bad input, each one line before any step: a host without this
    // tidemark where it cannot be copied, a store a shard host cannot
    // reach, an unreachable host.
    let one_line = |args: Vec<String>, want: &str| {
        let o = lab.tidemark(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(err.contains(want), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    };
    one_line(
        run_args(&lab, &format!("ssh:{BARE}"), "1"),
        &format!(
            "{BARE} has no tidemark {} and copying it there failed",
            env!("CARGO_PKG_VERSION")
        ),
    );
    one_line(
        run_args_on(&lab, "ssh:10.213.0.12", "1", DB_PRIVATE),
        "10.213.0.12 cannot reach the store postgres://bench@10.213.1.2:5432/store",
    );
    // An unreachable host: one line before any step.
    let o = lab
        .tidemark(&run_args(
            &lab,
            "ssh:10.213.0.11,10.213.0.99,10.213.0.13",
            "1",
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("cannot reach 10.213.0.99 over ssh"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let tables = lab.psql(
        "store",
        "SELECT count(*) FROM pg_tables WHERE tablename = 'steps'",
    );
    assert_eq!(
        tables[0][0], "0",
        "nothing stored, not even the schema, before the check"
    );

    // Three shards, one per client host (host 0 gets a copy of tidemark).
    let o = lab.tidemark(&run_args(&lab, &hosts, "2")).output().unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        copied().exists(),
        "the binary was copied to the host that lacked it"
    );
    let step = &lab.psql(
        "store",
        "SELECT id, events, statements, status FROM steps ORDER BY id DESC LIMIT 1",
    )[0];
    assert_eq!(step[3], "ok");
    let members = lab.psql(
        "store",
        "SELECT shard, host, start_lag_ms, (result_json::json->'counts'->>'events') FROM shard_members \
         WHERE shard_step_id = (SELECT max(id) FROM shard_steps) ORDER BY shard",
    );
    assert_eq!(members.len(), 3);
    let events: u64 = members.iter().map(|m| m[3].parse::<u64>().unwrap()).sum();
    assert_eq!(step[1].parse::<u64>().unwrap(), events);
    for m in &members {
        let lag: f64 = m[2].parse().unwrap();
        assert!(lag.abs() < 250.0, "shard {} lag {lag} ms", m[0]);
    }

    // A 2-shard Insert Benchmark over ssh: one client (table) per host.
    let mut ib = common::ibench_checks::small_run(
        lab.path("results").to_str().unwrap(),
        &[&format!("postgres://bench@{DB}:5432/bench")],
        "1",
    );
    ib.extend(
        [
            "--client-hosts",
            &format!("ssh:{},{}", CLIENTS[1], CLIENTS[2]),
            "--store",
            &format!("postgres://bench@{DB}:5432/store"),
            "--no-report",
        ]
        .map(String::from),
    );
    let o = lab.tidemark(&ib).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let steps = lab.psql(
        "store",
        "SELECT s.name, s.status, s.events, (SELECT sum((m.result_json::json->'counts'->>'events')::bigint) \
         FROM shard_members m WHERE m.shard_step_id = b.id), (SELECT count(*) FROM shard_members m \
         WHERE m.shard_step_id = b.id) FROM steps s JOIN targets t ON t.id = s.target_id \
         JOIN shard_steps b ON b.spec_json LIKE '%\"step\":\"' || s.name || '\"%' \
         WHERE t.run_id = (SELECT max(id) FROM runs) ORDER BY s.id",
    );
    let names: Vec<&str> = steps.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100"]);
    for r in &steps {
        assert_eq!(r[1], "ok", "{r:?}");
        assert_eq!(
            r[2], r[3],
            "{}: the step's events are its shards' sum",
            r[0]
        );
        assert_eq!(r[4], "2", "{r:?}");
    }

    // A shard killed mid-step: failed step, no shard process anywhere.
    let run = lab
        .tidemark(&run_args(&lab, &hosts, "20"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let pids: Vec<i32> = loop {
        let running = lab.psql(
            "store",
            "SELECT pid FROM shard_members WHERE shard_step_id = (SELECT max(id) FROM shard_steps) \
             AND state = 'running' ORDER BY shard",
        );
        if running.len() == 3 {
            break running.iter().map(|r| r[0].parse().unwrap()).collect();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "shards never ran"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    std::thread::sleep(Duration::from_secs(1));
    unsafe { libc::kill(pids[2], libc::SIGKILL) };
    let out = run.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("shard 2 of 3"), "{text}");
    let last = &lab.psql(
        "store",
        "SELECT status, events FROM steps ORDER BY id DESC LIMIT 1",
    )[0];
    assert_eq!(last[0], "failed");
    assert_eq!(last[1], "0");
    let waited = Instant::now();
    while !shard_processes().is_empty() && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        shard_processes().is_empty(),
        "shard processes left: {:?}",
        shard_processes()
    );
}
