//! `lease du [ID|PATH ...]`: bytes per worktree by class, and what a retire
//! would reclaim now.

use super::exit;
use super::list::human_bytes;
use crate::error::{Error, Result};
use crate::model::disk::DiskUsage;
use crate::model::reason::Disposition;
use crate::model::record::State;
use crate::model::report::TargetReport;
use crate::ops::du::Measured;
use crate::ops::retire::Engine;
use crate::store::registry::{Loaded, Registry};

/// The arguments of `lease du`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Record ids (or unique prefixes of 8+ hex digits) or worktree top directories (default: every record that is not removed).
    pub(super) targets: Vec<String>,
    /// Print sizes in bytes instead of K/M/G.
    #[arg(long)]
    pub(super) bytes: bool,
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease du`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    let Some(root) = ctx.existing_root()? else {
        if a.targets.is_empty() {
            return render(&[], &a);
        }
        return Err(Error::Usage(format!(
            "no record matches `{}`: nothing is recorded yet",
            a.targets[0]
        )));
    };
    let reg = Registry::new(root);
    let mut ids: Vec<String> = Vec::new();
    if a.targets.is_empty() {
        let mut live: Vec<(String, String)> = reg
            .scan_live()?
            .into_iter()
            .filter_map(|l| match l {
                Loaded::Ok(r) if r.state != State::Removed => Some((r.created_at, r.id)),
                _ => None,
            })
            .collect();
        live.sort();
        ids = live.into_iter().map(|(_, id)| id).collect();
    } else {
        for t in &a.targets {
            let id = super::target::resolve_id(&reg, t)?;
            if reg.get(&id)?.state == State::Removed {
                return Err(Error::Usage(format!(
                    "record {} is removed: its worktree is gone, nothing to measure (`lease show {}` shows what its removal reclaimed)",
                    super::short_id(&id),
                    super::short_id(&id)
                ))
                .with_next(format!("lease show {}", super::short_id(&id))));
            }
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    let git = ctx.git()?;
    let engine = Engine::new(reg, git, true).assessing();
    let mut measured = Vec::new();
    for id in &ids {
        measured.push(
            crate::ops::du::measure(&engine, id)
                .map_err(super::target::about(Some(engine.registry()), id))?,
        );
    }
    render(&measured, &a)
}

/// The next step for a measured worktree a retire would not remove now.
fn next_of(m: &Measured) -> Option<String> {
    if m.reasons.is_empty() {
        return None;
    }
    let mut t = TargetReport::new(Some(m.id.clone()), m.worktree.clone(), Disposition::Held);
    t.reasons = m.reasons.clone();
    t.detail = m.detail.clone();
    super::hint::fill_target(&mut t);
    t.next
}

fn usage_json(u: &DiskUsage) -> serde_json::Value {
    serde_json::json!({
        "tracked": u.tracked,
        "untracked": u.untracked,
        "ignored_work": u.ignored_work,
        "provisioned": u.provisioned,
        "rebuildable": u.rebuildable,
        "admin": u.admin,
        "total": u.total(),
    })
}

fn render(measured: &[Measured], a: &Args) -> Result<u8> {
    let code = if measured.iter().any(|m| m.error.is_some()) {
        exit::FAILED
    } else {
        exit::OK
    };
    let mut total = DiskUsage::default();
    let mut reclaim = 0;
    for m in measured {
        if let Some(u) = &m.usage {
            total.add(u);
        }
        reclaim += m.reclaim;
    }
    if a.json {
        let targets: Vec<serde_json::Value> = measured
            .iter()
            .map(|m| {
                serde_json::json!({
                    "id": m.id,
                    "worktree": m.worktree,
                    "state": m.state.name(),
                    "bytes": m.usage.as_ref().map(usage_json),
                    "measured_at": m.at,
                    "reclaim": m.reclaim,
                    "would": if m.reasons.is_empty() && m.error.is_none() { "remove" } else { "hold" },
                    "reasons": m.reasons,
                    "detail": m.detail,
                    "next": next_of(m),
                    "error": m.error,
                })
            })
            .collect();
        let mut t = usage_json(&total);
        t["reclaim"] = serde_json::json!(reclaim);
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"targets": targets, "total": t}))
                .expect("json serializes")
        );
        return Ok(code);
    }
    if measured.is_empty() {
        out!("no worktrees to measure");
        return Ok(code);
    }
    let size = |b: u64| {
        if a.bytes {
            b.to_string()
        } else {
            human_bytes(b)
        }
    };
    let row = |id: &str, state: &str, u: Option<&DiskUsage>, reclaim: &str, path: &str| {
        let c = |f: fn(&DiskUsage) -> u64| u.map_or("-".to_string(), |u| size(f(u)));
        format!(
            "{id:<8}  {state:<11}  {:>8}  {:>9}  {:>8}  {:>11}  {:>11}  {:>6}  {:>8}  {reclaim:>8}  {path}",
            c(|u| u.tracked),
            c(|u| u.untracked),
            c(|u| u.ignored_work),
            c(|u| u.provisioned),
            c(|u| u.rebuildable),
            c(|u| u.admin),
            c(DiskUsage::total),
        )
    };
    out!(
        "{:<8}  {:<11}  {:>8}  {:>9}  {:>8}  {:>11}  {:>11}  {:>6}  {:>8}  {:>8}  WORKTREE",
        "ID",
        "STATE",
        "TRACKED",
        "UNTRACKED",
        "IGNORED",
        "PROVISIONED",
        "REBUILDABLE",
        "ADMIN",
        "TOTAL",
        "RECLAIM"
    );
    for m in measured {
        let reclaim = if m.reasons.is_empty() && m.error.is_none() {
            size(m.reclaim)
        } else {
            "held".to_string()
        };
        out!(
            "{}",
            row(
                super::short_id(&m.id),
                m.state.name(),
                m.usage.as_ref(),
                &reclaim,
                m.worktree.as_deref().unwrap_or("-")
            )
        );
        for (r, d) in m.reasons.iter().zip(&m.detail) {
            // A detail that starts with its code (`untracked: notes.txt`)
            // is printed once, not as `untracked: untracked: ...`.
            let code = r.code();
            if d.strip_prefix(code.as_str())
                .is_some_and(|rest| rest.starts_with(':'))
            {
                out!("          held: {d}");
            } else {
                out!("          held: {code}: {d}");
            }
        }
        if let Some(n) = next_of(m) {
            out!("          next: {n}");
        }
        if let Some(e) = &m.error {
            out!("          error: {e}");
        }
    }
    if measured.len() > 1 {
        out!("{}", row("total", "", Some(&total), &size(reclaim), ""));
    }
    Ok(code)
}
