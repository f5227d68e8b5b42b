//! `--client-hosts ssh:host1,host2`: shards launched over OpenSSH with the
//! user's own keys and configuration (`TIDEMARK_SSH_CONFIG` names another
//! config file, passed to ssh and scp as `-F`). Before any step each host
//! must answer without a prompt and have this tidemark version, in `PATH`
//! or in `/tmp/tidemark-VERSION`, where it is copied with scp when
//! missing. A shard reads the store URL and the target password from its
//! standard input (never a command line) and exits when that input closes,
//! so a coordinator that dies leaves no shard running on any host.

use std::process::{Command, Stdio};
use std::sync::OnceLock;

use anyhow::{anyhow, bail};

/// This build's version as `tidemark --version` prints it.
fn wanted() -> String {
    format!("tidemark {}", env!("CARGO_PKG_VERSION"))
}

/// Where a copied binary goes on a host.
fn copied_path() -> String {
    format!("/tmp/tidemark-{}", env!("CARGO_PKG_VERSION"))
}

/// The binary to run on each host, found by [`prepare`].
static BINARIES: OnceLock<Vec<String>> = OnceLock::new();

/// An ssh or scp command with the user's config (or
/// `TIDEMARK_SSH_CONFIG`), never prompting.
pub fn command(program: &str) -> Command {
    let mut c = Command::new(program);
    if let Ok(f) = std::env::var("TIDEMARK_SSH_CONFIG") {
        c.arg("-F").arg(f);
    }
    c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]);
    c
}

/// The last line ssh or scp wrote to stderr, for a one-line error.
fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim()
        .to_string()
}

/// The tidemark on `host` that is this version: `tidemark` in its `PATH`,
/// or the copy in [`copied_path`]; `None` if neither is.
fn find(host: &str) -> anyhow::Result<Option<String>> {
    let copy = copied_path();
    let probe = format!(
        "tidemark --version 2>/dev/null || echo; {copy} --version 2>/dev/null || echo; true"
    );
    let out = command("ssh")
        .arg(host)
        .arg("--")
        .arg(probe)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| anyhow!("--client-hosts: cannot run ssh: {e}: install OpenSSH's client"))?;
    if !out.status.success() {
        bail!(
            "--client-hosts: cannot reach {host} over ssh ({}): check the host name and that your keys log you in without a prompt",
            last_line(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    Ok(if lines.first() == Some(&wanted().as_str()) {
        Some("tidemark".to_string())
    } else if lines.get(1) == Some(&wanted().as_str()) {
        Some(copy)
    } else {
        None
    })
}

/// Checks every host before any step (reachable, this tidemark there or
/// copied there, the store at `store_url` reachable from it) and
/// remembers which binary each runs.
pub fn prepare(hosts: &[String], store_url: &str) -> anyhow::Result<()> {
    let mut bins = Vec::with_capacity(hosts.len());
    for host in hosts {
        let bin = match find(host)? {
            Some(b) => b,
            None => {
                let exe = std::env::current_exe()?;
                let target = format!("{host}:{}", copied_path());
                let out = command("scp")
                    .arg("-q")
                    .arg(&exe)
                    .arg(&target)
                    .stdin(Stdio::null())
                    .output()?;
                let found = if out.status.success() {
                    find(host)?
                } else {
                    None
                };
                found.ok_or_else(|| {
                    anyhow!(
                        "--client-hosts: {host} has no {} and copying it there failed ({}): install this tidemark version on {host}",
                        wanted(),
                        if out.status.success() {
                            "the copy does not run there".to_string()
                        } else {
                            last_line(&out.stderr)
                        }
                    )
                })?
            }
        };
        reaches_store(host, &bin, store_url)?;
        bins.push(bin);
    }
    let _ = BINARIES.set(bins);
    Ok(())
}

/// Fails unless `host` (running `bin`) reaches the store: a shard that
/// could not would only fail once the step began.
fn reaches_store(host: &str, bin: &str, store_url: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut child = command("ssh")
        .arg(host)
        .arg("--")
        .arg(format!(
            "IFS= read -r TIDEMARK_STORE && export TIDEMARK_STORE && exec {bin} shard --check-store"
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(format!("{store_url}\n").as_bytes());
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        let said = last_line(&out.stderr);
        let said = said.strip_prefix("tidemark: ").unwrap_or(&said);
        bail!(
            "--client-hosts: {host} {said}: give --store an address every shard host reaches (not localhost)"
        );
    }
    Ok(())
}

/// The ssh command that runs shard `shard` of step `id` on `host`; its
/// standard input must carry the store URL and the target password, one
/// line each, and stay open while the shard runs.
pub fn shard_command(host: &str, index: usize, id: i64, shard: u32) -> Command {
    let bin = BINARIES
        .get()
        .and_then(|b| b.get(index).cloned())
        .unwrap_or_else(|| "tidemark".to_string());
    let pw = super::PASSWORD_ENV;
    let script = format!(
        "IFS= read -r TIDEMARK_STORE && IFS= read -r {pw} && export TIDEMARK_STORE {pw} && \
         exec {bin} shard --step {id} --shard {shard} --lifeline"
    );
    let mut c = command("ssh");
    c.arg(host).arg("--").arg(script);
    c
}
