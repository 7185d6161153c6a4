//! `lease repair PATH`: removes the single registration of a worktree whose
//! directory is missing. Never a repository-wide `git worktree prune`.
//!
//! # Theory of operation
//! [`plan`] finds the one admin directory `<common>/worktrees/<name>` whose
//! `gitdir` file names `PATH/.git`, in the repositories the records name and
//! the one containing the current directory, and checks that removing it
//! loses nothing: the directory is really missing (`lstat`), the
//! registration is not `git worktree lock`ed, every commit its HEAD, HEAD
//! reflog and private refs reach is on a branch, tag or remote-tracking ref,
//! and a matching record has no live launcher, no lease holder and no
//! retention. The CLI prints the plan; [`apply`] checks it again, runs a
//! non-forced `git worktree remove -- PATH` (which, for a missing directory,
//! deletes exactly that admin directory and nothing else), reads back, and
//! walks a matching record through its legal transitions to `removed` with a
//! tombstone.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::git::{self, Git};
use crate::model::fmt::lossless;
use crate::model::reason::{Disposition, Hold, HoldReason};
use crate::model::record::{Event, Record, State, Tombstone};
use crate::ops::removal::{LeaseProof, remove_record};
use crate::store::audit::Audit;
use crate::store::registry::{Loaded, Registry};

/// What `lease repair` found and will do.
#[derive(Debug, Clone, Serialize)]
pub struct RepairPlan {
    /// The worktree path whose directory is missing.
    pub path: String,
    /// The repository's common git dir.
    pub repo: String,
    /// The admin directory that goes away.
    pub admin: String,
    /// The registration's HEAD commit, if it has one.
    pub head: Option<String>,
    /// The matching record, if any.
    pub record: Option<String>,
    /// Its state.
    pub record_state: Option<State>,
    /// What it will do, in order, for people.
    pub steps: Vec<String>,
    /// Why it must not, if anything refuses.
    #[serde(skip)]
    holds: Vec<Hold>,
    /// What to do about the first refusal, when the reason's generic advice does not fit.
    #[serde(skip)]
    next: Option<String>,
    #[serde(skip)]
    common: PathBuf,
    #[serde(skip)]
    admin_dir: PathBuf,
    #[serde(skip)]
    target: PathBuf,
    /// True if the registration carries lease's own lock for the matching
    /// record (taken off right before the removal).
    #[serde(skip)]
    own_lock: bool,
    /// The commits only this registration reaches, when they hold it.
    #[serde(skip)]
    unique: Vec<String>,
}

impl RepairPlan {
    /// The refusals found while planning (empty: it may go ahead).
    pub fn holds(&self) -> &[Hold] {
        &self.holds
    }

    /// The commits (40 hex) reachable only from this registration, when
    /// they hold the repair (`unique-commits-unarchived`); empty otherwise.
    pub fn unique(&self) -> &[String] {
        &self.unique
    }
}

/// The outcome of `lease repair`.
#[derive(Debug, Clone, Serialize)]
pub struct RepairReport {
    /// True for `--dry-run`: nothing was changed.
    pub dry_run: bool,
    /// What was found and planned.
    pub plan: RepairPlan,
    /// `removed`, `would-remove` or `held`.
    pub disposition: Disposition,
    /// Reason codes, if held.
    pub reasons: Vec<HoldReason>,
    /// What was found, one line per reason.
    pub detail: Vec<String>,
    /// What to do next.
    pub next: Option<String>,
    /// The matching record's tombstone, if it was recorded removed.
    pub tombstone: Option<Tombstone>,
}

impl RepairReport {
    fn new(dry_run: bool, plan: RepairPlan, disposition: Disposition) -> Self {
        RepairReport {
            dry_run,
            plan,
            disposition,
            reasons: Vec::new(),
            detail: Vec::new(),
            next: None,
            tombstone: None,
        }
    }

    fn held(mut self, holds: &[Hold]) -> Self {
        self.disposition = Disposition::Held;
        self.reasons = holds.iter().map(|h| h.reason).collect();
        self.detail = holds.iter().map(|h| h.detail.clone()).collect();
        self.next = self
            .plan
            .next
            .clone()
            .or_else(|| holds.first().map(|h| h.reason.next_action().to_string()));
        self
    }
}

