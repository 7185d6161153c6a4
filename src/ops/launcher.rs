//! `lease exec`: admission, record, lease, worktree, then the command with the
//! lease inherited, signals forwarded once, and its exit status kept.
//!
//! # Invariants
//! - Order (SPEC/Commands): admission -> record `planned` -> lease file
//!   created and locked shared -> worktree added or adopted -> record
//!   `active` -> command started. A crash at any point leaves a record the
//!   reconciler can finish.
//! - The command inherits exactly one descriptor from lease: its own open of
//!   the lease, locked shared, at `LEASE_FD`. The launcher keeps a second,
//!   private open (close-on-exec), so a descendant's `LOCK_UN` on the
//!   inherited description cannot free the lease while the launcher lives.
//! - Nothing here calls `LOCK_UN`; descriptors are closed.
//! - Creation is serialized per repository under lease's own lock: parallel
//!   `git worktree add` calls race on `.git/config.lock` (SPEC: 20 of 32
//!   failed, measured).
//!
//! `lease join`, which takes the lease again from `LEASE_*` for a process
//! that lost the descriptor, lives in [`join`].

mod fast;
pub mod join;

use std::ffi::OsString;
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::low_level::siginfo::Cause;

use crate::error::{Error, IoResultExt, Result};
use crate::git::ops::AddConfig;
use crate::git::{self, Git, RepoGit};
use crate::model::reason::HoldReason;
use crate::model::record::{FileId, Origin, Outcome, Owner, Record, Retention, Session, State};
use crate::model::report::TargetReport;
use crate::ops::retire::Engine;
use crate::os::atomic::free_bytes;
use crate::os::process::{self, Ended};
use crate::policy::MinFree;
use crate::store::registry::Registry;

/// The variables git itself clears for a subprocess that works in another
/// repository (`local_repo_env` in git 2.47 `environment.c`), plus
/// `GIT_NAMESPACE`, which SPEC "The command's world" names too. The command
/// runs without them: a `lease exec` started from a git hook or alias
/// (which export `GIT_DIR`, `GIT_INDEX_FILE`, `GIT_PREFIX`, ...) must work
/// in its own worktree and never in the caller's repository or index.
pub const LOCAL_REPO_ENV: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
];

/// `/bin/sh -c LINE` in `cwd`, with the caller's environment less
/// [`LOCAL_REPO_ENV`]: a command lease runs for the operator (config
/// `teardown`), like the user's command, never git's (SPEC "Sanitized git"
/// is for git; this is the operator's own program, in the worktree).
pub(crate) fn shell_command(line: &str, cwd: &Path) -> Command {
    let mut c = Command::new("/bin/sh");
    c.arg("-c").arg(line).current_dir(cwd);
    for k in LOCAL_REPO_ENV {
        c.env_remove(k);
    }
    c
}

/// What `lease exec` was asked to do.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// `--repo`, else the current directory's repository.
    pub repo: Option<PathBuf>,
    /// `--branch`.
    pub branch: Option<String>,
    /// `--base`.
    pub base: Option<String>,
    /// `--adopt`.
    pub adopt: Option<PathBuf>,
    /// `--resume`: a record id or prefix whose worktree still exists.
    pub resume: Option<String>,
    /// `--keep`.
    pub keep: bool,
    /// `--owner`, else the policy's owner, else `manual:<user>`.
    pub owner: Option<Owner>,
    /// `--reap-if-low`: below the watermark, run a safe reap and re-read.
    pub reap_if_low: bool,
    /// The command and its arguments, verbatim.
    pub command: Vec<OsString>,
}

/// How an exec ended, for the CLI to report and mirror.
#[derive(Debug)]
pub struct ExecResult {
    /// How the command ended: its code or signal; 126/127 if it could not start.
    pub ended: Ended,
    /// The record id.
    pub id: String,
    /// Lines for stderr (holders left behind, spawn errors).
    pub notes: Vec<String>,
    /// The retire run after exit, for a created worktree without `--keep`.
    pub retire: Option<TargetReport>,
}

