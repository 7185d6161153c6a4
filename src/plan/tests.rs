//! Compiled for tests only (`#[cfg(test)] mod tests;` in the parent module).
//!
//! The unit tests of plan's gates and decisions, one or more per gate (a test
//! that fails when its gate is removed: docs/CONTRIBUTING.md), kept together
//! in one file beside the module they test.

use super::*;
use crate::model::evidence::{FilteredPath, StatusEntry};

#[test]
fn reclaim_order_takes_the_largest_first() {
    assert_eq!(reclaim_order(&[1, 3, 2, 3]), vec![1, 3, 2, 0]);
    assert!(reclaim_order(&[]).is_empty());
}

#[test]
fn the_target_is_met_at_or_above_it() {
    assert!(target_met(10, 10));
    assert!(target_met(11, 10));
    assert!(!target_met(9, 10));
}

fn dir(dev: u64, ino: u64) -> Seen {
    Seen {
        dev,
        ino,
        uid: 7,
        mode: libc::S_IFDIR | 0o700,
        nlink: 2,
    }
}
fn file(dev: u64, ino: u64) -> Seen {
    Seen {
        dev,
        ino,
        uid: 7,
        mode: libc::S_IFREG | 0o600,
        nlink: 1,
    }
}
fn good_path() -> PathEvidence {
    PathEvidence {
        seen: Some(dir(1, 2)),
        canonical: true,
        linked_back: true,
        lock: LockSeen::Unlocked,
        listed: true,
        is_main: false,
        cwd_inside: false,
    }
}

#[test]
fn retention_gate_holds_a_running_or_crashed_record_only() {
    let r = Retention {
        owner: crate::model::record::Owner::parse("agent:x").unwrap(),
        reason: "inspect".into(),
        until: None,
    };
    for s in [State::Active, State::Interrupted] {
        let h = gate_retention(s, Some(&r)).unwrap_err();
        assert_eq!(h.reason, HoldReason::Retained, "{s:?}");
        assert_eq!(gate_retention(s, None), Ok(()), "{s:?} without one");
    }
    // Terminal and retained records are gate 1's to decide.
    for s in [State::Terminal, State::Retained, State::Retiring] {
        assert_eq!(gate_retention(s, Some(&r)), Ok(()), "{s:?}");
    }
}

#[test]
fn codes_are_kebab_case() {
    assert_eq!(HoldReason::ConsumerAlive.code(), "consumer-alive");
    assert_eq!(
        HoldReason::UniqueCommitsUnarchived.code(),
        "unique-commits-unarchived"
    );
}

#[test]
fn only_a_lease_in_use_is_busy_for_an_intent() {
    for r in [
        HoldReason::ConsumerAlive,
        HoldReason::LauncherAlive,
        HoldReason::RetireInProgress,
    ] {
        assert!(r.is_busy(), "{}", r.code());
    }
    // The tree, the evidence or an owner: an intent never waits those out.
    for r in [
        HoldReason::InUse,
        HoldReason::Dirty,
        HoldReason::Untracked,
        HoldReason::Retained,
        HoldReason::LockUnsupported,
        HoldReason::Unprovable,
        HoldReason::NotTerminal,
    ] {
        assert!(!r.is_busy(), "{}", r.code());
    }
}

#[test]
fn state_gate_table() {
    assert_eq!(gate_state(State::Terminal, false), Ok(StateGate::Proceed));
    assert_eq!(gate_state(State::Interrupted, true), Ok(StateGate::Proceed));
    assert_eq!(
        gate_state(State::Active, false),
        Ok(StateGate::ProceedIfFree)
    );
    let reason = |s, alive| gate_state(s, alive).unwrap_err().reason;
    assert_eq!(reason(State::Active, true), HoldReason::LauncherAlive);
    assert_eq!(reason(State::Retained, false), HoldReason::Retained);
    assert_eq!(reason(State::Retiring, false), HoldReason::RetireInProgress);
    assert_eq!(reason(State::Planned, false), HoldReason::NotTerminal);
    assert_eq!(reason(State::Removed, false), HoldReason::NotTerminal);
}

