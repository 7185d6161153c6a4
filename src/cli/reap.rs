//! `lease reap`: the reconciler's request, report rendering and exit status.

use super::exit;
use crate::error::Result;

/// The arguments of `lease reap`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Say what would happen; change nothing (the default).
    #[arg(long, conflicts_with = "apply")]
    pub(super) dry_run: bool,
    /// Act: finish, retire and persist orphans.
    #[arg(long)]
    pub(super) apply: bool,
    /// Where retires archive commits that are not durable (see `lease retire --archive`).
    #[arg(long, value_enum, value_name = "MODE")]
    pub(super) archive: Option<crate::policy::ArchiveMode>,
    /// With --apply: retire candidates largest first only until the filesystem holding them has SIZE free (bytes, or K, M, G, T).
    #[arg(long, value_name = "SIZE", requires = "apply", value_parser = crate::ops::reap::until_free::size_arg)]
    pub(super) until_free: Option<u64>,
    /// Print the report as JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease reap` (the archive mode reaches it through the policy).
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    reap(ctx, a.apply, a.until_free, a.json)
}

/// The flags of `reap` that feed config.
pub(super) fn flag_layer(a: &Args) -> crate::policy::Layer {
    crate::policy::Layer {
        archive: a.archive,
        ..Default::default()
    }
}

pub(super) fn reap(
    ctx: &crate::ops::Ctx,
    apply: bool,
    until_free: Option<u64>,
    json: bool,
) -> Result<u8> {
    use crate::ops::reap::ReapReport;
    let git = ctx.git()?;
    let root = if apply {
        Some(ctx.open_root()?)
    } else {
        ctx.existing_root()?
    };
    let mut report = match &root {
        None => ReapReport::empty(true, &git),
        Some(root) => {
            let _reaper = crate::ops::reap::lock_reaper(root, apply)?;
            match until_free {
                Some(target) => crate::ops::reap::reap_until_free(root, &git, target)?,
                None => crate::ops::reap::reap(root, &git, apply)?,
            }
        }
    };
    let hints = super::hint::fill_reap(&mut report);
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a report serializes")
        );
    } else {
        for line in render_reap(&report, &hints) {
            out!("{line}");
        }
    }
    Ok(if !report.complete || report.any_error() {
        exit::FAILED
    } else if report.any_held() || report.target_missed() {
        exit::HELD
    } else {
        exit::OK
    })
}

/// The human report; `hints` is the advice in prose of each item and
/// orphan ([`super::hint::fill_reap`]), shown as `hint:` above the `next:`
/// command.
fn render_reap(
    r: &crate::ops::reap::ReapReport,
    hints: &(Vec<Option<String>>, Vec<String>),
) -> Vec<String> {
    use crate::ops::reap::{OrphanKind, ReapDisposition};
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
    for (n, i) in r.items.iter().enumerate() {
        let what = i.worktree.as_deref().unwrap_or("-");
        let id = super::short_id(&i.id);
        let word = match i.disposition {
            ReapDisposition::Removed => "removed",
            ReapDisposition::WouldRemove => "would remove",
            ReapDisposition::WouldFinish => "would finish",
            ReapDisposition::Retained if i.expired => "retained (expired)",
            ReapDisposition::Retained => "retained",
            ReapDisposition::Held => "held",
            ReapDisposition::Reported => "reported",
            ReapDisposition::NotNeeded => "not needed",
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
        if let Some(h) = hints.0.get(n).and_then(Option::as_deref)
            && i.next.as_deref() != Some(h)
        {
            out.push(format!("  hint: {h}"));
        }
        if let Some(c) = &i.next {
            out.push(format!("  next: {c}"));
        }
    }
    for (n, o) in r.orphans.iter().enumerate() {
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
        if let Some(h) = hints.1.get(n) {
            out.push(format!("  hint: {h}"));
        }
        out.push(format!("  next: {}", o.next));
    }
    for l in &r.leftovers {
        let what = match l.kind {
            crate::ops::reap::LeftoverKind::LeaseFile => "lease file",
            crate::ops::reap::LeftoverKind::BundleTemp => "unfinished bundle",
            crate::ops::reap::LeftoverKind::Bundle => "bundle no record names",
            crate::ops::reap::LeftoverKind::ArchiveDir => "empty archive directory",
            crate::ops::reap::LeftoverKind::Scratch => "scratch repository",
            crate::ops::reap::LeftoverKind::TempFile => "temporary file",
        };
        match (&l.kept, r.dry_run, l.removed) {
            (Some(why), _, _) => {
                out.push(format!(
                    "kept leftover {what} `{}` ({}): {why}",
                    l.path,
                    super::list::human_bytes(l.bytes)
                ));
            }
            (None, true, _) => out.push(format!(
                "would remove leftover {what} `{}` ({})",
                l.path,
                super::list::human_bytes(l.bytes)
            )),
            (None, false, true) => out.push(format!(
                "removed leftover {what} `{}` ({})",
                l.path,
                super::list::human_bytes(l.bytes)
            )),
            (None, false, false) => {}
        }
    }
    for a in &r.archives_dropped {
        out.push(format!(
            "{} the {} archive of {} (`{}`, {}): every commit is durable now",
            if a.dropped { "dropped" } else { "would drop" },
            a.kind,
            &a.id[..12.min(a.id.len())],
            a.location,
            indicatif::HumanBytes(a.bytes)
        ));
    }
    if !r.leftovers.is_empty() {
        out.push(format!(
            "leftovers: {} ({})",
            r.leftovers.len(),
            super::list::human_bytes(r.leftover_bytes)
        ));
    }
    for n in &r.notes {
        out.push(format!("note: {n}"));
    }
    for e in &r.errors {
        out.push(format!("error: {e}"));
    }
    if r.bytes_reclaimed > 0 {
        out.push(format!(
            "reclaimed {}",
            super::list::human_bytes(r.bytes_reclaimed)
        ));
    }
    for f in &r.free {
        match f.after {
            Some(a) => out.push(format!(
                "free under `{}`: {} before, {} after",
                f.path,
                super::list::human_bytes(f.before),
                super::list::human_bytes(a)
            )),
            None => out.push(format!(
                "free under `{}`: {}",
                f.path,
                super::list::human_bytes(f.before)
            )),
        }
    }
    if let Some(u) = &r.until_free {
        out.extend(render_until_free(u));
    }
    out
}

/// The `--until-free` lines: met or how far from the target, and what kept it there.
fn render_until_free(u: &crate::ops::reap::until_free::UntilFree) -> Vec<String> {
    let mut out = Vec::new();
    for f in &u.filesystems {
        if f.short_by == 0 {
            out.push(format!(
                "until-free: target of {} bytes met under `{}` ({} bytes free)",
                u.target, f.path, f.free
            ));
        } else {
            out.push(format!(
                "until-free: target of {} bytes MISSED under `{}`: {} bytes free, {} bytes short",
                u.target, f.path, f.free, f.short_by
            ));
        }
    }
    for k in &u.kept_by {
        let codes: Vec<String> = k.reasons.iter().map(|c| c.code()).collect();
        out.push(format!(
            "  kept by `{}` ({}): {} bytes, {}",
            k.worktree.as_deref().unwrap_or("-"),
            &k.id[..12.min(k.id.len())],
            k.bytes,
            if codes.is_empty() {
                "held".to_string()
            } else {
                codes.join(", ")
            }
        ));
    }
    if !u.met && u.kept_by.is_empty() {
        out.push("  nothing lease could retire was left; free space by other means".into());
    }
    out
}
