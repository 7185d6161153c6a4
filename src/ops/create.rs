//! `lease create`: a leased worktree for a host that lease does not start
//! (SPEC "Hosts that lease does not start").
//!
//! # Theory of operation
//! The worktree is created and registered exactly as `lease exec` creates
//! one (`launcher::create`: admission, record `planned`, lease
//! file locked shared, `git worktree add --lock` with lease's reason,
//! record `active`), with this process as the session's launcher. Then a
//! *keeper* starts ([`crate::ops::keeper`]): lease itself, re-executed with
//! the hidden `keeper` subcommand in its own session. It takes its own open
//! of the lease, locked shared, and the worktree's top directory `LOCK_SH`,
//! makes the session its own (pid, start time, and the bound process), and
//! says `ready` over a pipe. Only then does this process close its own
//! lease descriptors and print the path: the caller never sees a path that
//! nothing protects. From the first lock to the last, the lease is held.
//!
//! # Failure
//! A keeper that cannot start (the bound process already exited, the lease
//! or record changed) says why over the pipe, or dies without a word; this
//! process then ends the session (outcome note `keeper did not start: ...`),
//! closes the lease and retires the fresh worktree once through the gates
//! (nobody was ever given its path), and fails. A crash of this process
//! before the keeper is ready leaves an `active` record whose launcher is
//! gone: retire and reap finish it like a killed launcher's.

use std::io::Read;
use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::git::Git;
use crate::model::record::Bound;
use crate::model::record::{Outcome, Owner, State};
use crate::ops::launcher::{ExecRequest, Prepared};
use crate::ops::retire::Engine;
use crate::os::process;
use crate::store::registry::Registry;

/// Environment variables a keeper never inherits: hosts find the processes
/// to kill at the end of a job by them, and a keeper must outlive the job
/// step that started it. `RUNNER_TRACKING_ID`: the GitHub Actions runner
/// kills every process that carries its job's value (actions/runner
/// `ProcessInvoker`, orphan cleanup); `JENKINS_NODE_COOKIE` and `BUILD_ID`:
/// Jenkins' ProcessTreeKiller does the same (jenkins.io, "Spawning
/// processes from build").
pub const HOST_TRACKING_ENV: &[&str] = &["RUNNER_TRACKING_ID", "JENKINS_NODE_COOKIE", "BUILD_ID"];

/// What `lease create` was asked to do.
#[derive(Debug, Clone)]
pub struct CreateRequest {
    /// `--repo`, else the current directory's repository.
    pub repo: Option<PathBuf>,
    /// `--branch`.
    pub branch: Option<String>,
    /// `--base`.
    pub base: Option<String>,
    /// `--owner`, else the policy's owner, else `manual:<user>`.
    pub owner: Option<Owner>,
    /// `--bind-pid`: the keeper holds the lease until this process exits.
    pub bind_pid: u32,
    /// The global `--config FILE`, passed on to the keeper so it resolves
    /// the same policy (its environment, `LEASE_*` included, is this one's).
    pub config: Option<PathBuf>,
}

/// What `lease create` made (its `--json` object, SPEC "Hosts that lease
/// does not start").
#[derive(Debug, Clone, Serialize)]
pub struct Created {
    /// The record id (32 hex).
    pub id: String,
    /// The worktree's top directory: canonical, absolute.
    pub path: String,
    /// The branch checked out in it.
    pub branch: String,
    /// The keeper's pid.
    pub keeper_pid: u32,
    /// The record's slot (what `lease exec` passes as `LEASE_SLOT`: a host
    /// picks its ports from it; SPEC "Provisioned files, disk, and
    /// hygiene"). Always set for a record made now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
}

/// Runs `lease create`. Returns once the keeper holds the lease.
///
/// Errors: usage (exit 2) for a `--bind-pid` that names no live process or
/// this process itself, and everything `lease exec` refuses before its
/// command runs (a held refusal is exit 1); exit 3 when the keeper could
/// not start.
pub fn create(ctx: &crate::ops::Ctx, req: CreateRequest) -> Result<Created> {
    let bound = bound_of(req.bind_pid)?;
    crate::ops::launcher::check_root_not_temp(&ctx.policy)?;
    let root = ctx.open_root()?;
    let reg = Registry::new(root);
    let git = ctx.git_lazy()?;
    let session = crate::ops::launcher::own_session()?;
    let exec_req = ExecRequest {
        repo: req.repo.clone(),
        branch: req.branch.clone(),
        base: req.base.clone(),
        adopt: None,
        resume: None,
        keep: false,
        owner: req.owner.clone(),
        reap_if_low: false,
        command: Vec::new(),
    };
    let p = crate::ops::launcher::create(&reg, &git, &exec_req, session)?;
    let made = reg.get(&p.id)?;
    let (branch, slot) = (made.branch.unwrap_or_default(), made.slot);
    match start_keeper(&p, &bound, req.config.as_deref()) {
        Ok(keeper_pid) => {
            // The keeper holds the lease now: ours may close.
            let Prepared {
                id,
                worktree,
                child_fd,
                own_fd,
                ..
            } = p;
            drop(child_fd);
            drop(own_fd);
            Ok(Created {
                id,
                path: crate::store::root::utf8(&worktree)?,
                branch,
                keeper_pid,
                slot,
            })
        }
        Err(why) => Err(abandon_tree(&reg, git, p, &why)),
    }
}

