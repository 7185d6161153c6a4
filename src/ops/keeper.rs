//! The keeper: a small process that holds a worktree's lease for a process
//! lease did not start (`lease create --bind-pid PID`; SPEC "Hosts that
//! lease does not start").
//!
//! # Theory of operation
//! `lease create` starts it as lease itself with the hidden `keeper`
//! subcommand, already in its own session with cwd `/`, stdio on
//! `/dev/null`, no host-tracking variables, and no descriptor of its
//! caller's but the readiness pipe ([`crate::os::process::spawn_detached`]).
//! It opens a pidfd of the bound process and checks its start time (a
//! reused pid is not it), opens the lease afresh (its own open file
//! description, never `LOCK_UN`) and locks it shared, opens the worktree's
//! top directory beneath the recorded root and locks it `LOCK_SH`
//! (systemd-tmpfiles' aging skips a directory it cannot lock, tmpfiles.d(5)
//! "Age"), and makes the creator's session its own (its pid and start
//! time, and the bound process), then writes [`READY`] and closes the pipe.
//!
//! It then sleeps in poll(2) on the pidfd. When the bound process exits it
//! closes both locks and ends the session as a launcher whose command
//! exited (`launcher::end_session`: outcome note
//! [`crate::model::record::BOUND_EXITED`], record `terminal` unless another
//! launcher lives), and completes a recorded `retire --when-free` intent
//! ([`crate::ops::intent::complete`]).
//!
//! Killed by SIGKILL, it leaves an `active` record whose every launcher is
//! gone and a lease that is free: retire and reap finish it like a killed
//! launcher's (gate 1, then gate 3 proves `interrupted`).
//!
//! Memory: while it waits it keeps the resolved policy, the record id and
//! three descriptors; git is resolved only after the bound process exits.

use std::io::Write;
use std::os::fd::OwnedFd;

use crate::error::{Error, IoResultExt, Result};
use crate::git::Git;
use crate::model::reason::HoldReason;
use crate::model::record::Bound;
use crate::model::record::{Outcome, State};
use crate::os::process;
use crate::store::registry::Registry;

/// What a keeper writes on its readiness pipe once it holds the lease.
pub const READY: &str = "ready\n";
/// How a keeper's failure message starts on the readiness pipe.
pub const FAILED: &str = "error: ";

/// The keeper's arguments (the hidden `lease keeper` subcommand).
#[derive(Debug, Clone)]
pub struct KeeperArgs {
    /// The record id.
    pub id: String,
    /// The bound process.
    pub bound: Bound,
    /// The pid of the `lease create` whose session the keeper takes over.
    pub creator: u32,
    /// The readiness pipe's descriptor number.
    pub ready_fd: i32,
}

/// What the keeper holds while it waits.
struct Holding {
    reg: Registry,
    pidfd: OwnedFd,
    /// Its own open of the lease, locked shared.
    lease: std::fs::File,
    /// The worktree's top directory, locked `LOCK_SH`.
    top: std::fs::File,
}

/// Runs a keeper to its end. Errors before readiness go over the pipe to
/// `lease create` (and in the returned error); later ones only in the
/// record and the audit log, if they can be written.
pub fn keep(ctx: &crate::ops::Ctx, a: &KeeperArgs) -> Result<()> {
    let mut ready = process::take_inherited(a.ready_fd).map_err(|e| {
        Error::Usage(format!(
            "`lease keeper` is started by `lease create`; descriptor {} is not its readiness pipe: {e}",
            a.ready_fd
        ))
    })?;
    let held = match hold(ctx, a) {
        Ok(h) => h,
        Err(e) => {
            let code = e
                .reason()
                .map(|r| format!(" [{}]", r.code()))
                .unwrap_or_default();
            let _ = ready.write_all(format!("{FAILED}{e}{code}\n").as_bytes());
            return Err(e);
        }
    };
    // A write error means `lease create` is gone: keep the lease anyway, it
    // ends with the bound process like any other.
    let _ = ready.write_all(READY.as_bytes());
    drop(ready);
    wait_and_end(a, held)
}

