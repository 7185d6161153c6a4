//! Compiled for tests only (`#[cfg(test)] mod tests;` in the parent module).
//!
//! The unit tests of the reaper's pure parts (what a path is, retention
//! ends, free space per filesystem).

use super::*;

#[test]
fn found_tells_a_directory_from_anything_else_and_absence_from_an_error() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("dir");
    let file = base.path().join("file");
    let link = base.path().join("link");
    fs::create_dir(&dir).unwrap();
    fs::write(&file, b"x").unwrap();
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    assert_eq!(found(&dir).unwrap(), Found::Dir);
    assert_eq!(found(&file).unwrap(), Found::NotDir);
    // A symlink to a directory is not one: lstat, never following.
    assert_eq!(found(&link).unwrap(), Found::NotDir);
    assert_eq!(found(&base.path().join("none")).unwrap(), Found::Absent);
    // A name below a file gives ENOTDIR: no proof of absence.
    assert!(found(&file.join("below")).is_err());
}

#[test]
fn until_says_when_a_retention_ends_or_ended() {
    assert_eq!(
        until(Some("2026-12-01T00:00:00Z"), false),
        " until 2026-12-01T00:00:00Z"
    );
    assert_eq!(
        until(Some("2026-12-01T00:00:00Z"), true),
        ", expired at 2026-12-01T00:00:00Z"
    );
    assert_eq!(until(None, true), "");
}

#[test]
fn free_space_reads_each_filesystem_once_and_skips_removed_records() {
    let base = tempfile::tempdir().unwrap();
    let root = StateRoot::at(
        base.path().join("state"),
        &std::sync::Arc::new(crate::policy::defaults()),
    );
    fs::create_dir_all(root.worktrees()).unwrap();
    // A record whose root is on another filesystem (procfs) adds it.
    let mut rec = crate::model::record::sample_record();
    rec.root.path = "/proc".into();
    rec.state = State::Terminal;
    let live = [Loaded::Ok(Box::new(rec.clone()))];
    let paths = |v: Vec<(PathBuf, u64)>| v.into_iter().map(|(p, _)| p).collect::<Vec<_>>();
    let got = free_space(&root, &live);
    assert_eq!(
        paths(got.clone()),
        [root.path().to_path_buf(), PathBuf::from("/proc")],
        "the state root's filesystem once (its worktree root shares it), then the record's"
    );
    assert!(got[0].1 > 0, "free bytes of a writable directory: {got:?}");
    rec.state = State::Removed;
    let removed = [Loaded::Ok(Box::new(rec))];
    assert_eq!(
        paths(free_space(&root, &removed)),
        [root.path().to_path_buf()],
        "a removed record's root is not read"
    );
}
