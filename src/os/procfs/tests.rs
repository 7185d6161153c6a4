//! Compiled for tests only (`#[cfg(test)] mod tests;` in the parent module).
//!
//! The unit tests of the /proc adapter, against this test process and the
//! children it starts (identity by device and inode, every thread, /proc/locks).

use super::*;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

/// The inventory of directory `dir`, as gate 5's walk makes it.
fn walk(dir: &Path) -> Inventory {
    let fd: OwnedFd = fs::File::open(dir).unwrap().into();
    crate::os::walk::inventory(&fd)
}

fn this(pid: u32) -> Proc {
    other_processes()
        .unwrap()
        .find(|p| p.pid == pid)
        .expect("the child is listed")
}

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
    assert_eq!(
        Flocks::read().unwrap().on((m.dev(), m.ino()), None),
        Some(FlockSeen::Shared)
    );
    drop(f);
    // Closing releases it once no copy of the descriptor is left: one in
    // a child another test forked but has not yet exec'd lives on for a
    // moment (see `sleeper_holding`).
    crate::testing::wait_until("the flock to be released", || {
        !lock_listed(m.dev(), m.ino())
    });
}

#[test]
fn flocks_parse_holders_waiters_and_superblock_devices() {
    let text = b"1: FLOCK  ADVISORY  READ 7122 fe:00:100 0 EOF\n\
        1: -> FLOCK  ADVISORY  WRITE 7123 fe:00:100 0 EOF\n\
        2: POSIX  ADVISORY  WRITE 99 fe:00:200 0 EOF\n\
        3: OFDLCK ADVISORY  WRITE -1 fe:00:300 0 EOF\n\
        4: FLOCK  ADVISORY  WRITE 25284 103:0a:400 0 EOF\n\
        garbage\n";
    let f = Flocks::parse(text);
    let fe = rustix::fs::makedev(0xfe, 0);
    assert_eq!(
        f.on((fe, 100), None),
        Some(FlockSeen::Shared),
        "the waiter holds nothing"
    );
    assert!(f.names((fe, 100), None));
    assert_eq!(
        f.on((fe, 200), None),
        None,
        "POSIX locks do not conflict with flock"
    );
    assert_eq!(f.on((fe, 300), None), None, "nor OFD locks");
    let big = rustix::fs::makedev(0x103, 0x0a);
    assert_eq!(f.on((big, 400), None), Some(FlockSeen::Exclusive));
    assert_eq!(f.on((fe, 400), None), None, "same inode, other device");
    assert_eq!(
        f.on((fe, 400), Some(big)),
        Some(FlockSeen::Exclusive),
        "a btrfs subvolume's st_dev differs from the superblock's"
    );
    assert!(!f.complete(), "parse alone does not know the namespace");
}

#[test]
fn mountinfo_gives_a_mount_its_superblock_device() {
    let text = b"22 1 0:21 / /proc rw,nosuid - proc proc rw\n\
        36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw\n";
    assert_eq!(
        parse_mountinfo_dev(text, 36),
        Some(rustix::fs::makedev(98, 0))
    );
    assert_eq!(
        parse_mountinfo_dev(text, 22),
        Some(rustix::fs::makedev(0, 21))
    );
    assert_eq!(parse_mountinfo_dev(text, 3), None);
    // This process's own root mount is listed.
    let st = rustix::fs::statx(rustix::fs::CWD, "/", AtFlags::empty(), StatxFlags::MNT_ID).unwrap();
    if st.stx_mask & StatxFlags::MNT_ID.bits() != 0 {
        assert!(superblock_dev(st.stx_mnt_id).is_some());
    }
}