#[test]
fn path_gate_accepts_the_recorded_directory() {
    assert_eq!(gate_path((1, 2), 7, &good_path()), Ok(()));
    // lease's own lock on this record, in this state root, is no hold.
    let mut ours = good_path();
    ours.lock = LockSeen::Ours;
    assert_eq!(gate_path((1, 2), 7, &ours), Ok(()));
}

#[test]
fn a_lock_of_another_lease_names_its_root_and_the_command_to_run_there() {
    let h = gate_lock(&LockSeen::Lease {
        id: "ab".repeat(16),
        root: "/srv/other state".into(),
    })
    .unwrap_err();
    assert_eq!(h.reason, HoldReason::LeasedElsewhere);
    assert!(
        h.detail.contains(&format!(
            "LEASE_HOME='/srv/other state' lease retire {}",
            "ab".repeat(16)
        )),
        "{}",
        h.detail
    );
    let h = gate_lock(&LockSeen::Other("usb disk".into())).unwrap_err();
    assert_eq!(
        (h.reason, h.detail.as_str()),
        (HoldReason::GitLocked, "locked: usb disk")
    );
    assert_eq!(shell_quote("/a/b_c-1.d"), "/a/b_c-1.d");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
    assert_eq!(shell_quote(""), "''");
}

#[test]
fn path_gate_refusals() {
    type Mutate = fn(&mut PathEvidence);
    let cases: Vec<(Mutate, HoldReason)> = vec![
        (|e| e.seen = None, HoldReason::PathIdentity),
        (|e| e.seen = Some(file(1, 2)), HoldReason::PathIdentity),
        (|e| e.seen = Some(dir(1, 3)), HoldReason::PathIdentity),
        (|e| e.seen = Some(dir(9, 2)), HoldReason::PathIdentity),
        (
            |e| e.seen.as_mut().unwrap().uid = 0,
            HoldReason::PathIdentity,
        ),
        (|e| e.canonical = false, HoldReason::PathIdentity),
        (|e| e.linked_back = false, HoldReason::PathIdentity),
        (|e| e.listed = false, HoldReason::NotRegistered),
        (|e| e.is_main = true, HoldReason::ProtectedPath),
        (
            |e| e.lock = LockSeen::Other(String::new()),
            HoldReason::GitLocked,
        ),
        (
            |e| {
                e.lock = LockSeen::Lease {
                    id: "0".repeat(32),
                    root: "/elsewhere".into(),
                }
            },
            HoldReason::LeasedElsewhere,
        ),
        (|e| e.cwd_inside = true, HoldReason::CwdInsideTarget),
    ];
    for (i, (mutate, want)) in cases.into_iter().enumerate() {
        let mut ev = good_path();
        mutate(&mut ev);
        assert_eq!(
            gate_path((1, 2), 7, &ev).unwrap_err().reason,
            want,
            "case {i}"
        );
    }
}