/// The worktree a session runs in, and the lease it holds.
pub(crate) struct Prepared {
    pub(crate) id: String,
    pub(crate) worktree: PathBuf,
    pub(crate) lease: FileId,
    /// The open the command inherits (locked shared).
    pub(crate) child_fd: fs::File,
    /// The launcher's private open (locked shared, close-on-exec).
    pub(crate) own_fd: fs::File,
    /// True if this run created the worktree (then it retires it after exit).
    pub(crate) created_now: bool,
    /// The record's slot, passed as `LEASE_SLOT` (absent in records older
    /// than slots).
    pub(crate) slot: Option<u32>,
}

/// Refuses, before anything is created, a worktree root that OS cleaners
/// sweep by age (`/tmp`, `/var/tmp`, `$TMPDIR`) unless config allows it.
pub(crate) fn check_root_not_temp(policy: &crate::policy::Policy) -> Result<()> {
    let state = crate::store::root::StateRoot::locate()?;
    crate::store::root::check_not_temp(
        &crate::store::root::worktree_root_of(&state, policy),
        policy.allow_temp_worktree_root.value,
    )
}

/// A new session of this process (pid and start time), not yet ended.
pub(crate) fn own_session() -> Result<Session> {
    let pid = std::process::id();
    let start_time = process::start_time(pid).ok_or_else(|| {
        Error::Environment("cannot read this process's start time from /proc".into())
    })?;
    Ok(Session {
        pid,
        start_time,
        started_at: crate::model::fmt::now(),
        ended_at: None,
        outcome: None,
        bound: None,
    })
}

/// Runs `lease exec`. `Err` means lease failed before the command ran (exit 125).
pub fn exec(ctx: &crate::ops::Ctx, req: ExecRequest) -> Result<ExecResult> {
    if req.command.is_empty() {
        return Err(Error::Usage("no command given after `--`".into()));
    }
    if req.resume.is_none() && req.adopt.is_none() {
        // Before anything is created: a worktree root that OS cleaners sweep.
        check_root_not_temp(&ctx.policy)?;
    }
    let root = ctx.open_root()?;
    let reg = Registry::new(root);
    let git = ctx.git_lazy()?;
    let session = own_session()?;
    let prepared = match (&req.resume, &req.adopt) {
        (Some(id), _) => resume(&reg, id, session)?,
        (None, Some(path)) => match fast::locked_record(&reg, path) {
            // A worktree this state root already records: one read and one
            // write of that record, unless it does not name this tree.
            Some((id, wt)) => match join_recorded(&reg, &id, &wt, session.clone())? {
                Some(p) => p,
                None => adopt(&reg, &git, path, &req, session)?,
            },
            None => adopt(&reg, &git, path, &req, session)?,
        },
        (None, None) => create(&reg, &git, &req, session)?,
    };
    run(&reg, git, prepared, &req)
}

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
        )));
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

fn caller_dir(req: &ExecRequest) -> Result<PathBuf> {
    let dir = match &req.repo {
        Some(r) => r.clone(),
        None => std::env::current_dir()
            .map_err(|e| Error::Environment(format!("cannot read the current directory: {e}")))?,
    };
    crate::store::root::refuse_newline("repository", &dir)?;
    let dir = fs::canonicalize(&dir)
        .map_err(|e| Error::Usage(format!("repository `{}`: {e}", dir.display())))?;
    crate::store::root::refuse_newline("repository", &dir)?;
    Ok(dir)
}

