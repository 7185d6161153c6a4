//! `hold`, `release`, `reap` and `repair`: requests, rendering and exit
//! codes (the part of the CLI that keeps and reconciles worktrees).

use std::path::Path;

use super::exit;
use crate::error::{Error, Result};
use crate::git::Git;
use crate::paths::StateRoot;
use crate::plan::Disposition;
use crate::registry::{Owner, Registry};

/// Opens the state root for a command that changes one existing record:
/// a usage error (nothing created) when there is none yet.
fn root_for_record(id: &str) -> Result<Registry> {
    if StateRoot::open_existing()?.is_none() {
        return Err(Error::Usage(format!("no record matches `{id}`")));
    }
    Ok(Registry::new(StateRoot::open_or_create()?))
}

pub(super) fn hold(
    id: &str,
    reason: String,
    owner: Option<&str>,
    until: Option<&str>,
    json: bool,
) -> Result<u8> {
    let req = crate::hold::HoldRequest {
        id: id.to_string(),
        reason,
        owner: owner.map(Owner::parse).transpose()?,
        until: until
            .map(|u| crate::hold::parse_until(u, std::time::SystemTime::now()))
            .transpose()?,
    };
    let reg = root_for_record(id)?;
    let r = crate::hold::hold(&reg, &req)?;
    print_hold(&r, json);
    Ok(exit::OK)
}

pub(super) fn release(id: &str, json: bool) -> Result<u8> {
    let reg = root_for_record(id)?;
    let r = crate::hold::release(&reg, id)?;
    print_hold(&r, json);
    Ok(exit::OK)
}

fn print_hold(r: &crate::hold::HoldReport, json: bool) {
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(r).expect("a report serializes")
        );
        return;
    }
    for line in render_hold(r) {
        out!("{line}");
    }
}

fn render_hold(r: &crate::hold::HoldReport) -> Vec<String> {
    let what = r.worktree.as_deref().unwrap_or("-");
    let id = &r.id[..12.min(r.id.len())];
    let states = if r.from == r.state {
        r.state.name().to_string()
    } else {
        format!("{} -> {}", r.from.name(), r.state.name())
    };
    match &r.retention {
        Some(t) => {
            let until = t
                .until
                .as_deref()
                .map(|u| format!(" until {u}"))
                .unwrap_or_default();
            let mut out = vec![format!(
                "held `{what}` ({id}) for {}:{} ({}){until}: {states}",
                t.owner.kind, t.owner.name, t.reason
            )];
            if r.pending {
                out.push(
                    "  the record is not terminal yet: the hold takes effect when it is".into(),
                );
            }
            out
        }
        None => vec![format!("released `{what}` ({id}): {states}")],
    }
}

pub(super) fn reap(apply: bool, json: bool) -> Result<u8> {
    use crate::reap::ReapReport;
    let git = Git::resolve()?;
    let root = if apply {
        Some(StateRoot::open_or_create()?)
    } else {
        StateRoot::open_existing()?
    };
    let report = match &root {
        None => ReapReport::empty(true, &git),
        Some(root) => {
            let _reaper = crate::reap::lock_reaper(root, apply)?;
            crate::reap::reap(root, &git, apply)?
        }
    };
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a report serializes")
        );
    } else {
        for line in render_reap(&report) {
            out!("{line}");
        }
    }
    Ok(if !report.complete || report.any_error() {
        exit::FAILED
    } else if report.any_held() {
        exit::HELD
    } else {
        exit::OK
    })
}

