//! `lease restore` and `lease archive verify`: get archived work back as a new
//! leased worktree, after proving the bundle is still the one verified.
//!
//! # Invariants
//! - The bundle is re-verified before use: sha256 of the file, then the same
//!   unbundle-with-fsck verification as retire (`retire::verify_bundle`),
//!   and its prerequisites must still be in the repository.
//! - restore writes only into a directory it creates (`path-occupied`
//!   otherwise), never runs `clean`, `reset --hard` or `checkout --force`,
//!   and never moves an existing ref: a branch that moved gets
//!   `<branch>-restored-<id prefix>`, or `branch-moved` when demanded.
//! - One-shot: a receipt goes into the archive record; a second restore
//!   refuses (`already-restored`) unless `--again`.
//! - An archive of archival refs only (`retire --archive remote`) is read
//!   back with `git ls-remote` (exact commits) and fetched by URL.
//! - `lease archive drop` deletes an archive only when every tip it holds is
//!   reachable from a branch of the trusted remote confirmed now with
//!   `git ls-remote` (stricter than retire's durable ref: the archive may be
//!   the last copy), or with `--unreachable-ok`, written to the audit log.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, IoResultExt, Result};
use crate::git::{self, Git, RepoGit, ops};
use crate::model::reason::HoldReason;
use crate::model::record::{Archive, Record};
use crate::ops::Ctx;
use crate::policy::Policy;
use crate::store::registry::Registry;

/// What `lease restore` was asked to do.
#[derive(Debug, Clone)]
pub struct RestoreRequest {
    /// Record id or unique prefix of the archived record.
    pub id: String,
    /// `--to`: the new worktree's path (must not exist).
    pub to: Option<PathBuf>,
    /// `--branch`: a demanded branch name.
    pub branch: Option<String>,
    /// `--again`: restore although a receipt exists.
    pub again: bool,
}

/// What a restore did.
#[derive(Debug, Clone, Serialize)]
pub struct RestoreReport {
    /// The archived record.
    pub from: String,
    /// The new record.
    pub id: String,
    /// The new worktree.
    pub worktree: String,
    /// The branch checked out there.
    pub branch: String,
    /// The restored HEAD.
    pub head: String,
    /// The ref the bundle's head was fetched into.
    pub fetched_ref: String,
    /// The bundle.
    pub bundle: String,
}

/// One archive, as `lease archives` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct ArchiveEntry {
    /// The record id.
    pub id: String,
    /// The record's state.
    pub state: String,
    /// The repository (common git dir).
    pub repository: String,
    /// The branch the worktree had.
    pub branch: Option<String>,
    /// The archived HEAD.
    pub tip: String,
    /// Commits in the bundle.
    pub commits: u64,
    /// `bundle`, `remote` or `both`.
    pub kind: String,
    /// Size of the bundle file in bytes, if there is one and it is still there.
    pub size: Option<u64>,
    /// Recorded sha256.
    pub sha256: String,
    /// The bundle path (for `remote`, the remote's URL).
    pub location: String,
    /// Archival refs on the trusted remote and their commits.
    pub remote_refs: std::collections::BTreeMap<String, String>,
    /// Restores made from it.
    pub receipts: Vec<serde_json::Value>,
}

/// The bundle ref naming the archived HEAD.
fn head_ref(id: &str) -> String {
    format!("refs/lease/{id}/head")
}

/// Returns the archive of `rec`, or a usage error when it has none.
fn archive_of(rec: &Record) -> Result<&Archive> {
    rec.archive
        .as_ref()
        .ok_or_else(|| Error::Usage(format!("record {} has no archive", rec.id)))
}

/// Re-verifies the archive of `rec`: its archival refs, if any, read back at
/// their exact commits; its bundle, if any, by sha256, header, prerequisites
/// and an unbundle with fsck (`archive-unverified` on any failure).
pub fn verify_archive(reg: &Registry, rg: &RepoGit, rec: &Record) -> Result<()> {
    let a = archive_of(rec)?;
    if let Some(r) = &a.remote {
        let listed = crate::ops::retire::read_back(rg, Path::new(&rec.repo), &r.url, &r.refs)?;
        crate::plan::check_readback(&r.refs, &listed).map_err(|h| {
            Error::refused(
                HoldReason::ArchiveUnverified,
                format!("`{}`: {}", r.url, h.detail),
            )
        })?;
    }
    if a.has_bundle() {
        verify_bundle_of(reg, rg, rec, a)?;
    }
    Ok(())
}

