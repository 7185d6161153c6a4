//! Supervision: the command runs in the worktree with the lease inherited,
//! its signals forwarded, and when it exits the session ends (the record
//! `terminal`, the outcome, an intent completed) and a worktree this run
//! created is retired.

use super::{ExecRequest, ExecResult, LOCAL_REPO_ENV, Prepared, owner_of};
use crate::error::{IoResultExt, Result};
use crate::git::{self, Git};
use crate::model::record::{Outcome, Owner, Record, Retention, State};
use crate::ops::retire::Engine;
use crate::os::process::{self, Ended};
use crate::store::registry::Registry;
use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::low_level::siginfo::Cause;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Spawns the command, forwards signals, waits, records the outcome, closes
/// the lease, and retires a created worktree unless `--keep`.
pub(super) fn run(reg: &Registry, git: Git, p: Prepared, req: &ExecRequest) -> Result<ExecResult> {
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
    // One probe of the lease first: with no lock left on it (the usual
    // end), the scan of every process's descriptors would find no holder.
    let holders = if crate::os::lease::held_by_another(&p.lease, process::euid()) {
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