/// Makes `path` absolute: a relative path is taken from the current
/// directory (which is physical, so its `..` are resolved lexically); an
/// absolute path must not contain `..` (through a symlink it would mean
/// something else).
fn absolute(path: &Path) -> Result<PathBuf> {
    crate::store::root::refuse_newline("worktree", path)?;
    if path.is_absolute() {
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(Error::Usage(format!(
                "`{}` contains `..`; name the worktree's registered path",
                path.display()
            )));
        }
        return Ok(lexical(path));
    }
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Environment(format!("cannot read the current directory: {e}")))?;
    Ok(lexical(&cwd.join(path)))
}

/// Other spellings of `path` git may have registered: the same name under
/// the canonical form of its parent, when the parent exists.
fn spellings(path: &Path) -> Vec<PathBuf> {
    let mut v = vec![path.to_path_buf()];
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name())
        && let Ok(canon) = fs::canonicalize(parent)
        && canon.join(name) != path
    {
        v.push(canon.join(name));
    }
    v
}
/// Returns the admin directories under `<common>/worktrees` (real
/// directories, never symlinks) whose `gitdir` names `dotgit`.
fn admins_naming(common: &Path, dotgit: &Path) -> Vec<PathBuf> {
    let dir = common.join("worktrees");
    if !fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_dir()) {
        return Vec::new();
    }
    let Ok(rd) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|e| e.path())
        .filter(|p| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_dir()))
        .filter(|p| names(p, dotgit))
        .collect()
}

/// True if the admin directory's `gitdir` file names `dotgit` (relative
/// values, git 2.48's `worktree.useRelativePaths`, are taken from the admin
/// directory).
fn names(admin: &Path, dotgit: &Path) -> bool {
    let Some(text) = crate::os::fs::read_small(&admin.join("gitdir")) else {
        return false;
    };
    let named = PathBuf::from(std::ffi::OsStr::from_bytes(&text));
    if named.is_absolute() {
        named == dotgit
    } else {
        lexical(&admin.join(named)) == dotgit
    }
}

/// Resolves `..` lexically (only for relative `gitdir` values git wrote itself).
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Repositories to search: those the records name, and the one containing
/// the current directory.
fn candidate_repos(reg: Option<&Registry>, git: &Git) -> Result<Vec<PathBuf>> {
    let mut repos: Vec<PathBuf> = Vec::new();
    if let Some(reg) = reg {
        for l in reg.scan()? {
            if let Loaded::Ok(r) = l {
                let p = PathBuf::from(&r.repo);
                if !repos.contains(&p) {
                    repos.push(p);
                }
            }
        }
    }
    if let Ok(cwd) = std::env::current_dir()
        && let Ok(out) = git::ops::common_dir(git, &cwd)
        && out.ok
    {
        let p = PathBuf::from(std::ffi::OsStr::from_bytes(
            git::parse::first_line(&out.stdout).as_bytes(),
        ));
        if let Ok(p) = fs::canonicalize(&p)
            && !repos.contains(&p)
        {
            repos.push(p);
        }
    }
    Ok(repos)
}

