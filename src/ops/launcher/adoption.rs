//! Adoption (`lease exec --adopt PATH`, `lease adopt PATH`): a registered
//! worktree lease did not create gets a record, once its path, registration
//! and git lock are checked.

use super::{
    ExecRequest, Prepared, abandon, admit_or_reap, check_root_outside_worktrees, common_dir,
    file_id, join_session, make_lease, own_session, owner_of,
};
use crate::error::{Error, Result};
use crate::git::{self, Git};
use crate::model::reason::HoldReason;
use crate::model::record::{Origin, Owner, Record, Session, State};
use crate::os::process::{self};
use crate::store::registry::Registry;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What `lease adopt` recorded.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AdoptReport {
    /// The new record's id.
    pub id: String,
    /// The worktree's top directory.
    pub worktree: String,
    /// The record's state: `terminal`.
    pub state: State,
    /// Always `adopted`.
    pub origin: Origin,
}

/// `lease adopt PATH`: records an unrecorded, registered linked worktree as
/// `adopted` and `terminal` without running anything (`planned -> active ->
/// terminal`, one session that ends at once), so `lease retire` can take it
/// through the gates. A worktree that already has a record is a usage
/// error naming it.
pub fn adopt_only(ctx: &crate::ops::Ctx, path: &Path, owner: Option<Owner>) -> Result<AdoptReport> {
    crate::store::root::refuse_newline("worktree", path)?;
    let root = ctx.open_root()?;
    let reg = Registry::new(root);
    let git = ctx.git()?;
    let wt = fs::canonicalize(path)
        .map_err(|e| Error::Usage(format!("cannot adopt `{}`: {e}", path.display())))?;
    let loaded = reg.scan()?;
    check_no_bad_record_names(&loaded, &wt)?;
    let existing = loaded.into_iter().find_map(|l| match l {
        crate::store::registry::Loaded::Ok(r)
            if r.state != State::Removed && r.worktree.as_ref().is_some_and(|w| w.path() == wt) =>
        {
            Some(r.id)
        }
        _ => None,
    });
    if let Some(id) = existing {
        return Err(Error::Usage(format!(
            "`{}` is already recorded as {id}; `lease show {}` or `lease retire {}`",
            wt.display(),
            &id[..8],
            &id[..8]
        ))
        .with_next(format!("lease show {}", &id[..8])));
    }
    let me = std::process::id();
    let session = own_session()?;
    let req = ExecRequest {
        repo: None,
        branch: None,
        base: None,
        adopt: Some(wt.clone()),
        resume: None,
        keep: false,
        owner,
        reap_if_low: false,
        command: Vec::new(),
    };
    let p = adopt(&reg, &git, &wt, &req, session)?;
    let state = reg.update(&p.id, |r| {
        let now = crate::model::fmt::now();
        if let Some(s) = r
            .sessions
            .iter_mut()
            .rev()
            .find(|s| s.pid == me && s.ended_at.is_none())
        {
            s.ended_at = Some(now);
        }
        r.set_state(State::Terminal)?;
        Ok(r.state)
    })?;
    // Closing both opens releases the shared lock.
    drop(p.child_fd);
    drop(p.own_fd);
    Ok(AdoptReport {
        id: p.id,
        worktree: wt.to_string_lossy().into_owned(),
        state,
        origin: Origin::Adopted,
    })
}

