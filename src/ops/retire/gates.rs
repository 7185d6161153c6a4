//! Gates 2 and 3 of a retire (SPEC "Gates"): the worktree is its recorded
//! directory, registered and unlocked (path identity), and its lease is the
//! recorded file, taken exclusively (lease identity and lock).

use crate::error::Result;
use crate::git::admin::linked_admin;
use crate::git::{self, RepoGit, ops};
use crate::model::evidence;
use crate::model::reason::{Hold, HoldReason};
use crate::model::record::{Record, State};
use crate::plan::{self, StateGate};
use std::fs;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Engine, Locked, join};

impl Engine {
    /// Gates 2 (path identity, registration) and 3 (lease identity and lock).
    pub(super) fn gates_path_and_lease(
        &self,
        rec: Record,
        state_gate: StateGate,
        soft: &mut Vec<Hold>,
    ) -> Result<Result<Locked, Vec<Hold>>> {
        let repo = PathBuf::from(&rec.repo);
        if !repo.is_dir() {
            return Ok(Err(vec![Hold::new(
                HoldReason::RepoMissing,
                format!("repository `{}` is missing", repo.display()),
            )]));
        }
        let Some(wt_id) = rec.worktree.clone() else {
            return Ok(Err(vec![Hold::new(
                HoldReason::PathIdentity,
                "the record has no worktree",
            )]));
        };
        let wt = wt_id.path();
        let top = match self.gate_identity(&self.git.repo(&repo)?, &rec) {
            Ok(fd) => fd,
            Err(h) => return Ok(Err(vec![h])),
        };
        // Only now, with the worktree proven, run git inside it.
        let Some(admin) = linked_admin(&repo, &wt) else {
            return Ok(Err(vec![Hold::new(
                HoldReason::PathIdentity,
                "no admin directory",
            )]));
        };
        let (rg, shadowed) = self
            .git
            .repo_at(&repo, &wt)?
            .with_trusted(self.trusted_filters(&wt)?);
        let rg = rg.pinned(&admin, &wt);

        // Gate 3.
        // An unsafe lease directory means lease cannot work at all (exit 3).
        crate::os::atomic::check_private_dir(&self.reg.root().leases(), true)?;
        let Some(lease) = rec.lease.clone() else {
            return Ok(Err(vec![Hold::new(
                HoldReason::LeaseMissing,
                "the record has no lease",
            )]));
        };
        let lock = if self.dry_run {
            if let Err(h) =
                plan::check_lease_seen(lease.id(), rec.uid, crate::os::fs::lstat(&lease.path()))
            {
                return Ok(Err(vec![h]));
            }
            // Never locked: learn holders from descriptors and /proc/locks.
            if !self.content_only || self.assess {
                let seen = crate::os::procfs::lease_seen(&lease.path(), lease.id());
                if let Err(h) = plan::gate_lease_seen(&seen)
                    && let Err(holds) = self.soft(soft, h)
                {
                    return Ok(Err(holds));
                }
            }
            None
        } else {
            let before = crate::os::fs::lstat(&lease.path());
            let f = match crate::os::lease::open_checked(&lease, rec.uid) {
                Ok(f) => f,
                Err(h) => return Ok(Err(vec![h])),
            };
            let outcome = crate::os::lease::try_exclusive(&f);
            crate::os::fault::point("retire-locked");
            let fd_after = crate::os::fs::fstat(&f);
            let name_after = crate::os::fs::lstat(&lease.path());
            if let Err(mut h) =
                plan::gate_lease(lease.id(), rec.uid, before, &outcome, fd_after, name_after)
            {
                if h.reason == HoldReason::ConsumerAlive
                    && crate::os::procfs::exclusively_locked(lease.dev, lease.ino)
                {
                    h = Hold::new(
                        HoldReason::RetireInProgress,
                        "another retire holds the lease exclusively",
                    );
                } else if h.reason == HoldReason::ConsumerAlive {
                    let (pids, _) = crate::os::procfs::holders(lease.id());
                    if !pids.is_empty() {
                        h.detail = format!("{}: pid {}", h.detail, join(&pids));
                    }
                }
                return Ok(Err(vec![h]));
            }
            Some(f)
        };
        let mut rec = rec;
        if state_gate == StateGate::ProceedIfFree && !self.dry_run {
            // Every launcher is gone and the lease is free: proven interrupted.
            let id = rec.id.clone();
            self.reg
                .update(&id, |r| Ok(r.set_state(State::Interrupted)?))?;
            rec = self.reg.get(&id)?;
        }
        Ok(Ok(Locked {
            rec,
            rg,
            wt,
            admin,
            lock,
            top,
            bundle: None,
            inventory: evidence::Inventory::default(),
            rebuildable: Vec::new(),
            shadowed,
            status: None,
            provisioned: None,
            walk_started_ns: 0,
            git_files: Vec::new(),
        }))
    }

