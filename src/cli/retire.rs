//! `lease retire`: targets, the report's rendering and the exit status of each target.

use super::exit;
use super::target::{self, Target};
use crate::error::{Error, Result};
use crate::git::Git;
use crate::model::reason::Disposition;
use crate::model::record::State;
use crate::model::report::{GitInfo, RetireReport, TargetReport};
use crate::ops::retire::Engine;
use crate::store::registry::{Loaded, Registry};

/// The arguments of `lease retire`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Record ids (or unique prefixes of 8+ hex digits) or worktree top directories.
    pub(super) targets: Vec<String>,
    /// Every terminal or interrupted record.
    #[arg(long)]
    pub(super) all: bool,
    /// Say what would happen; change nothing, take no lock.
    #[arg(long)]
    pub(super) dry_run: bool,
    /// Output path (relative to the worktree top, e.g. `target`) declared rebuildable: ignored files there do not hold and are deleted by lease (intersected with config `rebuildable` and `$LEASE_REBUILDABLE`).
    #[arg(long, value_name = "PATH")]
    pub(super) rebuildable: Vec<String>,
    /// Where commits that are not durable are archived: a verified bundle under the state root, archival refs pushed to the trusted remote and read back, or both (default bundle; joined with config `archive` and $LEASE_ARCHIVE to every destination asked for).
    #[arg(long, value_enum, value_name = "MODE")]
    pub(super) archive: Option<crate::policy::ArchiveMode>,
    /// After a removal, delete the task branch if its tip is durable or archived and it is checked out nowhere (kept otherwise, exit 1).
    #[arg(long)]
    pub(super) delete_branch: bool,
    /// Confirm the trusted remote's branches first, by URL: fetch them into its tracking refs (a dry run only lists them with ls-remote); commits on them count as durable in this retire.
    #[arg(long)]
    pub(super) fetch: bool,
    /// Retire now if the lease is free; if it is held, record the intent (disposition pending, exit 0) for the last consumer to leave or the next reap; a tree that holds work is held now (exit 1).
    #[arg(long, conflicts_with_all = ["all", "dry_run"])]
    pub(super) when_free: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease retire`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    let Args {
        targets,
        all,
        dry_run,
        delete_branch,
        fetch,
        when_free,
        json,
        ..
    } = a;
    if when_free {
        let opts = crate::ops::intent::WhenFree {
            delete_branch,
            fetch,
        };
        return super::create::when_free(ctx, &targets, opts, json);
    }
    // The archive mode comes from the policy, which joined `--archive`.
    let engine = |reg, git| {
        Engine::new(reg, git, dry_run)
            .with_delete_branch(delete_branch)
            .with_fetch(fetch)
    };
    retire(ctx, &targets, all, dry_run, engine, json)
}

/// The flags of `retire` that feed config.
pub(super) fn flag_layer(a: &Args) -> crate::policy::Layer {
    crate::policy::Layer {
        rebuildable: super::listed(&a.rebuildable),
        archive: a.archive,
        ..Default::default()
    }
}

pub(super) fn retire(
    ctx: &crate::ops::Ctx,
    targets: &[String],
    all: bool,
    dry_run: bool,
    engine: impl FnOnce(Registry, Git) -> Engine,
    json: bool,
) -> Result<u8> {
    if targets.is_empty() && !all {
        return Err(Error::Usage(
            "name a record id or worktree path, or pass --all".into(),
        ));
    }
    if !targets.is_empty() && all {
        return Err(Error::Usage("--all takes no targets".into()));
    }
    let root = if dry_run {
        match ctx.existing_root()? {
            Some(r) => r,
            None => {
                return Err(Error::Usage(
                    "no state root yet: nothing is recorded".into(),
                ));
            }
        }
    } else {
        ctx.open_root()?
    };
    let reg = Registry::new(root);
    let git = ctx.git()?;
    let info = GitInfo {
        path: git.path().to_string_lossy().into_owned(),
        version: git.version().to_string(),
    };
    let engine = engine(reg.clone(), git);
    let mut ids: Vec<Result<String, TargetReport>> = Vec::new();
    if all {
        for l in reg.scan_live()? {
            match l {
                // Terminal and interrupted records, and active ones whose every
                // launcher is gone (gate 3 then proves them interrupted).
                Loaded::Ok(r)
                    if matches!(r.state, State::Terminal | State::Interrupted)
                        || (r.state == State::Active
                            && !r.any_launcher_alive(crate::os::process::is_alive)) =>
                {
                    ids.push(Ok(r.id.clone()))
                }
                Loaded::Ok(_) => {}
                Loaded::Bad { id, path, problem } => {
                    let mut t = TargetReport::new(Some(id), None, Disposition::Held);
                    t.error = Some(format!("record `{}` is {problem}", path.display()));
                    ids.push(Err(t));
                }
            }
        }
    } else {
        for t in targets {
            let target = match target::resolve(engine.registry(), t)? {
                Target::Id(id) => Ok(id),
                Target::Unrecorded { path, main } => Err(unrecorded(t, &path, main)),
            };
            let dup =
                matches!(&target, Ok(id) if ids.iter().any(|i| i.as_ref().is_ok_and(|x| x == id)));
            if !dup {
                ids.push(target);
            }
        }
    }
    let reports: Vec<TargetReport> = ids
        .into_iter()
        .map(|r| {
            let mut t = match r {
                Ok(id) => engine.retire(&id),
                Err(t) => t,
            };
            super::hint::fill_target(&mut t);
            t
        })
        .collect();
    let code = reports.iter().map(target_code).max().unwrap_or(exit::OK);
    let report = RetireReport {
        dry_run,
        git: info,
        targets: reports,
    };
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a report serializes")
        );
    } else if report.targets.is_empty() {
        out!("nothing to retire");
    } else {
        for t in &report.targets {
            for line in render_target(t) {
                out!("{line}");
            }
        }
    }
    Ok(code)
}

pub(super) fn target_code(t: &TargetReport) -> u8 {
    if t.error.is_some() {
        return exit::FAILED;
    }
    match t.disposition {
        // A removal whose requested branch deletion was refused: a hold.
        Disposition::Removed
            if t.branch
                .as_ref()
                .is_some_and(|b| b.reason.is_some() && !b.automatic) =>
        {
            exit::HELD
        }
        Disposition::Removed | Disposition::WouldRemove | Disposition::Pending => exit::OK,
        Disposition::Held | Disposition::Retained => exit::HELD,
    }
}

pub(super) fn render_target(t: &TargetReport) -> Vec<String> {
    let what = t.worktree.clone().unwrap_or_default();
    let id = t.id.as_deref().map(super::short_id).unwrap_or("-");
    let mut out = Vec::new();
    if let Some(e) = &t.error
        && t.worktree.is_none()
    {
        out.push(format!("error ({id}): {e}"));
        return out;
    }
    match t.disposition {
        Disposition::Removed => {
            let mut s = format!("removed `{what}` ({id})");
            if let Some(a) = &t.archive {
                s.push_str(&format!(
                    "; archived {} commit(s) to `{}`",
                    a.commits, a.location
                ));
            }
            if let Some(tb) = &t.tombstone {
                s.push_str(&format!(
                    "; reclaimed {}",
                    super::list::human_bytes(tb.bytes_reclaimed)
                ));
            }
            if t.durable.as_deref() == Some("local") {
                s.push_str("; durable: local");
            }
            out.push(s);
            if let Some(b) = &t.branch {
                match (b.deleted, b.reason) {
                    (true, _) => out.push(format!(
                        "  deleted branch `{}` (was {})",
                        b.name,
                        b.old_tip.as_deref().unwrap_or("-")
                    )),
                    (false, Some(r)) => {
                        out.push(format!(
                            "  kept branch `{}`: {} ({})",
                            b.name,
                            r.code(),
                            b.detail
                        ));
                        out.push(format!(
                            "  hint: {}",
                            super::hint::prose(r, t.id.as_deref(), t.worktree.as_deref())
                        ));
                    }
                    (false, None) => out.push(format!("  branch `{}`: {}", b.name, b.detail)),
                }
            }
        }
        Disposition::Pending => {
            out.push(format!("pending `{what}` ({id}): retire when free"));
            for d in &t.detail {
                out.push(format!("  {d}"));
            }
            if let Some(n) = &t.next {
                out.push(format!("  hint: {n}"));
            }
        }
        Disposition::WouldRemove => {
            out.push(format!(
                "would remove `{what}` ({id}): {}",
                t.detail.join("; ")
            ));
        }
        Disposition::Held | Disposition::Retained => {
            let word = if t.disposition == Disposition::Retained {
                "retained"
            } else {
                "held"
            };
            let codes: Vec<String> = t.reasons.iter().map(|r| r.code()).collect();
            out.push(format!("{word} `{what}` ({id}): {}", codes.join(", ")));
            for d in &t.detail {
                out.push(format!("  {d}"));
            }
            if let Some(e) = &t.error {
                out.push(format!("  error: {e}"));
            }
            if let Some(r) = t.reasons.first() {
                out.push(format!(
                    "  hint: {}",
                    super::hint::prose(*r, t.id.as_deref(), t.worktree.as_deref())
                ));
            }
            if let Some(n) = &t.next {
                out.push(format!("  next: {n}"));
            }
        }
    }
    for f in &t.filters {
        let cmds: Vec<&str> = [f.process.as_deref(), f.clean.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        out.push(format!(
            "  ran trusted filter `{}` (`{}`, {})",
            f.driver,
            cmds.join("` / `"),
            f.origin
        ));
    }
    out
}

/// The held report of a target path that no record names: `not-recorded`,
/// with `lease adopt` as the next step, for a linked worktree;
/// `protected-path` for a repository's main worktree (which lease never
/// records nor removes: `lease adopt` would refuse it), with a command
/// listing the linked worktrees it may have meant.
pub(super) fn unrecorded(t: &str, path: &std::path::Path, main: bool) -> TargetReport {
    let shown = path.to_string_lossy().into_owned();
    let hold = if main {
        crate::model::reason::Hold::new(
            crate::model::reason::HoldReason::ProtectedPath,
            format!("`{t}` is a repository's main worktree, which lease never records or removes"),
        )
    } else {
        crate::model::reason::Hold::new(
            crate::model::reason::HoldReason::NotRecorded,
            format!("`{t}` has no lease record"),
        )
    };
    let mut r = TargetReport::new(None, Some(shown.clone()), Disposition::Held).held(&[hold]);
    if main {
        r.next = Some(format!(
            "git -C {} worktree list",
            super::hint::quote(&shown)
        ));
    }
    r
}
