//! Prometheus text exposition of a state root, for node_exporter's textfile
//! collector: records by state, archives and their bytes, unreadable
//! records, bytes reclaimed by removals.
//!
//! Only what is cheap and certain is exported: the bytes of live
//! worktrees are the last sizes measured (record key `size`, written by
//! `lease du` and by a retire's walk), summed per state, never a walk of
//! every worktree, which a scrape-interval timer should not do. There is no
//! last-reap metric yet because reap keeps no summary file to read it from.
//! Labels carry states only, never a path or an id (Prometheus naming:
//! base units, `_bytes`; these are gauges, so no `_total`).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use crate::error::{IoResultExt, Result};
use crate::model::record::State;
use crate::store::registry::{Loaded, Registry};

/// What `lease metrics` exports, gathered from one scan of a state root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Records per state, in [`State::ALL`] order.
    pub records: [u64; State::ALL.len()],
    /// Record files that are unreadable, corrupt or of a newer schema.
    pub unreadable: u64,
    /// Regular files under `archives/` (one bundle each).
    pub archives: u64,
    /// Sum of their sizes.
    pub archive_bytes: u64,
    /// Sum of `bytes_reclaimed` over the tombstones of removed records.
    pub reclaimed_bytes: u64,
    /// Per state, in [`State::ALL`] order: the sum of the last measured
    /// sizes (record `size.bytes`) of its records; records never measured
    /// add nothing, and `removed` is always 0 (its tree is gone; what its
    /// removal freed is in `reclaimed_bytes`).
    pub worktree_bytes: [u64; State::ALL.len()],
}

/// Returns the snapshot of `reg`'s state root. Reads only: records, and the
/// `lstat` of every file under `archives/` (symlinks are not followed).
pub fn gather(reg: &Registry) -> Result<Snapshot> {
    let mut s = Snapshot::default();
    for l in reg.scan()? {
        match l {
            Loaded::Ok(r) => {
                let i = State::ALL
                    .iter()
                    .position(|x| *x == r.state)
                    .expect("State::ALL lists every state");
                s.records[i] += 1;
                if let Some(size) = r.size.as_ref().filter(|_| r.state != State::Removed) {
                    s.worktree_bytes[i] += size.bytes;
                }
                if let Some(t) = &r.tombstone {
                    s.reclaimed_bytes += t.bytes_reclaimed;
                }
            }
            Loaded::Bad { .. } => s.unreadable += 1,
        }
    }
    count_files(&reg.root().archives(), &mut s)?;
    Ok(s)
}

/// An empty state root's snapshot: every count zero.
pub fn empty() -> Snapshot {
    Snapshot::default()
}

fn count_files(dir: &Path, s: &mut Snapshot) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).at_do("cannot read", dir),
    };
    for entry in entries {
        let entry = entry.at_do("cannot read", dir)?;
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).at(&path)?;
        if meta.is_dir() {
            count_files(&path, s)?;
        } else if meta.is_file() {
            s.archives += 1;
            s.archive_bytes += meta.len();
        }
    }
    Ok(())
}

/// Returns `s` in the Prometheus text exposition format (version 0.0.4),
/// each metric with its `# HELP` and `# TYPE` lines.
pub fn render(s: &Snapshot) -> String {
    let mut o = String::new();
    let head = |o: &mut String, name: &str, help: &str| {
        let _ = writeln!(o, "# HELP {name} {help}");
        let _ = writeln!(o, "# TYPE {name} gauge");
    };
    head(&mut o, "lease_records", "Lease records by state.");
    for (state, n) in State::ALL.iter().zip(s.records) {
        let _ = writeln!(o, "lease_records{{state=\"{}\"}} {n}", state.name());
    }
    head(
        &mut o,
        "lease_records_unreadable",
        "Record files that are unreadable, corrupt or of a newer schema.",
    );
    let _ = writeln!(o, "lease_records_unreadable {}", s.unreadable);
    head(
        &mut o,
        "lease_archives",
        "Archive bundles under the state root.",
    );
    let _ = writeln!(o, "lease_archives {}", s.archives);
    head(
        &mut o,
        "lease_archive_bytes",
        "Bytes of the archive bundles under the state root.",
    );
    let _ = writeln!(o, "lease_archive_bytes {}", s.archive_bytes);
    head(
        &mut o,
        "lease_reclaimed_bytes",
        "Bytes reclaimed by the removals still recorded in tombstones.",
    );
    let _ = writeln!(o, "lease_reclaimed_bytes {}", s.reclaimed_bytes);
    head(
        &mut o,
        "lease_worktree_bytes",
        "Bytes of worktrees (tree and admin directory) as last measured by lease du or a retire, by state.",
    );
    for (state, n) in State::ALL.iter().zip(s.worktree_bytes) {
        let _ = writeln!(o, "lease_worktree_bytes{{state=\"{}\"}} {n}", state.name());
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_state_with_help_and_type() {
        let mut s = empty();
        s.records[1] = 2;
        s.archives = 1;
        s.archive_bytes = 42;
        let text = render(&s);
        for state in State::ALL {
            assert!(text.contains(&format!("lease_records{{state=\"{}\"}}", state.name())));
        }
        assert!(text.contains("lease_records{state=\"active\"} 2\n"));
        assert!(text.contains("lease_records{state=\"removed\"} 0\n"));
        assert!(text.contains("lease_archive_bytes 42\n"));
        assert_eq!(text.matches("# HELP ").count(), 6);
        assert_eq!(text.matches("# TYPE ").count(), 6);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn worktree_bytes_are_gauges_per_state_without_paths() {
        let mut s = empty();
        s.worktree_bytes[1] = 4096;
        let text = render(&s);
        assert!(text.contains("# TYPE lease_worktree_bytes gauge\n"));
        assert!(text.contains("lease_worktree_bytes{state=\"active\"} 4096\n"));
        for state in State::ALL {
            assert!(text.contains(&format!(
                "lease_worktree_bytes{{state=\"{}\"}}",
                state.name()
            )));
        }
        let samples: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("lease_worktree_bytes{"))
            .collect();
        assert_eq!(samples.len(), State::ALL.len());
        assert!(
            samples.iter().all(|l| l.matches('=').count() == 1),
            "one label, the state"
        );
        assert!(!text.contains("_total"), "gauges only");
    }
}
