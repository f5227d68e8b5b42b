//! `--client-hosts`: where a step's clients run when one host cannot
//! drive the server, split into shards that start together and are
//! merged exactly. This file holds the grammar, the checks made before any
//! server starts, and the deterministic split of a step's threads; the
//! shards themselves are run by `orchestrate::shards`.

use super::target::TargetSpec;
use crate::workload::ibench::IbenchParams;
use crate::workload::sysbench::{SysbenchParams, TestDef};

/// Where the shards of each step run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientHosts {
    /// `local:N`: N `tidemark shard` processes on this host.
    Local(u32),
    /// `ssh:host1,host2`: one shard per host, over OpenSSH.
    Ssh(Vec<String>),
    /// `k8s:N[,image=IMAGE]`: a Kubernetes Indexed Job of N pods, its
    /// manifest written into the results directory `dir`.
    K8s {
        shards: u32,
        image: String,
        dir: std::path::PathBuf,
    },
}

/// The most shards a step may have.
pub const MAX_SHARDS: u32 = 256;

impl ClientHosts {
    /// Parses `local:N`.
    pub fn parse(text: &str) -> Result<ClientHosts, String> {
        let (engine, rest) = text.split_once(':').unwrap_or((text, ""));
        match engine {
            "local" => match rest.parse::<u32>() {
                Ok(n) if (1..=MAX_SHARDS).contains(&n) => Ok(ClientHosts::Local(n)),
                _ => Err(format!(
                    "--client-hosts {text}: local:N takes a shard count from 1 to {MAX_SHARDS}, e.g. local:3"
                )),
            },
            "ssh" => {
                let hosts: Vec<String> = rest.split(',').map(|h| h.trim().to_string()).collect();
                let ok = |h: &String| {
                    !h.is_empty()
                        && !h.starts_with('-')
                        && h.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "@._:-[]".contains(c))
                };
                if hosts.iter().all(ok) && hosts.len() as u32 <= MAX_SHARDS {
                    Ok(ClientHosts::Ssh(hosts))
                } else {
                    Err(format!(
                        "--client-hosts {text}: ssh: takes host names (as ssh takes them, user@host allowed) separated by commas, e.g. ssh:bench1,bench2"
                    ))
                }
            }
            "k8s" => {
                let (count, image) = match rest.split_once(",image=") {
                    Some((n, img)) => (n, img.to_string()),
                    None => (rest, format!("tidemark:{}", env!("CARGO_PKG_VERSION"))),
                };
                match count.parse::<u32>() {
                    Ok(n) if (1..=MAX_SHARDS).contains(&n) && !image.trim().is_empty() => {
                        Ok(ClientHosts::K8s {
                            shards: n,
                            image,
                            dir: std::path::PathBuf::new(),
                        })
                    }
                    _ => Err(format!(
                        "--client-hosts {text}: k8s:N[,image=IMAGE] takes a shard count from 1 to {MAX_SHARDS}, e.g. k8s:4,image=registry/tidemark:{}",
                        env!("CARGO_PKG_VERSION")
                    )),
                }
            }
            _ => Err(format!(
                "--client-hosts {text}: unknown engine '{engine}'{}: use local:N, ssh:HOST,HOST… or k8s:N, e.g. local:3 or ssh:bench1,bench2",
                crate::util::suggest::did_you_mean(engine, ["local", "ssh", "k8s"])
            )),
        }
    }

    /// How many shards each step is split into.
    pub fn count(&self) -> u32 {
        match self {
            ClientHosts::Local(n) => *n,
            ClientHosts::Ssh(hosts) => hosts.len() as u32,
            ClientHosts::K8s { shards, .. } => *shards,
        }
    }

    /// The host name a shard runs on, for the board and the export.
    pub fn host(&self, shard: u32) -> String {
        match self {
            ClientHosts::Local(_) => "local".to_string(),
            ClientHosts::Ssh(hosts) => hosts[shard as usize].clone(),
            ClientHosts::K8s { .. } => format!("pod {shard}"),
        }
    }
}

/// Shard `shard` of `shards`' part of a step of `threads` clients: the
/// first global client index and how many. The first `threads % shards`
/// shards take one client more; the parts are disjoint and cover all.
pub fn share(threads: u32, shards: u32, shard: u32) -> (u32, u32) {
    let base = threads / shards;
    let extra = threads % shards;
    let count = base + u32::from(shard < extra);
    let first = shard * base + shard.min(extra);
    (first, count)
}

/// `--client-hosts` as given (`None`: not given), parsed and checked
/// against the rest of the plan: the store, the targets, and each step's
/// clients (sysbench threads, or the Insert Benchmark's clients).
pub fn from_plan(
    text: Option<&str>,
    results_dir: &std::path::Path,
    store: Option<&str>,
    targets: &[super::TargetPlan],
    suite: super::Suite,
    (sysbench, tests): (&SysbenchParams, &[TestDef]),
    ibench: &IbenchParams,
) -> Result<Option<ClientHosts>, String> {
    let Some(text) = text else {
        return Ok(None);
    };
    let mut hosts = ClientHosts::parse(text)?;
    if suite.runs(crate::record::SuiteName::WorkloadFile) {
        return Err(format!(
            "--client-hosts {text}: shards split the sysbench suite and the Insert Benchmark; a workload file runs its clients from this host: drop --client-hosts"
        ));
    }
    if let ClientHosts::K8s { dir, .. } = &mut hosts {
        *dir = results_dir.to_path_buf();
    }
    let per_table = tests.iter().any(|t| t.threads_per_table);
    let min_threads = if suite.runs_sysbench() {
        let counts = sysbench.threads.counts().iter().copied();
        counts
            .chain(per_table.then_some(sysbench.tables))
            .min()
            .unwrap_or(1)
    } else {
        u32::MAX
    };
    let specs: Vec<(&TargetSpec, &str)> = targets
        .iter()
        .map(|t| (&t.spec, t.spec_text.as_str()))
        .collect();
    let ib = suite
        .runs_ibench()
        .then_some((ibench.clients, ibench.one_table));
    check(&hosts, store, &specs, ib, min_threads)?;
    Ok(Some(hosts))
}

