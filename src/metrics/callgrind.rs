//! Reading Valgrind callgrind's output files (format version 1, as
//! callgrind 3.19 writes them, with or without name compression).
//!
//! One file is one dump of one process: its header says which process
//! (`pid:`), which dump (`part:`) and what triggered it (`desc: Trigger:`);
//! its body gives, per function, the instructions executed in the function
//! itself (cost lines) and in each call it made (a `calls=` line followed by
//! the call's inclusive cost). A dump resets the counters, so consecutive
//! parts of one process add up.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One function's costs in a dump.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FnCost {
    pub self_ir: u64,
    /// Self plus the inclusive cost of every call it made (calls to itself
    /// left out, so recursion does not count twice).
    pub incl_ir: u64,
}

/// One parsed dump.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dump {
    pub pid: Option<u32>,
    pub part: Option<u32>,
    /// What triggered the dump, e.g. `--dump-before=pg_backend_pid` or
    /// `Program termination`.
    pub trigger: String,
    /// Instructions in the dump: the sum of every function's self cost.
    pub total_ir: u64,
    /// Per function, by display name.
    pub functions: HashMap<String, FnCost>,
}

impl Dump {
    /// Whether the dump was triggered on entering function `name`.
    pub fn before(&self, name: &str) -> bool {
        self.trigger == format!("--dump-before={name}")
    }
}

/// A name table for one kind of compressed name (`fn`, `ob`, `fl`): `(id)
/// name` defines, `(id)` refers.
#[derive(Default)]
struct Names(HashMap<String, String>);

impl Names {
    fn resolve(&mut self, value: &str) -> String {
        let value = value.trim();
        if let Some(rest) = value.strip_prefix('(')
            && let Some((id, name)) = rest.split_once(')')
        {
            let name = name.trim();
            if name.is_empty() {
                return self.0.get(id).cloned().unwrap_or_default();
            }
            self.0.insert(id.to_string(), name.to_string());
            return name.to_string();
        }
        value.to_string()
    }
}

/// A function's display name: the symbol, or `object+ADDR` for a bare
/// address (a stripped binary's static function).
fn display_name(function: &str, object: &str) -> String {
    if function.starts_with("0x") {
        let base = object.rsplit('/').next().unwrap_or(object);
        let addr = function.trim_start_matches("0x").trim_start_matches('0');
        format!("{base}+0x{addr}")
    } else {
        function.to_string()
    }
}

/// Parses one callgrind output file's text.
pub fn parse(text: &str) -> Result<Dump, String> {
    let mut dump = Dump::default();
    let (mut fns, mut obs) = (Names::default(), Names::default());
    let mut positions = 1usize;
    let mut ir_col: Option<usize> = None;
    let mut object = String::new();
    let mut call_object: Option<String> = None;
    let mut current: Option<String> = None;
    let mut callee: Option<String> = None;
    // After a `calls=` line the next cost line is the call's inclusive cost.
    let mut call_pending = false;
    for line in text.lines() {
        let Some(first) = line.bytes().next() else {
            continue;
        };
        if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'*') {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let col = ir_col.ok_or("a cost line before the `events:` line")?;
            let ir = match fields.get(positions + col) {
                Some(v) => v
                    .parse::<u64>()
                    .map_err(|_| format!("bad cost line {line:?}"))?,
                None => 0,
            };
            let name = current.clone().ok_or("a cost line before any `fn=`")?;
            let entry = dump.functions.entry(name.clone()).or_default();
            if call_pending {
                call_pending = false;
                if callee.as_deref() != Some(name.as_str()) {
                    // Wrapping: a call in progress at an earlier dump has a
                    // negative cost written as its two's complement.
                    entry.incl_ir = entry.incl_ir.wrapping_add(ir);
                }
            } else {
                entry.self_ir += ir;
                entry.incl_ir = entry.incl_ir.wrapping_add(ir);
                dump.total_ir += ir;
            }
            continue;
        }
        let Some((key, value)) = line.split_once(['=', ':']) else {
            continue;
        };
        match key {
            "pid" => dump.pid = value.trim().parse().ok(),
            "part" => dump.part = value.trim().parse().ok(),
            "desc" => {
                if let Some(t) = value.trim().strip_prefix("Trigger:") {
                    dump.trigger = t.trim().to_string();
                }
            }
            "positions" => positions = value.split_whitespace().count().max(1),
            "events" => {
                ir_col = Some(
                    value
                        .split_whitespace()
                        .position(|e| e == "Ir")
                        .ok_or("no Ir event in the `events:` line")?,
                );
            }
            "ob" => object = obs.resolve(value),
            "cob" => call_object = Some(obs.resolve(value)),
            "fn" => {
                let f = fns.resolve(value);
                current = Some(display_name(&f, &object));
                call_object = None;
            }
            "cfn" => {
                let f = fns.resolve(value);
                let ob = call_object.clone().unwrap_or_else(|| object.clone());
                callee = Some(display_name(&f, &ob));
            }
            "calls" => call_pending = true,
            _ => {}
        }
    }
    if ir_col.is_none() {
        return Err("not a callgrind file: no `events:` line".into());
    }
    // A function whose calls spanned the previous dump can sum below zero:
    // its inclusive cost in this dump is unknown, not negative.
    for f in dump.functions.values_mut() {
        if f.incl_ir > i64::MAX as u64 {
            f.incl_ir = f.self_ir;
        }
    }
    Ok(dump)
}

