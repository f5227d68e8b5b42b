//! A step's instruction count from the callgrind dumps its server's
//! processes wrote (the server side, which brackets the interval, is
//! `server::valgrind`).
//!
//! A client backend's measured interval lies between two dumps it wrote on
//! entering the marker function (`SELECT pg_backend_pid()` after the last
//! measured event, and the one before the first); a dump resets the
//! counters, so the interval is the sum of every part after the earlier
//! marker up to the later one (a configuration reload in between splits it
//! into more parts). The interval so taken holds one marker cycle — the end
//! of one marker query and the start of the next — which the client measured
//! once more just before, with no event in between: that cycle is
//! subtracted, function by function. A background process's interval is the
//! parts after the dump of the first reload up to that of the second.
//!
//! MariaDB's threads are dumped apart (`--separate-threads=yes`): a
//! connection thread is bracketed by its markers as a backend is, and the
//! background threads' interval is the parts between two dumps of every
//! thread, connection threads left out.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::callgrind::{self, Dump, FnCost};
use crate::record::{FunctionIr, StepInstructions};

/// How many functions a step keeps: the largest by inclusive and by self
/// instructions. A function below the cut on one side shows as 0 there in
/// the report's per-function changes: with 120 kept, a point query's
/// `WaitEventSetWait` (about 130 instructions per query) and
/// `initStringInfo` (75) fell below it on one of two builds and showed as
/// changes of +129 and -75 that were not there (both run on every query
/// of both builds). 400 moves the cut far below such functions.
pub const KEEP_FUNCTIONS: usize = 400;

/// One client backend's interval: instructions, the marker cycle
/// subtracted, and per function.
#[derive(Debug, Default, PartialEq)]
pub struct ClientCount {
    pub ir: u64,
    pub marker_ir: u64,
    pub functions: HashMap<String, FnCost>,
}

/// The parts of process `pid` under `dir` (files `prefix.PID.N`), parsed,
/// in order; the file written at exit left out.
pub fn parts(dir: &Path, prefix: &str, pid: u32) -> Result<Vec<(u32, Dump)>, String> {
    callgrind::files_of(dir, prefix, pid)
        .into_iter()
        .filter(|(n, _)| *n != u32::MAX)
        .map(|(n, p)| callgrind::read(&p).map(|d| (n, d)))
        .collect()
}

/// The highest numbered part process `pid` has written (0: none).
pub fn latest_part(dir: &Path, prefix: &str, pid: u32) -> u32 {
    callgrind::files_of(dir, prefix, pid)
        .into_iter()
        .filter(|(n, _)| *n != u32::MAX)
        .map(|(n, _)| n)
        .max()
        .unwrap_or(0)
}

/// The instructions of a dump less those of calls to the functions
/// `left_out` in it (a configuration reload is the bracketing's cost, not
/// the workload's; see the server's lists of what it leaves out).
fn without(d: &Dump, left_out: &[&str]) -> u64 {
    let r: u64 = (left_out.iter())
        .filter_map(|f| d.functions.get(*f))
        .map(|f| f.incl_ir)
        .sum();
    d.total_ir.saturating_sub(r)
}

/// The highest part any thread of process `pid` has written (files of
/// `--separate-threads=yes`), or `None`.
pub fn thread_parts_latest(dir: &Path, prefix: &str, pid: u32) -> Option<u32> {
    callgrind::thread_files_of(dir, prefix, pid)
        .into_iter()
        .map(|(_, n, _)| n)
        .filter(|&n| n != u32::MAX)
        .max()
}

/// Per thread of process `pid`, its parts numbered `(after, upto]`,
/// parsed, in order.
pub fn thread_parts(
    dir: &Path,
    prefix: &str,
    pid: u32,
    after: u32,
    upto: u32,
) -> Result<BTreeMap<u32, Vec<(u32, Dump)>>, String> {
    let mut out: BTreeMap<u32, Vec<(u32, Dump)>> = BTreeMap::new();
    for (thread, n, path) in callgrind::thread_files_of(dir, prefix, pid) {
        if n > after && n <= upto {
            out.entry(thread)
                .or_default()
                .push((n, callgrind::read(&path)?));
        }
    }
    Ok(out)
}

/// The background threads' instructions in parts `(after, upto]` and how
/// many threads ran: every thread but those that ran a connection's
/// command loop (a function whose name starts with `command`) in them.
pub fn background_threads(
    threads: &BTreeMap<u32, Vec<(u32, Dump)>>,
    after: u32,
    upto: u32,
    command: &str,
) -> (u64, u32) {
    let (mut total, mut counted) = (0, 0);
    for parts in threads.values() {
        let connection = parts.iter().any(|(_, d)| {
            d.functions
                .iter()
                .any(|(name, f)| name.starts_with(command) && f.self_ir > 0)
        });
        let ir = parts_between(parts, after, upto, &[]);
        if !connection && ir > 0 {
            total += ir;
            counted += 1;
        }
    }
    (total, counted)
}