    /// Gate 2: the worktree is its recorded, canonical directory directly
    /// below the recorded root (opened without following symlinks or
    /// crossing mounts), registered, unlocked, not protected, not our cwd.
    /// Returns the worktree's directory descriptor.
    pub(super) fn gate_identity(&self, rg: &RepoGit, rec: &Record) -> Result<OwnedFd, Hold> {
        let wt_id = rec
            .worktree
            .clone()
            .ok_or_else(|| Hold::new(HoldReason::PathIdentity, "the record has no worktree"))?;
        let wt = wt_id.path();
        let repo = PathBuf::from(&rec.repo);
        let root = rec.root.path();
        let protected = evidence::Protected {
            root: root.clone(),
            common: repo.clone(),
            state_root: self.reg.root().path().to_path_buf(),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .and_then(|h| fs::canonicalize(h).ok()),
        };
        if wt.components().any(|c| {
            !matches!(
                c,
                std::path::Component::RootDir | std::path::Component::Normal(_)
            )
        }) {
            return Err(Hold::new(
                HoldReason::PathEscape,
                format!(
                    "recorded path `{}` is not normal (`.` or `..`)",
                    wt.display()
                ),
            ));
        }
        plan::gate_protected(&wt, &protected)?;
        let (Some(parent), Some(name)) = (wt.parent(), wt.file_name()) else {
            return Err(Hold::new(
                HoldReason::PathEscape,
                "the worktree path has no parent",
            ));
        };
        if parent != root {
            return Err(Hold::new(
                HoldReason::PathEscape,
                format!(
                    "`{}` is not directly below its root `{}`",
                    wt.display(),
                    root.display()
                ),
            ));
        }
        let top = crate::os::walk::open_beneath(&root, rec.root.id(), name)?;
        let (ev, _) = self
            .probe_path(rg, &repo, &wt, &rec.id)
            .map_err(|e| Hold::new(e.reason().unwrap_or(HoldReason::GitFailed), e.to_string()))?;
        plan::gate_path(wt_id.id(), rec.uid, &ev)?;
        let through_fd = crate::os::fs::fstat_fd(&top);
        if !wt_id.same_birth(crate::os::fs::birth(&fs::symlink_metadata(&wt).ok())) {
            return Err(Hold::new(
                HoldReason::PathIdentity,
                "a new directory reused the recorded inode number (another birth time)",
            ));
        }
        if through_fd.map(|s| (s.dev, s.ino)) != Some(wt_id.id()) {
            return Err(Hold::new(
                HoldReason::PathIdentity,
                "the opened directory is not the recorded one",
            ));
        }
        Ok(top)
    }

    /// Gathers gate 2's evidence; also returns the admin directory when the
    /// `.git` file and the admin `gitdir` point at each other.
    pub(super) fn probe_path(
        &self,
        rg: &RepoGit,
        repo: &Path,
        wt: &Path,
        id: &str,
    ) -> Result<(evidence::PathEvidence, Option<PathBuf>)> {
        let entries = ops::worktrees(rg, repo)?;
        let bytes = wt.as_os_str().as_bytes();
        let mine = entries.iter().skip(1).find(|e| e.path == bytes);
        let admin = linked_admin(repo, wt);
        Ok((
            evidence::PathEvidence {
                seen: crate::os::fs::lstat(wt),
                canonical: crate::os::fs::is_canonical(wt),
                linked_back: admin.is_some(),
                lock: git::admin::classify_lock(
                    mine.and_then(|e| e.locked.as_deref()),
                    id,
                    self.reg.root().path(),
                ),
                listed: mine.is_some(),
                is_main: entries.first().is_some_and(|e| e.path == bytes),
                cwd_inside: crate::os::fs::cwd_inside(wt),
            },
            admin,
        ))
    }
}