/// Takes the pidfd, the lease and the top directory, then the session.
fn hold(ctx: &crate::ops::Ctx, a: &KeeperArgs) -> Result<Holding> {
    let pid = a.bound.pid;
    let gone = || {
        Error::Usage(format!(
            "the bound process {pid} exited before its keeper held the lease"
        ))
    };
    let pidfd = process::pidfd(pid).map_err(|_| gone())?;
    // Checked after the pidfd is open: from here on a reuse of the pid
    // cannot fool it, and an exit makes the pidfd readable.
    if !process::is_alive(pid, a.bound.start_time) {
        return Err(gone());
    }
    let Some(root) = ctx.existing_root()? else {
        return Err(Error::Usage("the state root is gone".into()));
    };
    let reg = Registry::new(root);
    let rec = reg.get(&a.id)?;
    let refused = |h: crate::model::reason::Hold| Error::refused(h.reason, h.detail);
    let lease_id = rec.lease.clone().ok_or_else(|| {
        Error::refused(
            HoldReason::LeaseMissing,
            format!("record {} has no lease", rec.id),
        )
    })?;
    let lease = crate::os::lease::open_checked(&lease_id, rec.uid).map_err(refused)?;
    if !crate::os::lease::try_shared(&lease).at_do("cannot lock", &lease_id.path())? {
        return Err(Error::refused(
            HoldReason::RetireInProgress,
            format!("record {} is being retired", rec.id),
        ));
    }
    let wt = rec.worktree.clone().ok_or_else(|| {
        Error::refused(
            HoldReason::NotRegistered,
            format!("record {} has no worktree", rec.id),
        )
    })?;
    let path = wt.path();
    let name = path.file_name().ok_or_else(|| {
        Error::refused(
            HoldReason::PathEscape,
            format!("`{}` has no name", path.display()),
        )
    })?;
    let top =
        crate::os::walk::open_beneath(&rec.root.path(), rec.root.id(), name).map_err(refused)?;
    let seen = crate::os::fs::fstat_fd(&top).map(|s| (s.dev, s.ino));
    if seen != Some(wt.id()) {
        return Err(Error::refused(
            HoldReason::PathIdentity,
            format!("`{}` is not the recorded directory", path.display()),
        ));
    }
    let top = std::fs::File::from(top);
    // tmpfiles takes LOCK_EX|LOCK_NB on each directory it ages: a shared
    // lock held here makes it skip the tree (SPEC "Hosts that lease does not start").
    if !crate::os::lease::try_shared(&top).at_do("cannot lock", &path)? {
        return Err(Error::refused(
            HoldReason::InUse,
            format!(
                "`{}` is locked exclusively by another process",
                path.display()
            ),
        ));
    }
    crate::os::fault::point("keeper-holding");
    let mut mine = crate::ops::launcher::own_session()?;
    mine.bound = Some(a.bound.clone());
    let creator = a.creator;
    reg.update(&a.id, |r| {
        if r.state != State::Active {
            return Err(Error::refused(
                HoldReason::RetireInProgress,
                format!("record {} is {}", r.id, r.state.name()),
            ));
        }
        let Some(s) = r
            .sessions
            .iter_mut()
            .rev()
            .find(|s| s.pid == creator && s.ended_at.is_none())
        else {
            return Err(Error::Usage(format!(
                "record {} has no open session of `lease create` pid {creator}",
                r.id
            )));
        };
        mine.started_at.clone_from(&s.started_at);
        *s = mine.clone();
        r.audit(
            "keeper",
            vec![],
            vec![format!(
                "keeper pid {} holds the lease until pid {pid} exits",
                mine.pid
            )],
        );
        Ok(())
    })?;
    Ok(Holding {
        reg,
        pidfd,
        lease,
        top,
    })
}

/// Waits for the bound process, then closes the locks, ends the session and
/// completes a recorded intent.
fn wait_and_end(a: &KeeperArgs, h: Holding) -> Result<()> {
    while process::wait_exited(&h.pidfd).is_err() {
        // poll(2) on a pidfd does not fail but for resource limits: ask
        // /proc once a second instead, never giving the lease up early.
        if !process::is_alive(a.bound.pid, a.bound.start_time) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    crate::os::fault::point("keeper-bound-exited");
    let Holding {
        reg,
        pidfd,
        lease,
        top,
    } = h;
    drop(pidfd);
    let rec = reg.get(&a.id)?;
    let git = Git::resolve_lazy(reg.root().policy())?;
    let head = rec.worktree.as_ref().and_then(|w| {
        crate::ops::launcher::head_of(&git, std::path::Path::new(&rec.repo), &w.path())
    });
    // Close both locks (never LOCK_UN), then read the intent: one recorded
    // after this read finds the lease free itself.
    drop(lease);
    drop(top);
    let holders = rec
        .lease
        .as_ref()
        .filter(|l| crate::os::procfs::lock_listed(l.dev, l.ino))
        .map(|l| crate::os::procfs::holders(l.id()).0)
        .unwrap_or_default();
    let outcome = Outcome {
        code: None,
        signal: None,
        at: crate::model::fmt::now(),
        head,
        error: None,
        holders,
        note: Some(crate::model::record::BOUND_EXITED.into()),
    };
    let (state, intent) =
        crate::ops::launcher::end_session(&reg, &a.id, std::process::id(), &outcome, None)?;
    if state == State::Terminal
        && let Some(intent) = intent
    {
        // The report is in the record (a removal or one more attempt) and
        // in the audit log; a keeper has no one to print it to.
        let _ = crate::ops::intent::complete(&reg, git, &a.id, &intent);
    }
    Ok(())
}