/// Re-verifies the bundle of `rec`: sha256 of the file, its header names
/// the recorded refs, its prerequisites are in the repository, then unbundle
/// with fsck in a scratch repository. Every failure is `archive-unverified`.
fn verify_bundle_of(reg: &Registry, rg: &RepoGit, rec: &Record, a: &Archive) -> Result<()> {
    let bundle = Path::new(&a.location);
    let unverified = |what: String| {
        Error::refused(
            HoldReason::ArchiveUnverified,
            format!("`{}`: {what}", bundle.display()),
        )
    };
    // A regular file only, never through a symlink or waiting on a FIFO.
    let mut file =
        crate::os::fs::open_regular(bundle).map_err(|e| unverified(format!("cannot open: {e}")))?;
    let sha = crate::ops::retire::fd_sha256(&mut file)
        .map_err(|e| unverified(format!("cannot hash: {e}")))?;
    if sha != a.sha256 {
        return Err(unverified(format!(
            "sha256 is {sha}, recorded {}",
            a.sha256
        )));
    }
    let header = crate::ops::retire::read_header(&mut file)
        .ok_or_else(|| unverified("has no bundle header".into()))?;
    let mut want: Vec<(String, String)> =
        a.refs.iter().map(|(n, o)| (o.clone(), n.clone())).collect();
    let mut got = header.refs.clone();
    want.sort();
    got.sort();
    if want != got {
        return Err(unverified("its refs differ from the recorded ones".into()));
    }
    let repo = PathBuf::from(&rec.repo);
    for p in &header.prerequisites {
        if !ops::has_commit(rg, &repo, p)? {
            return Err(unverified(format!(
                "prerequisite {p} is no longer in `{}`",
                repo.display()
            )));
        }
    }
    let fmt = ops::object_format(rg, &repo)?;
    let tips: Vec<(String, String)> = a.refs.iter().map(|(n, o)| (n.clone(), o.clone())).collect();
    crate::ops::retire::verify_bundle(rg, reg.root(), &rec.id, &repo, &fmt, bundle, &header, &tips)
        .map_err(|h| Error::refused(h.reason, h.detail))
}

/// Opens the registry and the repository of record `id` for a command that
/// reads or restores its archive.
fn open(ctx: &Ctx, id: &str) -> Result<(Registry, Git, Record)> {
    if ctx.existing_root()?.is_none() {
        return Err(Error::Usage(format!("no record matches `{id}`")));
    }
    let reg = Registry::new(ctx.open_root()?);
    let id = reg.resolve(id)?;
    let rec = reg.get(&id)?;
    let git = ctx.git()?;
    Ok((reg, git, rec))
}

/// `lease archive verify ID`.
pub fn verify(ctx: &Ctx, id: &str) -> Result<Record> {
    let (reg, git, rec) = open(ctx, id)?;
    let rg = git.repo(Path::new(&rec.repo))?;
    verify_archive(&reg, &rg, &rec)?;
    Ok(rec)
}

