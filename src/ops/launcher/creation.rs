//! Creation (`lease exec` without `--adopt`, `lease create`, `lease
//! restore`): admission, the record `planned`, the lease file locked shared,
//! `git worktree add --lock` under the repository's creation lock,
//! provisioning, the record `active`; a creation that made nothing ends as
//! `removed` with a tombstone saying so.

use super::{
    ExecRequest, Prepared, admit, admit_or_reap, caller_dir, check_root_outside_worktrees,
    common_dir, owner_of, repo_dir_name,
};
use crate::error::{Error, IoResultExt, Result};
use crate::git::ops::AddConfig;
use crate::git::{self, Git, RepoGit};
use crate::model::reason::HoldReason;
use crate::model::record::{FileId, Origin, Outcome, Record, Retention, Session, State};
use crate::os::process::{self};
use crate::store::registry::Registry;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub(super) fn file_id(path: &Path) -> Result<FileId> {
    let s = crate::os::fs::lstat(path)
        .ok_or_else(|| Error::Usage(format!("`{}` does not exist", path.display())))?;
    let btime = crate::os::fs::birth(&fs::symlink_metadata(path).ok());
    Ok(FileId::new(path, s.dev, s.ino, btime)?)
}

/// Creates the lease file for `id`, locks it shared, and opens the
/// launcher's private second description.
pub(super) fn make_lease(reg: &Registry, id: &str) -> Result<(fs::File, fs::File, FileId)> {
    let path = reg.root().leases().join(format!("{id}.lease"));
    let (child_fd, lease) = crate::os::lease::create(&path)?;
    crate::os::lease::shared(&child_fd).at_do("cannot lock", &path)?;
    let own = crate::os::lease::open_checked(&lease, process::euid())
        .map_err(|h| Error::refused(h.reason, h.detail))?;
    crate::os::lease::shared(&own).at_do("cannot lock", &path)?;
    Ok((child_fd, own, lease))
}

/// Records that nothing was created: `planned -> removed` with a tombstone.
pub(super) fn abandon(reg: &Registry, id: &str, why: &str) {
    let Ok(rec) = reg.get(id) else {
        return;
    };
    let tomb = crate::model::record::Tombstone {
        path: rec
            .worktree
            .as_ref()
            .map(|w| w.path.clone())
            .unwrap_or_default(),
        id: rec.id.clone(),
        removed_at: crate::model::fmt::now(),
        bytes_reclaimed: 0,
        free_before: 0,
        free_after: 0,
        evidence: serde_json::json!({"nothing_created": why}),
        branch: None,
    };
    let _ = crate::ops::removal::remove_record(
        reg,
        id,
        tomb,
        crate::ops::removal::LeaseProof::NeverUsed,
        |_| Ok(true),
    );
}