/// Finds the registration of `path` and checks that removing it loses
/// nothing. Refusals are in [`RepairPlan::holds`]; with `dry_run` no lock
/// is taken (lease holders come from `/proc`).
///
/// # Errors
/// [`Error::Usage`] if no registration, or more than one, names `PATH/.git`.
pub fn plan(reg: Option<&Registry>, git: &Git, path: &Path) -> Result<RepairPlan> {
    let given = absolute(path)?;
    let mut target = given.clone();
    let mut found: Vec<(PathBuf, PathBuf)> = Vec::new();
    let repos = candidate_repos(reg, git)?;
    for spelling in spellings(&given) {
        for common in &repos {
            for admin in admins_naming(common, &spelling.join(".git")) {
                found.push((common.clone(), admin));
            }
        }
        if !found.is_empty() {
            target = spelling;
            break;
        }
    }
    let dotgit = target.join(".git");
    let (common, admin) = match found.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(Error::Usage(format!(
                "no worktree registration names `{}` in {}; run lease repair from inside the repository",
                dotgit.display(),
                if repos.is_empty() {
                    "any known repository".to_string()
                } else {
                    repos
                        .iter()
                        .map(|r| format!("`{}`", r.display()))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )));
        }
        many => {
            return Err(Error::Usage(format!(
                "{} registrations name `{}`: {}; repair them with git by hand",
                many.len(),
                dotgit.display(),
                many.iter()
                    .map(|(_, a)| format!("`{}`", a.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    };
    let record = match reg {
        Some(reg) => matching_record(reg, &target)?,
        None => None,
    };
    let mut plan = RepairPlan {
        path: lossless(target.as_os_str().as_bytes()),
        repo: lossless(common.as_os_str().as_bytes()),
        admin: lossless(admin.as_os_str().as_bytes()),
        head: None,
        record: record.as_ref().map(|r| r.id.clone()),
        record_state: record.as_ref().map(|r| r.state),
        steps: Vec::new(),
        holds: Vec::new(),
        next: None,
        common,
        admin_dir: admin,
        target,
        own_lock: false,
        unique: Vec::new(),
    };
    plan.steps.push(format!(
        "registration `{}` of `{}` names `{}`",
        plan.admin, plan.repo, plan.path
    ));
    if let Err(h) = check_missing(&plan.target) {
        if h.reason == HoldReason::PathOccupied {
            plan.next = Some(format!(
                "the worktree still exists: `lease retire {}` (or `git worktree remove`) removes it",
                plan.path
            ));
        }
        plan.holds.push(h);
        return Ok(plan);
    }
    plan.steps
        .push(format!("the directory `{}` is missing", plan.path));
    if let Some(reason) = crate::os::fs::read_small(&plan.admin_dir.join("locked")) {
        let reason = String::from_utf8_lossy(&reason).into_owned();
        let id = record.as_ref().map_or("", |r| r.id.as_str());
        let root = reg.map_or(Path::new("/"), |r| r.root().path());
        match git::admin::classify_lock(Some(&reason), id, root) {
            crate::model::evidence::LockSeen::Ours => {
                plan.own_lock = true;
                plan.steps.push(format!(
                    "its lock is lease's own for record {}: it comes off right before the removal",
                    &id[..8]
                ));
            }
            crate::model::evidence::LockSeen::Lease { id, root } => {
                plan.holds.push(crate::plan::leased_elsewhere(&id, &root));
                return Ok(plan);
            }
            _ => {
                plan.holds.push(Hold::new(
                    HoldReason::GitLocked,
                    format!(
                        "the registration is locked ({reason}); it may live on a filesystem that is not mounted now"
                    ),
                ));
                return Ok(plan);
            }
        }
    }
    match unique_commits(git, &plan) {
        Ok((head, unique)) => {
            plan.head = head;
            if unique.is_empty() {
                plan.steps.push(
                    "every commit its HEAD, HEAD reflog and private refs reach is on a branch, tag or remote-tracking ref"
                        .into(),
                );
            } else {
                let shown: Vec<&str> = unique.iter().take(5).map(String::as_str).collect();
                plan.holds.push(Hold::new(
                    HoldReason::UniqueCommitsUnarchived,
                    format!(
                        "{} commit(s) reachable only from this registration would be lost: {}{}",
                        unique.len(),
                        shown.join(", "),
                        if unique.len() > 5 { ", ..." } else { "" },
                    ),
                ));
                plan.next = Some(format!(
                    "keep them: `git -C {} branch <name> <commit>` for each listed commit, then `lease repair {}` again",
                    plan.repo, plan.path
                ));
                plan.unique = unique;
                return Ok(plan);
            }
        }
        Err(e) => {
            plan.holds.push(Hold::new(
                e.reason().unwrap_or(HoldReason::GitFailed),
                e.to_string(),
            ));
            return Ok(plan);
        }
    }
    plan.steps.push(format!(
        "`git worktree remove -- {}` (not forced) removes that one registration; lease never runs `git worktree prune`",
        plan.path
    ));
    if let Some(rec) = &record {
        if let Err(h) = check_record(rec) {
            plan.holds.push(h);
            return Ok(plan);
        }
        plan.steps.push(format!(
            "record {} ({}) is then recorded removed with a tombstone",
            rec.prefix(),
            rec.state.name()
        ));
    }
    Ok(plan)
}

fn check_missing(path: &Path) -> Result<(), Hold> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Hold::new(
            HoldReason::Unprovable,
            format!("cannot tell whether `{}` exists: {e}", path.display()),
        )),
        Ok(_) => Err(Hold::new(
            HoldReason::PathOccupied,
            format!(
                "`{}` exists, so its registration is not stale; `lease retire` removes a worktree",
                path.display()
            ),
        )),
    }
}

/// The record whose worktree is `path` and that is not `removed`.
fn matching_record(reg: &Registry, path: &Path) -> Result<Option<Record>> {
    let mut found: Vec<Record> = reg
        .scan_live()?
        .into_iter()
        .filter_map(|l| match l {
            Loaded::Ok(r)
                if r.state != State::Removed && r.expected_worktree().as_deref() == Some(path) =>
            {
                Some(*r)
            }
            _ => None,
        })
        .collect();
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        n => Err(Error::Usage(format!(
            "{n} records name `{}`; inspect them with `lease list`",
            path.display()
        ))
        .with_next("lease list --all")),
    }
}

/// A matching record may be finished only if no owner keeps it and no
/// launcher runs.
fn check_record(rec: &Record) -> Result<(), Hold> {
    if rec.state == State::Retained
        || (matches!(rec.state, State::Active | State::Interrupted) && rec.retention.is_some())
    {
        return Err(Hold::new(
            HoldReason::Retained,
            format!("record {} is held by a named owner", rec.prefix()),
        ));
    }
    if let Some(s) = rec
        .sessions
        .iter()
        .find(|s| s.launcher_alive(crate::os::process::is_alive))
    {
        return Err(Hold::new(
            HoldReason::LauncherAlive,
            format!(
                "launcher pid {} of record {} still runs",
                s.pid,
                rec.prefix()
            ),
        ));
    }
    if let Some(l) = &rec.lease {
        let seen = crate::os::procfs::lease_seen(&l.path(), l.id());
        if seen.held() {
            return Err(Hold::new(
                if rec.state == State::Retiring {
                    HoldReason::RetireInProgress
                } else {
                    HoldReason::ConsumerAlive
                },
                format!(
                    "{} holds the lease of record {}",
                    seen.describe(),
                    rec.prefix()
                ),
            ));
        }
    }
    Ok(())
}

/// Returns the registration's HEAD and the commits that its HEAD, HEAD
/// reflog and private refs reach but no branch, tag or remote-tracking ref
/// does: what removing the admin directory would orphan.
fn unique_commits(git: &Git, plan: &RepairPlan) -> Result<(Option<String>, Vec<String>)> {
    let common = &plan.common;
    let rg = git.repo(common)?;
    let name = plan
        .admin_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let head_ref = format!("worktrees/{name}/HEAD");
    let head = git::ops::resolve_commit(&rg, common, &head_ref)?;
    let mut tips: Vec<String> = head.iter().cloned().collect();
    tips.extend(git::ops::private_tips_of_admin(
        &rg,
        common,
        &plan.admin_dir,
    )?);
    if let Some(reflog) = git::ops::reflog(&rg, common, &head_ref)? {
        tips.extend(reflog);
    }
    tips.sort();
    tips.dedup();
    if tips.is_empty() {
        return Ok((head, Vec::new()));
    }
    let unique = git::ops::unreached(&rg, common, &tips, &[], git::ops::Shared::Refs)?;
    Ok((head, unique))
}

/// Carries out a plan without refusals: checks it again, removes the one
/// registration with a non-forced `git worktree remove`, reads back, and
/// records a matching record `removed` with a tombstone.
pub fn apply(reg: Option<&Registry>, git: &Git, plan: RepairPlan) -> Result<RepairReport> {
    let refuse = |plan: RepairPlan, holds: Vec<Hold>| -> Result<RepairReport> {
        if let (Some(reg), Some(id)) = (reg, &plan.record) {
            reg.record_hold(id, &holds)?;
        }
        Ok(RepairReport::new(false, plan, Disposition::Held).held(&holds))
    };
    if !plan.holds.is_empty() {
        let holds = plan.holds.clone();
        return refuse(plan, holds);
    }
    // Again, right before acting.
    if let Err(h) = check_missing(&plan.target) {
        return refuse(plan, vec![h]);
    }
    if !names(&plan.admin_dir, &plan.target.join(".git")) {
        let h = Hold::new(
            HoldReason::PathIdentity,
            format!("`{}` changed while repairing", plan.admin),
        );
        return refuse(plan, vec![h]);
    }
    let record = match (reg, &plan.record) {
        (Some(reg), Some(id)) => Some(reg.get(id)?),
        _ => None,
    };
    let mut lock = None;
    if let Some(rec) = &record {
        if let Err(h) = check_record(rec) {
            return refuse(plan, vec![h]);
        }
        if let Some(l) = &rec.lease {
            match crate::os::lease::try_exclusive_checked(l, rec.uid) {
                Ok(f) => lock = Some(f),
                Err(h) if h.reason == HoldReason::LeaseMissing => {}
                Err(h) => return refuse(plan, vec![h]),
            }
        }
    }
    let rg = git.repo(&plan.common)?;
    // lease's own lock comes off under the exclusive lease, right before
    // the removal, as in retire's gate 8.
    if plan.own_lock
        && let Err(e) = git::ops::worktree_unlock(&rg, &plan.common, &plan.target)
    {
        let h = Hold::new(
            e.reason().unwrap_or(HoldReason::GitFailed),
            format!("cannot take lease's lock off before removal: {e}"),
        );
        return refuse(plan, vec![h]);
    }
    let out = git::ops::worktree_remove(&rg, &plan.common, &plan.target)?;
    let admin_gone =
        fs::symlink_metadata(&plan.admin_dir).is_err_and(|e| e.kind() == ErrorKind::NotFound);
    let list = git::ops::worktree_list(&rg, &plan.common)?;
    let listed = git::parse::parse_worktrees(&list)
        .iter()
        .any(|e| e.path == plan.target.as_os_str().as_bytes());
    if !out.ok || !admin_gone || listed {
        let mut detail = format!(
            "git worktree remove: {}; admin directory {}, registration {}",
            out.error(),
            if admin_gone { "gone" } else { "present" },
            if listed { "present" } else { "gone" }
        );
        if let (true, true, Some(reg), Some(id)) = (plan.own_lock, listed, reg, &plan.record) {
            let reason = git::admin::lock_reason(id, reg.root().path());
            if let Err(e) = git::ops::worktree_lock(&rg, &plan.common, &plan.target, &reason) {
                detail.push_str(&format!("; lease's lock could not be put back ({e})"));
            }
        }
        let h = Hold::new(HoldReason::GitFailed, detail);
        return refuse(plan, vec![h]);
    }
    let mut report = RepairReport::new(false, plan, Disposition::Removed);
    if let (Some(reg), Some(rec)) = (reg, &record) {
        let tomb = Tombstone {
            path: report.plan.path.clone(),
            id: rec.id.clone(),
            removed_at: crate::model::fmt::now(),
            bytes_reclaimed: 0,
            free_before: 0,
            free_after: 0,
            evidence: serde_json::json!({
                "repaired_by": "lease repair",
                "found": "the directory was missing; its registration was removed",
                "registration": report.plan.admin,
                "head": report.plan.head,
                "archive": rec.archive.as_ref().map(|a| a.location.clone()),
            }),
            branch: None,
        };
        let proof = lock
            .as_ref()
            .map_or(LeaseProof::Unproven, LeaseProof::Exclusive);
        remove_record(reg, &rec.id, tomb.clone(), proof, |r| {
            let Some((_, before)) = path_to_removed(r.state).split_last() else {
                return Err(Error::refused(
                    HoldReason::Retained,
                    format!(
                        "record {} became {} while repairing; its registration is gone, the record is unchanged",
                        r.id,
                        r.state.name()
                    ),
                ));
            };
            for to in before {
                r.set_state(*to)?;
            }
            Ok(true)
        })?;
        report.tombstone = Some(tomb);
    }
    drop(lock);
    if let Some(reg) = reg {
        Audit::new(reg.root()).append(&Event::note(
            "repair",
            &report.plan.record.clone().unwrap_or_else(|| "-".into()),
            vec![],
            vec![report.plan.path.clone(), report.plan.admin.clone()],
        ))?;
    }
    Ok(report)
}

/// The legal transitions (SPEC/Record) from `state` to `removed` for a
/// worktree whose directory is already gone.
fn path_to_removed(state: State) -> &'static [State] {
    match state {
        State::Planned | State::Retiring => &[State::Removed],
        State::Active => &[State::Interrupted, State::Retiring, State::Removed],
        State::Terminal | State::Interrupted => &[State::Retiring, State::Removed],
        State::Retained | State::Removed => &[],
    }
}

/// A dry run's report for `plan`.
pub fn dry_run(plan: RepairPlan) -> RepairReport {
    let holds = plan.holds.clone();
    let r = RepairReport::new(true, plan, Disposition::WouldRemove);
    if holds.is_empty() { r } else { r.held(&holds) }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
