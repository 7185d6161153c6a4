//! `orphans.json`: when each orphan (a directory or registration no record
//! claims) was first seen, kept across reaps (SPEC "Reconciler"; the
//! schema is in docs/record.md).

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::root::StateRoot;

/// The schema of `orphans.json`.
const ORPHANS_SCHEMA: u64 = 1;

/// One entry of `orphans.json`, by path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenOrphan {
    /// When a reap first saw it (RFC 3339 UTC).
    pub first_seen: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct OrphanFile {
    schema: u64,
    orphans: BTreeMap<String, SeenOrphan>,
}

/// The largest `orphans.json` lease reads (bytes; docs/record.md "Bounds").
pub const MAX_ORPHANS_BYTES: u64 = 16 << 20;

/// Reads `<state root>/orphans.json`; missing means none seen yet. A
/// symlink, FIFO, device or a file over [`MAX_ORPHANS_BYTES`] is corrupt
/// and left as it is ([`crate::os::fs::read_regular`]).
pub fn load_orphans(root: &StateRoot) -> Result<BTreeMap<String, SeenOrphan>, String> {
    let path = orphans_file(root);
    let bytes = match crate::os::fs::read_regular(&path, MAX_ORPHANS_BYTES) {
        Ok(b) => b,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) if e.kind() == ErrorKind::InvalidData => {
            return Err(format!(
                "`{}` is corrupt: it {e}; left as it is, first-seen times are not updated",
                path.display()
            ));
        }
        Err(e) => return Err(format!("cannot read `{}`: {e}", path.display())),
    };
    match serde_json::from_slice::<OrphanFile>(&bytes) {
        Ok(f) if f.schema == ORPHANS_SCHEMA => Ok(f.orphans),
        Ok(f) => Err(format!(
            "`{}` is of schema {}, not {ORPHANS_SCHEMA}; left as it is",
            path.display(),
            f.schema
        )),
        Err(e) => Err(format!(
            "`{}` is corrupt ({e}); left as it is, first-seen times are not updated",
            path.display()
        )),
    }
}

/// Writes `<state root>/orphans.json` atomically with the first-seen
/// times of `seen`, by path.
///
/// # Errors
/// [`crate::Error::Io`] naming the file (or its temporary) when a write,
/// fsync or rename fails.
pub fn save_orphans(root: &StateRoot, seen: &BTreeMap<String, SeenOrphan>) -> Result<()> {
    let file = OrphanFile {
        schema: ORPHANS_SCHEMA,
        orphans: seen.clone(),
    };
    let bytes = serde_json::to_vec_pretty(&file).expect("orphans serialize");
    crate::os::atomic::write_atomic(&orphans_file(root), &bytes)
}

/// `<state root>/orphans.json`.
pub fn orphans_file(root: &StateRoot) -> PathBuf {
    root.path().join("orphans.json")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn orphans_file_round_trips_and_refuses_garbage() {
        let t = tempfile::tempdir().unwrap();
        let root = StateRoot::at(
            t.path().to_path_buf(),
            &std::sync::Arc::new(crate::policy::defaults()),
        );
        assert!(load_orphans(&root).unwrap().is_empty());
        let mut m = BTreeMap::new();
        m.insert(
            "/a".to_string(),
            SeenOrphan {
                first_seen: "2026-01-01T00:00:00Z".into(),
            },
        );
        save_orphans(&root, &m).unwrap();
        assert_eq!(load_orphans(&root).unwrap(), m);
        fs::write(orphans_file(&root), b"{").unwrap();
        assert!(load_orphans(&root).is_err());
        // A newer schema is left alone, never read as ours.
        fs::write(orphans_file(&root), br#"{"schema": 2, "orphans": {}}"#).unwrap();
        let e = load_orphans(&root).unwrap_err();
        assert!(e.contains("schema 2"), "{e}");
        // Unreadable (a directory) is an error; only absence is "none seen".
        fs::remove_file(orphans_file(&root)).unwrap();
        fs::create_dir(orphans_file(&root)).unwrap();
        assert!(load_orphans(&root).is_err());
    }
}