/// Creates and registers a new worktree for `req` (exec without `--adopt`
/// or `--resume`, and `lease create`): admission, record `planned` with
/// `session`, lease file locked shared (two opens), `git worktree add
/// --lock` under the creation lock, record `active`.
pub(crate) fn create(
    reg: &Registry,
    git: &Git,
    req: &ExecRequest,
    session: Session,
) -> Result<Prepared> {
    let dir = caller_dir(req)?;
    let common = common_dir(git, &dir)?;
    let rg = git.repo(&common)?;
    let base_rev = req.base.clone().unwrap_or_else(|| "HEAD".into());
    let Some(base) = git::ops::resolve_commit(&rg, &dir, &base_rev)? else {
        return Err(Error::Usage(format!(
            "base `{base_rev}` is not a commit in `{}`",
            common.display()
        )));
    };
    // Before anything is created: an entry that escapes the repository or
    // names a tracked path is a usage error (exit 125, nothing made).
    let provision = crate::ops::provision::plan(reg.root().policy(), &rg, &common)?;
    let id = crate::store::registry::new_id()?;
    let branch = req
        .branch
        .clone()
        .unwrap_or_else(|| format!("lease/{}", &id[..8]));
    if !git::ops::is_branch_name(&rg, &dir, &branch)? {
        return Err(Error::Usage(format!(
            "`{branch}` is not a valid branch name"
        )));
    }
    let wt_root = reg.root().worktrees();
    let repo_root = wt_root.join(repo_dir_name(&common));
    check_root_outside_worktrees(&rg, &common, &[reg.root().path(), &wt_root])?;
    admit_or_reap(reg, git, req.reap_if_low, &[&wt_root, reg.root().path()])?;
    crate::os::atomic::make_private_dir(&repo_root)?;
    crate::os::atomic::check_private_dir(&repo_root, true)?;
    let owner = owner_of(reg.root().policy(), req)?;
    let mut rec = Record::planned(
        id.clone(),
        crate::store::root::utf8(&common)?,
        file_id(&repo_root)?,
        Origin::Created,
        Some(branch.clone()),
        base.clone(),
        owner,
        process::euid(),
    );
    rec.push_session(session);
    reg.create(&mut rec)?;
    crate::os::fault::point("exec-planned");
    let (child_fd, own_fd, lease) = match make_lease(reg, &id) {
        Ok(x) => x,
        Err(e) => {
            abandon(reg, &id, &e.to_string());
            return Err(e);
        }
    };
    let l2 = lease.clone();
    reg.update(&id, |r| {
        r.lease = Some(l2);
        Ok(())
    })?;
    crate::os::fault::point("exec-leased");
    let wt = repo_root.join(&id);
    let creation = creation_lock(reg, &common);
    let reason = git::admin::lock_reason(&id, reg.root().path());
    // `_held` keeps the lock open until `git worktree add` returned.
    let added = creation.and_then(|_held| {
        add_worktree(&rg, AddConfig::User, &common, &wt, &branch, &base, &reason)
    });
    added_or_kept(reg, &id, &wt, added)?;
    crate::os::fault::point("exec-added");
    let (provisioned, notes) = provision
        .as_ref()
        .map(|p| crate::ops::provision::apply(p, &wt))
        .unwrap_or_default();
    for n in &notes {
        tracing::warn!(id = %id, "{n}");
    }
    let wt_id = file_id(&wt)?;
    reg.update(&id, |r| {
        r.worktree = Some(wt_id);
        r.provisioned = provisioned;
        if !notes.is_empty() {
            r.audit("provision-skipped", vec![], notes.clone());
        }
        Ok(r.set_state(State::Active)?)
    })?;
    crate::os::fault::point("exec-active");
    Ok(Prepared {
        id,
        worktree: wt,
        lease,
        child_fd,
        own_fd,
        created_now: true,
        slot: rec.slot,
    })
}