#[test]
fn maps_give_device_and_inode_whatever_the_path() {
    let maps = b"7f00-7f01 r-xp 00000000 fd:01 123   /w/t/lib x.so\n\
        7f02-7f03 rw-p 00000000 00:00 0 \n\
        7f04-7f05 r--p 00000000 103:0a 77 /elsewhere (deleted)\n\
        7f02-7f03 rw-p 00000000 00:00 0    [heap]\n";
    let ids: Vec<Id> = mapped_ids(maps).collect();
    assert_eq!(
        ids,
        [
            (rustix::fs::makedev(0xfd, 1), 123),
            (rustix::fs::makedev(0x103, 0x0a), 77)
        ]
    );
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
    let inv = walk(&wt);
    let wt2 = wt.clone();
    let Some((unreadable, unaudited)) = crate::os::process::as_ordinary_user(move || {
        (holders((0, 0)).1, audit(&wt2, &inv, None, false).unaudited)
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
    let inv = walk(&wt);
    let tree = Tree::of(&inv);
    // cwd, root, fd and maps all missing (ENOENT), as for a reaped pid.
    let gone = Proc {
        pid: 7,
        base: wt.join("gone"),
        tids: vec![7],
    };
    assert_eq!(audit_one(&gone, &tree, Some((1, 1)), true), (vec![], false));
    let lease = tempfile::NamedTempFile::new().unwrap();
    let m = lease.as_file().metadata().unwrap();
    let mut child = std::process::Command::new("sleep") // forbid: allow (a test holder, not git)
        .arg("600")
        .stdin(lease.reopen().unwrap())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let seen = audit_one(&this(child.id()), &tree, Some((m.dev(), m.ino())), true);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(seen, (vec!["lease fd 0".to_string()], false));
    let Some((how, denied)) = crate::os::process::as_ordinary_user(|| {
        let init = Proc {
            pid: 1,
            base: PathBuf::from("/proc/1"),
            tids: vec![1],
        };
        audit_one(&init, &Tree::of(&Inventory::default()), None, true)
    }) else {
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
    let inv = walk(&wt);
    for strict in [false, true] {
        let ev = audit(&wt, &inv, None, strict);
        assert_eq!(ev.strict, strict);
        assert_eq!(ev.traversable, crate::os::fs::traversable_by_others(&wt));
    }
    let open = wt.join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&wt, fs::Permissions::from_mode(0o700)).unwrap();
    assert!(!audit(&open.join("wt"), &inv, None, false).traversable);
}

#[test]
fn audit_judges_cwd_and_descriptors_by_identity_not_by_path() {
    let t = tempfile::tempdir().unwrap();
    let wt = fs::canonicalize(t.path()).unwrap().join("wt");
    fs::create_dir_all(wt.join("sub")).unwrap();
    fs::write(wt.join("sub/file"), "x").unwrap();
    let inv = walk(&wt);
    assert!(
        audit(&wt, &inv, None, false).users.is_empty(),
        "own cwd/fds do not count"
    );
    // The child opens the file itself (see `sleeper_holding`).
    let mut child = std::process::Command::new("sh") // forbid: allow (a test process, not git)
        .args(["-c", "cd \"$1/sub\" && exec sleep 600 <file", "sh"])
        .arg(&wt)
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let comm = format!("/proc/{}/comm", child.id());
    crate::testing::wait_until("the child to exec sleep", || {
        fs::read_to_string(&comm).is_ok_and(|c| c.trim() == "sleep")
    });
    let ev = audit(&wt, &inv, None, false);
    // The same path with none of the tree's identities: a path prefix
    // would still say inside; identity says the process holds nothing.
    let elsewhere = audit(&wt, &Inventory::default(), None, false);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(ev.users, vec![(child.id(), "cwd, fd 0".to_string())]);
    assert!(!elsewhere.users.iter().any(|(p, _)| *p == child.id()));
}

#[test]
fn the_initial_pid_namespace_is_known_by_its_inode() {
    let v = pid_view();
    // Only a test run inside a container may differ; then it says so.
    if v.initial != Some(true) {
        crate::testing::skip("this /proc is not the initial pid namespace's");
        return;
    }
    assert!(Flocks::read().unwrap().complete());
}

#[test]
fn tree_ids_are_counted_after_the_last_parenthesis() {
    let line = b"4242 (a) b (c)) S 17 4242 99 34817 4242 4194560 0 0";
    assert_eq!(
        parse_tree_ids(line),
        Some(TreeIds {
            ppid: 17,
            session: 99,
            tty_nr: 34817
        })
    );
    assert_eq!(parse_tree_ids(b"1 (init) S 0 1"), None, "too few fields");
}

#[test]
fn ancestry_reaches_this_process_from_a_child() {
    let child = sleeper_holding("< /dev/null", Path::new("/dev/null"));
    let chain = ancestry(child.id());
    let me = std::process::id();
    assert_eq!(chain[0], child.id());
    assert_eq!(chain[1], me, "the child's parent is the test process");
    assert_eq!(tree_ids(child.id()).unwrap().ppid, me);
    assert_eq!(comm(child.id()).as_deref(), Some("sleep"));
    let mut child = child;
    child.kill().unwrap();
    child.wait().unwrap();
}
