//! The reconciler's completions of what a crash cut short (SPEC "Crash
//! recovery"): a creation that never finished (`planned`), a removal that
//! did (`retiring` with the worktree gone), a retire that stopped before
//! removing (`retiring` with the worktree intact), and lease's git lock
//! migrated to the current reason format.

use super::{Found, ReapDisposition, ReapItem, Reaper, found};
use crate::error::{Error, Result};
use crate::git::{self};
use crate::model::reason::{Hold, HoldReason};
use crate::model::record::{FileId, Record, State, Tombstone};
use crate::model::report::TargetReport;
use crate::ops::removal::{LeaseProof, remove_record};
use crate::os::atomic::free_bytes;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

impl Reaper<'_> {
    /// Puts back git's lock lease keeps on the worktree of a record that is
    /// not `removed`, when it has none (SPEC "A lease every tool can see"):
    /// a record made by an older lease, or a retire that stopped between
    /// taking the lock off and the removal. A migration: nothing is ever
    /// removed for lacking the lock. Only the recorded directory (device and
    /// inode), registered and unlocked, is locked, under the record's lock
    /// and only while the record is not `retiring` or `removed` (a retire
    /// takes the lock off right before its removal). A dry run says it
    /// would. A failure is the item's error.
    pub(super) fn migrate_lock(&self, rec: &Record, item: &mut ReapItem) {
        if let Err(e) = self.try_migrate_lock(rec, item) {
            item.error = Some(format!("cannot put git's lock back on the worktree: {e}"));
        }
    }

    pub(super) fn try_migrate_lock(&self, rec: &Record, item: &mut ReapItem) -> Result<()> {
        let Some(wt) = &rec.worktree else {
            return Ok(());
        };
        let path = wt.path();
        let repo = Path::new(&rec.repo);
        if found(repo)? != Found::Dir
            || crate::os::fs::lstat(&path).map(|s| (s.dev, s.ino)) != Some(wt.id())
        {
            return Ok(());
        }
        let rg = self.git.repo(repo)?;
        let bytes = path.as_os_str().as_bytes();
        let unlocked = git::ops::worktrees(&rg, repo)?
            .iter()
            .skip(1)
            .any(|e| e.path == bytes && e.locked.is_none());
        if !unlocked {
            return Ok(());
        }
        if !self.apply {
            item.detail.push(
                "git's lock lease keeps on the worktree is missing: would put it back".into(),
            );
            return Ok(());
        }
        let reason = git::admin::lock_reason(&rec.id, self.reg.root().path());
        let locked_file = crate::git::admin::linked_admin(repo, &path).map(|a| a.join("locked"));
        let added = self.reg.update(&rec.id, |r| {
            // Under the record's lock: a retire that turned it `retiring`
            // may have taken the lock off; one that refused may have just
            // put it back.
            if matches!(r.state, State::Retiring | State::Removed)
                || locked_file
                    .as_ref()
                    .is_none_or(|l| fs::symlink_metadata(l).is_ok())
            {
                return Ok(false);
            }
            git::ops::worktree_lock(&rg, repo, &path, &reason)?;
            r.audit(
                "lock-restored",
                vec![],
                vec![format!("git worktree lock --reason '{reason}'")],
            );
            Ok(true)
        })?;
        if added {
            item.detail.push(
                "put back git's lock lease keeps on the worktree (it had none: made by an older lease, or a retire stopped before removal)"
                    .into(),
            );
        }
        Ok(())
    }

    /// Returns whether `path` is a linked worktree of `repo` by `git worktree
    /// list --porcelain -z`; `None` if the repository is gone.
    pub(super) fn registered(&self, repo: &str, path: &Path) -> Result<Option<bool>> {
        let repo = Path::new(repo);
        if found(repo)? == Found::Absent {
            return Ok(None);
        }
        let rg = self.git.repo(repo)?;
        let out = git::ops::worktree_list(&rg, repo)?;
        let bytes = path.as_os_str().as_bytes();
        Ok(Some(
            git::parse::parse_worktrees(&out)
                .iter()
                .skip(1)
                .any(|e| e.path == bytes),
        ))
    }

    pub(super) fn planned(&self, rec: &Record, item: &mut ReapItem) -> Result<()> {
        if let Some(s) = rec
            .sessions
            .iter()
            .find(|s| s.launcher_alive(crate::os::process::is_alive))
        {
            item.hold(Hold::new(
                HoldReason::LauncherAlive,
                format!(
                    "its creator, `lease exec` pid {}, is still setting up",
                    s.pid
                ),
            ));
            return Ok(());
        }
        let Some(path) = rec.expected_worktree() else {
            // An adoption that never turned active: lease created no worktree.
            return self.finish_nothing_created(rec, item, "an adoption that never started");
        };
        let registered = self.registered(&rec.repo, &path)?;
        let shown = path.display();
        match (found(&path)?, registered) {
            (Found::Absent, Some(false) | None) => {
                self.finish_nothing_created(rec, item, "`git worktree add` never happened")
            }
            (Found::Dir, Some(true)) => {
                if !self.apply {
                    item.disposition = ReapDisposition::WouldFinish;
                    item.detail.push(format!(
                        "its creator is gone and `{shown}` exists and is registered: would record interrupted, then run the retire gates"
                    ));
                    return Ok(());
                }
                let s = crate::os::fs::lstat(&path).ok_or_else(|| {
                    Error::Environment(format!("`{shown}` vanished while reaping"))
                })?;
                let btime = crate::os::fs::birth(&fs::symlink_metadata(&path).ok());
                let wt = FileId::new(&path, s.dev, s.ino, btime)?;
                let moved = self.reg.update(&rec.id, |r| {
                    if r.state != State::Planned
                        || r.any_launcher_alive(crate::os::process::is_alive)
                    {
                        return Ok(false);
                    }
                    r.worktree = Some(wt);
                    r.set_state(State::Interrupted)?;
                    Ok(true)
                })?;
                if !moved {
                    item.hold(Hold::new(
                        HoldReason::RetireInProgress,
                        "the record changed while reaping",
                    ));
                    return Ok(());
                }
                item.detail
                    .push("its creator is gone: recorded interrupted".to_string());
                let now = self.reg.get(&rec.id)?;
                self.migrate_lock(&now, item);
                self.candidate(&now, item);
                Ok(())
            }
            (Found::Absent, Some(true)) => {
                item.hold(Hold::new(
                    HoldReason::PathIdentity,
                    format!("`{shown}` is registered but its directory is missing"),
                ));
                item.next = Some(format!(
                    "`lease repair {shown}` removes that one registration"
                ));
                Ok(())
            }
            (Found::Dir, Some(false)) => {
                item.hold(Hold::new(
                    HoldReason::NotRegistered,
                    format!(
                        "`{shown}` exists but `git worktree list` does not name it; inspect it by hand"
                    ),
                ));
                Ok(())
            }
            (_, None) => {
                item.hold(Hold::new(
                    HoldReason::RepoMissing,
                    format!("repository `{}` is gone and `{shown}` exists", rec.repo),
                ));
                Ok(())
            }
            (Found::NotDir, _) => {
                item.hold(Hold::new(
                    HoldReason::PathIdentity,
                    format!("`{shown}` is not a directory"),
                ));
                Ok(())
            }
        }
    }

    /// `planned -> removed` with a tombstone saying nothing was created. A
    /// recorded lease file is unlinked under its exclusive lock.
    pub(super) fn finish_nothing_created(
        &self,
        rec: &Record,
        item: &mut ReapItem,
        why: &str,
    ) -> Result<()> {
        if !self.apply {
            item.disposition = ReapDisposition::WouldRemove;
            item.detail.push(format!(
                "its creator is gone and nothing was created ({why}): would record removed"
            ));
            return Ok(());
        }
        let lock = match &rec.lease {
            None => None,
            Some(l) => match crate::os::lease::try_exclusive_checked(l, rec.uid) {
                Ok(f) => Some(f),
                Err(h) if h.reason == HoldReason::LeaseMissing => None,
                Err(h) => {
                    item.hold(h);
                    return Ok(());
                }
            },
        };
        let tomb = Tombstone {
            path: rec
                .expected_worktree()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            id: rec.id.clone(),
            removed_at: crate::model::fmt::now(),
            bytes_reclaimed: 0,
            free_before: 0,
            free_after: 0,
            evidence: serde_json::json!({
                "nothing_created": why,
                "finished_by": "lease reap",
            }),
            branch: None,
        };
        // The lease file goes under the exclusive lock, which closes with
        // `lock`.
        let proof = lock
            .as_ref()
            .map_or(LeaseProof::Unproven, LeaseProof::Exclusive);
        let moved = remove_record(&self.reg, &rec.id, tomb, proof, |r| {
            Ok(r.state == State::Planned && !r.any_launcher_alive(crate::os::process::is_alive))
        })?;
        if !moved {
            item.hold(Hold::new(
                HoldReason::RetireInProgress,
                "the record changed while reaping",
            ));
            return Ok(());
        }
        drop(lock);
        item.disposition = ReapDisposition::Removed;
        item.detail.push(format!(
            "its creator is gone and nothing was created ({why}): recorded removed"
        ));
        Ok(())
    }

    /// Applies `f` to the record if it is still `retiring`, and returns
    /// whether it did. A retire that finished between the scan and now (it
    /// removed the worktree and unlinked the lease file) leaves the record
    /// `removed`: the item is then held `retire-in-progress`, and nothing is
    /// changed.
    /// Completes the removal of a `retiring` record whose worktree and
    /// registration are gone ([`remove_record`]), unlinking its lease file
    /// while `lock` (the reaper's exclusive flock of it) is held; holds
    /// `retire-in-progress` and writes nothing if the record is no longer
    /// `retiring`.
    pub(super) fn finish_removal(
        &self,
        rec: &Record,
        item: &mut ReapItem,
        tomb: Tombstone,
        lock: Option<&fs::File>,
    ) -> Result<bool> {
        let mut now = None;
        let proof = lock.map_or(LeaseProof::Unproven, LeaseProof::Exclusive);
        let moved = remove_record(&self.reg, &rec.id, tomb, proof, |r| {
            if r.state != State::Retiring {
                now = Some(r.state);
                return Ok(false);
            }
            Ok(true)
        })?;
        if let Some(now) = now {
            item.hold(Hold::new(
                HoldReason::RetireInProgress,
                format!("the record changed while reaping: it is {} now", now.name()),
            ));
        }
        Ok(moved)
    }

    pub(super) fn still_retiring(
        &self,
        rec: &Record,
        item: &mut ReapItem,
        f: impl FnOnce(&mut Record) -> Result<()>,
    ) -> Result<bool> {
        let moved = self.reg.update(&rec.id, |r| {
            if r.state != State::Retiring {
                return Ok(Some(r.state));
            }
            f(r).map(|()| None)
        })?;
        if let Some(now) = moved {
            item.hold(Hold::new(
                HoldReason::RetireInProgress,
                format!("the record changed while reaping: it is {} now", now.name()),
            ));
        }
        Ok(moved.is_none())
    }

    /// Resumes a retire that did not finish. A running retire holds the lease
    /// exclusively, so it is never disturbed.
    pub(super) fn retiring(&self, rec: &Record, item: &mut ReapItem) -> Result<()> {
        crate::os::fault::point("reap-retiring");
        let Some(wt) = &rec.worktree else {
            item.hold(Hold::new(
                HoldReason::PathIdentity,
                "the record has no worktree",
            ));
            return Ok(());
        };
        let path = wt.path();
        let shown = path.display();
        let mut lease_missing = false;
        let lock = match &rec.lease {
            None => {
                lease_missing = true;
                None
            }
            // A dry run never locks: it checks the lease file's identity as
            // the apply's gate 3 does (open_checked, closed at once), then who
            // has it open (only while it exists: a deleted file's inode
            // number may already name another file).
            Some(l) if !self.apply => match crate::os::lease::open_checked(l, rec.uid) {
                Err(h) if h.reason == HoldReason::LeaseMissing => {
                    lease_missing = true;
                    None
                }
                Err(h) => {
                    item.hold(h);
                    return Ok(());
                }
                Ok(_) => {
                    let seen = crate::os::procfs::lease_seen(&l.path(), l.id());
                    if seen.held() {
                        item.hold(Hold::new(
                            HoldReason::RetireInProgress,
                            format!(
                                "{} has the lease open or locked: a retire may be running",
                                seen.describe()
                            ),
                        ));
                        return Ok(());
                    }
                    None
                }
            },
            Some(l) => match crate::os::lease::try_exclusive_checked(l, rec.uid) {
                Ok(f) => Some(f),
                Err(h) if h.reason == HoldReason::ConsumerAlive => {
                    item.hold(Hold::new(
                        HoldReason::RetireInProgress,
                        format!("the lease is locked: a retire is running ({})", h.detail),
                    ));
                    return Ok(());
                }
                Err(h) if h.reason == HoldReason::LeaseMissing => {
                    lease_missing = true;
                    None
                }
                Err(h) => {
                    item.hold(h);
                    return Ok(());
                }
            },
        };
        let registered = self.registered(&rec.repo, &path)?;
        match (found(&path)?, registered) {
            (Found::Absent, Some(false) | None) => {
                if !self.apply {
                    item.disposition = ReapDisposition::WouldRemove;
                    item.detail.push(format!(
                        "the removal of `{shown}` finished before a crash: would complete the tombstone and record removed"
                    ));
                    return Ok(());
                }
                let tomb = Tombstone {
                    path: wt.path.clone(),
                    id: rec.id.clone(),
                    removed_at: crate::model::fmt::now(),
                    bytes_reclaimed: 0,
                    free_before: 0,
                    free_after: free_bytes(&rec.root.path()),
                    evidence: serde_json::json!({
                        "finished_by": "lease reap",
                        "found": "the directory and its registration were already gone; bytes reclaimed unknown",
                        "head": rec.outcome.as_ref().and_then(|o| o.head.clone()),
                        "archive": rec.archive.as_ref().map(|a| a.location.clone()),
                        "lease_missing": lease_missing,
                    }),
                    branch: None,
                };
                if !self.finish_removal(rec, item, tomb.clone(), lock.as_ref())? {
                    return Ok(());
                }
                drop(lock);
                item.disposition = ReapDisposition::Removed;
                item.detail.push(format!(
                    "the removal of `{shown}` finished before a crash: tombstone completed"
                ));
                let mut t = TargetReport::new(
                    Some(rec.id.clone()),
                    Some(wt.path.clone()),
                    crate::model::reason::Disposition::Removed,
                );
                t.tombstone = Some(tomb);
                item.retire = Some(t);
                Ok(())
            }
            (Found::Absent, Some(true)) => {
                item.hold(Hold::new(
                    HoldReason::PathIdentity,
                    format!("`{shown}` is gone but still registered: the removal stopped halfway"),
                ));
                item.next = Some(format!(
                    "`lease repair {shown}` removes that one registration and records the removal"
                ));
                Ok(())
            }
            (Found::Dir, _) if lease_missing => {
                item.hold(Hold::new(
                    HoldReason::LeaseMissing,
                    format!("`{shown}` is still there but its lease file is gone"),
                ));
                Ok(())
            }
            (Found::Dir, _) => {
                if !self.apply {
                    item.disposition = ReapDisposition::WouldFinish;
                    item.detail.push(format!(
                        "a retire stopped before removing `{shown}`: would return it to terminal and run the retire gates again"
                    ));
                    return Ok(());
                }
                if !self.still_retiring(rec, item, |r| Ok(r.set_state(State::Terminal)?))? {
                    return Ok(());
                }
                item.detail.push(
                    "a retire stopped before removal: returned to terminal, gates run again".into(),
                );
                let now = self.reg.get(&rec.id)?;
                // Under the exclusive lease still: no retire runs now.
                self.migrate_lock(&now, item);
                drop(lock);
                self.candidate(&now, item);
                Ok(())
            }
            (Found::NotDir, _) => {
                item.hold(Hold::new(
                    HoldReason::PathIdentity,
                    format!("`{shown}` is no longer a directory"),
                ));
                Ok(())
            }
        }
    }
}