/// A worktree made by `lease restore`: a new record and lease, `git worktree
/// add` of `branch` at `base` into `wt` (default `<root>/<repo>/<id>`), which
/// must not exist (`path-occupied`, checked under the creation lock). No
/// command runs: the record goes `planned -> active -> terminal -> retained`
/// (owner: the caller, reason: restored), so the reaper keeps it until
/// `lease release`; `lease exec --resume ID` works in it.
pub fn create_restored(
    reg: &Registry,
    git: &Git,
    common: &Path,
    wt: Option<PathBuf>,
    branch: &str,
    base: &str,
    from: &str,
) -> Result<(String, PathBuf)> {
    let rg = git.repo(common)?;
    let id = crate::store::registry::new_id()?;
    let wt_root = reg.root().worktrees();
    let (root, wt) = match wt {
        Some(p) => {
            let parent = p.parent().filter(|p| !p.as_os_str().is_empty());
            let parent = fs::canonicalize(parent.unwrap_or(Path::new(".")))
                .map_err(|e| Error::Usage(format!("`{}`: {e}", p.display())))?;
            let name = p
                .file_name()
                .ok_or_else(|| Error::Usage(format!("`{}` has no file name", p.display())))?;
            (parent.clone(), parent.join(name))
        }
        None => {
            let r = wt_root.join(repo_dir_name(common));
            crate::os::atomic::make_private_dir(&r)?;
            crate::os::atomic::check_private_dir(&r, true)?;
            (r.clone(), r.join(&id))
        }
    };
    let occupied = || -> Result<()> {
        if fs::symlink_metadata(&wt).is_ok() {
            return Err(Error::refused(
                HoldReason::PathOccupied,
                format!(
                    "`{}` exists; restore writes only into a directory it creates",
                    wt.display()
                ),
            ));
        }
        Ok(())
    };
    occupied()?;
    check_root_outside_worktrees(&rg, common, &[reg.root().path(), &wt_root, &root])?;
    admit(reg.root().policy(), &[&root, reg.root().path()])?;
    let provision = crate::ops::provision::plan(reg.root().policy(), &rg, common)?;
    let owner = reg.root().policy().default_owner(crate::ops::caller_name);
    let mut rec = Record::planned(
        id.clone(),
        crate::store::root::utf8(common)?,
        file_id(&root)?,
        Origin::Created,
        Some(branch.to_string()),
        base.to_string(),
        owner.clone(),
        process::euid(),
    );
    rec.restored_from = Some(from.to_string());
    reg.create(&mut rec)?;
    let (child_fd, own_fd, lease) = match make_lease(reg, &id) {
        Ok(x) => x,
        Err(e) => {
            abandon(reg, &id, &e.to_string());
            return Err(e);
        }
    };
    reg.update(&id, |r| {
        r.lease = Some(lease);
        Ok(())
    })?;
    let reason = git::admin::lock_reason(&id, reg.root().path());
    let added = creation_lock(reg, common).and_then(|_held| {
        occupied()?;
        add_worktree(
            &rg,
            AddConfig::Sanitized,
            common,
            &wt,
            branch,
            base,
            &reason,
        )
    });
    added_or_kept(reg, &id, &wt, added)?;
    crate::os::fault::point("exec-added");
    let (provisioned, notes) = provision
        .as_ref()
        .map(|p| crate::ops::provision::apply(p, &wt))
        .unwrap_or_default();
    let wt_id = file_id(&wt)?;
    reg.update(&id, |r| {
        r.worktree = Some(wt_id);
        r.provisioned = provisioned;
        if !notes.is_empty() {
            r.audit("provision-skipped", vec![], notes.clone());
        }
        r.set_state(State::Active)?;
        r.set_state(State::Terminal)?;
        r.retention = Some(Retention {
            owner,
            reason: format!("restored from archive {}", &from[..8.min(from.len())]),
            until: None,
        });
        Ok(r.set_state(State::Retained)?)
    })?;
    drop(own_fd);
    drop(child_fd);
    Ok((id, wt))
}

/// Takes the repository's creation lock (exclusive, blocking; released when
/// the returned file closes). Parallel `git worktree add` calls race on
/// `.git/config.lock` and leave orphan branches, so lease serializes them.
pub(super) fn creation_lock(reg: &Registry, common: &Path) -> Result<fs::File> {
    let lock_path = reg
        .root()
        .locks()
        .join(format!("{}.lock", repo_dir_name(common)));
    crate::os::atomic::lock_private(&lock_path)
}

/// What a `git worktree add` left.
#[derive(Debug)]
pub(super) enum Added {
    /// git succeeded.
    Done,
    /// git failed but left the worktree registered (a `post-checkout`
    /// hook of the user's config failed, say): git's message.
    Kept(String),
    /// git failed and what it left could not be listed: the message. The
    /// record stays `planned` for the reconciler, which judges the scene
    /// once this launcher is gone (uncertainty holds: neither "nothing was
    /// created" nor "kept" is proven).
    Unknown(String),
}

