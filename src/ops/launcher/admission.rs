//! Admission (SPEC "Commands": exec): what is refused before anything is
//! created: a worktree root that OS cleaners sweep by age, a state root or
//! worktree root inside a checkout of the repository, and free space below
//! the watermark (after a reap to the watermark with `--reap-if-low`).

use crate::error::{Error, Result};
use crate::git::{self, Git, RepoGit};
use crate::model::reason::HoldReason;
use crate::os::atomic::free_bytes;
use crate::policy::MinFree;
use crate::store::registry::Registry;
use std::path::Path;

/// Refuses, before anything is created, a worktree root that OS cleaners
/// sweep by age (`/tmp`, `/var/tmp`, `$TMPDIR`) unless config allows it.
pub(crate) fn check_root_not_temp(policy: &crate::policy::Policy) -> Result<()> {
    let state = crate::store::root::StateRoot::locate()?;
    crate::store::root::check_not_temp(
        &crate::store::root::worktree_root_of(&state, policy),
        policy.allow_temp_worktree_root.value,
    )
}

/// Refuses when free space on any filesystem that will receive data is
/// below any bound of the policy's watermark.
pub(super) fn admit(policy: &crate::policy::Policy, dirs: &[&Path]) -> Result<()> {
    match low_space(&policy.min_free.bounds(), dirs) {
        None => Ok(()),
        Some(why) => Err(Error::Environment(why)),
    }
}

/// The first filesystem of `dirs` whose free space is below a bound, as a
/// message; `None` when every one has room.
pub(super) fn low_space(bounds: &[MinFree], dirs: &[&Path]) -> Option<String> {
    for d in dirs {
        let free = free_bytes(d);
        for min in bounds {
            let need = min.required(crate::os::atomic::total_bytes(d));
            if free < need {
                return Some(format!(
                    "only {free} bytes free under `{}`, below the watermark of {need} bytes; free space, run `lease reap --apply` (or pass --reap-if-low), or lower the watermark (`lease config --show` says where it is set)",
                    d.display()
                ));
            }
        }
    }
    None
}

/// Admission with `--reap-if-low`: when space is low, runs the same reap as
/// `lease reap --apply --until-free W` under the reaper lock (never waiting
/// for another reaper), `W` the largest byte value any bound of the
/// watermark asks of any of `dirs`, then checks again: the largest
/// candidates go first and the reap stops once the watermark is met.
pub(super) fn admit_or_reap(
    reg: &Registry,
    git: &Git,
    reap_if_low: bool,
    dirs: &[&Path],
) -> Result<()> {
    let bounds = reg.root().policy().min_free.bounds();
    let Some(why) = low_space(&bounds, dirs) else {
        return Ok(());
    };
    if !reap_if_low {
        return Err(Error::Environment(why));
    }
    let reaped = match crate::ops::reap::lock_reaper(reg.root(), true) {
        Ok(_lock) => {
            let target = bounds
                .iter()
                .flat_map(|b| {
                    dirs.iter()
                        .map(|d| b.required(crate::os::atomic::total_bytes(d)))
                })
                .max()
                .unwrap_or(0);
            crate::ops::reap::reap_until_free(reg.root(), git, target).map(|r| r.bytes_reclaimed)
        }
        Err(e) => Err(e),
    };
    match (reaped, low_space(&bounds, dirs)) {
        (_, None) => Ok(()),
        (Ok(bytes), Some(why)) => Err(Error::Environment(format!(
            "{why} (a reap reclaimed {bytes} bytes, not enough)"
        ))),
        (Err(e), Some(why)) => Err(Error::Environment(format!(
            "{why} (the reap for --reap-if-low did not run: {e})"
        ))),
    }
}

/// Refuses a worktree root inside any worktree of the repository: the
/// enclosing checkout's `git clean -ffdx` would delete it.
pub(super) fn check_root_outside_worktrees(
    rg: &RepoGit,
    common: &Path,
    roots: &[&Path],
) -> Result<()> {
    for e in git::ops::worktrees(rg, common)? {
        let top = e.path();
        if e.bare {
            continue;
        }
        if let Some(r) = roots.iter().find(|r| r.starts_with(&top)) {
            return Err(Error::refused(
                HoldReason::RootInsideWorktree,
                format!(
                    "`{}` is inside worktree `{}`; set LEASE_HOME outside every checkout",
                    r.display(),
                    top.display()
                ),
            ));
        }
    }
    Ok(())
}