#[test]
fn lease_gate() {
    let f = Some(file(1, 2));
    let ok = gate_lease((1, 2), 7, f, &LockOutcome::Acquired, f, f);
    assert_eq!(ok, Ok(()));
    let r = |before, lock: LockOutcome, fd, name| {
        gate_lease((1, 2), 7, before, &lock, fd, name)
            .unwrap_err()
            .reason
    };
    assert_eq!(r(f, LockOutcome::Busy, f, f), HoldReason::ConsumerAlive);
    assert_eq!(
        r(f, LockOutcome::Error("ENOLCK".into()), f, f),
        HoldReason::LockUnsupported
    );
    assert_eq!(
        r(None, LockOutcome::Acquired, f, f),
        HoldReason::LeaseMissing
    );
    assert_eq!(
        r(f, LockOutcome::Acquired, f, None),
        HoldReason::LeaseMissing
    );
    assert_eq!(
        r(f, LockOutcome::Acquired, Some(file(1, 5)), f),
        HoldReason::LeaseIdentity
    );
    assert_eq!(
        r(f, LockOutcome::Acquired, f, Some(file(1, 5))),
        HoldReason::LeaseIdentity
    );
    let mut two = file(1, 2);
    two.nlink = 2;
    assert_eq!(
        r(f, LockOutcome::Acquired, Some(two), f),
        HoldReason::LeaseIdentity
    );
    let mut open = file(1, 2);
    open.mode = libc::S_IFREG | 0o644;
    assert_eq!(
        r(Some(open), LockOutcome::Acquired, f, f),
        HoldReason::LeaseInsecure
    );
    let mut theirs = file(1, 2);
    theirs.uid = 0;
    assert_eq!(
        r(Some(theirs), LockOutcome::Acquired, f, f),
        HoldReason::LeaseInsecure
    );
    let fifo = Seen {
        mode: libc::S_IFIFO | 0o600,
        ..file(1, 2)
    };
    assert_eq!(
        r(Some(fifo), LockOutcome::Acquired, f, f),
        HoldReason::LeaseIdentity
    );
}

#[test]
fn content_gate_collects_every_reason() {
    let clean = ContentEvidence::default();
    assert_eq!(gate_content(&clean), Ok(()));
    let ev = ContentEvidence {
        status: vec![
            StatusEntry {
                xy: *b" M",
                path: b"a".to_vec(),
            },
            StatusEntry {
                xy: *b"??",
                path: b"b".to_vec(),
            },
            StatusEntry {
                xy: *b"!!",
                path: b".env".to_vec(),
            },
        ],
        hidden: vec![b"c".to_vec()],
        ops: vec!["MERGE_HEAD".into()],
        rebuildable: vec![],
        filtered: vec![],
        provisioned: vec![],
    };
    let reasons: Vec<_> = gate_content(&ev)
        .unwrap_err()
        .into_iter()
        .map(|h| h.reason)
        .collect();
    assert_eq!(
        reasons,
        [
            HoldReason::Dirty,
            HoldReason::Untracked,
            HoldReason::Ignored,
            HoldReason::HiddenIndex,
            HoldReason::OpInProgress
        ]
    );
}

/// A provisioned path still identical to what was provisioned is not
/// work; one that changed is `ignored`, and the detail says so.
#[test]
fn an_unchanged_provisioned_path_is_not_work() {
    let entry = |p: &str| StatusEntry {
        xy: *b"!!",
        path: p.as_bytes().to_vec(),
    };
    let mut ev = ContentEvidence {
        status: vec![entry(".env"), entry("node_modules")],
        provisioned: vec![(b".env".to_vec(), true), (b"node_modules".to_vec(), true)],
        ..ContentEvidence::default()
    };
    assert_eq!(gate_content(&ev), Ok(()));
    ev.provisioned[0].1 = false;
    let h = gate_content(&ev).unwrap_err();
    assert_eq!(h[0].reason, HoldReason::Ignored);
    assert!(
        h[0].detail
            .contains(".env (provisioned at creation, changed since)"),
        "{}",
        h[0].detail
    );
    assert!(!h[0].detail.contains("node_modules"), "{}", h[0].detail);
    ev.provisioned.clear();
    assert_eq!(
        gate_content(&ev).unwrap_err()[0].reason,
        HoldReason::Ignored
    );
}

