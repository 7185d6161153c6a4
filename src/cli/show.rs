//! `lease show ID`: one record, its holders and its last events.

use super::exit;
use super::list::{SeenLeases, locked_word, record_json};
use crate::error::Result;
use crate::model::record::State;
use crate::store::registry::Registry;

/// The arguments of `lease show`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Record id, unique prefix of 8+ hex digits, or worktree top directory.
    pub(super) id: String,
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease show`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    show(ctx, &a.id, a.json)
}

pub(super) fn show(ctx: &crate::ops::Ctx, id: &str, json: bool) -> Result<u8> {
    let Some(root) = ctx.existing_root()? else {
        return Err(super::target::nothing_recorded(id));
    };
    let reg = Registry::new(root);
    let id = super::target::resolve_id(&reg, id)?;
    let r = reg.get(&id).map_err(super::target::about(None, &id))?;
    let ids: Vec<(u64, u64)> = r.lease.iter().map(|l| l.id()).collect();
    let seen = SeenLeases::of(&reg, &ids).of_record(&r);
    let v = record_json(&r, &seen);
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&v).expect("json serializes")
        );
        return Ok(exit::OK);
    }
    out!("id:        {}", r.id);
    out!("state:     {}", r.state.name());
    out!(
        "worktree:  {}",
        r.worktree.as_ref().map(|w| w.path.as_str()).unwrap_or("-")
    );
    out!("repo:      {}", r.repo);
    out!("branch:    {}", r.branch.as_deref().unwrap_or("(detached)"));
    out!("owner:     {}:{}", r.owner.kind, r.owner.name);
    if let Some(slot) = r.slot {
        out!("slot:      {slot} (LEASE_SLOT)");
    }
    if let Some(size) = r.size.as_ref().filter(|_| r.state != State::Removed) {
        out!(
            "size:      {} ({} bytes, measured at {}; `lease du` measures again)",
            super::list::human_bytes(size.bytes),
            size.bytes,
            size.at
        );
    }
    let pids: Vec<String> = v["holders"]
        .as_array()
        .into_iter()
        .flatten()
        .map(ToString::to_string)
        .collect();
    match (pids.is_empty(), locked_word(&seen)) {
        (false, _) => out!("holders:   pid {} (hold the lease)", pids.join(", ")),
        (true, "shared" | "exclusive") => out!(
            "holders:   none visible, but /proc/locks lists a {} flock on the lease: it is held (by a process in another pid namespace, or through a descriptor in flight over a unix socket)",
            locked_word(&seen)
        ),
        (true, "unknown") => out!(
            "holders:   none visible; this /proc (another pid namespace's) cannot show every lock, so the lease may be held"
        ),
        _ => out!("holders:   none (the lease is free)"),
    }
    if let Some(s) = r.sessions.last() {
        let alive = s.launcher_alive(crate::os::process::is_alive);
        let (label, bound) = match &s.bound {
            Some(b) => ("keeper:   ", format!(", bound to pid {}", b.pid)),
            None => ("launcher: ", String::new()),
        };
        out!(
            "{label} pid {}{bound} ({})",
            s.pid,
            match (alive, s.ended_at.as_deref()) {
                (true, _) => "running".to_string(),
                (false, Some(at)) => format!("ended at {at}"),
                (false, None) => "gone without recording an end".to_string(),
            }
        );
    }
    if let Some(o) = &r.outcome {
        match (o.code, o.signal) {
            (Some(c), _) => out!("outcome:   exit {c} at {}", o.at),
            (_, Some(s)) => out!("outcome:   signal {s} at {}", o.at),
            _ => {}
        }
    }
    if let Some(a) = &r.archive {
        out!(
            "archive:   {} ({} commit(s), sha256 {})",
            a.location,
            a.commits,
            a.sha256
        );
    }
    if let Some(at) = r.attempts.last() {
        let codes: Vec<String> = at.reasons.iter().map(|c| c.code()).collect();
        out!("last hold: {} at {}", codes.join(", "), at.at);
    }
    if let Some(i) = r.intent.as_ref().filter(|_| r.state != State::Removed) {
        // A hold after the intent was recorded: its completion was refused.
        let held = r
            .attempts
            .last()
            .filter(|a| a.at >= i.at && !a.reasons.iter().all(|c| c.is_busy()));
        match held {
            Some(a) => {
                let codes: Vec<String> = a.reasons.iter().map(|c| c.code()).collect();
                out!(
                    "intent:    retire when free (since {}), held: {} at {}; an intent never overrides a gate",
                    i.at,
                    codes.join(", "),
                    a.at
                );
            }
            None => out!(
                "intent:    retire when free (since {}): pending until the lease is free",
                i.at
            ),
        }
    }
    if let Some(t) = &r.tombstone {
        out!(
            "removed:   {} ({} reclaimed)",
            t.removed_at,
            super::list::human_bytes(t.bytes_reclaimed)
        );
    }
    Ok(exit::OK)
}
