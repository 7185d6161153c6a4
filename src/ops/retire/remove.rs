//! Gate 8 and the removal itself: the one `git worktree remove` of a
//! retire (SPEC "Gates" 8, invariant 3: non-forced, by absolute path),
//! after the last identity and content checks under the exclusive lease,
//! then the read-back, branch hygiene and the record's end
//! ([`crate::ops::removal::remove_record`]).

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::archive::bundle_changed;
use super::{Engine, Locked, Reach};
use crate::error::Result;
use crate::git::{self, ops};
use crate::model::disk::Size;
use crate::model::evidence;
use crate::model::reason::{Disposition, Hold, HoldReason};
use crate::model::record::{State, Tombstone};
use crate::model::report::TargetReport;
use crate::ops::removal::{LeaseProof, remove_record};
use crate::os::atomic::free_bytes;
use crate::plan;

impl Engine {
    /// Gate 8: persist `retiring`, check identity once more, run a non-forced
    /// `git worktree remove`, read back, tombstone, unlink the lease file.
    pub(super) fn remove(
        &self,
        locked: &mut Locked,
        reach: &Reach,
        report: &mut TargetReport,
        own_branch: bool,
    ) -> Result<Result<(), Vec<Hold>>> {
        let id = locked.rec.id.clone();
        let repo = PathBuf::from(&locked.rec.repo);
        let bytes = locked.inventory.bytes;
        let free_before = free_bytes(&locked.rec.root.path());
        self.reg
            .update(&id, |r| Ok(r.set_state(State::Retiring)?))?;
        crate::os::fault::point("retire-before-remove");
        // Identity once more, right before git deletes by path.
        let wt_id = locked.rec.worktree.clone().expect("gate 2 saw a worktree");
        let again = self.gate_identity(&locked.rg, &locked.rec).and_then(|_| {
            let archive = report.archive.as_ref().filter(|a| a.has_bundle());
            match archive.and_then(|a| bundle_changed(a, locked.bundle.as_ref())) {
                Some(h) => Err(h),
                None => Ok(()),
            }
        });
        let again = again.and_then(|()| {
            // Declared rebuildable output goes first, by lease itself.
            locked
                .rebuildable
                .iter()
                .try_for_each(|p| crate::os::walk::remove_beneath(&locked.top, p))
        });
        if let Err(h) = again {
            self.reg
                .update(&id, |r| Ok(r.set_state(State::Terminal)?))?;
            return Ok(Err(vec![h]));
        }
        // git's own lock comes off last, under the exclusive lease, right
        // before the removal (SPEC gate 8). A crash after this leaves a
        // `retiring` record with an unlocked tree: the reconciler locks it
        // again and runs the gates.
        let unlocked = match self.unlock_own(locked, &repo) {
            Ok(u) => u,
            Err(e) => {
                self.reg
                    .update(&id, |r| Ok(r.set_state(State::Terminal)?))?;
                return Ok(Err(vec![Hold::new(
                    e.reason().unwrap_or(HoldReason::GitFailed),
                    format!("cannot take lease's lock off before removal: {e}"),
                )]));
            }
        };
        crate::os::fault::point("retire-unlocked");
        let out = ops::worktree_remove(&locked.rg, &repo, &locked.wt)?;
        let gone = fs::symlink_metadata(&locked.wt)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        let listed = ops::worktrees(&locked.rg, &repo)?
            .iter()
            .any(|e| e.path == locked.wt.as_os_str().as_bytes());
        if !out.ok || !gone || listed {
            let detail = format!(
                "git worktree remove: {}; directory {}, registration {}",
                out.error(),
                if gone { "gone" } else { "present" },
                if listed { "present" } else { "gone" }
            );
            let mut detail = detail;
            if !gone && listed {
                // Refused and intact: locked again, back to terminal.
                if unlocked
                    && let Err(e) = ops::worktree_lock(
                        &locked.rg,
                        &repo,
                        &locked.wt,
                        &git::admin::lock_reason(&id, self.reg.root().path()),
                    )
                {
                    detail.push_str(&format!(
                        "; lease's lock could not be put back ({e}): `lease reap --apply` puts it back"
                    ));
                }
                self.reg
                    .update(&id, |r| Ok(r.set_state(State::Terminal)?))?;
            }
            return Ok(Err(vec![Hold::new(HoldReason::GitFailed, detail)]));
        }
        // Branch hygiene: lease's own `lease/<id prefix>` branch goes
        // without being asked; any other only with `--delete-branch`.
        let branch = if self.delete_branch || own_branch {
            self.clean_branch(locked, reach, report.archive.as_ref(), !self.delete_branch)?
        } else {
            None
        };
        let tomb = Tombstone {
            path: wt_id.path.clone(),
            id: id.clone(),
            removed_at: crate::model::fmt::now(),
            bytes_reclaimed: bytes,
            free_before,
            free_after: free_bytes(&locked.rec.root.path()),
            evidence: serde_json::json!({
                "head": reach.head,
                "durable": reach.durable.as_ref().map(|(r, o)| serde_json::json!({"ref": r, "oid": o, "kind": plan::durable_kind(r)})),
                "unique_commits": reach.unique.len(),
                "confirmed_remote_tips": reach.confirmed,
                "rebuildable_deleted": locked.rebuildable.iter().map(|p| crate::model::fmt::lossless(p)).collect::<Vec<_>>(),
                "archive": locked.rec.archive.as_ref().map(|a| a.location.clone()),
                "archival_refs": report.archive.as_ref().and_then(|a| a.remote.as_ref()).map(|r| serde_json::json!({"url": r.url, "refs": r.refs})),
                "git": {"path": self.git.path().to_string_lossy(), "version": self.git.version()},
                "trusted_filters": locked.rg.trusted(),
            }),
            branch: branch.clone(),
        };
        // The lease file goes under the exclusive lock, which closes with
        // `held.lock`.
        let proof = locked
            .lock
            .as_ref()
            .map_or(LeaseProof::Unproven, LeaseProof::Exclusive);
        // The measured size goes with the record (`lease list` shows it).
        let size = report.usage.as_ref().map(|u| Size {
            bytes: u.total(),
            at: tomb.removed_at.clone(),
        });
        remove_record(&self.reg, &id, tomb.clone(), proof, |r| {
            if size.is_some() {
                r.size = size;
            }
            Ok(true)
        })?;
        drop(locked.lock.take());
        report.disposition = Disposition::Removed;
        report.tombstone = Some(tomb);
        report.branch = branch;
        Ok(Ok(()))
    }

    /// Takes lease's own lock off the worktree (`git worktree unlock`) when
    /// the admin directory's `locked` names this record and state root;
    /// returns whether it did. Any other lock was held by gate 2, which ran
    /// again just before.
    fn unlock_own(&self, locked: &Locked, repo: &Path) -> Result<bool> {
        let Some(reason) = crate::os::fs::read_small(&locked.admin.join("locked")) else {
            return Ok(false);
        };
        let reason = String::from_utf8_lossy(&reason);
        let lock = git::admin::classify_lock(Some(&reason), &locked.rec.id, self.reg.root().path());
        if lock != evidence::LockSeen::Ours {
            return Ok(false);
        }
        ops::worktree_unlock(&locked.rg, repo, &locked.wt)?;
        Ok(true)
    }
}
