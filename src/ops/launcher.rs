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

mod admission;
mod adoption;
mod creation;
mod fast;
pub mod join;
pub mod shim;
mod supervise;

pub(crate) use admission::check_root_not_temp;
#[cfg(test)]
use admission::low_space;
use admission::{admit, admit_or_reap, check_root_outside_worktrees};
use adoption::adopt;
pub use adoption::{AdoptReport, adopt_only};
pub(crate) use creation::create;
pub use creation::create_restored;
use creation::{abandon, file_id, make_lease};
use supervise::run;
pub(crate) use supervise::{end_session, head_of};

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, IoResultExt, Result};
use crate::git::{self, Git};
use crate::model::reason::HoldReason;
use crate::model::record::{FileId, Owner, Record, Session, State};
use crate::model::report::TargetReport;
use crate::os::process::{self, Ended};
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
            "`{}` is not in a git repository ({}); name a worktree of one (`git worktree list` shows them), or run lease from inside the repository",
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::os::atomic::free_bytes;
    use crate::policy::MinFree;

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
