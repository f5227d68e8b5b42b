//! A process and its descendants, read from `/proc/PID/task/*/children`:
//! what perf attaches to and what a memory cgroup takes in.

/// `pid` and every process below it, sorted, each once.
pub fn process_and_descendants(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        for task in std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            out.extend(
                text.split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
        i += 1;
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_found_under_its_parent() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        let tree = process_and_descendants(me);
        let _ = child.kill();
        let _ = child.wait();
        assert!(tree.contains(&me) && tree.contains(&child.id()), "{tree:?}");
    }
}
