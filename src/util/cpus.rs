//! CPU placement (`--server-cpus`, `--client-cpus`): which CPUs the managed
//! servers and tidemark's own client threads may run on, so that on a small
//! machine the server and the load generator do not take turns on the same
//! cores at random.
//!
//! The client set applies to the whole tidemark process (every thread it
//! starts afterwards inherits it); the server set is applied to each server
//! between fork and exec, so the server and every process it forks inherit
//! it. A server started with no server set gets the CPUs tidemark had
//! before any placement, never the client set.

use std::sync::Mutex;

/// The placement in force: (server CPUs, CPUs the process had at first use).
static PLACEMENT: Mutex<Option<Placement>> = Mutex::new(None);

#[derive(Clone, Copy)]
struct Placement {
    server: Option<libc::cpu_set_t>,
    /// Where the client threads went (`None`: left where they were).
    client: Option<libc::cpu_set_t>,
    original: libc::cpu_set_t,
}

/// Parses a CPU list as `taskset -c` writes it (`0`, `0,2`, `1-3,6`), or
/// `all` (every CPU this process may use), and checks every CPU against
/// those this process may use. One-line errors
/// name the option `what`.
pub fn parse_cpu_list(text: &str, what: &str) -> Result<Vec<usize>, String> {
    let usable = usable_cpus();
    if text.trim() == "all" {
        return Ok(usable);
    }
    let err = |detail: String| {
        format!(
            "{what} {text:?}: {detail}; give CPU numbers or ranges, e.g. 0 or 0-1,3, or all (usable here: {})",
            format_list(&usable)
        )
    };
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = match (a.trim().parse(), b.trim().parse()) {
            (Ok(a), Ok(b)) if a <= b => (a, b),
            _ => return Err(err(format!("{part:?} is not a CPU or a range"))),
        };
        for cpu in a..=b {
            if !usable.contains(&cpu) {
                return Err(err(format!("CPU {cpu} is not usable by this process")));
            }
            if !out.contains(&cpu) {
                out.push(cpu);
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Of `cpus`, the one that was least busy over the next 100 ms (`/proc/stat`),
/// the last of equals; `None` for no CPUs. Without `/proc/stat`, the last.
pub fn least_busy(cpus: &[usize]) -> Option<usize> {
    let busy = |text: &str| -> Vec<(usize, u64)> {
        text.lines()
            .filter_map(|l| {
                let mut words = l.split_ascii_whitespace();
                let cpu: usize = words.next()?.strip_prefix("cpu")?.parse().ok()?;
                let ticks: Vec<u64> = words.filter_map(|w| w.parse().ok()).collect();
                // user nice system idle iowait …: busy is all but idle and iowait.
                let total: u64 = ticks.iter().sum();
                let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
                Some((cpu, total - idle.min(total)))
            })
            .collect()
    };
    let before = std::fs::read_to_string("/proc/stat").map(|t| busy(&t));
    std::thread::sleep(std::time::Duration::from_millis(100));
    let after = std::fs::read_to_string("/proc/stat").map(|t| busy(&t));
    let used = |cpu: usize| -> u64 {
        match (&before, &after) {
            (Ok(b), Ok(a)) => {
                let get = |v: &[(usize, u64)]| v.iter().find(|(c, _)| *c == cpu).map_or(0, |x| x.1);
                get(a).saturating_sub(get(b))
            }
            _ => 0,
        }
    };
    cpus.iter().rev().min_by_key(|&&c| used(c)).copied()
}

/// `0-1,3` for [0, 1, 3].
pub fn format_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The CPUs this process may run on now.
pub fn usable_cpus() -> Vec<usize> {
    cpus_in(&current_set())
}

/// The CPUs in `set`, in order.
fn cpus_in(set: &libc::cpu_set_t) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

fn current_set() -> libc::cpu_set_t {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        set
    }
}

fn set_of(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: as in `current_set`; CPU_SET stays within CPU_SETSIZE, which
    // parse_cpu_list's usable CPUs are.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        set
    }
}

/// Places servers started from now on on `server` and this process (and
/// the client threads it starts) on `client`; `None` leaves each as it is.
pub fn place(server: Option<&[usize]>, client: Option<&[usize]>) -> std::io::Result<()> {
    let mut placement = PLACEMENT.lock().unwrap_or_else(|p| p.into_inner());
    let original = placement.map_or_else(current_set, |p| p.original);
    *placement = Some(Placement {
        server: server.map(set_of),
        client: client.map(set_of),
        original,
    });
    if let Some(cpus) = client {
        let set = set_of(cpus);
        // SAFETY: a valid set of the right size for this process.
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU set a server started now must get, if placement is in force:
/// the server set, or the CPUs tidemark had before placing its clients.
pub fn server_set() -> Option<libc::cpu_set_t> {
    let placement = PLACEMENT.lock().unwrap_or_else(|p| p.into_inner());
    placement.map(|p| p.server.unwrap_or(p.original))
}

/// Moves the calling thread off the CPUs the servers and clients were
/// placed on, onto the others tidemark had, when there are any: a
/// sampler that reads the counters there neither takes CPU from what it
/// measures nor waits behind it for its turn (a late reading shifts a
/// second's server CPU against its statements). Leaves the thread where
/// it is when nothing is placed or no CPU is spare.
pub fn leave_placed_cpus() {
    let placement = *PLACEMENT.lock().unwrap_or_else(|p| p.into_inner());
    let Some(p) = placement else { return };
    if p.client.is_none() && p.server.is_none() {
        return;
    }
    let placed: Vec<usize> = [p.client, p.server]
        .iter()
        .flatten()
        .flat_map(cpus_in)
        .collect();
    let spare: Vec<usize> = cpus_in(&p.original)
        .into_iter()
        .filter(|c| !placed.contains(c))
        .collect();
    if spare.is_empty() {
        return;
    }
    let set = set_of(&spare);
    // SAFETY: a valid set of the right size for the calling thread (0).
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_like_taskset_and_reject_unusable_cpus() {
        let usable = usable_cpus();
        assert!(!usable.is_empty());
        let first = usable[0];
        assert_eq!(
            parse_cpu_list(&first.to_string(), "--server-cpus"),
            Ok(vec![first])
        );
        assert_eq!(format_list(&[0, 1, 3]), "0-1,3");
        assert_eq!(format_list(&[2]), "2");
        for bad in ["x", "3-1", "", "100000"] {
            let e = parse_cpu_list(bad, "--client-cpus").unwrap_err();
            assert!(e.starts_with("--client-cpus") && !e.contains('\n'), "{e}");
        }
    }
}
