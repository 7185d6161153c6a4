//! `exec --adopt PATH` of a worktree that already has a record: a new
//! session in it without listing git's worktrees or scanning the registry.
//!
//! # Theory of operation
//! lease locks every worktree it records with git's own lock (SPEC "A lease
//! every tool can see"), whose reason names the record and the state root:
//! `<admin>/locked` holds `lease <id> <state root> ...`. From `PATH`:
//! 1. the canonical path, and its common git dir through the `.git` file
//!    and the admin directory's `gitdir` pointing back (the registration
//!    `git worktree list` would show), every part owned by this user;
//! 2. git's lock, read as a file: it must name this state root;
//! 3. that one record, read and written once under its lock: it must name
//!    this worktree by path, device and inode, else nothing is written and
//!    the full adopt runs (which lists git's worktrees and scans every
//!    record, and says what is wrong).
//!
//! The lock is never trusted by itself: it only says which record to read,
//! and the record decides. Nothing here is destructive.

use std::path::{Path, PathBuf};

use crate::store::registry::Registry;

/// The record id and canonical worktree path git's lock on `path` names in
/// this state root; `None` sends the caller to the full adopt (no lock, a
/// lock of another tool or state root, anything unreadable).
pub(super) fn locked_record(reg: &Registry, path: &Path) -> Option<(String, PathBuf)> {
    let wt = std::fs::canonicalize(path).ok()?;
    let common = crate::git::libgit2::common_of_linked(&wt)?;
    let admin = crate::git::admin::linked_admin(&common, &wt)?;
    let reason = crate::os::fs::read_small(&admin.join("locked"))?;
    let (id, root) = crate::git::admin::parse_lock_reason(std::str::from_utf8(&reason).ok()?)?;
    (Path::new(&root) == reg.root().path()).then_some((id, wt))
}