/// Returns the canonical common git dir of the repository containing `dir`.
fn common_dir(git: &Git, dir: &Path) -> Result<PathBuf> {
    let out = git::ops::common_dir(git, dir)?;
    if !out.ok {
        return Err(Error::Usage(format!(
            "`{}` is not in a git repository: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    // One path and its newline: a second line means a path with a newline
    // in it, which `first_line` would cut into another repository's path.
    let printed = out.stdout.strip_suffix(b"\n").unwrap_or(&out.stdout);
    let p = PathBuf::from(std::ffi::OsStr::from_bytes(printed));
    crate::store::root::refuse_newline("git directory", &p)?;
    fs::canonicalize(&p).at(&p)
}

fn owner_of(policy: &crate::policy::Policy, req: &ExecRequest) -> Result<Owner> {
    if let Some(o) = &req.owner {
        return Ok(o.clone());
    }
    Ok(policy.default_owner(crate::ops::caller_name))
}

/// `<repo name>-<first 8 hex of sha256 of the canonical common git dir>`.
pub(crate) fn repo_dir_name(common: &Path) -> String {
    let name = if common.file_name().is_some_and(|n| n == ".git") {
        common.parent().and_then(Path::file_name)
    } else {
        common.file_name()
    };
    let name = name
        .map(|n| n.to_string_lossy().trim_end_matches(".git").to_string())
        .unwrap_or_default();
    let hash = crate::model::fmt::sha256_hex(common.as_os_str().as_bytes());
    format!(
        "{}-{}",
        if name.is_empty() { "repo" } else { &name },
        &hash[..8]
    )
}

/// Refuses when free space on any filesystem that will receive data is
/// below any bound of the policy's watermark.
fn admit(policy: &crate::policy::Policy, dirs: &[&Path]) -> Result<()> {
    match low_space(&policy.min_free.bounds(), dirs) {
        None => Ok(()),
        Some(why) => Err(Error::Environment(why)),
    }
}

/// The first filesystem of `dirs` whose free space is below a bound, as a
/// message; `None` when every one has room.
fn low_space(bounds: &[MinFree], dirs: &[&Path]) -> Option<String> {
    for d in dirs {
        let free = free_bytes(d);
        for min in bounds {
            let need = min.required(crate::os::atomic::total_bytes(d));
            if free < need {
                return Some(format!(
                    "only {free} bytes free under `{}`, below the watermark of {need} bytes; free space, run `lease reap --apply` (or pass --reap-if-low), or lower the watermark (`lease config --show` says where it is set)",
                    d.display()
                ));
            }
        }
    }
    None
}

/// Admission with `--reap-if-low`: when space is low, runs the same reap as
/// `lease reap --apply --until-free W` under the reaper lock (never waiting
/// for another reaper), `W` the largest byte value any bound of the
/// watermark asks of any of `dirs`, then checks again: the largest
/// candidates go first and the reap stops once the watermark is met.
fn admit_or_reap(reg: &Registry, git: &Git, reap_if_low: bool, dirs: &[&Path]) -> Result<()> {
    let bounds = reg.root().policy().min_free.bounds();
    let Some(why) = low_space(&bounds, dirs) else {
        return Ok(());
    };
    if !reap_if_low {
        return Err(Error::Environment(why));
    }
    let reaped = match crate::ops::reap::lock_reaper(reg.root(), true) {
        Ok(_lock) => {
            let target = bounds
                .iter()
                .flat_map(|b| {
                    dirs.iter()
                        .map(|d| b.required(crate::os::atomic::total_bytes(d)))
                })
                .max()
                .unwrap_or(0);
            crate::ops::reap::reap_until_free(reg.root(), git, target).map(|r| r.bytes_reclaimed)
        }
        Err(e) => Err(e),
    };
    match (reaped, low_space(&bounds, dirs)) {
        (_, None) => Ok(()),
        (Ok(bytes), Some(why)) => Err(Error::Environment(format!(
            "{why} (a reap reclaimed {bytes} bytes, not enough)"
        ))),
        (Err(e), Some(why)) => Err(Error::Environment(format!(
            "{why} (the reap for --reap-if-low did not run: {e})"
        ))),
    }
}

fn file_id(path: &Path) -> Result<FileId> {
    let s = crate::os::fs::lstat(path)
        .ok_or_else(|| Error::Usage(format!("`{}` does not exist", path.display())))?;
    let btime = crate::os::fs::birth(&fs::symlink_metadata(path).ok());
    Ok(FileId::new(path, s.dev, s.ino, btime)?)
}

/// Creates the lease file for `id`, locks it shared, and opens the
/// launcher's private second description.
fn make_lease(reg: &Registry, id: &str) -> Result<(fs::File, fs::File, FileId)> {
    let path = reg.root().leases().join(format!("{id}.lease"));
    let (child_fd, lease) = crate::os::lease::create(&path)?;
    crate::os::lease::shared(&child_fd).at_do("cannot lock", &path)?;
    let own = crate::os::lease::open_checked(&lease, process::euid())
        .map_err(|h| Error::refused(h.reason, h.detail))?;
    crate::os::lease::shared(&own).at_do("cannot lock", &path)?;
    Ok((child_fd, own, lease))
}

/// Records that nothing was created: `planned -> removed` with a tombstone.
fn abandon(reg: &Registry, id: &str, why: &str) {
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

/// Refuses a worktree root inside any worktree of the repository: the
/// enclosing checkout's `git clean -ffdx` would delete it.
fn check_root_outside_worktrees(rg: &RepoGit, common: &Path, roots: &[&Path]) -> Result<()> {
    for e in git::ops::worktrees(rg, common)? {
        let top = e.path();
        if e.bare {
            continue;
        }
        if let Some(r) = roots.iter().find(|r| r.starts_with(&top)) {
            return Err(Error::refused(
                HoldReason::RootInsideWorktree,
                format!(
                    "`{}` is inside worktree `{}`; set LEASE_HOME outside every checkout",
                    r.display(),
                    top.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Takes the repository's creation lock (exclusive, blocking; released when
/// the returned file closes). Parallel `git worktree add` calls race on
/// `.git/config.lock` and leave orphan branches, so lease serializes them.
fn creation_lock(reg: &Registry, common: &Path) -> Result<fs::File> {
    let lock_path = reg
        .root()
        .locks()
        .join(format!("{}.lock", repo_dir_name(common)));
    crate::os::atomic::lock_private(&lock_path)
}

/// What a `git worktree add` left.
#[derive(Debug)]
enum Added {
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
fn add_worktree(
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
        return Err(Error::Usage(format!(
            "branch `{branch}` is checked out in worktree `{}`; if that directory is gone, run `lease repair {}`",
            e.path().display(),
            e.path().display()
        )));
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
fn added_or_kept(reg: &Registry, id: &str, wt: &Path, added: Result<Added>) -> Result<()> {
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

fn adopt(
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
fn check_no_bad_record_names(loaded: &[crate::store::registry::Loaded], wt: &Path) -> Result<()> {
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
fn check_adoptable_lock(locked: Option<&str>, wt: &Path, state_root: &Path) -> Result<()> {
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

/// `--resume ID`: a new session in the worktree of a `retained`, `terminal`
/// (or `interrupted`) record whose worktree still exists; a removed record
/// is refused with a hint to `lease restore` (never an empty new worktree).
fn resume(reg: &Registry, id: &str, session: Session) -> Result<Prepared> {
    let id = reg.resolve(id)?;
    let rec = reg.get(&id)?;
    if rec.state == State::Removed {
        let hint = if rec.archive.is_some() {
            format!("its commits are archived: `lease restore {}`", rec.prefix())
        } else {
            "it had no unique commits to archive".to_string()
        };
        return Err(Error::Usage(format!(
            "record {} was removed; {hint}",
            rec.id
        )));
    }
    let Some(w) = rec.worktree.clone() else {
        return Err(Error::refused(
            HoldReason::NotRegistered,
            format!("record {} has no worktree", rec.id),
        ));
    };
    let wt = w.path();
    match crate::os::fs::lstat(&wt) {
        Some(s) if (s.dev, s.ino) == (w.dev, w.ino) => {}
        _ => {
            return Err(Error::refused(
                HoldReason::PathIdentity,
                format!(
                    "`{}` is gone or is not the recorded directory",
                    wt.display()
                ),
            ));
        }
    }
    join_session(reg, rec, wt, session)
}

/// A new session in record `id`, found by git's lock on `wt`
/// ([`fast::locked_record`]): under the record's lock, one read, then the
/// record must name `wt` (path, device, inode) and not be `removed`, else
/// `Ok(None)` and nothing is written (the caller runs the full adopt); then
/// [`start_session`], written without an fsync (SPEC invariant 7).
fn join_recorded(
    reg: &Registry,
    id: &str,
    wt: &Path,
    session: Session,
) -> Result<Option<Prepared>> {
    let seen = crate::os::fs::lstat(wt);
    reg.update_session(id, |r| {
        let names = r.worktree.as_ref().is_some_and(|w| {
            w.path() == wt
                && seen
                    .as_ref()
                    .is_some_and(|s| (s.dev, s.ino) == (w.dev, w.ino))
        });
        if !names || r.state == State::Removed || r.lease.is_none() {
            return Ok(None);
        }
        start_session(r, wt, session).map(Some)
    })
}

/// A new session in an already recorded worktree (`exec --adopt` of a
/// recorded tree, `exec --resume`): [`start_session`] under the record's
/// lock, one read and one write, not fsynced (SPEC invariant 7).
fn join_session(reg: &Registry, rec: Record, wt: PathBuf, session: Session) -> Result<Prepared> {
    reg.update_session(&rec.id, |r| start_session(r, &wt, session))
}

/// Starts a session in record `r` (under its lock): the existing lease
/// opened and locked shared twice, the command's open and the launcher's
/// own (failing at once while a retire holds it exclusively), then the
/// record's state checked again under that lock: `active`, `terminal`,
/// `retained` or `interrupted` (a retire that crashed leaves `retiring`,
/// and a free lease must not let a session into it), moved to `active`,
/// and the session appended.
fn start_session(r: &mut Record, wt: &Path, session: Session) -> Result<Prepared> {
    let Some(lease) = r.lease.clone() else {
        return Err(Error::refused(
            HoldReason::LeaseMissing,
            format!("record {} has no lease", r.id),
        ));
    };
    let open = || -> Result<fs::File> {
        let f = crate::os::lease::open_checked(&lease, r.uid)
            .map_err(|h| Error::refused(h.reason, h.detail))?;
        if !crate::os::lease::try_shared(&f).at_do("cannot lock", &lease.path())? {
            return Err(Error::refused(
                HoldReason::RetireInProgress,
                format!("record {} is being retired", r.id),
            ));
        }
        Ok(f)
    };
    let child_fd = open()?;
    let own_fd = open()?;
    if !matches!(
        r.state,
        State::Active | State::Terminal | State::Retained | State::Interrupted
    ) {
        return Err(Error::refused(
            HoldReason::RetireInProgress,
            format!("record {} is {}", r.id, r.state.name()),
        ));
    }
    if r.state != State::Active {
        r.set_state(State::Active)?;
    }
    r.push_session(session);
    Ok(Prepared {
        id: r.id.clone(),
        worktree: wt.to_path_buf(),
        lease,
        child_fd,
        own_fd,
        created_now: false,
        slot: r.slot,
    })
}

/// Spawns the command, forwards signals, waits, records the outcome, closes
/// the lease, and retires a created worktree unless `--keep`.
fn run(reg: &Registry, git: Git, p: Prepared, req: &ExecRequest) -> Result<ExecResult> {
    process::become_subreaper().at_do("cannot become subreaper for", &p.worktree)?;
    let wanted: Vec<i32> = process::FORWARDED
        .iter()
        .copied()
        .filter(|s| !process::is_ignored(*s))
        .collect();
    let mut signals = SignalsInfo::<WithOrigin>::new(&wanted)
        .at_do("cannot register signal handlers for", &p.worktree)?;
    let identity = format!("{}:{}", p.lease.dev, p.lease.ino);
    let mut cmd = Command::new(&req.command[0]);
    for k in LOCAL_REPO_ENV {
        cmd.env_remove(k);
    }
    cmd.args(&req.command[1..])
        .current_dir(&p.worktree)
        .env("LEASE_ID", &p.id)
        .env("LEASE_FD", p.child_fd.as_raw_fd().to_string())
        .env("LEASE_FILE", &p.lease.path)
        .env("LEASE_IDENTITY", identity)
        .env("LEASE_WORKTREE", &p.worktree)
        // The git lease resolved (config `git`, else the first on PATH that
        // is not the shim): the shim's fork-free path runs it (shim/README.md).
        .env("LEASE_GIT", git.path());
    if let Some(slot) = p.slot {
        cmd.env("LEASE_SLOT", slot.to_string());
    }
    // The one descriptor the command inherits: clear close-on-exec just for
    // the spawn, then set it again so no later child of lease inherits it.
    process::set_inherited(&p.child_fd, true).at_do("cannot pass", &p.lease.path())?;
    let spawned = cmd.spawn();
    let mut notes = Vec::new();
    // From here on the command may run: nothing returns early, so exec's
    // status is the command's (SPEC "The command's world").
    if let Err(e) = process::set_inherited(&p.child_fd, false) {
        notes.push(format!(
            "lease: cannot set close-on-exec on the lease again ({e}); a later child of lease may inherit it"
        ));
    }
    let ended = match spawned {
        Ok(child) => {
            let pid = child.id();
            let pidfd = process::pidfd(pid).ok();
            let handle = signals.handle();
            let forwarder = std::thread::spawn(move || {
                for info in signals.forever() {
                    // A terminal's signal (Cause::Kernel) already reached the
                    // command in our process group; only forward `kill`s.
                    if matches!(info.cause, Cause::Sent(_))
                        && let Some(fd) = &pidfd
                    {
                        let _ = process::pidfd_signal(fd, info.signal);
                    }
                }
            });
            let ended = loop {
                match process::wait_any() {
                    Ok(Some((p2, ended))) if p2 == pid => break ended,
                    Ok(Some(_)) => continue, // an orphan re-parented to us: reaped
                    Ok(None) => break Ended::Code(125),
                    Err(e) => {
                        notes.push(format!("lease: cannot wait for the command: {e}"));
                        break Ended::Code(125);
                    }
                }
            };
            handle.close();
            let _ = forwarder.join();
            ended
        }
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            notes.push(format!(
                "lease: cannot run `{}`: {e}",
                req.command[0].to_string_lossy()
            ));
            Ended::Code(code)
        }
    };
    crate::os::fault::point("exec-ran");
    // The command may have changed the config: read filter drivers afresh.
    Git::forget_filters();
    // Close both of our descriptors: the locks end with them (never LOCK_UN).
    drop(p.child_fd);
    drop(p.own_fd);
    // One read of /proc/locks first: with no lock left on the lease (the
    // usual end), the scan of every process's descriptors finds nothing.
    let holders = if crate::os::procfs::lock_listed(p.lease.dev, p.lease.ino) {
        crate::os::procfs::holders((p.lease.dev, p.lease.ino)).0
    } else {
        Vec::new()
    };
    if !holders.is_empty() {
        notes.push(format!(
            "lease: the command exited but {} process(es) still hold the lease of `{}`: pid {}",
            holders.len(),
            p.worktree.display(),
            holders
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let (code, signal) = match ended {
        Ended::Code(c) => (Some(c), None),
        Ended::Signal(s) => (None, Some(s)),
    };
    // HEAD from git's files (no libgit2 open, no second read of the
    // record): the common dir through the worktree's `.git` file, else the
    // record's `repo`.
    let common = crate::git::libgit2::common_of_linked(&p.worktree)
        .or_else(|| reg.get(&p.id).ok().map(|r| PathBuf::from(r.repo)));
    let head = common.and_then(|c| head_of(&git, &c, &p.worktree));
    let outcome = Outcome {
        code,
        signal,
        at: crate::model::fmt::now(),
        head,
        error: notes
            .iter()
            .find(|n| n.starts_with("lease: cannot run"))
            .cloned(),
        holders: holders.clone(),
        note: None,
    };
    let keep_for = if req.keep {
        Some(owner_of(reg.root().policy(), req))
    } else {
        None
    }
    .transpose();
    let recorded =
        keep_for.and_then(|keep| end_session(reg, &p.id, std::process::id(), &outcome, keep));
    let retire = match recorded {
        // A recorded `retire --when-free` is completed by the last one to
        // leave, whatever the origin (SPEC "Hosts that lease does not start").
        Ok((State::Terminal, Some(intent))) => {
            Some(crate::ops::intent::complete(reg, git, &p.id, &intent))
        }
        Ok((State::Terminal, None)) if p.created_now && !req.keep => {
            Some(Engine::new(reg.clone(), git, false).retire(&p.id))
        }
        Ok(_) => None,
        Err(e) => {
            // The command ran: its status stands whatever lease fails to
            // record now (SPEC "The command's world"). The record stays
            // `active` with a dead launcher, which retire and reap resolve.
            notes.push(format!(
                "lease: the command ran, but lease could not record its end: {e}; its exit status is passed on as is; once the cause is fixed, `lease reap --apply` finishes record {}",
                &p.id[..8.min(p.id.len())]
            ));
            None
        }
    };
    Ok(ExecResult {
        ended,
        id: p.id,
        notes,
        retire,
    })
}

/// Records the end of session `pid` (a launcher whose command exited, or a
/// keeper whose bound process did): its `ended_at` and `outcome`, and the
/// record's `outcome`. When no other launcher lives and the record is
/// `active`, it turns `terminal`, then `retained` if a `lease hold` made
/// while active waits (SPEC/Commands) or `keep` names the owner of an
/// `exec --keep`. Returns the state after, and the pending
/// `retire --when-free` intent, read under the same record lock: the
/// caller has already closed its lease descriptors, so an intent recorded
/// after this read finds the lease free itself (`ops::intent`).
pub(crate) fn end_session(
    reg: &Registry,
    id: &str,
    pid: u32,
    outcome: &Outcome,
    keep: Option<Owner>,
) -> Result<(State, Option<crate::model::record::Intent>)> {
    // Not fsynced (SPEC invariant 7; docs/record.md "Durability"), except
    // under `--keep`, whose `retained` keeps a reap from retiring the tree.
    let durable = keep.is_some();
    let end = |r: &mut Record| {
        let mine = r
            .sessions
            .iter_mut()
            .rev()
            .find(|s| s.pid == pid && s.ended_at.is_none());
        if let Some(s) = mine {
            s.ended_at = Some(outcome.at.clone());
            s.outcome = Some(outcome.clone());
        }
        r.outcome = Some(outcome.clone());
        if !r.any_launcher_alive(crate::os::process::is_alive) && r.state == State::Active {
            r.set_state(State::Terminal)?;
            // A `lease hold` made while active takes effect now (SPEC/Commands);
            // an earlier `--keep` covered only its own session's exit.
            let held = r.retention.as_ref().is_some_and(|t| !t.is_kept_at_exit());
            if held {
                r.set_state(State::Retained)?;
            } else if let Some(owner) = keep {
                r.retention = Some(Retention {
                    owner,
                    reason: crate::model::record::KEPT_AT_EXIT.into(),
                    until: None,
                });
                r.set_state(State::Retained)?;
            } else {
                r.retention = None;
            }
        }
        Ok((r.state, r.intent.clone()))
    };
    if durable {
        reg.update(id, end)
    } else {
        reg.update_session(id, end)
    }
}

/// The worktree's HEAD commit after the command, read from git's files
/// ([`crate::git::admin::head_commit_direct`]: no libgit2 open on the launch
/// path) where they tell, else with `git rev-parse`; `None` when neither can.
pub(crate) fn head_of(git: &Git, common: &Path, worktree: &Path) -> Option<String> {
    match crate::git::admin::linked_admin(common, worktree)
        .and_then(|admin| crate::git::admin::head_commit_direct(common, &admin))
    {
        Some(h) => h,
        None => git
            .repo(common)
            .ok()
            .and_then(|rg| git::ops::resolve_ref(&rg, worktree, "HEAD").ok().flatten()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_watermark_is_that_share_of_the_filesystem() {
        let root = Path::new("/");
        let s = rustix::fs::statvfs(root).unwrap();
        let total = s.f_blocks * s.f_frsize;
        let all = MinFree::Percent(100).required(crate::os::atomic::total_bytes(root));
        let half = MinFree::Percent(50).required(crate::os::atomic::total_bytes(root));
        assert!(all <= total && total - all < 100, "{all} of {total}");
        assert!(
            half <= total / 2 && total / 2 - half < 100,
            "{half} of {total}"
        );
        assert_eq!(
            MinFree::Percent(0).required(crate::os::atomic::total_bytes(root)),
            0
        );
        assert_eq!(
            MinFree::Bytes(7).required(crate::os::atomic::total_bytes(root)),
            7
        );
        assert_eq!(
            MinFree::Percent(5).required(crate::os::atomic::total_bytes(Path::new("/nonexistent"))),
            u64::MAX,
            "an unreadable filesystem never has enough"
        );
        assert_eq!(MinFree::parse("1GiB").unwrap(), MinFree::Bytes(1 << 30));
        assert_eq!(MinFree::parse("5%").unwrap(), MinFree::Percent(5));
        assert!(MinFree::parse("101%").is_err());
        // Overflow is a usage error, never a wrap or a panic.
        for huge in [
            "99999999999999999999G",
            "18446744073709551615K",
            "16777216T",
            "18446744073709551616",
            "256%",
            "-1%",
            "-5G",
        ] {
            assert!(
                matches!(MinFree::parse(huge), Err(Error::Usage(_))),
                "{huge}"
            );
        }
        assert_eq!(
            MinFree::parse("16777215T").unwrap(),
            MinFree::Bytes(16_777_215 << 40),
            "the largest whole terabytes that fit"
        );
        assert!(MinFree::parse("lots").is_err());
        assert!(MinFree::parse("").is_err());
    }

    #[test]
    fn exactly_the_watermark_free_is_enough() {
        // procfs has no free blocks and never will: a stable 0 bytes free.
        let proc = Path::new("/proc");
        assert_eq!(free_bytes(proc), 0);
        assert_eq!(low_space(&[MinFree::Bytes(0)], &[proc]), None);
        assert_eq!(low_space(&[MinFree::Percent(0)], &[proc]), None);
        let low = low_space(&[MinFree::Bytes(0), MinFree::Bytes(1)], &[proc]).unwrap();
        assert!(low.contains("only 0 bytes free under `/proc`"), "{low}");
    }

    #[test]
    fn repo_dir_names() {
        let a = repo_dir_name(Path::new("/src/proj/.git"));
        assert!(a.starts_with("proj-") && a.len() == 13, "{a}");
        assert!(repo_dir_name(Path::new("/srv/bare.git")).starts_with("bare-"));
        assert_ne!(repo_dir_name(Path::new("/a/proj/.git")), a);
    }
}
