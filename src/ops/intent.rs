//! `lease retire --when-free`: retire now if the lease is free, else record
//! the intent for the last consumer to leave (SPEC "Hosts that lease does
//! not start").
//!
//! # Theory of operation
//! With the lease free, it is `lease retire`. With it held (a live launcher
//! or keeper of an `active` record, or any holder `/proc` shows), the
//! content gates run first, read-only ([`Engine::content_only`]): if they
//! hold, that is the answer (exit 1, one attempt and one audit line, no
//! intent), so a host learns now that the tree holds work. Otherwise the
//! intent goes into the record (`intent`, one audit line) and the
//! disposition is `pending` (exit 0).
//!
//! Who completes it: a launcher or keeper, when it ends its session
//! (`launcher::end_session`), reads the intent under the record
//! lock *after* closing its lease descriptors, and retires when the record
//! turned `terminal`; a reap retires terminal records with an intent,
//! adopted ones included. The race with a consumer that is leaving right
//! now is closed from this side: when, after the intent is recorded, no
//! launcher of an `active` record is alive any more, this retires once
//! more itself; a busy lease then is `pending` too (a consumer that is not
//! a launcher, or a concurrent retire, still holds it). An intent never
//! overrides a gate: its completion is the ordinary retire, which may hold.

use crate::git::Git;
use crate::model::report::TargetReport;
use crate::plan::{Disposition, Hold};
use crate::registry::{Intent, Loaded, Record, Registry, State};
use crate::retire::Engine;

/// The options a `retire --when-free` carries into its completion.
#[derive(Debug, Clone, Copy, Default)]
pub struct WhenFree {
    /// `--delete-branch`.
    pub delete_branch: bool,
    /// `--fetch`.
    pub fetch: bool,
}

/// Completes a recorded intent: one ordinary retire of record `id` with
/// the intent's options. Its report is also in the record and audit log.
pub fn complete(reg: &Registry, git: Git, id: &str, intent: &Intent) -> TargetReport {
    Engine::new(reg.clone(), git, false)
        .with_delete_branch(intent.delete_branch)
        .with_fetch(intent.fetch)
        .retire(id)
}

/// Runs `retire --when-free` on record `id`.
pub fn retire_when_free(reg: &Registry, git: &Git, id: &str, opts: WhenFree) -> TargetReport {
    let real = || {
        Engine::new(reg.clone(), git.clone(), false)
            .with_delete_branch(opts.delete_branch)
            .with_fetch(opts.fetch)
    };
    let rec = match reg.load(id) {
        Loaded::Ok(r) => *r,
        // The engine reports an unreadable record as it does for retire.
        Loaded::Bad { .. } => return real().retire(id),
    };
    if !lease_held(&rec) {
        let t = real().retire(id);
        if !only_busy(&t) {
            return t;
        }
        // A consumer arrived between the look and the lock: as if held.
    }
    let probe = Engine::new(reg.clone(), git.clone(), true)
        .content_only()
        .with_fetch(opts.fetch)
        .retire(id);
    if matches!(probe.disposition, Disposition::Held | Disposition::Retained) {
        return refused(reg, id, probe);
    }
    let intent = Intent {
        kind: Intent::RETIRE_WHEN_FREE.into(),
        at: crate::registry::now(),
        delete_branch: opts.delete_branch,
        fetch: opts.fetch,
    };
    let recorded = reg.update(id, |r| {
        if matches!(r.state, State::Removed | State::Planned) {
            return Ok(None);
        }
        r.intent = Some(intent.clone());
        r.audit(
            "intent",
            vec![],
            vec![
                "retire when free: the last consumer to leave, or the next reap, retires it".into(),
            ],
        );
        Ok(Some((r.state, r.any_launcher_alive(), r.clone())))
    });
    match recorded {
        Err(e) => {
            let mut t = TargetReport::new(Some(id.to_string()), worktree(&rec), Disposition::Held);
            t.error = Some(e.to_string());
            t
        }
        // Removed or planned meanwhile: an ordinary retire says what it is.
        Ok(None) => real().retire(id),
        // A live launcher or keeper reads the intent when it ends.
        Ok(Some((State::Active, true, r))) => pending(&r, id),
        Ok(Some((_, _, r))) => {
            let t = real().retire(id);
            if only_busy(&t) { pending(&r, id) } else { t }
        }
    }
}

/// True if someone holds the lease now: a live launcher or keeper of an
/// `active` record, or any holder `/proc` shows (read-only, as `lease
/// list` sees it).
fn lease_held(rec: &Record) -> bool {
    if rec.state == State::Active && rec.any_launcher_alive() {
        return true;
    }
    rec.lease
        .as_ref()
        .is_some_and(|l| crate::os::procfs::lease_seen(&l.path(), l.id()).held())
}

/// True if a retire held only because the lease is in use: the consumers
/// an intent waits for.
fn only_busy(t: &TargetReport) -> bool {
    t.disposition == Disposition::Held
        && t.error.is_none()
        && !t.reasons.is_empty()
        && t.reasons.iter().all(|r| r.is_busy())
}

/// The content gates hold while the lease is held: records one attempt
/// (and its audit line) and no intent, as any held retire does.
fn refused(reg: &Registry, id: &str, mut probe: TargetReport) -> TargetReport {
    if probe.error.is_none() && !probe.reasons.is_empty() {
        let holds: Vec<Hold> = probe
            .reasons
            .iter()
            .zip(probe.detail.iter().chain(std::iter::repeat(&String::new())))
            .map(|(r, d)| Hold::new(*r, d.clone()))
            .collect();
        if let Err(e) = reg.record_hold(id, &holds) {
            probe.error = Some(e.to_string());
        }
    }
    probe
        .detail
        .push("the lease is held, and the tree holds work now: no intent was recorded".into());
    probe
}

fn worktree(rec: &Record) -> Option<String> {
    rec.worktree.as_ref().map(|w| w.path.clone())
}

/// The `pending` report: who holds the lease, and who will retire.
fn pending(rec: &Record, id: &str) -> TargetReport {
    let mut t = TargetReport::new(Some(id.to_string()), worktree(rec), Disposition::Pending);
    let launchers: Vec<String> = rec
        .sessions
        .iter()
        .filter(|s| s.launcher_alive())
        .map(|s| match &s.bound {
            Some(b) => format!("keeper pid {} (bound to pid {})", s.pid, b.pid),
            None => format!("launcher pid {}", s.pid),
        })
        .collect();
    let who = if launchers.is_empty() {
        rec.lease
            .as_ref()
            .map(|l| crate::os::procfs::lease_seen(&l.path(), l.id()).describe())
            .unwrap_or_else(|| "a consumer".into())
    } else {
        launchers.join(", ")
    };
    t.detail.push(format!(
        "the lease is held by {who}; recorded a retire-when-free intent: the last consumer to leave, or the next `lease reap --apply`, retires it (an intent never overrides a gate)"
    ));
    t.next = Some(format!(
        "`lease show {}` shows the intent and, if a gate held when it ran, why",
        &id[..8.min(id.len())]
    ));
    t
}