/// `lease archives`: every record with an archive.
pub fn archives(ctx: &Ctx) -> Result<Vec<ArchiveEntry>> {
    let Some(root) = ctx.existing_root()? else {
        return Ok(Vec::new());
    };
    let reg = Registry::new(root);
    let mut out = Vec::new();
    for l in reg.scan()? {
        let crate::store::registry::Loaded::Ok(r) = l else {
            continue;
        };
        let Some(a) = &r.archive else { continue };
        out.push(ArchiveEntry {
            id: r.id.clone(),
            state: r.state.name().to_string(),
            repository: r.repo.clone(),
            branch: r.branch.clone(),
            tip: a.tip.clone(),
            commits: a.commits,
            kind: a.kind.clone(),
            size: a
                .has_bundle()
                .then(|| fs::metadata(&a.location).ok().map(|m| m.len()))
                .flatten(),
            sha256: a.sha256.clone(),
            location: a.location.clone(),
            remote_refs: a
                .remote
                .as_ref()
                .map(|r| r.refs.clone())
                .unwrap_or_default(),
            receipts: a.receipts.clone(),
        });
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// Returns the commit `refs/heads/<name>` points at, if it exists.
fn branch_tip(rg: &RepoGit, repo: &Path, name: &str) -> Result<Option<String>> {
    ops::resolve_commit(rg, repo, &format!("refs/heads/{name}"))
}

/// Chooses the branch: the demanded or archived name if it is missing or
/// already at the tip (and, when not demanded, not checked out elsewhere);
/// otherwise `<name>-restored-<prefix>` (a further copy, with `--again`,
/// gets one more random suffix). A demanded name that moved is
/// `branch-moved`.
fn choose_branch(
    rg: &RepoGit,
    repo: &Path,
    rec: &Record,
    demanded: Option<&str>,
    tip: &str,
) -> Result<String> {
    let name = demanded
        .map(str::to_string)
        .or_else(|| rec.branch.clone())
        .unwrap_or_else(|| format!("lease/{}", rec.prefix()));
    if !ops::is_branch_name(rg, repo, &name)? {
        return Err(Error::Usage(format!("`{name}` is not a valid branch name")));
    }
    let moved = |n: &str, at: &str| {
        Error::refused(
            HoldReason::BranchMoved,
            format!(
                "branch `{n}` is at {at}, not at the archived {tip}; restore never moves a ref"
            ),
        )
    };
    let busy = checked_out(rg, repo)?;
    match branch_tip(rg, repo, &name)? {
        None => return Ok(name),
        Some(at) if at == tip && (demanded.is_some() || !busy.contains(&name)) => {
            return Ok(name);
        }
        Some(at) if at != tip && demanded.is_some() => return Err(moved(&name, &at)),
        Some(_) => {}
    }
    let alt = format!("{name}-restored-{}", rec.prefix());
    match branch_tip(rg, repo, &alt)? {
        None => Ok(alt),
        Some(at) if at == tip && !busy.contains(&alt) => Ok(alt),
        Some(at) if at == tip => Ok(format!("{alt}-{}", &crate::store::registry::new_id()?[..8])),
        Some(at) => Err(moved(&alt, &at)),
    }
}

/// The short names of the branches checked out in some worktree.
fn checked_out(rg: &RepoGit, repo: &Path) -> Result<Vec<String>> {
    let list = ops::worktree_list(rg, repo)?;
    Ok(git::parse::parse_worktrees(&list)
        .into_iter()
        .filter_map(|e| e.branch)
        .map(|b| String::from_utf8_lossy(b.strip_prefix(b"refs/heads/").unwrap_or(&b)).into_owned())
        .collect())
}

/// `lease restore`. Each step and the refusal, if any, is logged at info
/// (`-v`), as a retire logs its gates.
pub fn restore(ctx: &Ctx, req: &RestoreRequest) -> Result<RestoreReport> {
    let r = restore_steps(ctx, req);
    match &r {
        Ok(rep) => {
            tracing::info!(id = %rep.from, restored = %rep.id, worktree = %rep.worktree, branch = %rep.branch, "restore: done")
        }
        Err(e) => tracing::info!(
            id = %req.id,
            reason = e.reason().map(|r| r.code()).unwrap_or_default(),
            error = %e,
            "restore: refused"
        ),
    }
    r
}

fn restore_steps(ctx: &Ctx, req: &RestoreRequest) -> Result<RestoreReport> {
    if let Some(to) = &req.to {
        crate::store::root::refuse_newline("--to", to)?;
    }
    let (reg, git, rec) = open(ctx, &req.id)?;
    let a = archive_of(&rec)?.clone();
    tracing::info!(id = %rec.id, kind = %a.kind, location = %a.location, receipts = a.receipts.len(), again = req.again, "restore: archive found");
    if !a.receipts.is_empty() && !req.again {
        return Err(Error::refused(
            HoldReason::AlreadyRestored,
            format!(
                "archive of {} was restored {} time(s) already",
                rec.id,
                a.receipts.len()
            ),
        ));
    }
    if req.to.is_none() {
        // Into the worktree root, like exec: never one OS cleaners sweep.
        crate::store::root::check_not_temp(
            &reg.root().worktrees(),
            reg.root().policy().allow_temp_worktree_root.value,
        )?;
    }
    if let Some(to) = &req.to
        && fs::symlink_metadata(to).is_ok()
    {
        return Err(Error::refused(
            HoldReason::PathOccupied,
            format!(
                "`{}` exists; restore writes only into a directory it creates",
                to.display()
            ),
        ));
    }
    let repo = PathBuf::from(&rec.repo);
    if !repo.is_dir() {
        return Err(Error::refused(
            HoldReason::RepoMissing,
            format!("repository `{}` is gone", repo.display()),
        ));
    }
    let rg = git.repo(&repo)?;
    let tip = a
        .refs
        .get(&head_ref(&rec.id))
        .cloned()
        .unwrap_or(a.tip.clone());
    tracing::info!(id = %rec.id, repo = %repo.display(), to = ?req.to, "restore: target free, repository present");
    let branch = choose_branch(&rg, &repo, &rec, req.branch.as_deref(), &tip)?;
    tracing::info!(id = %rec.id, branch = %branch, tip = %tip, "restore: branch chosen");
    verify_archive(&reg, &rg, &rec)?;
    tracing::info!(id = %rec.id, "restore: archive verified");
    let fetched = format!("refs/lease/restore/{}", rec.id);
    // From the bundle when there is one, else by URL from the archival ref.
    let (source, head) = match (&a.remote, a.has_bundle()) {
        (Some(r), false) => (
            r.url.clone(),
            crate::ops::retire::archival_ref(&rec.id, &head_ref(&rec.id)),
        ),
        _ => (a.location.clone(), head_ref(&rec.id)),
    };
    ops::fetch_ref(&rg, &repo, &source, &head, &fetched)?;
    crate::os::fault::point("restore-fetched");
    let at = ops::require_commit(&rg, &repo, &fetched)?;
    if at != tip {
        return Err(Error::refused(
            HoldReason::ArchiveUnverified,
            format!("`{fetched}` is at {at}, not at the archived {tip}"),
        ));
    }
    tracing::info!(id = %rec.id, fetched = %fetched, from = %source, "restore: fetched the archived tip");
    let (id, wt) = crate::ops::launcher::create_restored(
        &reg,
        &git,
        &repo,
        req.to.clone(),
        &branch,
        &tip,
        &rec.id,
    )?;
    let head = ops::require_commit(&rg, &wt, "HEAD")?;
    let worktree = crate::store::root::utf8(&wt)?;
    crate::os::fault::point("restore-created");
    let receipt = serde_json::json!({
        "at": crate::model::fmt::now(),
        "record": id,
        "head": head,
        "branch": branch,
        "worktree": worktree,
    });
    reg.update(&rec.id, |r| {
        if let Some(a) = r.archive.as_mut() {
            a.receipts.push(receipt);
        }
        Ok(())
    })?;
    Ok(RestoreReport {
        from: rec.id.clone(),
        id,
        worktree,
        branch,
        head,
        fetched_ref: fetched,
        bundle: a.location.clone(),
    })
}

/// What `lease archive drop` did.
#[derive(Debug, Clone, Serialize)]
pub struct DropReport {
    /// The record whose archive was dropped.
    pub id: String,
    /// `bundle`, `remote` or `both`.
    pub kind: String,
    /// The bundle path (for `remote`, the URL).
    pub location: String,
    /// The archived tips.
    pub tips: Vec<String>,
    /// Tips not reachable from a confirmed branch of the trusted remote
    /// (non-empty only with `--unreachable-ok`).
    pub unreachable: Vec<String>,
    /// Archival refs deleted on the remote.
    pub remote_refs_deleted: Vec<String>,
}

/// The archived tips of `a`: every ref it names, and its HEAD.
fn tips_of(a: &Archive) -> Vec<String> {
    let mut tips: Vec<String> = Vec::new();
    for oid in a.refs.values().chain(std::iter::once(&a.tip)) {
        if !oid.is_empty() && !tips.contains(oid) {
            tips.push(oid.clone());
        }
    }
    tips
}

/// The tips not reachable now from a branch of the trusted remote, as
/// `git ls-remote` lists them and this repository has them (a tip or head
/// the repository lacks proves nothing, so the tip counts as unreachable).
fn unreachable_tips(
    policy: &Policy,
    rg: &RepoGit,
    repo: &Path,
    rec: &Record,
    tips: &[String],
) -> Result<Vec<String>> {
    let has = |oid: &str| ops::has_commit(rg, repo, oid);
    let mut heads: Vec<String> = Vec::new();
    match git::refs::trusted_remote(
        rg,
        repo,
        crate::ops::retire::configured_remote(policy).as_deref(),
        rec.branch.as_deref(),
    )? {
        Some(remote) => {
            let url = git::refs::remote_url(rg, repo, &remote)?;
            for (oid, name) in ops::ls_remote(rg, repo, &url, &[])? {
                if name.starts_with("refs/heads/") && !heads.contains(&oid) && has(&oid)? {
                    heads.push(oid);
                }
            }
        }
        // No trusted remote: the repository's own default branch plays the
        // durable ref's part (SPEC "Words: durable", `durable: local`).
        None => match git::refs::durable_ref(rg, repo, None, rec.branch.as_deref())? {
            Some((_, oid)) => heads.push(oid),
            None => return Ok(tips.to_vec()),
        },
    }
    let mut present: Vec<String> = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    for t in tips {
        if has(t)? {
            present.push(t.clone());
        } else {
            missing.push(t.clone());
        }
    }
    if !present.is_empty() {
        let unreached = ops::unreached(rg, repo, &present, &heads, ops::Shared::None)?;
        missing.extend(present.into_iter().filter(|t| unreached.contains(t)));
    }
    Ok(missing)
}

/// `lease archive drop ID [--unreachable-ok]`.
pub fn drop(ctx: &Ctx, id: &str, unreachable_ok: bool) -> Result<DropReport> {
    let (reg, git, rec) = open(ctx, id)?;
    drop_archive(&reg, &git, &rec, unreachable_ok)
}

/// The reconciler's question (SPEC "Provisioned files, disk, and
/// hygiene"): returns true if and only if every commit the archive of the
/// `removed` record `rec` holds is durable now, as `lease archive drop`
/// proves it (a branch of the trusted remote confirmed with `git
/// ls-remote`, or with no trusted remote the repository's own default
/// branch), so dropping it loses nothing. A record that is not `removed`
/// (a retire may still need its archive), has no archive, or whose
/// repository is gone: false.
///
/// # Errors
/// A git probe that fails (the archive is then kept: uncertainty holds).
pub fn archive_became_durable(policy: &Policy, git: &Git, rec: &Record) -> Result<bool> {
    let Some(a) = rec.archive.as_ref() else {
        return Ok(false);
    };
    let repo = PathBuf::from(&rec.repo);
    if rec.state != crate::model::record::State::Removed || !repo.is_dir() {
        return Ok(false);
    }
    let rg = git.repo(&repo)?;
    let unreachable = unreachable_tips(policy, &rg, &repo, rec, &tips_of(a))?;
    Ok(crate::plan::gate_archive_droppable(&unreachable).is_ok())
}

/// [`drop`] of the record `rec` of `reg`: the proof, then the archival
/// refs, the record, and last the bundle file.
pub fn drop_archive(
    reg: &Registry,
    git: &Git,
    rec: &Record,
    unreachable_ok: bool,
) -> Result<DropReport> {
    let a = archive_of(rec)?.clone();
    let repo = PathBuf::from(&rec.repo);
    let tips = tips_of(&a);
    let rg = if repo.is_dir() {
        Some(git.repo(&repo)?)
    } else {
        None
    };
    let unreachable = match &rg {
        Some(rg) => unreachable_tips(reg.root().policy(), rg, &repo, rec, &tips)?,
        None if unreachable_ok => tips.clone(),
        None => {
            return Err(Error::refused(
                HoldReason::RepoMissing,
                format!(
                    "repository `{}` is gone; nothing can be proven",
                    repo.display()
                ),
            ));
        }
    };
    if let Err(h) = crate::plan::gate_archive_droppable(&unreachable)
        && !unreachable_ok
    {
        let (reason, detail) = (h.reason, h.detail.clone());
        reg.update(&rec.id, |r| {
            r.audit("archive-drop-held", vec![reason], vec![detail]);
            Ok(())
        })?;
        return Err(Error::refused(
            h.reason,
            format!(
                "{}; nothing was deleted (fetch first if the remote has commits this repository lacks)",
                h.detail
            ),
        ));
    }
    // A bundle is deleted only from its own directory under the state root.
    let bundle = a.has_bundle().then(|| PathBuf::from(&a.location));
    if let Some(b) = &bundle
        && b.parent() != Some(reg.root().archives().join(&rec.id).as_path())
    {
        return Err(Error::refused(
            HoldReason::ArchiveUnverified,
            format!(
                "`{}` is not in this record's archive directory; nothing was deleted",
                b.display()
            ),
        ));
    }
    let mut remote_refs_deleted = Vec::new();
    if let (Some(r), Some(rg)) = (&a.remote, &rg) {
        remote_refs_deleted = drop_remote_refs(rg, &repo, r)?;
    }
    let dropped_id = rec.id.clone();
    let mut detail = vec![a.kind.clone(), a.location.clone(), a.sha256.clone()];
    detail.extend(tips.iter().map(|t| format!("tip {t}")));
    if !unreachable.is_empty() {
        detail.push(format!(
            "unreachable-ok: dropped {} commit(s) reachable from no durable ref: {}",
            unreachable.len(),
            unreachable.join(", ")
        ));
    }
    let reasons = if unreachable.is_empty() {
        vec![]
    } else {
        vec![HoldReason::ArchiveUnreachable]
    };
    // The audit line goes through the record write, so a crash cannot lose it.
    reg.update(&dropped_id, |r| {
        if r.archive.as_ref() != Some(&a) {
            return Err(Error::refused(
                HoldReason::RetireInProgress,
                "the archive changed while it was being dropped; run the drop again",
            ));
        }
        r.archive = None;
        r.audit("archive-dropped", reasons, detail);
        Ok(())
    })?;
    if let Some(b) = &bundle {
        if let Err(e) = fs::remove_file(b)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(e).at_do("cannot delete", b);
        }
        if let Some(dir) = b.parent() {
            let _ = fs::remove_dir(dir); // only if empty
            let _ = crate::os::atomic::sync_dir(
                &reg.root().archives(),
                &format!("the removal of `{}`", dir.display()),
            );
        }
    }
    Ok(DropReport {
        id: dropped_id,
        kind: a.kind.clone(),
        location: a.location.clone(),
        tips,
        unreachable,
        remote_refs_deleted,
    })
}

/// Deletes the archival refs of `r` still at their recorded commits, with a
/// push guarded by `--force-with-lease=<ref>:<oid>`. A ref already gone is
/// skipped; one at another commit holds (`archive-push-failed`).
fn drop_remote_refs(
    rg: &RepoGit,
    repo: &Path,
    r: &crate::model::record::RemoteRefs,
) -> Result<Vec<String>> {
    let listed = crate::ops::retire::read_back(rg, repo, &r.url, &r.refs)?;
    let mut doomed: Vec<(String, String)> = Vec::new();
    for (name, oid) in &r.refs {
        match listed.iter().find(|(_, n)| n == name) {
            None => {}
            Some((got, _)) if got == oid => doomed.push((name.clone(), oid.clone())),
            Some((got, _)) => {
                return Err(Error::refused(
                    HoldReason::ArchivePushFailed,
                    format!(
                        "`{name}` on `{}` is at {got}, not the archived {oid}; nothing was deleted",
                        r.url
                    ),
                ));
            }
        }
    }
    if doomed.is_empty() {
        return Ok(Vec::new());
    }
    let opts: Vec<String> = doomed
        .iter()
        .map(|(n, o)| format!("--force-with-lease={n}:{o}"))
        .collect();
    let out = ops::push(
        rg,
        repo,
        &r.url,
        &opts,
        doomed.iter().map(|(n, _)| format!(":{n}")),
    )?;
    if !out.ok {
        return Err(Error::refused(
            HoldReason::ArchivePushFailed,
            format!(
                "cannot delete the archival refs on `{}`: {}; nothing was deleted locally",
                r.url,
                out.error()
            ),
        ));
    }
    Ok(doomed.into_iter().map(|(n, _)| n).collect())
}