/// Runs `git worktree add --lock --reason REASON` (git's own lock, SPEC "A
/// lease every tool can see"); the caller holds the creation lock. Makes
/// the branch with `--no-track` if it is missing. When git fails but left
/// `wt` registered, returns [`Added::Kept`]; when it left nothing, deletes
/// only a branch this attempt made, only if it still points where it was
/// made and no worktree has it checked out.
pub(super) fn add_worktree(
    rg: &RepoGit,
    how: AddConfig,
    common: &Path,
    wt: &Path,
    branch: &str,
    base: &str,
    reason: &str,
) -> Result<Added> {
    let full = format!("refs/heads/{branch}");
    let exists = git::ops::resolve_ref(rg, common, &full)?.is_some();
    if exists
        && let Some(e) = git::ops::worktrees(rg, common)?
            .iter()
            .find(|e| e.branch.as_deref() == Some(full.as_bytes()))
    {
        let err = Error::Usage(format!(
            "branch `{branch}` is checked out in worktree `{}`; if that directory is gone, run `lease repair {}`",
            e.path().display(),
            e.path().display()
        ));
        // The directory gone: repair is the command; else the user picks
        // another branch, which no command can choose for them.
        return Err(if e.path().exists() {
            err
        } else {
            err.with_next(format!(
                "lease repair {}",
                crate::plan::shell_quote(&e.path().to_string_lossy())
            ))
        });
    }
    let checkout = if exists {
        git::ops::Checkout::Branch(branch)
    } else {
        git::ops::Checkout::NewBranch { branch, base }
    };
    let out = git::ops::worktree_add(rg, how, common, wt, checkout, reason)?;
    if out.ok {
        return Ok(Added::Done);
    }
    // What did git leave? A listing that fails proves nothing: keep the
    // branch and the record as they are.
    let listed = match git::ops::worktrees(rg, common) {
        Ok(l) => l,
        Err(e) => {
            return Ok(Added::Unknown(format!(
                "{}; then the worktree list failed: {e}",
                out.error()
            )));
        }
    };
    if listed.iter().any(|e| e.path == wt.as_os_str().as_bytes()) {
        return Ok(Added::Kept(out.error().to_string()));
    }
    let checked_out = listed
        .iter()
        .any(|e| e.branch.as_deref() == Some(full.as_bytes()));
    if !exists && !checked_out {
        // Undo only what this attempt made: delete the branch only if it
        // still points at `base` (update-ref's old-value check).
        let _ = git::ops::delete_ref(rg, common, &full, base);
    }
    Err(out.error())
}

/// Finishes a `git worktree add`: on [`Added::Kept`] the record becomes
/// `interrupted` with git's message (the worktree, locked by git, stays for
/// a person to inspect and for the reconciler) and the command does not
/// run; on failure the record is abandoned (nothing was created). `Err`
/// either way but [`Added::Done`].
pub(super) fn added_or_kept(
    reg: &Registry,
    id: &str,
    wt: &Path,
    added: Result<Added>,
) -> Result<()> {
    let msg = match added {
        Ok(Added::Done) => return Ok(()),
        Ok(Added::Kept(msg)) => msg,
        Ok(Added::Unknown(msg)) => {
            return Err(Error::refused(
                HoldReason::GitFailed,
                format!(
                    "`git worktree add` of `{}` failed: {msg}; record {id} stays planned and the command did not run: `lease reap --apply` finishes it once this exec has exited",
                    wt.display()
                ),
            ));
        }
        Err(e) => {
            abandon(reg, id, &e.to_string());
            return Err(e);
        }
    };
    let detail = format!(
        "`git worktree add` failed after registering `{}`: {msg}; the command did not run",
        wt.display()
    );
    let wt_id = file_id(wt).ok();
    let me = std::process::id();
    let noted = reg.update(id, |r| {
        let now = crate::model::fmt::now();
        let outcome = Outcome {
            code: None,
            signal: None,
            at: now.clone(),
            head: None,
            error: Some(detail.clone()),
            holders: Vec::new(),
            note: None,
        };
        if let Some(s) = r
            .sessions
            .iter_mut()
            .rev()
            .find(|s| s.pid == me && s.ended_at.is_none())
        {
            s.ended_at = Some(now);
            s.outcome = Some(outcome.clone());
        }
        r.outcome = Some(outcome);
        r.worktree = wt_id;
        r.audit(
            "worktree-add-failed",
            vec![HoldReason::GitFailed],
            vec![detail.clone()],
        );
        Ok(r.set_state(State::Interrupted)?)
    });
    let mut message = format!(
        "{detail}; kept as record {id} (interrupted): inspect `{}`, then `lease exec --resume {}` or `lease retire {}`",
        wt.display(),
        &id[..8],
        &id[..8]
    );
    if let Err(e) = noted {
        message.push_str(&format!(" (lease could not record that: {e})"));
    }
    Err(Error::refused(HoldReason::GitFailed, message))
}
