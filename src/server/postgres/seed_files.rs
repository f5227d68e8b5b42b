//! The seeds' postgresql.conf files, shipped complete
//! (`config/postgres/seeds/<name>.pg<major>.conf`): one variant per first
//! major version that reads it, with `@SHARED_BUFFERS@`, `@MAX_WAL_SIZE@`
//! and `@MIN_WAL_SIZE@` filled in for the run and the machine.
//!
//! A named config with `file = "cx10a"` in `configs.toml` is such a file:
//! it replaces tidemark's base and profile instead of adding to them, so a
//! server runs with exactly the settings the seeds' server ran with.

/// (config file name, first major version the variant is for, text).
const FILES: &[(&str, u32, &str)] = &[
    (
        "cx10a",
        12,
        include_str!("../../../config/postgres/seeds/cx10a.pg12.conf"),
    ),
    (
        "cx10a",
        13,
        include_str!("../../../config/postgres/seeds/cx10a.pg13.conf"),
    ),
    (
        "cx10a",
        16,
        include_str!("../../../config/postgres/seeds/cx10a.pg16.conf"),
    ),
    (
        "cx10b",
        18,
        include_str!("../../../config/postgres/seeds/cx10b.pg18.conf"),
    ),
    (
        "cx10c",
        18,
        include_str!("../../../config/postgres/seeds/cx10c.pg18.conf"),
    ),
    (
        "cx10cw4",
        18,
        include_str!("../../../config/postgres/seeds/cx10cw4.pg18.conf"),
    ),
    (
        "cx10d",
        18,
        include_str!("../../../config/postgres/seeds/cx10d.pg18.conf"),
    ),
    (
        "a27",
        15,
        include_str!("../../../config/postgres/seeds/a27.pg15.conf"),
    ),
    (
        "a28",
        13,
        include_str!("../../../config/postgres/seeds/a28.pg13.conf"),
    ),
];

/// The oldest major version any variant of `file` is for.
pub fn first_major(file: &str) -> Option<u32> {
    FILES
        .iter()
        .filter(|(f, _, _)| *f == file)
        .map(|(_, m, _)| *m)
        .min()
}

/// The variant of `file` for major version `major`: the newest one whose
/// first version is not above it; with that first version.
pub fn variant(file: &str, major: u32) -> Option<(u32, &'static str)> {
    FILES
        .iter()
        .filter(|(f, m, _)| *f == file && *m <= major)
        .max_by_key(|(_, m, _)| *m)
        .map(|(_, m, text)| (*m, *text))
}

/// Whether the shipped files include `file`.
pub fn exists(file: &str) -> bool {
    first_major(file).is_some()
}

/// max_wal_size in MB for a machine with `memory_bytes`, from the seeds'
/// (memory GB, max_wal_size GB) points: linear between points, in
/// proportion to the nearest point outside them. Unknown memory (0) takes
/// the first point's value.
pub fn max_wal_mb(memory_bytes: u64, points: &[[f64; 2]]) -> u64 {
    let Some(first) = points.first() else {
        return 1024;
    };
    let last = points.last().unwrap_or(first);
    let gb = memory_bytes as f64 / (1u64 << 30) as f64;
    let wal_gb = if memory_bytes == 0 {
        first[1]
    } else if gb <= first[0] {
        first[1] * gb / first[0]
    } else if gb >= last[0] {
        last[1] * gb / last[0]
    } else {
        points
            .windows(2)
            .find(|w| gb >= w[0][0] && gb <= w[1][0])
            .map(|w| {
                let f = (gb - w[0][0]) / (w[1][0] - w[0][0]);
                w[0][1] + f * (w[1][1] - w[0][1])
            })
            .unwrap_or(last[1])
    };
    ((wal_gb * 1024.0) as u64).max(64)
}

/// The file with its `@…@` values filled in.
pub fn render(text: &str, shared_buffers_mb: u64, max_wal_mb: u64) -> String {
    text.replace("@SHARED_BUFFERS@", &format!("{shared_buffers_mb}MB"))
        .replace("@MAX_WAL_SIZE@", &format!("{max_wal_mb}MB"))
        .replace("@MIN_WAL_SIZE@", &format!("{}MB", (max_wal_mb / 2).max(32)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::postgres::named::setting_lines;

    const GB: u64 = 1 << 30;
    const CX10: [[f64; 2]; 3] = [[32.0, 40.0], [64.0, 64.0], [128.0, 96.0]];

    #[test]
    fn variants_follow_the_version() {
        assert_eq!(first_major("cx10a"), Some(12));
        assert_eq!(variant("cx10a", 12).unwrap().0, 12);
        assert_eq!(variant("cx10a", 15).unwrap().0, 13);
        assert_eq!(variant("cx10a", 17).unwrap().0, 16);
        assert_eq!(variant("cx10a", 19).unwrap().0, 16);
        assert!(variant("cx10a", 11).is_none());
        assert!(variant("cx10b", 17).is_none());
        assert!(!exists("cx99"));
        let pg12 = variant("cx10a", 12).unwrap().1;
        assert!(!pg12.contains("autovacuum_vacuum_insert_scale_factor"));
        let pg16 = variant("cx10a", 16).unwrap().1;
        assert!(pg16.contains("vacuum_buffer_usage_limit = 256MB"));
    }

    #[test]
    fn wal_sizes_scale_with_memory_as_the_seeds_do() {
        assert_eq!(max_wal_mb(32 * GB, &CX10), 40 * 1024);
        assert_eq!(max_wal_mb(64 * GB, &CX10), 64 * 1024);
        assert_eq!(max_wal_mb(128 * GB, &CX10), 96 * 1024);
        assert_eq!(max_wal_mb(48 * GB, &CX10), 52 * 1024);
        assert_eq!(max_wal_mb(16 * GB, &CX10), 20 * 1024);
        assert_eq!(max_wal_mb(256 * GB, &CX10), 192 * 1024);
        assert_eq!(max_wal_mb(60 * GB, &[[120.0, 70.0]]), 35 * 1024);
        assert_eq!(max_wal_mb(0, &CX10), 40 * 1024);
    }

    #[test]
    fn rendered_files_hold_no_placeholders_and_every_seed_setting() {
        for (name, major, text) in FILES {
            let r = render(text, 512, 4096);
            assert!(!r.contains("= @"), "{name} pg{major}");
            let names: Vec<String> = setting_lines(&r).into_iter().map(|(_, n, _)| n).collect();
            for must in ["shared_buffers", "synchronous_commit", "max_wal_size"] {
                assert!(names.iter().any(|n| n == must), "{name} pg{major}: {must}");
            }
            let mut sorted = names.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len(), "{name}: a setting twice");
        }
        let r = render(variant("cx10a", 16).unwrap().1, 512, 4096);
        assert!(r.contains("shared_buffers = 512MB\n"));
        assert!(r.contains("max_wal_size = 4096MB\nmin_wal_size = 2048MB\n"));
    }
}
