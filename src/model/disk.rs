//! Disk a worktree holds, by class (SPEC "Provisioned files, disk, and
//! hygiene": `lease du`), and the size a record keeps of its last
//! measurement. Plain data and one pure classifier: the walk that measures
//! lives in `os::walk`, git's status in `git::ops`.

use serde::{Deserialize, Serialize};

use crate::model::evidence::{StatusEntry, is_rebuildable};

/// Bytes of one worktree by class, from one walk of its tree (`st_size` of
/// every regular file and symlink the walk reaches on the top's mount, as
/// `os::walk::inventory` counts them) classified by git's status
/// (`git status --porcelain=v1 -z --untracked-files=all --ignored=matching`),
/// plus a walk of its admin directory. Every field is in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DiskUsage {
    /// Files git tracks (status lists them with a change, or not at all).
    pub tracked: u64,
    /// Untracked files (`??`), nested repositories' work trees included.
    pub untracked: u64,
    /// Ignored files (`!!`) that are neither provisioned and unchanged nor
    /// inside declared rebuildable output: work that holds `ignored`.
    pub ignored_work: u64,
    /// Paths provisioned at creation and still identical to what was
    /// provisioned (not work).
    pub provisioned: u64,
    /// Ignored files at or below a declared rebuildable path (config
    /// `rebuildable`), which a retire deletes itself.
    pub rebuildable: u64,
    /// git's bookkeeping for this worktree: its admin directory
    /// (`<common git dir>/worktrees/<name>`) and the top's `.git` file.
    pub admin: u64,
}

impl DiskUsage {
    /// The sum of every class: what removing the worktree and its admin
    /// directory frees (before the filesystem's own block rounding).
    pub fn total(&self) -> u64 {
        self.tracked
            + self.untracked
            + self.ignored_work
            + self.provisioned
            + self.rebuildable
            + self.admin
    }

    /// Adds `o` to every class (for a total over several worktrees).
    pub fn add(&mut self, o: &DiskUsage) {
        self.tracked += o.tracked;
        self.untracked += o.untracked;
        self.ignored_work += o.ignored_work;
        self.provisioned += o.provisioned;
        self.rebuildable += o.rebuildable;
        self.admin += o.admin;
    }

    /// Classifies the walk's `files` (path relative to the top, raw bytes,
    /// and its `st_size`) by git's `status`: the top's own `.git` file is
    /// admin; a path provisioned at creation and still unchanged
    /// (`provisioned`: path and whether it is unchanged) is provisioned;
    /// a path at or below an `??` entry is untracked; at or below an `!!`
    /// entry, rebuildable when at or below a `rebuildable` path, else
    /// ignored work; anything else is tracked. `admin_dir` (bytes of the
    /// admin directory) is added to `admin`.
    pub fn classify(
        files: &[(Vec<u8>, u64)],
        status: &[StatusEntry],
        provisioned: &[(Vec<u8>, bool)],
        rebuildable: &[Vec<u8>],
        admin_dir: u64,
    ) -> DiskUsage {
        use std::collections::HashMap;
        // Status paths without their trailing `/`, each with its letters:
        // a file matches itself, a directory entry everything below it.
        let mut marks: HashMap<&[u8], [u8; 2]> = HashMap::new();
        for e in status {
            if &e.xy == b"??" || &e.xy == b"!!" {
                let p = e.path.strip_suffix(b"/").unwrap_or(&e.path);
                marks.insert(p, e.xy);
            }
        }
        let unchanged: std::collections::HashSet<&[u8]> = provisioned
            .iter()
            .filter(|(_, same)| *same)
            .map(|(p, _)| p.as_slice())
            .collect();
        let mark_of = |path: &[u8]| -> Option<[u8; 2]> {
            if let Some(m) = marks.get(path) {
                return Some(*m);
            }
            // The nearest listed ancestor directory.
            let mut end = path.len();
            while let Some(i) = path[..end].iter().rposition(|&b| b == b'/') {
                if let Some(m) = marks.get(&path[..i]) {
                    return Some(*m);
                }
                end = i;
            }
            None
        };
        let mut u = DiskUsage {
            admin: admin_dir,
            ..DiskUsage::default()
        };
        for (path, bytes) in files {
            let class = if path.as_slice() == b".git" {
                &mut u.admin
            } else if unchanged.contains(path.as_slice()) {
                &mut u.provisioned
            } else {
                match mark_of(path) {
                    Some(m) if &m == b"??" => &mut u.untracked,
                    Some(_) if is_rebuildable(path, rebuildable) => &mut u.rebuildable,
                    Some(_) => &mut u.ignored_work,
                    None => &mut u.tracked,
                }
            };
            *class += bytes;
        }
        u
    }
}

/// The last measured size of a record's worktree (record key `size`),
/// written by `lease du` and by a retire's walk; absent in records written
/// before it existed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Size {
    /// [`DiskUsage::total`]: the tree and its admin directory, in bytes.
    pub bytes: u64,
    /// When it was measured (RFC 3339 UTC).
    pub at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(xy: &[u8; 2], p: &str) -> StatusEntry {
        StatusEntry {
            xy: *xy,
            path: p.as_bytes().to_vec(),
        }
    }

    #[test]
    fn every_file_lands_in_exactly_one_class() {
        let files: Vec<(Vec<u8>, u64)> = [
            (".git", 60),
            ("src/lib.rs", 100),
            ("README", 7),
            ("notes.txt", 11),
            ("scratch/a", 13),
            ("target/debug/app", 1000),
            ("target2/x", 5),
            (".env", 17),
            (".env.local", 19),
            ("cache/blob", 23),
        ]
        .iter()
        .map(|(p, b)| (p.as_bytes().to_vec(), *b))
        .collect();
        let status = vec![
            st(b" M", "README"),
            st(b"??", "notes.txt"),
            st(b"??", "scratch/"),
            st(b"!!", "target/"),
            st(b"!!", "target2/"),
            st(b"!!", ".env"),
            st(b"!!", ".env.local"),
            st(b"!!", "cache/"),
        ];
        let provisioned = vec![(b".env".to_vec(), true), (b".env.local".to_vec(), false)];
        let u = DiskUsage::classify(&files, &status, &provisioned, &[b"target".to_vec()], 400);
        assert_eq!(
            u,
            DiskUsage {
                tracked: 107,
                untracked: 24,
                ignored_work: 5 + 19 + 23,
                provisioned: 17,
                rebuildable: 1000,
                admin: 460,
            }
        );
        let sum: u64 = files.iter().map(|f| f.1).sum();
        assert_eq!(u.total(), sum + 400);
    }

    #[test]
    fn a_directory_entry_covers_what_is_below_it_by_whole_components() {
        let files = vec![(b"targetx/f".to_vec(), 3), (b"target/f".to_vec(), 4)];
        let u = DiskUsage::classify(&files, &[st(b"!!", "target/")], &[], &[], 0);
        assert_eq!((u.tracked, u.ignored_work), (3, 4));
    }
}