/// A path that differs only because lease neutralized its filter is
/// `filter-unverifiable`, never `dirty` and never clean; a staged
/// change, a deletion or a path whose trusted driver ran stays `dirty`.
#[test]
fn filtered_paths_that_look_changed_cannot_be_judged() {
    let entry = |xy: &[u8; 2], p: &str| StatusEntry {
        xy: *xy,
        path: p.as_bytes().to_vec(),
    };
    let f = |p: &str, d: &str, trust| FilteredPath {
        path: p.as_bytes().to_vec(),
        driver: d.as_bytes().to_vec(),
        trust,
    };
    let ev = ContentEvidence {
        status: vec![
            entry(b" M", "a.bin"),
            entry(b" M", "b.bin"),
            entry(b"M ", "staged.bin"),
            entry(b" D", "gone.bin"),
            entry(b" M", "ran.bin"),
            entry(b" M", "x.txt"),
            entry(b" M", "plain"),
        ],
        hidden: vec![b"h.bin".to_vec(), b"h.plain".to_vec()],
        filtered: vec![
            f("a.bin", "lfs", FilterTrust::Untrusted),
            f("b.bin", "lfs", FilterTrust::Untrusted),
            f("staged.bin", "lfs", FilterTrust::Untrusted),
            f("gone.bin", "lfs", FilterTrust::Untrusted),
            f("ran.bin", "lfs", FilterTrust::Ran),
            f("x.txt", "x", FilterTrust::Undefined),
            f("h.bin", "lfs", FilterTrust::Untrusted),
        ],
        ..ContentEvidence::default()
    };
    let holds = gate_content(&ev).unwrap_err();
    let by = |r| {
        holds
            .iter()
            .filter(|h| h.reason == r)
            .map(|h| h.detail.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        by(HoldReason::Dirty),
        ["changed: staged.bin, gone.bin, ran.bin, plain"]
    );
    assert_eq!(
        by(HoldReason::HiddenIndex),
        ["edited behind skip-worktree/assume-unchanged: h.plain"]
    );
    let unverifiable = by(HoldReason::FilterUnverifiable);
    assert_eq!(
        unverifiable.len(),
        2,
        "one hold per driver: {unverifiable:?}"
    );
    assert!(unverifiable[0].contains("trusted_filters = [\"lfs\"]"));
    assert!(
        unverifiable[0].ends_with(": a.bin, b.bin, h.bin"),
        "{}",
        unverifiable[0]
    );
    assert!(unverifiable[1].contains("defines neither filter.x.clean nor filter.x.process"));
    assert!(unverifiable[1].ends_with(": x.txt"));
    // Only filtered paths: nothing is dirty, and nothing is clean.
    let only = ContentEvidence {
        status: vec![entry(b" M", "a.bin")],
        filtered: vec![f("a.bin", "lfs", FilterTrust::Untrusted)],
        ..ContentEvidence::default()
    };
    let holds = gate_content(&only).unwrap_err();
    assert_eq!(holds.len(), 1);
    assert_eq!(holds[0].reason, HoldReason::FilterUnverifiable);
}

#[test]
fn protected_paths() {
    use std::path::{Path, PathBuf};
    let p = Protected {
        root: PathBuf::from("/s/worktrees/r-1"),
        common: PathBuf::from("/src/r/.git"),
        state_root: PathBuf::from("/s"),
        home: Some(PathBuf::from("/home/u")),
    };
    assert_eq!(
        gate_protected(Path::new("/s/worktrees/r-1/abc"), &p),
        Ok(())
    );
    for bad in [
        "/",
        "/home/u",
        "/home",
        "/s/worktrees/r-1",
        "/s/worktrees",
        "/s",
        "/src/r/.git",
        "/src/r/.git/worktrees/x",
        "/src/r",
    ] {
        assert_eq!(
            gate_protected(Path::new(bad), &p).unwrap_err().reason,
            HoldReason::ProtectedPath,
            "{bad}"
        );
    }
}

#[test]
fn inventory_gate() {
    assert_eq!(gate_inventory(&Inventory::default(), &[]), Ok(()));
    let inv = Inventory {
        mounts: vec![b"build".to_vec()],
        special: vec![b"fifo".to_vec()],
        unreadable: vec![b"secret".to_vec()],
        nested: vec![b"sub".to_vec(), b"vendor/x".to_vec()],
        not_writable: vec![b"ro".to_vec()],
        ..Inventory::default()
    };
    let reasons: Vec<_> = gate_inventory(&inv, &[b"sub".to_vec()])
        .unwrap_err()
        .into_iter()
        .map(|h| h.reason)
        .collect();
    assert_eq!(
        reasons,
        [
            HoldReason::MountInside,
            HoldReason::SpecialFile,
            HoldReason::Uninventoriable,
            HoldReason::Submodule,
            HoldReason::NestedRepo,
            HoldReason::NotWritable
        ]
    );
    // An immutable or append-only entry alone holds, and with an
    // undeletable directory both share one `not-writable` hold.
    let pinned = Inventory {
        pinned: vec![b"sub/f".to_vec()],
        ..Inventory::default()
    };
    let holds = gate_inventory(&pinned, &[]).unwrap_err();
    assert_eq!(holds.len(), 1);
    assert_eq!(holds[0].reason, HoldReason::NotWritable);
    assert!(holds[0].detail.contains("immutable or append-only entries"));
    assert!(holds[0].detail.contains("sub/f"));
    let both = Inventory {
        not_writable: vec![b"ro".to_vec()],
        ..pinned
    };
    let holds = gate_inventory(&both, &[]).unwrap_err();
    assert_eq!(holds.len(), 1, "{holds:?}");
    assert!(holds[0].detail.contains("ro") && holds[0].detail.contains("sub/f"));
}

#[test]
fn lease_seen_gate() {
    let free = LeaseSeen {
        complete: true,
        ..LeaseSeen::default()
    };
    assert_eq!(gate_lease_seen(&free), Ok(()));
    let reason = |seen: LeaseSeen| gate_lease_seen(&seen).unwrap_err().reason;
    let by_fd = LeaseSeen {
        pids: vec![42],
        ..free.clone()
    };
    assert_eq!(reason(by_fd.clone()), HoldReason::ConsumerAlive);
    assert!(
        gate_lease_seen(&by_fd)
            .unwrap_err()
            .detail
            .contains("pid 42")
    );
    let by_lock = LeaseSeen {
        lock: Some(FlockSeen::Shared),
        ..free.clone()
    };
    assert_eq!(reason(by_lock.clone()), HoldReason::ConsumerAlive);
    assert!(
        gate_lease_seen(&by_lock)
            .unwrap_err()
            .detail
            .contains("/proc/locks")
    );
    let retire = LeaseSeen {
        pids: vec![7],
        lock: Some(FlockSeen::Exclusive),
        ..free.clone()
    };
    assert_eq!(reason(retire), HoldReason::RetireInProgress);
    // A /proc that may hide holders proves nothing about a free lease,
    // but a holder it does show still decides.
    let blind = LeaseSeen {
        complete: false,
        ..free.clone()
    };
    assert_eq!(reason(blind), HoldReason::Unprovable);
    let blind_held = LeaseSeen {
        complete: false,
        ..by_lock
    };
    assert_eq!(reason(blind_held), HoldReason::ConsumerAlive);
    assert!(!free.held() && by_fd.held());
}

#[test]
fn process_gate() {
    assert_eq!(gate_processes(&ProcEvidence::default()), Ok(()));
    let used = ProcEvidence {
        users: vec![(42, "cwd".into())],
        ..Default::default()
    };
    assert_eq!(gate_processes(&used).unwrap_err().reason, HoldReason::InUse);
    let blind = ProcEvidence {
        unaudited: 3,
        traversable: true,
        ..Default::default()
    };
    assert_eq!(gate_processes(&blind), Ok(()), "lenient by default");
    let strict = ProcEvidence {
        strict: true,
        ..blind.clone()
    };
    assert_eq!(
        gate_processes(&strict).unwrap_err().reason,
        HoldReason::Unprovable
    );
    let all_audited = ProcEvidence {
        unaudited: 0,
        ..strict.clone()
    };
    assert_eq!(
        gate_processes(&all_audited),
        Ok(()),
        "strict, and every process was audited"
    );
    let private = ProcEvidence {
        traversable: false,
        ..strict
    };
    assert_eq!(
        gate_processes(&private),
        Ok(()),
        "others cannot be inside a 0700 tree"
    );
}

#[test]
fn rebuildable_outputs_are_exact_paths() {
    let d = vec![b"target".to_vec(), b"web/dist".to_vec()];
    assert!(is_rebuildable(b"target/", &d));
    assert!(is_rebuildable(b"target/debug/app", &d));
    assert!(is_rebuildable(b"web/dist/", &d));
    assert!(!is_rebuildable(b"targets/", &d), "whole components only");
    assert!(!is_rebuildable(b"web/", &d), "a parent is not declared");
    assert!(!is_rebuildable(b".env", &d));
    let ev = ContentEvidence {
        status: vec![
            StatusEntry {
                xy: *b"!!",
                path: b"target/".to_vec(),
            },
            StatusEntry {
                xy: *b"!!",
                path: b".env".to_vec(),
            },
        ],
        rebuildable: d,
        ..ContentEvidence::default()
    };
    assert_eq!(ev.rebuildable_ignored(), vec![b"target".to_vec()]);
    let holds = gate_content(&ev).unwrap_err();
    assert_eq!(holds.len(), 1);
    assert!(holds[0].detail.contains(".env") && !holds[0].detail.contains("target"));
}

#[test]
fn branch_cleanup_gates() {
    assert!(gate_branch_free("feat", &["main".into()]).is_ok());
    let h = gate_branch_free("feat", &["main".into(), "feat".into()]).unwrap_err();
    assert_eq!(h.reason, HoldReason::BranchCheckedOut);
    assert!(gate_branch_proven("feat", "abc", &[]).is_ok());
    let h = gate_branch_proven("feat", "abc", &["abc".into()]).unwrap_err();
    assert_eq!(h.reason, HoldReason::BranchUnproven);
}

#[test]
fn teardown_runs_once_and_again_only_after_a_failure_or_a_crash() {
    assert_eq!(teardown_due(false, None), None);
    assert_eq!(teardown_due(false, Some((false, false))), None);
    assert_eq!(teardown_due(true, None), Some(false));
    assert_eq!(teardown_due(true, Some((true, true))), None, "once");
    assert_eq!(
        teardown_due(true, Some((true, false))),
        Some(false),
        "failed: again"
    );
    assert_eq!(
        teardown_due(true, Some((false, false))),
        Some(true),
        "crashed: again, said"
    );
    let seen = |code, signal, timed_out| TeardownSeen {
        command: "down".into(),
        code,
        signal,
        timed_out,
        stderr: "boom\n".into(),
        spawn_error: None,
    };
    assert!(gate_teardown(&seen(Some(0), None, false)).is_ok());
    for t in [
        seen(Some(3), None, false),
        seen(None, Some(9), false),
        seen(None, Some(9), true),
        seen(None, None, false),
    ] {
        let h = gate_teardown(&t).unwrap_err();
        assert_eq!(h.reason, HoldReason::TeardownFailed);
        assert!(
            h.detail.contains("`down`") && h.detail.contains("boom"),
            "{}",
            h.detail
        );
    }
    let mut t = seen(None, None, false);
    t.spawn_error = Some("no such file".into());
    assert!(
        gate_teardown(&t)
            .unwrap_err()
            .detail
            .contains("no such file")
    );
}

#[test]
fn only_ignored_included_files_are_copied() {
    let b = |s: &str| s.as_bytes().to_vec();
    let ignored = vec![b(".env"), b("node_modules/a/x.js"), b("secret.key")];
    let included = vec![b("node_modules/a/x.js"), b(".env"), b("README.local")];
    assert_eq!(
        provisioned_files(&ignored, &included, &["node_modules".into()]),
        vec![b(".env")],
        "README.local is not ignored; node_modules is symlinked"
    );
}

#[test]
fn a_new_record_gets_the_lowest_slot_nobody_holds() {
    assert_eq!(lowest_free_slot(&[]), 0);
    assert_eq!(lowest_free_slot(&[0, 1, 2]), 3);
    assert_eq!(lowest_free_slot(&[1, 0, 3]), 2);
    assert_eq!(lowest_free_slot(&[5]), 0);
}

#[test]
fn only_the_branch_lease_named_itself_is_its_own() {
    let id = "0123abcd".to_string() + &"e".repeat(24);
    assert!(lease_named_branch(Some("lease/0123abcd"), &id, true));
    // adopted, user-named, another record's name, detached
    assert!(!lease_named_branch(Some("lease/0123abcd"), &id, false));
    assert!(!lease_named_branch(Some("feature"), &id, true));
    assert!(!lease_named_branch(Some("lease/0123abce"), &id, true));
    assert!(!lease_named_branch(
        Some("lease/0123abcd-restored-x"),
        &id,
        true
    ));
    assert!(!lease_named_branch(Some("x/lease/0123abcd"), &id, true));
    assert!(!lease_named_branch(None, &id, true));
    assert!(!lease_named_branch(Some("lease/"), "", true));
}

#[test]
fn the_local_durable_ref_is_the_main_worktree_s_branch_never_the_own() {
    assert_eq!(
        local_durable_candidates(Some("refs/heads/trunk"), Some("lease/0123abcd")),
        ["refs/heads/trunk", "refs/heads/main", "refs/heads/master"]
    );
    assert_eq!(
        local_durable_candidates(None, None),
        ["refs/heads/main", "refs/heads/master"]
    );
    // the worktree's own branch never proves itself durable
    assert_eq!(
        local_durable_candidates(Some("refs/heads/main"), Some("main")),
        ["refs/heads/master"]
    );
    assert_eq!(
        local_durable_candidates(Some("refs/remotes/o/x"), Some("master")),
        ["refs/heads/main"]
    );
    assert_eq!(durable_kind("refs/heads/main"), "local");
    assert_eq!(durable_kind("refs/remotes/origin/HEAD"), "remote");
}

#[test]
fn archive_drop_gate() {
    assert!(gate_archive_droppable(&[]).is_ok());
    let h = gate_archive_droppable(&["abc".into()]).unwrap_err();
    assert_eq!(h.reason, HoldReason::ArchiveUnreachable);
    assert!(h.detail.contains("abc"));
}

#[test]
fn readback_must_match_exactly() {
    let mut pushed = std::collections::BTreeMap::new();
    pushed.insert("refs/lease/archive/x/head".to_string(), "aaa".to_string());
    let ok = vec![("aaa".to_string(), "refs/lease/archive/x/head".to_string())];
    assert!(check_readback(&pushed, &ok).is_ok());
    let moved = vec![("bbb".to_string(), "refs/lease/archive/x/head".to_string())];
    assert_eq!(
        check_readback(&pushed, &moved).unwrap_err().reason,
        HoldReason::ArchivePushFailed
    );
    assert!(check_readback(&pushed, &[]).is_err(), "missing ref");
    let other = vec![("aaa".to_string(), "refs/lease/archive/y/head".to_string())];
    assert!(check_readback(&pushed, &other).is_err(), "another ref");
}

#[test]
fn a_whole_ignored_directory_is_provisioned_only_if_every_file_in_it_was() {
    let st = |p: &str| StatusEntry {
        xy: *b"!!",
        path: p.as_bytes().to_vec(),
    };
    let f = |p: &str| (p.as_bytes().to_vec(), 1u64);
    let prov = |p: &str, u: bool| (p.as_bytes().to_vec(), u);
    let status = vec![st("big/"), st("other/"), st(".env"), st("empty/")];
    let files = vec![
        f("big/a.bin"),
        f("big/sub/b.bin"),
        f("other/x"),
        f("other/y"),
        f("bigger/z"),
    ];
    // Every file of big/ provisioned and unchanged; other/ has one that
    // was not provisioned; empty/ has no file at all; bigger/ is not below big/.
    let provisioned = vec![
        prov("big/a.bin", true),
        prov("big/sub/b.bin", true),
        prov("other/x", true),
        prov(".env", true),
    ];
    assert_eq!(
        provisioned_dirs(&status, &files, &provisioned),
        vec![(b"big/".to_vec(), true)]
    );
    // One changed since: the directory is provisioned, and changed.
    let mut changed = provisioned.clone();
    changed[1].1 = false;
    assert_eq!(
        provisioned_dirs(&status, &files, &changed),
        vec![(b"big/".to_vec(), false)]
    );
    // Nothing provisioned: nothing to judge.
    assert!(provisioned_dirs(&status, &files, &[]).is_empty());
    // The gate: big/ is not work, other/ still holds ignored.
    let mut ev = ContentEvidence {
        status: status[..2].to_vec(),
        provisioned,
        ..Default::default()
    };
    let dirs = provisioned_dirs(&ev.status, &files, &ev.provisioned);
    ev.provisioned.extend(dirs);
    let holds = gate_content(&ev).unwrap_err();
    assert_eq!(holds.len(), 1);
    assert!(holds[0].detail.contains("other/"), "{:?}", holds[0].detail);
    assert!(!holds[0].detail.contains("big/"), "{:?}", holds[0].detail);
}

#[test]
fn gate_7_keeps_gate_5_s_status_only_for_a_settled_unchanged_tree() {
    let started: i128 = 1_000_000_000_000;
    let old = started - 2 * RACY_NS;
    let e = |ino: u64| EntryStat {
        dev: 1,
        ino,
        mode: 0o100644,
        size: 10,
        mtime_ns: old,
        ctime_ns: old,
    };
    let first = vec![e(1), e(2), e(3)];
    assert!(tree_unchanged(&first, &first.clone(), started), "control");
    assert!(tree_unchanged(&[], &[], started), "an empty list");
    // Anything that differs asks for the status again.
    let changes: [fn(&mut EntryStat); 6] = [
        |x| x.dev += 1,
        |x| x.ino += 1,
        |x| x.mode ^= 0o100,
        |x| x.size += 1,
        |x| x.mtime_ns += 1,
        |x| x.ctime_ns += 1,
    ];
    for change in changes {
        let mut second = first.clone();
        change(&mut second[1]);
        assert!(!tree_unchanged(&first, &second, started), "{second:?}");
    }
    let mut more = first.clone();
    more.push(e(4));
    assert!(!tree_unchanged(&first, &more, started), "an entry more");
    assert!(
        !tree_unchanged(&first, &first[..2], started),
        "an entry less"
    );
    // An entry changed within the racy margin of the first walk proves
    // nothing, even when both walks agree (its times may not have moved).
    for racy in [
        EntryStat {
            ctime_ns: started - RACY_NS,
            ..e(2)
        },
        EntryStat {
            mtime_ns: started - RACY_NS + 1,
            ..e(2)
        },
        EntryStat {
            mtime_ns: started + 1_000_000_000,
            ..e(2)
        },
    ] {
        let v = vec![e(1), racy, e(3)];
        assert!(!tree_unchanged(&v, &v.clone(), started), "{racy:?}");
    }
}

#[test]
fn gate_7_compares_times_only_on_local_filesystems_with_sub_second_times() {
    let e = |mtime_ns: i128, ctime_ns: i128| EntryStat {
        dev: 1,
        ino: 2,
        mode: 0o100644,
        size: 3,
        mtime_ns,
        ctime_ns,
    };
    let fine = [
        e(1_000_000_000, 2_000_000_000),
        e(5_000_000_123, 5_000_000_123),
    ];
    let whole = [
        e(1_000_000_000, 2_000_000_000),
        e(5_000_000_000, 5_000_000_000),
    ];
    for m in STAT_COMPARE_FS {
        assert!(stat_times_trusted(Some(m), &fine), "{m:#x}");
        assert!(
            !stat_times_trusted(Some(m), &whole),
            "{m:#x}: whole seconds"
        );
    }
    // NFS, FUSE, an unknown filesystem, none read: never.
    for m in [Some(0x6969), Some(0x6573_5546), Some(0x1234), None] {
        assert!(!stat_times_trusted(m, &fine), "{m:?}");
    }
    assert!(
        !stat_times_trusted(Some(0x0102_1994), &[]),
        "nothing walked"
    );
}
