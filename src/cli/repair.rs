//! `lease repair PATH`: remove the registration of one worktree whose directory is missing.

use super::exit;
use crate::error::Result;
use crate::model::reason::Disposition;
use crate::store::registry::Registry;
use std::path::Path;

/// The arguments of `lease repair`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The worktree's registered path.
    pub(super) path: std::path::PathBuf,
    /// Say what would happen; change nothing.
    #[arg(long)]
    pub(super) dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease repair`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    repair(ctx, &a.path, a.dry_run, a.json)
}

pub(super) fn repair(ctx: &crate::ops::Ctx, path: &Path, dry_run: bool, json: bool) -> Result<u8> {
    let git = ctx.git()?;
    let reg = if dry_run {
        ctx.existing_root()?.map(Registry::new)
    } else {
        match ctx.existing_root()? {
            Some(_) => Some(Registry::new(ctx.open_root()?)),
            None => None,
        }
    };
    let plan = crate::ops::repair::plan(reg.as_ref(), &git, path)?;
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
    let mut report = if dry_run {
        crate::ops::repair::dry_run(plan)
    } else {
        crate::ops::repair::apply(reg.as_ref(), &git, plan)?
    };
    // The advice in prose for people, the command to run in `next`.
    let command = super::hint::repair(&report);
    let prose = match (
        std::mem::replace(&mut report.next, command),
        report.reasons.first(),
    ) {
        // The generic advice, with its placeholders filled.
        (Some(said), Some(&r)) if said == r.next_action() => Some(super::hint::prose(
            r,
            report.plan.record.as_deref(),
            Some(&report.plan.path),
        )),
        (said, _) => said,
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
            .map(|i| format!(" (record {})", super::short_id(i)))
            .unwrap_or_default();
        match report.disposition {
            Disposition::Removed => {
                out!("removed the registration of `{}`{id}", report.plan.path)
            }
            Disposition::WouldRemove => out!(
                "would remove the registration of `{}`{id}",
                report.plan.path
            ),
            Disposition::Held | Disposition::Retained | Disposition::Pending => {
                let codes: Vec<String> = report.reasons.iter().map(|r| r.code()).collect();
                out!("held `{}`{id}: {}", report.plan.path, codes.join(", "));
                for d in &report.detail {
                    out!("  {d}");
                }
                if let Some(h) = &prose {
                    out!("  hint: {h}");
                }
                if let Some(n) = &report.next {
                    out!("  next: {n}");
                }
            }
        }
    }
    Ok(match report.disposition {
        Disposition::Removed | Disposition::WouldRemove | Disposition::Pending => exit::OK,
        Disposition::Held | Disposition::Retained => exit::HELD,
    })
}