/// The checks of `--client-hosts` against the rest of the plan, before any
/// server starts: shards meet in a PostgreSQL store, reach an external
/// PostgreSQL target by URL, and each gets a client. `ibench` is the
/// Insert Benchmark's clients and whether they share one table, when the
/// suite runs it.
pub fn check(
    hosts: &ClientHosts,
    store: Option<&str>,
    targets: &[(&TargetSpec, &str)],
    ibench: Option<(u32, bool)>,
    min_threads: u32,
) -> Result<(), String> {
    let n = hosts.count();
    match store {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {}
        _ => {
            return Err(
                "--client-hosts needs a shared PostgreSQL store the shards coordinate through: pass --store postgres://…"
                    .into(),
            );
        }
    }
    if let Some((_, typed)) = targets
        .iter()
        .find(|(spec, _)| !matches!(spec, TargetSpec::ExternalPostgres { .. }))
    {
        return Err(format!(
            "--client-hosts: target {} is not a postgres:// URL; shards reach only external PostgreSQL targets so far (start the server yourself and pass its URL)",
            crate::util::redact::redact_url_passwords(typed)
        ));
    }
    match ibench {
        Some((_, true)) => {
            return Err(
                "--client-hosts: the Insert Benchmark's clients share one table here, which shards cannot split: drop the one-table setting"
                    .into(),
            );
        }
        Some((clients, _)) if clients < n => {
            return Err(format!(
                "--client-hosts splits the Insert Benchmark's clients over {n} shards but it has only {clients}: pass more clients or fewer shards"
            ));
        }
        _ => {}
    }
    if min_threads < n {
        return Err(format!(
            "--client-hosts splits each step's clients over {n} shards but a step has only {min_threads}: pass --threads {n} or more"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_disjoint_and_cover_every_client() {
        for threads in 1..40 {
            for shards in 1..=threads.min(7) {
                let mut next = 0;
                for s in 0..shards {
                    let (first, count) = share(threads, shards, s);
                    assert_eq!(first, next, "{threads} over {shards}");
                    assert!(count >= threads / shards && count <= threads / shards + 1);
                    next += count;
                }
                assert_eq!(next, threads);
            }
        }
    }

    #[test]
    fn grammar() {
        assert_eq!(ClientHosts::parse("local:3"), Ok(ClientHosts::Local(3)));
        assert_eq!(
            ClientHosts::parse("ssh:a,root@10.0.0.2"),
            Ok(ClientHosts::Ssh(vec!["a".into(), "root@10.0.0.2".into()]))
        );
        for bad in [
            "local:0",
            "local:x",
            "local",
            "ftp:a",
            "local:999",
            "ssh:",
            "ssh:a,-oX",
            "ssh:a b",
        ] {
            let e = ClientHosts::parse(bad).unwrap_err();
            assert!(e.contains("--client-hosts") && !e.contains('\n'), "{e}");
        }
        // An unknown kind names all three, and the likely one.
        let e = ClientHosts::parse("sssh:bench1").unwrap_err();
        assert!(
            e.contains("unknown engine 'sssh' (did you mean 'ssh'?): use local:N, ssh:"),
            "{e}"
        );
        assert!(e.contains("k8s:N"), "{e}");
    }

    #[test]
    fn needs_a_postgres_store_and_url_targets() {
        let hosts = ClientHosts::Local(2);
        let pg_spec = TargetSpec::ExternalPostgres {
            url: "postgres://u:secret@h/db".into(),
        };
        let pg = [(&pg_spec, "postgres://u:secret@h/db")];
        let store = Some("postgres://s@h/db");
        assert!(check(&hosts, store, &pg, None, 4).is_ok());
        assert!(check(&hosts, store, &pg, Some((2, false)), 4).is_ok());
        let e = check(&hosts, None, &pg, None, 4).unwrap_err();
        assert!(e.contains("--store postgres://"), "{e}");
        let e = check(&hosts, store, &pg, None, 1).unwrap_err();
        assert!(e.contains("--threads 2"), "{e}");
        let e = check(&hosts, store, &pg, Some((1, false)), 4).unwrap_err();
        assert!(e.contains("only 1"), "{e}");
        let e = check(&hosts, store, &pg, Some((4, true)), 4).unwrap_err();
        assert!(e.contains("one table"), "{e}");
        let my_spec = TargetSpec::ExternalMysql {
            url: "mysql://u:secret@h/db".into(),
        };
        let e = check(
            &hosts,
            store,
            &[(&my_spec, "mysql://u:secret@h/db")],
            None,
            4,
        )
        .unwrap_err();
        assert!(!e.contains("secret"), "{e}");
        // A managed target is named as the user typed it, not as a Rust value.
        let managed = TargetSpec::parse("pg@system").unwrap();
        let e = check(&hosts, store, &[(&managed, "pg@system")], None, 4).unwrap_err();
        assert!(
            e.starts_with("--client-hosts: target pg@system is not"),
            "{e}"
        );
    }
}
