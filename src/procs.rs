//! Who holds a lease, learned from `/proc` without touching the lock.
//!
//! `lease list`, `show` and every dry run must not take the exclusive lock (a
//! concurrent `lease join` would then fail), so holders are found by looking
//! for open descriptors on the lease inode in `/proc/<pid>/fd`. `/proc/locks`
//! keeps naming the original locker's pid after it dies, so it is not used for
//! pids (research/crates.md §1). The full process-reference audit of gate 4
//! (cwd, root, mappings inside the worktree) extends this module.

use std::fs;
use std::os::unix::fs::MetadataExt;

/// Returns the pids of other processes (never this one, whose own probe
/// opens do not count) with an open descriptor on the file whose identity is
/// `(dev, ino)`, sorted, and how many processes could not be read (other
/// users' `/proc` entries are unreadable unless we are root).
pub fn holders(id: (u64, u64)) -> (Vec<u32>, usize) {
    let mut pids = Vec::new();
    let mut unreadable = 0;
    let Ok(dir) = fs::read_dir("/proc") else {
        return (pids, 1);
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(fds) = fs::read_dir(entry.path().join("fd")) else {
            unreadable += usize::from(entry.path().exists());
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            // stat follows the magic link to the open file itself.
            fs::metadata(fd.path()).is_ok_and(|m| (m.dev(), m.ino()) == id)
        });
        if holds {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    (pids, unreadable)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_child_holding_the_file_but_not_itself() {
        let t = tempfile::NamedTempFile::new().unwrap();
        let m = t.as_file().metadata().unwrap();
        assert!(
            holders((m.dev(), m.ino())).0.is_empty(),
            "own opens do not count"
        );
        let mut child = std::process::Command::new("sleep") // forbid: allow (a test holder, not git)
            .arg("600")
            .stdin(t.reopen().unwrap())
            .spawn()
            .unwrap();
        let (pids, _) = holders((m.dev(), m.ino()));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(pids, vec![child.id()]);
    }
}
