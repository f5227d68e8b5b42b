//! The processes that run a sharded step's shards: `tidemark shard`
//! itself (`local:N`), the ssh client that runs it on a host (`ssh:`), or
//! none (`k8s:`, whose Job runs them). Dropping the set kills and reaps
//! whatever still runs, so no shard outlives its step.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use anyhow::Context;

use super::{K8S_READY_TIMEOUT, PASSWORD_ENV};
use crate::plan::client_hosts::ClientHosts;
use crate::store::shards::ShardMember;

/// The shard processes: `tidemark shard` itself (`local:N`) or the ssh
/// client that runs it on a host (`ssh:`). Dropping it kills and reaps any
/// still running; each also dies with the coordinator
/// (`PR_SET_PDEATHSIG`), and a remote shard ends when its ssh does, so
/// none outlives the run.
pub(super) struct ShardProcesses {
    children: Vec<Option<Child>>,
    stderr: Vec<Option<std::thread::JoinHandle<String>>>,
    /// The ssh shards' inputs, held open while they run.
    stdin: Vec<std::process::ChildStdin>,
    /// `k8s:`: the sharded step whose Job runs the shards.
    job: Option<i64>,
}

impl ShardProcesses {
    pub(super) fn launch(
        hosts: &ClientHosts,
        store_url: &str,
        id: i64,
        password: Option<&str>,
    ) -> anyhow::Result<ShardProcesses> {
        let exe = std::env::current_exe().context("finding tidemark's own binary")?;
        let mut me = ShardProcesses {
            children: Vec::new(),
            stderr: Vec::new(),
            stdin: Vec::new(),
            job: None,
        };
        if let ClientHosts::K8s { shards, image, dir } = hosts {
            let (file, applied) = super::k8s::launch(dir, image, id, *shards)?;
            if !applied {
                eprintln!(
                    "tidemark: apply {} (kubectl apply -f) within {} s; its pods read Secret {}",
                    file.display(),
                    K8S_READY_TIMEOUT.as_secs(),
                    super::k8s::SECRET
                );
            }
            me.job = Some(id);
            return Ok(me);
        }
        for shard in 0..hosts.count() {
            let mut cmd = match hosts {
                ClientHosts::Local(_) => {
                    let mut cmd = Command::new(&exe);
                    cmd.args(["shard", "--step", &id.to_string(), "--shard"])
                        .arg(shard.to_string())
                        .env("TIDEMARK_STORE", store_url)
                        .stdin(Stdio::null());
                    match password {
                        Some(p) => cmd.env(PASSWORD_ENV, p),
                        None => cmd.env_remove(PASSWORD_ENV),
                    };
                    cmd
                }
                ClientHosts::K8s { .. } => unreachable!("a Job has no local processes"),
                ClientHosts::Ssh(names) => {
                    let mut cmd = super::ssh::shard_command(
                        &names[shard as usize],
                        shard as usize,
                        id,
                        shard,
                    );
                    cmd.stdin(Stdio::piped());
                    cmd
                }
            };
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
            // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let mut child = cmd.spawn().context("starting a shard process")?;
            if let Some(mut input) = child.stdin.take() {
                // The secrets on the shard's input, which stays open: the
                // shard ends when it closes (this process or ssh gone).
                use std::io::Write;
                let secrets = format!("{store_url}\n{}\n", password.unwrap_or_default());
                input
                    .write_all(secrets.as_bytes())
                    .context("handing a shard its store")?;
                me.stdin.push(input);
            }
            let mut err = child.stderr.take().expect("stderr is piped");
            me.stderr.push(Some(std::thread::spawn(move || {
                let mut text = String::new();
                let _ = err.read_to_string(&mut text);
                text
            })));
            me.children.push(Some(child));
        }
        Ok(me)
    }

    /// The first shard whose process ended without leaving a result, and
    /// how it ended (its last line of error output).
    pub(super) fn ended_early(&mut self, members: &[ShardMember]) -> Option<(u32, String)> {
        for (i, slot) in self.children.iter_mut().enumerate() {
            let Some(child) = slot else { continue };
            let Ok(Some(status)) = child.try_wait() else {
                continue;
            };
            *slot = None;
            let finished = members
                .iter()
                .any(|m| m.shard == i as u32 && m.state == "done");
            if finished {
                continue;
            }
            let said = self.stderr[i]
                .take()
                .and_then(|h| h.join().ok())
                .and_then(|t| t.lines().last().map(str::to_string))
                .unwrap_or_default();
            let why = if said.is_empty() {
                format!("ended ({status}) before it finished")
            } else {
                format!("ended ({status}) before it finished: {said}")
            };
            return Some((i as u32, why));
        }
        None
    }

    /// Waits for every shard process to exit (they have written their
    /// results and are closing).
    pub(super) fn reap(&mut self) {
        for child in self.children.iter_mut().filter_map(Option::take) {
            let mut child = child;
            let _ = child.wait();
        }
    }

    /// Kills and reaps every shard still running (deletes the Job).
    pub(super) fn stop(&mut self) {
        if let Some(id) = self.job.take() {
            super::k8s::delete(id);
        }
        for child in self.children.iter_mut().filter_map(Option::take) {
            let mut child = child;
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ShardProcesses {
    fn drop(&mut self) {
        self.stop();
    }
}
