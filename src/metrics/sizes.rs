//! How big the database is after a step, two ways (workloads.md C.1
//! `dbgb1`, `dbgb2`): as the DBMS reports it, and as the data directory's
//! apparent size on disk (`du -bs`). Both are read after the measured
//! interval, so they cost the step nothing.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::db::{Conn, Dialect};

/// The SQL that returns the current database's size in bytes.
pub fn database_size_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "SELECT pg_database_size(current_database())",
        Dialect::Mysql => {
            "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables \
             WHERE table_schema = DATABASE()"
        }
        Dialect::Sqlite => {
            "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
        }
    }
}

/// The database's size in bytes as the DBMS reports it, or why not.
pub fn database_bytes(conn: &mut dyn Conn) -> Result<u64, String> {
    let sql = database_size_sql(conn.dialect());
    let rows = conn.query_text(sql).map_err(|e| format!("{sql}: {e}"))?;
    let value = rows
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .ok_or_else(|| format!("{sql} returned no value"))?;
    // information_schema sums come back as decimals on some servers.
    let number: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("{sql} returned {value:?}"))?;
    Ok(number.max(0.0) as u64)
}

/// The apparent size of everything under `dir` in bytes (files,
/// directories and symlinks themselves, hard links once), as `du -bs`
/// counts it, or why it cannot be read.
pub fn dir_bytes(dir: &Path) -> Result<u64, String> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut seen = HashSet::new();
    let mut total = 0u64;
    let mut stack = vec![(dir.to_path_buf(), meta)];
    while let Some((path, meta)) = stack.pop() {
        if meta.nlink() > 1 && !meta.is_dir() && !seen.insert((meta.dev(), meta.ino())) {
            continue;
        }
        total += meta.len();
        if meta.is_dir() {
            let entries =
                std::fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("{}: {e}", path.display()))?;
                match entry.metadata() {
                    Ok(m) => stack.push((entry.path(), m)),
                    // Files the server removes while we walk (WAL segments,
                    // temp files) are simply gone.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("{}: {e}", entry.path().display())),
                }
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_bytes_counts_apparent_sizes_and_hard_links_once() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), vec![0u8; 1000]).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/b"), vec![0u8; 234]).unwrap();
        std::fs::hard_link(d.path().join("a"), d.path().join("sub/a2")).unwrap();
        let dirs: u64 = [d.path(), &d.path().join("sub")]
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        assert_eq!(dir_bytes(d.path()).unwrap(), 1234 + dirs);
        let e = dir_bytes(&d.path().join("nope")).unwrap_err();
        assert!(e.contains("nope"), "{e}");
    }

    #[test]
    fn each_dialect_has_size_sql() {
        assert!(database_size_sql(Dialect::Postgres).contains("pg_database_size"));
        assert!(database_size_sql(Dialect::Mysql).contains("information_schema.tables"));
        assert!(database_size_sql(Dialect::Sqlite).contains("page_count"));
    }
}
