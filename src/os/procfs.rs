//! Who holds a lease, learned from `/proc` without touching the lock.
//!
//! `lease list`, `show` and every dry run must not take the exclusive lock (a
//! concurrent `lease join` would then fail), so holders are found by looking
//! for open descriptors on the lease inode in `/proc/<pid>/fd`. `/proc/locks`
//! keeps naming the original locker's pid after it dies, so it is not used for
//! pids (research/crates.md §1).
//!
//! [`audit`] is gate 4's process-reference audit: cwd, root, descriptors and
//! mappings inside the worktree, like tmpwatch's `--fuser`. "Unreadable" is an
//! answer (counted), not a skip.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::plan::ProcEvidence;

/// Returns the pids of other processes (never this one, whose own probe
/// opens do not count) with an open descriptor on the file whose identity is
/// `(dev, ino)`, sorted, and how many processes could not be read (other
/// users' `/proc` entries are unreadable unless we are root).
pub fn holders(id: (u64, u64)) -> (Vec<u32>, usize) {
    let mut pids = Vec::new();
    let mut unreadable = 0;
    let Some(procs) = other_processes() else {
        return (pids, 1);
    };
    for (pid, base) in procs {
        let Ok(fds) = fs::read_dir(base.join("fd")) else {
            unreadable += usize::from(base.exists());
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

/// Returns, for each file identity in `ids`, the pids of other processes
/// holding a descriptor on it, from one scan of `/proc` (what [`holders`]
/// does per file; a listing of many records must not rescan `/proc` for
/// each). Identities nobody holds map to an empty list.
pub fn holders_of(ids: &[(u64, u64)]) -> std::collections::HashMap<(u64, u64), Vec<u32>> {
    let mut map: std::collections::HashMap<(u64, u64), Vec<u32>> =
        ids.iter().map(|id| (*id, Vec::new())).collect();
    if ids.is_empty() {
        return map;
    }
    for (pid, base) in other_processes().into_iter().flatten() {
        let Ok(fds) = fs::read_dir(base.join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(m) = fs::metadata(fd.path())
                && let Some(pids) = map.get_mut(&(m.dev(), m.ino()))
                && !pids.contains(&pid)
            {
                pids.push(pid);
            }
        }
    }
    for pids in map.values_mut() {
        pids.sort_unstable();
    }
    map
}

/// Returns the pid and `/proc/<pid>` of every process but this one, or
/// `None` if `/proc` cannot be listed.
fn other_processes() -> Option<impl Iterator<Item = (u32, std::path::PathBuf)>> {
    let me = std::process::id();
    let dir = fs::read_dir("/proc").ok()?;
    Some(dir.flatten().filter_map(move |e| {
        let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
        (pid != me).then(|| (pid, e.path()))
    }))
}

/// Returns false only if `/proc/locks` was read and lists no lock at all
/// on the file whose inode is `ino` on device `dev`: then no process holds
/// that lease and [`holders`]' scan of every process can be skipped.
pub fn lock_listed(dev: u64, ino: u64) -> bool {
    let Ok(text) = fs::read_to_string("/proc/locks") else {
        return true;
    };
    let want = format!(
        "{:02x}:{:02x}:{ino}",
        rustix::fs::major(dev),
        rustix::fs::minor(dev)
    );
    // `1: FLOCK  ADVISORY  READ 1234 fd:01:5678 0 EOF`; a blocked waiter's
    // line has `->` and one more field.
    text.lines()
        .any(|l| l.split_whitespace().any(|f| f == want.as_str()))
}

/// Returns true if `/proc/locks` shows an exclusive (WRITE) flock on the
/// file whose inode is `ino` on device `dev`: a retire holds the lease now.
pub fn exclusively_locked(dev: u64, ino: u64) -> bool {
    let Ok(text) = fs::read_to_string("/proc/locks") else {
        return false;
    };
    let want = format!(
        "{:02x}:{:02x}:{ino}",
        rustix::fs::major(dev),
        rustix::fs::minor(dev)
    );
    text.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // `1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF`
        f.get(1) == Some(&"FLOCK") && f.get(3) == Some(&"WRITE") && f.get(5) == Some(&want.as_str())
    })
}

/// Finds every live process (but this one) whose cwd or root is inside
/// `wt`, or that has a descriptor or a mapping inside it, or a descriptor on
/// the lease inode `lease`. Processes whose entries cannot be read (other
/// users', unless we are root) are counted in `unaudited`.
///
/// `strict` is `process_audit = "strict"` (`LEASE_PROCESS_AUDIT=strict`).
pub fn audit(wt: &Path, lease: Option<(u64, u64)>, strict: bool) -> ProcEvidence {
    let mut ev = ProcEvidence {
        traversable: crate::safety::traversable_by_others(wt),
        strict,
        ..ProcEvidence::default()
    };
    let Some(procs) = other_processes() else {
        ev.unaudited = usize::MAX;
        return ev;
    };
    for (pid, base) in procs {
        let (how, denied) = audit_one(&base, wt, lease);
        if !how.is_empty() {
            ev.users.push((pid, how.join(", ")));
        } else if denied {
            ev.unaudited += 1;
        }
    }
    ev.users.sort();
    ev
}

/// What one process (its `/proc/<pid>` directory, `base`) holds inside
/// `wt` or on the lease inode `lease`: how ("cwd", "fd 3", "lease fd 4",
/// "mapping"), and whether any of its entries was closed to us
/// (`PermissionDenied`). A process that is gone or a zombie (its entries
/// missing) holds nothing and is not a denial.
fn audit_one(base: &Path, wt: &Path, lease: Option<(u64, u64)>) -> (Vec<String>, bool) {
    let inside = |p: &Path| p.starts_with(wt);
    let mut how: Vec<String> = Vec::new();
    let mut denied = false;
    for link in ["cwd", "root"] {
        match fs::read_link(base.join(link)) {
            Ok(p) if inside(&p) => how.push(link.to_string()),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::PermissionDenied => denied = true,
            Err(_) => {} // gone, or a zombie: it holds nothing
        }
    }
    match fs::read_dir(base.join("fd")) {
        Ok(fds) => {
            for fd in fds.flatten() {
                let name = fd.file_name().to_string_lossy().into_owned();
                if fs::read_link(fd.path()).is_ok_and(|p| inside(&p)) {
                    how.push(format!("fd {name}"));
                } else if let Some(l) = lease
                    && fs::metadata(fd.path()).is_ok_and(|m| (m.dev(), m.ino()) == l)
                {
                    how.push(format!("lease fd {name}"));
                }
            }
        }
        Err(e) if e.kind() == ErrorKind::PermissionDenied => denied = true,
        Err(_) => {}
    }
    match fs::read(base.join("maps")) {
        Ok(maps) => {
            if maps_inside(&maps, wt) {
                how.push("mapping".into());
            }
        }
        Err(e) if e.kind() == ErrorKind::PermissionDenied => denied = true,
        Err(_) => {}
    }
    how.dedup();
    (how, denied)
}

/// Returns true if a line of `/proc/<pid>/maps` maps a file inside `wt`. The
/// path is everything after the fifth field (it may hold spaces).
fn maps_inside(maps: &[u8], wt: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    maps.split(|&b| b == b'\n').any(|line| {
        let mut rest = line;
        for _ in 0..5 {
            let trimmed = rest
                .iter()
                .position(|&b| b != b' ')
                .map_or(&rest[rest.len()..], |i| &rest[i..]);
            rest = trimmed
                .iter()
                .position(|&b| b == b' ')
                .map_or(&trimmed[trimmed.len()..], |i| &trimmed[i..]);
        }
        let path = rest
            .iter()
            .position(|&b| b != b' ')
            .map_or(&rest[rest.len()..], |i| &rest[i..]);
        path.first() == Some(&b'/') && Path::new(std::ffi::OsStr::from_bytes(path)).starts_with(wt)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A `sleep 600` that opened `path` itself (`sh` redirects, then execs),
    /// returned once it has exec'd, so its descriptors are in place. The
    /// test process never opens `path` around the spawn: a descriptor it
    /// holds is copied into any child another test thread forks at that
    /// moment (close-on-exec closes it only at their exec), which would be
    /// one more holder for a moment.
    fn sleeper_holding(redirects: &str, path: &Path) -> std::process::Child {
        let child = std::process::Command::new("sh") // forbid: allow (a test holder, not git)
            .args(["-c", &format!("exec sleep 600 {redirects}"), "sh"])
            .arg(path)
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let comm = format!("/proc/{}/comm", child.id());
        crate::testing::wait_until("the holder to exec sleep", || {
            fs::read_to_string(&comm).is_ok_and(|c| c.trim() == "sleep")
        });
        child
    }

    #[test]
    fn proc_locks_lists_a_flock_until_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.lease");
        let f = fs::File::create(&path).unwrap();
        let m = f.metadata().unwrap();
        assert!(!lock_listed(m.dev(), m.ino()), "nothing locked yet");
        f.lock_shared().unwrap();
        assert!(lock_listed(m.dev(), m.ino()), "a shared flock is listed");
        drop(f);
        // Closing releases it once no copy of the descriptor is left: one in
        // a child another test forked but has not yet exec'd lives on for a
        // moment (see `sleeper_holding`).
        crate::testing::wait_until("the flock to be released", || {
            !lock_listed(m.dev(), m.ino())
        });
    }

    #[test]
    fn finds_a_child_holding_the_file_but_not_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("held");
        let f = fs::File::create(&path).unwrap();
        let m = f.metadata().unwrap();
        let id = (m.dev(), m.ino());
        let me = std::process::id();
        assert!(!holders(id).0.contains(&me), "own opens do not count");
        drop(f);
        let mut child = sleeper_holding("<\"$1\"", &path);
        // Exactly the child, once the copies of our own descriptor that
        // other tests' children may have had are closed at their exec.
        let mut pids = Vec::new();
        crate::testing::wait_until("the child, and only it, to hold the file", || {
            pids = holders(id).0;
            pids == [child.id()]
        });
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(pids, vec![child.id()]);
    }

    #[test]
    fn an_ordinary_user_counts_the_processes_it_cannot_read() {
        let t = tempfile::tempdir().unwrap();
        let wt = fs::canonicalize(t.path()).unwrap();
        let wt2 = wt.clone();
        let Some((unreadable, unaudited)) = crate::sys::as_ordinary_user(move || {
            (holders((0, 0)).1, audit(&wt2, None, false).unaudited)
        }) else {
            crate::testing::skip("root cannot become uid 65534 here");
            return;
        };
        // pid 1 (root's, in any namespace) is closed to nobody. (Root's own
        // counts are no baseline: inside a user namespace root cannot read
        // the processes outside it either.)
        assert!(
            unreadable >= 1 && unaudited >= 1,
            "{unreadable} {unaudited}"
        );
    }

    #[test]
    fn a_process_that_is_gone_holds_nothing_and_denied_nothing() {
        let t = tempfile::tempdir().unwrap();
        let wt = fs::canonicalize(t.path()).unwrap();
        // cwd, root, fd and maps all missing (ENOENT), as for a reaped pid.
        assert_eq!(
            audit_one(&wt.join("gone"), &wt, Some((1, 1))),
            (vec![], false)
        );
        let lease = tempfile::NamedTempFile::new().unwrap();
        let m = lease.as_file().metadata().unwrap();
        let mut child = std::process::Command::new("sleep") // forbid: allow (a test holder, not git)
            .arg("600")
            .stdin(lease.reopen().unwrap())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let seen = audit_one(
            &Path::new("/proc").join(child.id().to_string()),
            &wt,
            Some((m.dev(), m.ino())),
        );
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(seen, (vec!["lease fd 0".to_string()], false));
        let own = Path::new("/proc/self");
        let (how, denied) = audit_one(own, Path::new("/"), None);
        assert!(!denied);
        assert_eq!(how[..2], ["cwd".to_string(), "root".to_string()]);
        let Some((how, denied)) =
            crate::sys::as_ordinary_user(|| audit_one(Path::new("/proc/1"), Path::new("/"), None))
        else {
            crate::testing::skip("root cannot become uid 65534 here");
            return;
        };
        assert!(denied && how.is_empty(), "{how:?}");
    }

    #[test]
    fn holders_of_lists_each_holder_once_per_file() {
        let dir = tempfile::tempdir().unwrap();
        let (held, other) = (dir.path().join("held"), dir.path().join("other"));
        fs::write(&held, "").unwrap();
        fs::write(&other, "").unwrap();
        let id = |p: &Path| {
            let m = fs::metadata(p).unwrap();
            (m.dev(), m.ino())
        };
        let mut child = sleeper_holding("<\"$1\" 3<\"$1\"", &held);
        let mut map = holders_of(&[]);
        crate::testing::wait_until("one holder of one file", || {
            map = holders_of(&[id(&held), id(&other)]);
            map[&id(&held)] == [child.id()] && map[&id(&other)].is_empty()
        });
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            map[&id(&held)],
            vec![child.id()],
            "two descriptors, one holder"
        );
        assert!(map[&id(&other)].is_empty());
        assert!(holders_of(&[]).is_empty());
    }

    #[test]
    fn exclusively_locked_means_a_write_flock_on_that_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = fs::File::create(dir.path().join("l.lease")).unwrap();
        let g = fs::File::create(dir.path().join("other.lease")).unwrap();
        let m = f.metadata().unwrap();
        assert!(!exclusively_locked(m.dev(), m.ino()), "not locked");
        f.lock_shared().unwrap();
        assert!(
            !exclusively_locked(m.dev(), m.ino()),
            "shared is not exclusive"
        );
        drop(f);
        g.lock().unwrap();
        assert!(!exclusively_locked(m.dev(), m.ino()), "another file's lock");
        let f = fs::File::open(dir.path().join("l.lease")).unwrap();
        f.lock().unwrap();
        assert!(exclusively_locked(m.dev(), m.ino()));
        assert!(
            !exclusively_locked(m.dev() + 1, m.ino()),
            "same inode, other device"
        );
    }

    #[test]
    fn audit_reports_its_mode_and_who_can_reach_the_tree() {
        let t = tempfile::tempdir().unwrap();
        let wt = fs::canonicalize(t.path()).unwrap();
        for strict in [false, true] {
            let ev = audit(&wt, None, strict);
            assert_eq!(ev.strict, strict);
            assert_eq!(ev.traversable, crate::safety::traversable_by_others(&wt));
        }
        let open = wt.join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&wt, fs::Permissions::from_mode(0o700)).unwrap();
        assert!(!audit(&open.join("wt"), None, false).traversable);
    }

    #[test]
    fn maps_paths_with_spaces() {
        let maps = b"7f00-7f01 r-xp 00000000 fd:01 123   /w/t/lib x.so\n7f02-7f03 rw-p 00000000 00:00 0 \n";
        assert!(maps_inside(maps, Path::new("/w/t")));
        assert!(!maps_inside(maps, Path::new("/w/tt")));
        assert!(!maps_inside(
            b"7f02-7f03 rw-p 00000000 00:00 0    [heap]\n",
            Path::new("/")
        ));
    }

    #[test]
    fn audit_sees_a_child_with_its_cwd_inside() {
        let t = tempfile::tempdir().unwrap();
        let wt = fs::canonicalize(t.path()).unwrap();
        assert!(
            audit(&wt, None, false).users.is_empty(),
            "own cwd/fds do not count"
        );
        let mut child = std::process::Command::new("sleep") // forbid: allow (a test process, not git)
            .arg("600")
            .current_dir(&wt)
            .spawn()
            .unwrap();
        let ev = audit(&wt, None, false);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(ev.users, vec![(child.id(), "cwd".to_string())]);
    }
}