/// The live process `pid` names, as a [`Bound`] (pid and start time).
fn bound_of(pid: u32) -> Result<Bound> {
    if pid == std::process::id() {
        return Err(Error::Usage(
            "--bind-pid names `lease create` itself, which exits as soon as the worktree is ready; bind the process that uses the worktree (the host, the job, the shell)".into(),
        ));
    }
    let gone = || {
        Error::Usage(format!(
            "--bind-pid {pid}: no such process; bind a live process (the host's pid, or `$$` of the calling shell)"
        ))
    };
    // A pidfd proves it exists now (pidfd_open fails with ESRCH otherwise).
    process::pidfd(pid).map_err(|_| gone())?;
    let start_time = process::start_time(pid).ok_or_else(gone)?;
    if !process::is_alive(pid, start_time) {
        return Err(gone());
    }
    Ok(Bound { pid, start_time })
}

/// Starts the keeper for `p` and waits for its word: `ready` once it holds
/// the lease and the top directory and has taken over the session. Returns
/// its pid, or why it did not start.
fn start_keeper(
    p: &Prepared,
    bound: &Bound,
    config: Option<&std::path::Path>,
) -> std::result::Result<u32, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find lease's own binary to start a keeper: {e}"))?;
    let (mut rx, tx) =
        process::pipe_above_stdio().map_err(|e| format!("cannot make a pipe: {e}"))?;
    let mut args: Vec<std::ffi::OsString> = Vec::new();
    if let Some(c) = config {
        args.push("--config".into());
        args.push(c.into());
    }
    args.push("keeper".into());
    for (k, v) in [
        ("--id", p.id.clone()),
        ("--bind-pid", bound.pid.to_string()),
        ("--bind-start", bound.start_time.to_string()),
        ("--creator", std::process::id().to_string()),
        (
            "--ready-fd",
            std::os::fd::AsRawFd::as_raw_fd(&tx).to_string(),
        ),
    ] {
        args.push(k.into());
        args.push(v.into());
    }
    let mut child = process::spawn_detached(&exe, &args, HOST_TRACKING_ENV, &tx)
        .map_err(|e| format!("cannot start `{}`: {e}", exe.display()))?;
    // Only the keeper may hold the write end now: EOF means it is gone.
    drop(tx);
    let mut said = Vec::new();
    let read = (&mut rx).take(64 * 1024).read_to_end(&mut said);
    let said = String::from_utf8_lossy(&said).into_owned();
    if read.is_ok() && said == crate::ops::keeper::READY {
        return Ok(child.id());
    }
    // Not ready: it has exited or is about to; reap it (it is our child).
    let status = child.wait().ok();
    let why = match said.strip_prefix(crate::ops::keeper::FAILED) {
        Some(msg) => msg.trim_end().to_string(),
        None => format!(
            "the keeper exited before it held the lease ({})",
            status.map_or_else(|| "status unknown".to_string(), |s| s.to_string())
        ),
    };
    Err(why)
}

/// After a keeper failed to start: ends this process's session with a note,
/// closes the lease and retires the worktree nobody was given, once. The
/// returned error says what became of the tree.
fn abandon_tree(reg: &Registry, git: Git, p: Prepared, why: &str) -> Error {
    let note = format!("keeper did not start: {why}");
    let outcome = Outcome {
        code: None,
        signal: None,
        at: crate::model::fmt::now(),
        head: None,
        error: None,
        holders: Vec::new(),
        note: Some(note.clone()),
    };
    drop(p.child_fd);
    drop(p.own_fd);
    let ended = crate::ops::launcher::end_session(reg, &p.id, std::process::id(), &outcome, None);
    let fate = match ended {
        Ok((State::Terminal, _)) => {
            let t = Engine::new(reg.clone(), git, false).retire(&p.id);
            match t.disposition {
                crate::model::reason::Disposition::Removed => {
                    "the new worktree was retired".to_string()
                }
                _ => format!(
                    "the new worktree `{}` stays (record {}, terminal): `lease retire {}`",
                    p.worktree.display(),
                    &p.id[..8],
                    &p.id[..8]
                ),
            }
        }
        Ok(_) | Err(_) => format!(
            "the new worktree `{}` stays (record {}): `lease reap --apply` finishes it",
            p.worktree.display(),
            &p.id[..8]
        ),
    };
    Error::Io {
        action: "no keeper holds",
        path: p.worktree.clone(),
        source: std::io::Error::other(format!("{note}; {fate}")),
    }
}