/// The client connections' intervals of process `pid`: every thread with
/// a dump on entering `marker` after part `after` (the step's clients
/// send their markers only after it).
pub fn client_threads(
    dir: &Path,
    prefix: &str,
    pid: u32,
    after: u32,
    marker: &str,
) -> Result<Vec<ClientCount>, String> {
    thread_parts(dir, prefix, pid, after, u32::MAX - 1)?
        .into_iter()
        .filter(|(_, parts)| parts.iter().any(|(_, d)| d.before(marker)))
        .map(|(thread, parts)| {
            client_interval(&parts, marker, &[]).map_err(|e| format!("thread {thread}: {e}"))
        })
        .collect()
}

/// A client backend's interval from its parts: the last three dumps on
/// entering `marker` are the one before the calibration cycle, the one
/// starting the interval and the one ending it. Calls of the functions
/// `left_out` (a configuration reload, work that comes with time rather
/// than with queries) are left out of the interval and of the cycle.
pub fn client_interval(
    parts: &[(u32, Dump)],
    marker: &str,
    left_out: &[&str],
) -> Result<ClientCount, String> {
    let marks: Vec<usize> = parts
        .iter()
        .enumerate()
        .filter(|(_, (_, d))| d.before(marker))
        .map(|(i, _)| i)
        .collect();
    let [.., _, b, c] = marks[..] else {
        return Err(format!(
            "{} marker dump(s) where 3 were expected (the client's last marker query did not run)",
            marks.len()
        ));
    };
    let cycle = &parts[b].1;
    let mut functions: HashMap<String, FnCost> = HashMap::new();
    let mut ir = 0u64;
    for (_, d) in &parts[b + 1..=c] {
        ir += without(d, left_out);
        add(&mut functions, &d.functions);
    }
    for f in left_out {
        functions.remove(*f);
    }
    for (name, cost) in &cycle.functions {
        if let Some(f) = functions.get_mut(name) {
            f.self_ir = f.self_ir.saturating_sub(cost.self_ir);
            f.incl_ir = f.incl_ir.saturating_sub(cost.incl_ir);
        }
    }
    let cycle_ir = without(cycle, left_out);
    Ok(ClientCount {
        ir: ir.saturating_sub(cycle_ir),
        marker_ir: cycle_ir,
        functions,
    })
}

/// Instructions in parts `(after, upto]` of one process, calls of the
/// functions `left_out` (its reloads) left out.
pub fn parts_between(parts: &[(u32, Dump)], after: u32, upto: u32, left_out: &[&str]) -> u64 {
    parts
        .iter()
        .filter(|(n, _)| *n > after && *n <= upto)
        .map(|(_, d)| without(d, left_out))
        .sum()
}

fn add(into: &mut HashMap<String, FnCost>, from: &HashMap<String, FnCost>) {
    for (name, cost) in from {
        let f = into.entry(name.clone()).or_default();
        f.self_ir += cost.self_ir;
        f.incl_ir += cost.incl_ir;
    }
}

/// The step's record from its clients' counts and the background total.
pub fn assemble(
    clients: &[ClientCount],
    events: u64,
    statements: u64,
    background: (u64, u32),
) -> StepInstructions {
    let mut functions: HashMap<String, FnCost> = HashMap::new();
    for c in clients {
        add(&mut functions, &c.functions);
    }
    StepInstructions {
        events,
        statements,
        client_ir: clients.iter().map(|c| c.ir).sum(),
        marker_ir: clients.iter().map(|c| c.marker_ir).sum(),
        background_ir: background.0,
        background_procs: background.1,
        clients: clients.len() as u32,
        functions: top_functions(functions, KEEP_FUNCTIONS),
    }
}

