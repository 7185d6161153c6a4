//! Compiled for tests only (`#[cfg(test)] mod tests;` in the parent module).
//!
//! The unit tests of repair's pure parts (gitdir names, stale paths, the
//! transitions to removed).

use super::*;
use std::os::unix::fs::MetadataExt;

#[test]
fn names_reads_absolute_and_relative_gitdir_values() {
    let t = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(t.path()).unwrap();
    let admin = base.join("repo/.git/worktrees/w");
    fs::create_dir_all(&admin).unwrap();
    let (dotgit, other) = (base.join("wt/.git"), base.join("other/.git"));
    assert!(!names(&admin, &dotgit), "no gitdir file names nothing");
    fs::write(admin.join("gitdir"), format!("{}\n", dotgit.display())).unwrap();
    assert!(names(&admin, &dotgit));
    assert!(!names(&admin, &other));
    // git 2.48's worktree.useRelativePaths: relative to the admin directory.
    fs::write(admin.join("gitdir"), "../../../../wt/.git\n").unwrap();
    assert!(names(&admin, &dotgit));
    assert!(!names(&admin, &other));
}

#[test]
fn spellings_add_the_canonical_parent_only_when_it_differs() {
    let t = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(t.path()).unwrap();
    fs::create_dir(base.join("real")).unwrap();
    std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
    assert_eq!(spellings(&base.join("real/wt")), [base.join("real/wt")]);
    assert_eq!(
        spellings(&base.join("link/wt")),
        [base.join("link/wt"), base.join("real/wt")]
    );
    assert_eq!(
        spellings(&base.join("none/wt")),
        [base.join("none/wt")],
        "a missing parent has no other spelling"
    );
}

#[test]
fn paths_to_removed_are_legal() {
    for from in [
        State::Planned,
        State::Active,
        State::Terminal,
        State::Interrupted,
        State::Retiring,
    ] {
        let mut s = from;
        for to in path_to_removed(from) {
            assert!(s.can_become(*to), "{from:?}: {s:?} -> {to:?}");
            s = *to;
        }
        assert_eq!(s, State::Removed);
    }
    assert!(path_to_removed(State::Retained).is_empty());
}

fn record(state: State) -> Record {
    let mut r = crate::model::record::sample_record();
    r.state = state;
    r
}

#[test]
fn a_record_is_finished_only_if_nobody_keeps_runs_or_holds_it() {
    let reason = |r: &Record| check_record(r).err().map(|h| h.reason);
    let kept = |state| {
        let mut r = record(state);
        r.retention = Some(crate::model::record::Retention {
            owner: crate::model::record::Owner::parse("human:ann").unwrap(),
            reason: "review".into(),
            until: None,
        });
        r
    };
    assert_eq!(reason(&record(State::Retained)), Some(HoldReason::Retained));
    assert_eq!(reason(&kept(State::Active)), Some(HoldReason::Retained));
    assert_eq!(
        reason(&kept(State::Interrupted)),
        Some(HoldReason::Retained)
    );
    // A retention left on a finished record keeps nothing by itself.
    assert_eq!(reason(&kept(State::Terminal)), None);
    assert_eq!(reason(&record(State::Active)), None);
    let me = std::process::id();
    let mut running = record(State::Active);
    running.sessions.push(crate::model::record::Session {
        pid: me,
        start_time: crate::os::process::start_time(me).unwrap(),
        started_at: String::new(),
        ended_at: None,
        outcome: None,
        bound: None,
    });
    assert_eq!(reason(&running), Some(HoldReason::LauncherAlive));
    running.sessions[0].ended_at = Some(String::new());
    assert_eq!(reason(&running), None);
    // A process holding the lease: a consumer, or the retire itself.
    let lease = tempfile::NamedTempFile::new().unwrap();
    let m = lease.as_file().metadata().unwrap();
    let mut holder = std::process::Command::new("sleep") // forbid: allow (a test lease holder, not git)
        .arg("600")
        .stdin(lease.reopen().unwrap())
        .spawn()
        .unwrap();
    let reasons: Vec<_> = [State::Active, State::Retiring]
        .into_iter()
        .map(|state| {
            let mut r = record(state);
            r.lease = Some(crate::model::record::FileId {
                path: lease.path().to_str().unwrap().into(),
                dev: m.dev(),
                ino: m.ino(),
                btime: None,
            });
            reason(&r)
        })
        .collect();
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(
        reasons,
        [
            Some(HoldReason::ConsumerAlive),
            Some(HoldReason::RetireInProgress)
        ]
    );
}

#[test]
fn only_a_path_that_is_certainly_missing_is_stale() {
    let t = tempfile::tempdir().unwrap();
    assert!(check_missing(&t.path().join("gone")).is_ok());
    let occupied = check_missing(t.path()).unwrap_err();
    assert_eq!(occupied.reason, HoldReason::PathOccupied);
    // Below a file, lstat fails with ENOTDIR: not proof of absence.
    std::fs::write(t.path().join("file"), "").unwrap();
    let unsure = check_missing(&t.path().join("file/wt")).unwrap_err();
    assert_eq!(unsure.reason, HoldReason::Unprovable);
}

#[test]
fn absolute_refuses_dotdot_only_when_absolute() {
    assert!(absolute(Path::new("/a/../b")).is_err());
    assert_eq!(absolute(Path::new("/a/./b/")).unwrap(), Path::new("/a/b"));
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(
        absolute(Path::new("../x")).unwrap(),
        cwd.parent().unwrap().join("x")
    );
    assert_eq!(
        lexical(Path::new("/a/w/../../x/.git")),
        Path::new("/x/.git")
    );
}