/// How long [`read`] waits for a dump callgrind is still writing.
const WRITE_WAIT: Duration = Duration::from_secs(30);

/// Reads and parses one file once callgrind has finished writing it.
pub fn read(path: &Path) -> Result<Dump, String> {
    read_within(path, WRITE_WAIT)
}

/// Reads and parses one file, waiting up to `wait` while it is not whole:
/// the file appears when callgrind starts writing a dump, and a reader that
/// saw it appear (a reload's dump, awaited by its number) can otherwise
/// parse half of it.
fn read_within(path: &Path, wait: Duration) -> Result<Dump, String> {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if is_whole(&text) {
            return parse(&text).map_err(|e| format!("{}: {e}", path.display()));
        }
        if start.elapsed() >= wait {
            return Err(format!(
                "{}: an incomplete dump (no closing `totals:` line after {} s)",
                path.display(),
                wait.as_secs_f64()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a dump's text is all there: callgrind ends every dump with its
/// `totals:` line.
fn is_whole(text: &str) -> bool {
    (text.trim_end().lines().next_back()).is_some_and(|l| l.starts_with("totals:"))
}

/// The dump files of process `pid` in `dir` (`PREFIX.PID` for the one
/// written at exit, `PREFIX.PID.N` for dump N), as (part, path), the
/// numbered parts in order; the exit file (part `u32::MAX`) last.
pub fn files_of(dir: &Path, prefix: &str, pid: u32) -> Vec<(u32, PathBuf)> {
    dump_files(dir, prefix, pid)
        .into_iter()
        .filter_map(|(thread, part, path)| thread.is_none().then_some((part, path)))
        .collect()
}

/// The dump files of process `pid` in `dir` written with
/// `--separate-threads=yes` (`PREFIX.PID-TT` at exit, `PREFIX.PID.N-TT`
/// for dump N of Valgrind's thread TT), as (thread, part, path) in thread
/// and then part order; the exit file's part is `u32::MAX`.
pub fn thread_files_of(dir: &Path, prefix: &str, pid: u32) -> Vec<(u32, u32, PathBuf)> {
    dump_files(dir, prefix, pid)
        .into_iter()
        .filter_map(|(thread, part, path)| Some((thread?, part, path)))
        .collect()
}

/// Every dump file of process `pid` in `dir`, as (thread, part, path),
/// sorted: a process's own files (no thread) first.
fn dump_files(dir: &Path, prefix: &str, pid: u32) -> Vec<(Option<u32>, u32, PathBuf)> {
    let stem = format!("{prefix}.{pid}");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .flatten()
        .filter_map(|e| {
            let (thread, part) = dump_name(&e.file_name().to_string_lossy(), &stem)?;
            Some((thread, part, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// The (thread, part) a file named `name` holds of the process whose files
/// start with `stem` (`PREFIX.PID`): `STEM` and `STEM.N` without threads,
/// `STEM-TT` and `STEM.N-TT` for thread TT; the file written at exit is part
/// `u32::MAX`. `None` for another process's file or any other name.
fn dump_name(name: &str, stem: &str) -> Option<(Option<u32>, u32)> {
    let rest = name.strip_prefix(stem)?;
    let (part, thread) = match rest.rsplit_once('-') {
        Some((part, thread)) => (part, Some(thread.parse().ok()?)),
        None => (rest, None),
    };
    let part = match part.strip_prefix('.') {
        Some(n) => n.parse().ok()?,
        None if part.is_empty() => u32::MAX,
        None => return None,
    };
    Some((thread, part))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real dump: one PostgreSQL 15 backend (Debian's binary) between two
    /// `SELECT pg_backend_pid()` markers.
    const MARKER_CYCLE: &str = include_str!("../../tests/fixtures/callgrind/pg15-marker-cycle.out");

    #[test]
    fn a_dump_is_read_once_callgrind_has_written_all_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("callgrind.out.24933.2");
        let half = &MARKER_CYCLE[..MARKER_CYCLE.len() / 2];
        std::fs::write(&path, half).unwrap();
        let e = read_within(&path, Duration::from_millis(50)).unwrap_err();
        assert!(e.contains("an incomplete dump"), "{e}");
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                std::fs::write(&path, MARKER_CYCLE).unwrap();
            })
        };
        let d = read_within(&path, Duration::from_secs(10)).unwrap();
        writer.join().unwrap();
        assert_eq!(d.total_ir, 41013, "the whole dump, not the half first seen");
    }

    #[test]
    fn real_dump_sums_to_its_totals_line() {
        let d = parse(MARKER_CYCLE).unwrap();
        assert_eq!(d.pid, Some(24933));
        assert_eq!(d.part, Some(2));
        assert!(d.before("pg_backend_pid"), "{}", d.trigger);
        // The file's own `totals:` line.
        assert_eq!(d.total_ir, 41013);
        let self_sum: u64 = d.functions.values().map(|f| f.self_ir).sum();
        assert_eq!(self_sum, d.total_ir);
        // Exported functions keep their names; static ones are addresses.
        assert!(d.functions.contains_key("PostgresMain"), "no PostgresMain");
        assert!(d.functions.keys().any(|k| k.starts_with("postgres+0x")));
        // The outermost frame's inclusive cost is the whole dump.
        // (the dynamic loader's entry, which called everything else).
        let start = &d.functions["ld-linux-x86-64.so.2+0x1ab70"];
        assert_eq!(start.incl_ir, d.total_ir);
        assert_eq!(start.self_ir, 0);
    }

    /// A real dump of one MariaDB 10.11 connection thread (Debian's
    /// binary, `--separate-threads=yes`) between two `SELECT ROW_COUNT()`
    /// markers.
    const MARIADB_CYCLE: &str =
        include_str!("../../tests/fixtures/callgrind/mariadb1011-marker-cycle.out");

    #[test]
    fn real_mariadb_thread_dump() {
        let d = parse(MARIADB_CYCLE).unwrap();
        assert_eq!((d.pid, d.part), (Some(3414), Some(2)));
        assert!(d.before("Item_func_row_count::val_int()"), "{}", d.trigger);
        // The file's `totals:` line.
        assert_eq!(d.total_ir, 22668);
        let self_sum: u64 = d.functions.values().map(|f| f.self_ir).sum();
        assert_eq!(self_sum, d.total_ir);
        // Exported C++ functions keep their demangled names with arguments.
        let dispatch = "dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)";
        assert!(d.functions[dispatch].self_ir > 0);
        assert!(d.functions.keys().any(|k| k.starts_with("do_command(")));
        assert!(d.functions.keys().any(|k| k.starts_with("mariadbd+0x")));
    }

    #[test]
    fn compressed_names_calls_and_recursion() {
        let text = "\
version: 1
pid: 7
part: 3
desc: Trigger: Program termination
positions: line
events: Ir
summary: 60

ob=(1) /usr/bin/x
fl=(1) ???
fn=(1) main
0 10
cfn=(2) work
calls=2 0
0 45
fn=(2)
+2 40
cfn=(2)
calls=1 0
0 20
-1 5
fn=(3) waiter
cfn=(2)
calls=1 0
0 18446744073709551606
0 4
";
        let d = parse(text).unwrap();
        assert_eq!((d.pid, d.part), (Some(7), Some(3)));
        assert_eq!(d.trigger, "Program termination");
        assert_eq!(d.total_ir, 59);
        // A call that began before the previous dump: its cost is -10.
        assert_eq!(
            d.functions["waiter"],
            FnCost {
                self_ir: 4,
                incl_ir: 4
            }
        );
        assert_eq!(
            d.functions["main"],
            FnCost {
                self_ir: 10,
                incl_ir: 55
            }
        );
        // The recursive call's 20 is not added to work's inclusive cost.
        assert_eq!(
            d.functions["work"],
            FnCost {
                self_ir: 45,
                incl_ir: 45
            }
        );
    }

    #[test]
    fn addresses_name_their_object_and_garbage_is_refused() {
        let text = "events: Ir\nob=(2) /usr/lib/postgresql/15/bin/postgres\nfn=(9) 0x00000000001d70d0\n0 3\n";
        let d = parse(text).unwrap();
        assert_eq!(d.functions["postgres+0x1d70d0"].self_ir, 3);
        assert!(parse("hello\n").is_err());
        assert!(parse("events: Ir\nfn=(1) f\n0 x\n").is_err());
    }

    #[test]
    fn files_in_part_order_exit_file_last() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["cg.5.2", "cg.5.10", "cg.5", "cg.5.1", "cg.55.1", "cg.5.x"] {
            std::fs::write(dir.path().join(n), "").unwrap();
        }
        let parts: Vec<u32> = files_of(dir.path(), "cg", 5)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(parts, [1, 2, 10, u32::MAX]);
    }

    #[test]
    fn thread_files_by_thread_then_part() {
        let dir = tempfile::tempdir().unwrap();
        for n in [
            "cg.5.2-14",
            "cg.5.10-02",
            "cg.5-02",
            "cg.5.1-02",
            "cg.55.1-02",
            "cg.5.3",
            "cg.5.x-01",
            "cg.5",
        ] {
            std::fs::write(dir.path().join(n), "").unwrap();
        }
        let files: Vec<(u32, u32)> = thread_files_of(dir.path(), "cg", 5)
            .into_iter()
            .map(|(t, n, _)| (t, n))
            .collect();
        assert_eq!(files, [(2, 1), (2, 10), (2, u32::MAX), (14, 2)]);
        // The same directory read per process: only the files without a
        // thread.
        let parts: Vec<u32> = files_of(dir.path(), "cg", 5)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(parts, [3, u32::MAX]);
    }
}