fn render_reap(r: &crate::reap::ReapReport) -> Vec<String> {
    use crate::reap::{OrphanKind, ReapDisposition};
    let mut out = Vec::new();
    out.push(format!(
        "lease reap{}: {} record(s), {} orphan(s), {} removed record(s) skipped; discovery {}",
        if r.dry_run {
            " (dry run, nothing changed)"
        } else {
            ""
        },
        r.items.len(),
        r.orphans.len(),
        r.skipped_removed,
        if r.complete { "complete" } else { "INCOMPLETE" }
    ));
    for p in &r.problems {
        out.push(format!("  could not read: {p}"));
    }
    for i in &r.items {
        let what = i.worktree.as_deref().unwrap_or("-");
        let id = &i.id[..12.min(i.id.len())];
        let word = match i.disposition {
            ReapDisposition::Removed => "removed",
            ReapDisposition::WouldRemove => "would remove",
            ReapDisposition::WouldFinish => "would finish",
            ReapDisposition::Retained if i.expired => "retained (expired)",
            ReapDisposition::Retained => "retained",
            ReapDisposition::Held => "held",
            ReapDisposition::Reported => "reported",
        };
        let codes: Vec<String> = i.reasons.iter().map(|c| c.code()).collect();
        let state = match (i.state, i.after) {
            (Some(a), Some(b)) if a != b => format!(" [{} -> {}]", a.name(), b.name()),
            (Some(a), _) => format!(" [{}]", a.name()),
            _ => String::new(),
        };
        if codes.is_empty() {
            out.push(format!("{word} `{what}` ({id}){state}"));
        } else {
            out.push(format!(
                "{word} `{what}` ({id}){state}: {}",
                codes.join(", ")
            ));
        }
        for d in &i.detail {
            out.push(format!("  {d}"));
        }
        if let Some(e) = &i.error {
            out.push(format!("  error: {e}"));
        }
        if let Some(n) = &i.next {
            out.push(format!("  hint: {n}"));
        }
    }
    for o in &r.orphans {
        let what = match (o.registered, o.kind) {
            (true, OrphanKind::Missing) => "registered, directory missing",
            (true, _) => "registered, no record",
            (false, OrphanKind::Directory) => "directory in a worktree root, not registered",
            (false, _) => "entry in a worktree root, not a directory",
        };
        let seen = o
            .first_seen
            .as_deref()
            .map(|t| format!("; first seen {t}"))
            .unwrap_or_default();
        let seen = if o.past_grace {
            format!("{seen} (past the orphan grace)")
        } else {
            seen
        };
        out.push(format!("orphan `{}`: {what}{seen}", o.path));
        out.push(format!("  hint: {}", o.next));
    }
    for l in &r.leftovers {
        let what = match l.kind {
            crate::reap::LeftoverKind::LeaseFile => "lease file",
            crate::reap::LeftoverKind::BundleTemp => "unfinished bundle",
            crate::reap::LeftoverKind::Bundle => "bundle no record names",
            crate::reap::LeftoverKind::ArchiveDir => "empty archive directory",
            crate::reap::LeftoverKind::Scratch => "scratch repository",
            crate::reap::LeftoverKind::TempFile => "temporary file",
        };
        match (&l.kept, r.dry_run, l.removed) {
            (Some(why), _, _) => {
                out.push(format!(
                    "kept leftover {what} `{}` ({} bytes): {why}",
                    l.path, l.bytes
                ));
            }
            (None, true, _) => out.push(format!(
                "would remove leftover {what} `{}` ({} bytes)",
                l.path, l.bytes
            )),
            (None, false, true) => out.push(format!(
                "removed leftover {what} `{}` ({} bytes)",
                l.path, l.bytes
            )),
            (None, false, false) => {}
        }
    }
    if !r.leftovers.is_empty() {
        out.push(format!(
            "leftovers: {} ({} bytes)",
            r.leftovers.len(),
            r.leftover_bytes
        ));
    }
    for n in &r.notes {
        out.push(format!("note: {n}"));
    }
    for e in &r.errors {
        out.push(format!("error: {e}"));
    }
    if r.bytes_reclaimed > 0 {
        out.push(format!("reclaimed {} bytes", r.bytes_reclaimed));
    }
    for f in &r.free {
        match f.after {
            Some(a) => out.push(format!(
                "free under `{}`: {} bytes before, {a} after",
                f.path, f.before
            )),
            None => out.push(format!("free under `{}`: {} bytes", f.path, f.before)),
        }
    }
    out
}

pub(super) fn repair(path: &Path, dry_run: bool, json: bool) -> Result<u8> {
    let git = Git::resolve()?;
    let reg = if dry_run {
        StateRoot::open_existing()?.map(Registry::new)
    } else {
        match StateRoot::open_existing()? {
            Some(_) => Some(Registry::new(StateRoot::open_or_create()?)),
            None => None,
        }
    };
    let plan = crate::repair::plan(reg.as_ref(), &git, path)?;
    if !json {
        let will = if dry_run { "would" } else { "will" };
        if plan.holds().is_empty() {
            out!("lease repair {will}:");
        } else {
            out!("lease repair found:");
        }
        for s in &plan.steps {
            out!("  {s}");
        }
    }
    let report = if dry_run {
        crate::repair::dry_run(plan)
    } else {
        crate::repair::apply(reg.as_ref(), &git, plan)?
    };
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a report serializes")
        );
    } else {
        let id = report
            .plan
            .record
            .as_deref()
            .map(|i| format!(" (record {})", &i[..12.min(i.len())]))
            .unwrap_or_default();
        match report.disposition {
            Disposition::Removed => {
                out!("removed the registration of `{}`{id}", report.plan.path)
            }
            Disposition::WouldRemove => out!(
                "would remove the registration of `{}`{id}",
                report.plan.path
            ),
            Disposition::Held | Disposition::Retained => {
                let codes: Vec<String> = report.reasons.iter().map(|r| r.code()).collect();
                out!("held `{}`{id}: {}", report.plan.path, codes.join(", "));
                for d in &report.detail {
                    out!("  {d}");
                }
                if let Some(n) = &report.next {
                    out!("  hint: {n}");
                }
            }
        }
    }
    Ok(match report.disposition {
        Disposition::Removed | Disposition::WouldRemove => exit::OK,
        Disposition::Held | Disposition::Retained => exit::HELD,
    })
}