pub(super) fn adopt(
    reg: &Registry,
    git: &Git,
    path: &Path,
    req: &ExecRequest,
    session: Session,
) -> Result<Prepared> {
    crate::store::root::refuse_newline("worktree", path)?;
    let wt = fs::canonicalize(path)
        .map_err(|e| Error::Usage(format!("cannot adopt `{}`: {e}", path.display())))?;
    crate::store::root::refuse_newline("worktree", &wt)?;
    let common = match crate::git::libgit2::common_of_linked(&wt) {
        Some(c) => c,
        None => common_dir(git, &wt)?,
    };
    let entries = git::ops::worktrees_of(git, &common)?;
    let bytes = wt.as_os_str().as_bytes();
    let Some(pos) = entries.iter().position(|e| e.path == bytes) else {
        return Err(Error::refused(
            HoldReason::NotRegistered,
            format!(
                "`{}` is not a top directory listed by `git worktree list`",
                wt.display()
            ),
        ));
    };
    if pos == 0 {
        return Err(Error::refused(
            HoldReason::ProtectedPath,
            format!(
                "`{}` is the main worktree; lease adopts linked worktrees only",
                wt.display()
            ),
        ));
    }
    let loaded = reg.scan()?;
    check_no_bad_record_names(&loaded, &wt)?;
    let existing = loaded.into_iter().find_map(|l| match l {
        crate::store::registry::Loaded::Ok(r)
            if r.state != State::Removed && r.worktree.as_ref().is_some_and(|w| w.path() == wt) =>
        {
            Some(r)
        }
        _ => None,
    });
    if let Some(rec) = existing {
        return join_session(reg, *rec, wt, session);
    }
    let e = &entries[pos];
    check_adoptable_lock(e.locked.as_deref(), &wt, reg.root().path())?;
    let parent = wt.parent().map(Path::to_path_buf).unwrap_or_default();
    let rg = git.repo(&common)?;
    check_root_outside_worktrees(&rg, &common, &[reg.root().path()])?;
    admit_or_reap(reg, git, req.reap_if_low, &[&parent, reg.root().path()])?;
    let id = crate::store::registry::new_id()?;
    let branch = e
        .branch
        .as_ref()
        .map(|b| String::from_utf8_lossy(b.strip_prefix(b"refs/heads/").unwrap_or(b)).into_owned());
    let mut rec = Record::planned(
        id.clone(),
        crate::store::root::utf8(&common)?,
        file_id(&parent)?,
        Origin::Adopted,
        branch,
        e.head.clone().unwrap_or_default(),
        owner_of(reg.root().policy(), req)?,
        process::euid(),
    );
    rec.push_session(session);
    reg.create(&mut rec)?;
    let (child_fd, own_fd, lease) = match make_lease(reg, &id) {
        Ok(x) => x,
        Err(e) => {
            abandon(reg, &id, &e.to_string());
            return Err(e);
        }
    };
    let wt_id = file_id(&wt)?;
    let l2 = lease.clone();
    // The record names the worktree before git's lock goes on, so a crash
    // in between leaves a planned record the reconciler can finish.
    reg.update(&id, |r| {
        r.lease = Some(l2);
        r.worktree = Some(wt_id);
        Ok(())
    })?;
    crate::os::fault::point("adopt-leased");
    let reason = git::admin::lock_reason(&id, reg.root().path());
    if let Err(e) = git::ops::worktree_lock(&rg, &common, &wt, &reason) {
        abandon(reg, &id, &e.to_string());
        return Err(e);
    }
    reg.update(&id, |r| Ok(r.set_state(State::Active)?))?;
    Ok(Prepared {
        id,
        worktree: wt,
        lease,
        child_fd,
        own_fd,
        created_now: false,
        slot: rec.slot,
    })
}

/// Refuses to adopt `wt` when a corrupt, unreadable or newer-schema record
/// of this state root may name it (SPEC "A lease every tool can see"):
/// lease never changes such a record, and a second one would lease the
/// same tree twice (exit 3, naming the record file).
pub(super) fn check_no_bad_record_names(
    loaded: &[crate::store::registry::Loaded],
    wt: &Path,
) -> Result<()> {
    match crate::store::registry::bad_record_naming(loaded, wt) {
        None => Ok(()),
        Some((path, problem)) => Err(Error::Record {
            path,
            problem: format!(
                "{problem}, and it may name `{}`; lease never adopts a worktree such a record may name: repair or move the record file first",
                wt.display()
            ),
        }),
    }
}

/// Refuses to adopt a worktree git has locked: by another lease record or
/// state root (`leased-elsewhere`), or by anyone else (`git-locked`; lease
/// would not get its own lock on it). `locked` is the reason from `git
/// worktree list`, `None` when unlocked.
pub(super) fn check_adoptable_lock(
    locked: Option<&str>,
    wt: &Path,
    state_root: &Path,
) -> Result<()> {
    // No record exists yet, so no lock can be this record's own.
    match git::admin::classify_lock(locked, "", state_root) {
        crate::model::evidence::LockSeen::Unlocked => Ok(()),
        crate::model::evidence::LockSeen::Lease { id, root } => {
            let h = crate::plan::leased_elsewhere(&id, &root);
            Err(Error::refused(
                h.reason,
                format!("`{}`: {}", wt.display(), h.detail),
            ))
        }
        crate::model::evidence::LockSeen::Ours | crate::model::evidence::LockSeen::Other(_) => {
            Err(Error::refused(
                HoldReason::GitLocked,
                format!(
                    "`{}` is locked ({}); `git worktree unlock {}` if that lock is stale, then adopt it again",
                    wt.display(),
                    locked.unwrap_or_default(),
                    wt.display()
                ),
            ))
        }
    }
}