/// The `keep` functions with the most inclusive instructions and the
/// `keep` with the most self instructions (together, no repeats), largest
/// inclusive first; functions with nothing left out.
pub fn top_functions(functions: HashMap<String, FnCost>, keep: usize) -> Vec<FunctionIr> {
    let mut all: Vec<FunctionIr> = functions
        .into_iter()
        .filter(|(_, c)| c.incl_ir > 0)
        .map(|(name, c)| FunctionIr {
            name,
            self_ir: c.self_ir,
            incl_ir: c.incl_ir,
        })
        .collect();
    all.sort_by(|a, b| b.self_ir.cmp(&a.self_ir).then(a.name.cmp(&b.name)));
    let by_self: std::collections::HashSet<String> =
        all.iter().take(keep).map(|f| f.name.clone()).collect();
    all.sort_by(|a, b| b.incl_ir.cmp(&a.incl_ir).then(a.name.cmp(&b.name)));
    all.into_iter()
        .enumerate()
        .filter(|(i, f)| *i < keep || by_self.contains(&f.name))
        .map(|(_, f)| f)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(trigger: &str, fns: &[(&str, u64, u64)]) -> Dump {
        let functions: HashMap<String, FnCost> = fns
            .iter()
            .map(|(n, s, i)| {
                (
                    n.to_string(),
                    FnCost {
                        self_ir: *s,
                        incl_ir: *i,
                    },
                )
            })
            .collect();
        Dump {
            trigger: trigger.to_string(),
            total_ir: fns.iter().map(|f| f.1).sum(),
            functions,
            ..Dump::default()
        }
    }

    const M: &str = "--dump-before=pg_backend_pid";
    const R: &str = "--dump-before=ProcessConfigFile";

    #[test]
    fn interval_sums_parts_between_markers_minus_one_cycle() {
        let parts = vec![
            (1, dump(M, &[("connect", 1000, 1000)])),
            (2, dump(M, &[("marker", 50, 50)])),
            // A reload in the interval splits it in two parts.
            (3, dump(R, &[("query", 300, 300), ("marker", 50, 50)])),
            (
                4,
                dump(M, &[("query", 200, 200), ("ProcessConfigFile", 0, 0)]),
            ),
        ];
        let c = client_interval(&parts, "pg_backend_pid", &["ProcessConfigFile"]).unwrap();
        assert_eq!(c.ir, 500);
        assert_eq!(c.marker_ir, 50);
        assert_eq!(c.functions["query"].self_ir, 500);
        assert_eq!(c.functions["marker"].self_ir, 0);
        let short = &parts[..2];
        let e = client_interval(short, "pg_backend_pid", &["ProcessConfigFile"]).unwrap_err();
        assert!(e.starts_with("2 marker dump(s)"), "{e}");
    }

    #[test]
    fn timed_work_is_left_out_of_the_interval_and_of_the_cycle() {
        // The statistics flush landed in the cycle, one more wait for the
        // client's message in the interval: neither counts.
        let left_out = ["ProcessConfigFile", "secure_read", "pgstat_report_stat"];
        let parts = vec![
            (1, dump(M, &[("connect", 1000, 1000)])),
            (2, dump(M, &[("marker", 50, 70), ("secure_read", 20, 20)])),
            (
                3,
                dump(
                    M,
                    &[
                        ("marker", 50, 21_570),
                        ("secure_read", 20, 20),
                        ("pgstat_report_stat", 900, 21_500),
                        ("pgstat_relation_flush_cb", 20_600, 20_600),
                    ],
                ),
            ),
            (
                4,
                dump(
                    M,
                    &[
                        ("query", 40_000, 40_000),
                        ("secure_read", 200, 350),
                        ("WaitEventSetWait", 150, 150),
                    ],
                ),
            ),
        ];
        let c = client_interval(&parts, "pg_backend_pid", &left_out).unwrap();
        assert_eq!((c.ir, c.marker_ir), (40_000 - 50, 50));
        assert!(!c.functions.contains_key("secure_read"));
        // Without leaving them out the count is off by both.
        let all = client_interval(&parts, "pg_backend_pid", &[]).unwrap();
        assert_eq!(all.ir, 40_350 - 21_570);
    }

    #[test]
    fn mariadb_threads_split_into_clients_and_background() {
        const MM: &str = "--dump-before=Item_func_row_count::val_int()";
        let all = "dump";
        let mut threads: BTreeMap<u32, Vec<(u32, Dump)>> = BTreeMap::new();
        // A purge thread: counted at both dumps of every thread.
        threads.insert(
            3,
            vec![
                (5, dump(all, &[("purge", 40, 40)])),
                (9, dump(all, &[("purge", 60, 60)])),
            ],
        );
        // An idle timer thread: nothing in the interval.
        threads.insert(4, vec![(5, dump(all, &[])), (9, dump(all, &[]))]);
        // The counter sampler's connection: ran commands, not background.
        threads.insert(
            7,
            vec![(9, dump(all, &[("do_command(THD*, bool)", 9, 900)]))],
        );
        // A client: markers 6, 7, 8 between the two dumps.
        threads.insert(
            8,
            vec![
                (6, dump(MM, &[("do_command(THD*, bool)", 1, 1)])),
                (7, dump(MM, &[("marker", 30, 30)])),
                (8, dump(MM, &[("query", 500, 500), ("marker", 30, 30)])),
                (9, dump(all, &[("do_command(THD*, bool)", 2, 2)])),
            ],
        );
        assert_eq!(background_threads(&threads, 4, 9, "do_command("), (100, 1));
        let c = client_interval(&threads[&8], "Item_func_row_count::val_int()", &[]).unwrap();
        assert_eq!((c.ir, c.marker_ir), (500, 30));
    }

    #[test]
    fn background_parts_and_top_functions() {
        let parts = vec![
            (1, dump(R, &[("a", 7, 7)])),
            (2, dump(R, &[("a", 10, 10)])),
            (3, dump(R, &[("a", 5, 5), ("ProcessConfigFile", 2, 4)])),
        ];
        // Part 3's reload (4 inclusive) is the bracketing's, not counted.
        assert_eq!(parts_between(&parts, 1, 3, &["ProcessConfigFile"]), 13);
        let mut f = HashMap::new();
        for (i, n) in ["x", "y", "z"].iter().enumerate() {
            let i = i as u64;
            f.insert(
                n.to_string(),
                FnCost {
                    self_ir: 10 - i,
                    incl_ir: 10 + i,
                },
            );
        }
        f.insert("zero".into(), FnCost::default());
        let top: Vec<String> = top_functions(f, 1).into_iter().map(|f| f.name).collect();
        // z has the most inclusive, x the most self.
        assert_eq!(top, ["z", "x"]);
    }
}
