//! The retire gates as pure decisions over evidence: no I/O here.
//!
//! Probes (in `retire.rs`, `git.rs`, `lease.rs`) gather plain structs; the
//! functions below decide. Every unknown or missing piece of evidence decides
//! to hold (SPEC invariant 2, "uncertainty holds").

use crate::model::evidence::{
    ContentEvidence, FilterTrust, FlockSeen, Inventory, LeaseSeen, LockOutcome, LockSeen,
    PathEvidence, ProcEvidence, Protected, Seen, is_rebuildable,
};
use crate::model::reason::{Hold, HoldReason};
use crate::model::record::{Retention, State};

/// What gate 1 allows the retire to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateGate {
    /// `terminal` or `interrupted`: go on.
    Proceed,
    /// `active` with every launcher gone: go on, and gate 3 decides between
    /// `interrupted` (free lease) and `consumer-alive`.
    ProceedIfFree,
}

/// Gate 1: the record's state, and whether any launcher of an `active` record lives.
pub fn gate_state(state: State, any_launcher_alive: bool) -> Result<StateGate, Hold> {
    match state {
        State::Terminal | State::Interrupted => Ok(StateGate::Proceed),
        State::Active if any_launcher_alive => Err(Hold::new(
            HoldReason::LauncherAlive,
            "a launcher of this worktree is still running",
        )),
        State::Active => Ok(StateGate::ProceedIfFree),
        State::Retained => Err(Hold::new(HoldReason::Retained, "the record is retained")),
        // (The engine adds the owner, reason and expiry to the detail.)
        State::Retiring => Err(Hold::new(
            HoldReason::RetireInProgress,
            "the record is retiring; `lease reap` finishes an interrupted retire",
        )),
        State::Planned | State::Removed => Err(Hold::new(
            HoldReason::NotTerminal,
            format!("the record is {}", state.name()),
        )),
    }
}

/// Holds an `active` or `interrupted` record that carries a retention: a
/// `lease hold` made while it ran, waiting for it to turn `terminal`, or the
/// `exec --keep` of an earlier session whose successor never recorded its
/// exit (whether that one wanted to keep it too is unknown, so it holds).
pub fn gate_retention(state: State, retention: Option<&Retention>) -> Result<(), Hold> {
    match retention {
        Some(r) if matches!(state, State::Active | State::Interrupted) => Err(Hold::new(
            HoldReason::Retained,
            format!(
                "held by {}:{} ({}); the retention takes effect when the record turns terminal",
                r.owner.kind, r.owner.name, r.reason
            ),
        )),
        _ => Ok(()),
    }
}

/// Gate 2: the worktree is the recorded directory, registered, unlocked, not our cwd.
pub fn gate_path(expected: (u64, u64), uid: u32, ev: &PathEvidence) -> Result<(), Hold> {
    let Some(seen) = ev.seen else {
        return Err(Hold::new(
            HoldReason::PathIdentity,
            "the worktree directory is missing",
        ));
    };
    if !seen.is_dir() || !ev.canonical {
        return Err(Hold::new(
            HoldReason::PathIdentity,
            "the worktree path is not a plain directory on its canonical path",
        ));
    }
    if (seen.dev, seen.ino) != expected || seen.uid != uid {
        return Err(Hold::new(
            HoldReason::PathIdentity,
            format!(
                "device/inode/owner {}:{}/{} differ from the record's {}:{}/{uid}",
                seen.dev, seen.ino, seen.uid, expected.0, expected.1
            ),
        ));
    }
    if ev.is_main {
        return Err(Hold::new(
            HoldReason::ProtectedPath,
            "the main worktree is never retired",
        ));
    }
    if !ev.listed {
        return Err(Hold::new(
            HoldReason::NotRegistered,
            "not listed by `git worktree list --porcelain -z`",
        ));
    }
    if !ev.linked_back {
        return Err(Hold::new(
            HoldReason::PathIdentity,
            "the `.git` file and the admin directory's `gitdir` do not point at each other",
        ));
    }
    gate_lock(&ev.lock)?;
    if ev.cwd_inside {
        return Err(Hold::new(
            HoldReason::CwdInsideTarget,
            "lease's current directory is inside the worktree",
        ));
    }
    Ok(())
}

/// Gate 2's lock check: unlocked, or locked by lease for this record and
/// state root. A lock of another lease holds `leased-elsewhere` (see
/// [`leased_elsewhere`]); any other lock holds `git-locked`.
pub fn gate_lock(lock: &LockSeen) -> Result<(), Hold> {
    match lock {
        LockSeen::Unlocked | LockSeen::Ours => Ok(()),
        LockSeen::Lease { id, root } => Err(leased_elsewhere(id, root)),
        LockSeen::Other(reason) => Err(Hold::new(
            HoldReason::GitLocked,
            format!("locked: {reason}"),
        )),
    }
}

/// The `leased-elsewhere` hold for a lock naming record `id` of state root
/// `root`: the detail names that root and the command to run there.
pub fn leased_elsewhere(id: &str, root: &str) -> Hold {
    Hold::new(
        HoldReason::LeasedElsewhere,
        format!(
            "git's lock names lease record {id} of state root `{root}`; run there: `LEASE_HOME={} lease retire {id}` (or `lease show {id}`)",
            shell_quote(root)
        ),
    )
}

/// Quotes `s` for a POSIX shell when it holds anything but `[A-Za-z0-9/._-]`.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Checks one observation of the lease file against the record: a regular
/// file of ours, mode 0600, one link, the recorded device and inode.
pub fn check_lease_seen(expected: (u64, u64), uid: u32, seen: Option<Seen>) -> Result<(), Hold> {
    let Some(s) = seen else {
        return Err(Hold::new(
            HoldReason::LeaseMissing,
            "the lease file is missing",
        ));
    };
    if !s.is_file() || (s.dev, s.ino) != expected {
        return Err(Hold::new(
            HoldReason::LeaseIdentity,
            format!(
                "the lease file is {}:{}, the record says {}:{}",
                s.dev, s.ino, expected.0, expected.1
            ),
        ));
    }
    if s.nlink != 1 {
        return Err(Hold::new(
            HoldReason::LeaseIdentity,
            format!("the lease file has {} links", s.nlink),
        ));
    }
    if s.uid != uid || s.mode & 0o7777 != 0o600 {
        return Err(Hold::new(
            HoldReason::LeaseInsecure,
            format!(
                "the lease file is owned by {} with mode {:o}",
                s.uid,
                s.mode & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Gate 3: identity by name, the exclusive non-blocking lock, then identity
/// again through the locked descriptor (`fstat`) and by name (`lstat`).
pub fn gate_lease(
    expected: (u64, u64),
    uid: u32,
    before: Option<Seen>,
    lock: &LockOutcome,
    fd_after: Option<Seen>,
    name_after: Option<Seen>,
) -> Result<(), Hold> {
    check_lease_seen(expected, uid, before)?;
    match lock {
        LockOutcome::Acquired => {}
        LockOutcome::Busy => {
            return Err(Hold::new(
                HoldReason::ConsumerAlive,
                "a consumer holds the lease (shared flock)",
            ));
        }
        LockOutcome::Error(e) => {
            return Err(Hold::new(
                HoldReason::LockUnsupported,
                format!("flock failed: {e}"),
            ));
        }
    }
    check_lease_seen(expected, uid, fd_after)?;
    check_lease_seen(expected, uid, name_after)?;
    Ok(())
}

/// Gate 5: no tracked change, untracked file, ignored file, hidden index edit
/// or operation in progress. Returns every reason found, not just the first.
///
/// A path that differs only in the worktree (` M`, or a hidden index entry)
/// and whose filter driver lease did not run holds `filter-unverifiable`,
/// never `dirty` and never clean: lease neutralized the driver, so the
/// bytes on disk cannot be compared with the index (an LFS file on disk is
/// the content, the index holds a pointer). A staged change, a deletion
/// or a type change holds `dirty` whatever the filter; a path that is clean
/// even unfiltered never reaches here.
pub fn gate_content(ev: &ContentEvidence) -> Result<(), Vec<Hold>> {
    let mut dirty = Vec::new();
    let mut untracked = Vec::new();
    let mut ignored = Vec::new();
    // (driver, trust, paths), in first-seen order.
    let mut unverifiable: Vec<(Vec<u8>, FilterTrust, Vec<String>)> = Vec::new();
    let mut unjudged = |path: &[u8]| -> bool {
        let Some(f) = ev
            .filtered
            .iter()
            .find(|f| f.path == path && f.trust != FilterTrust::Ran)
        else {
            return false;
        };
        let shown = crate::model::fmt::lossless(path);
        match unverifiable.iter_mut().find(|(d, _, _)| *d == f.driver) {
            Some((_, _, paths)) => paths.push(shown),
            None => unverifiable.push((f.driver.clone(), f.trust, vec![shown])),
        }
        true
    };
    for e in &ev.status {
        let path = crate::model::fmt::lossless(&e.path);
        match &e.xy {
            b"??" => untracked.push(path),
            b"!!" if is_rebuildable(&e.path, &ev.rebuildable) => {}
            b"!!" => match ev.provisioned.iter().find(|(p, _)| *p == e.path) {
                Some((_, true)) => {}
                Some((_, false)) => {
                    ignored.push(format!("{path} (provisioned at creation, changed since)"))
                }
                None => ignored.push(path),
            },
            b" M" if unjudged(&e.path) => {}
            _ => dirty.push(path),
        }
    }
    let hidden: Vec<String> = ev
        .hidden
        .iter()
        .filter(|p| !unjudged(p))
        .map(|p| crate::model::fmt::lossless(p))
        .collect();
    let mut holds = Vec::new();
    let mut push = |reason, what: &str, paths: Vec<String>| {
        if !paths.is_empty() {
            holds.push(Hold::new(reason, format!("{what}: {}", paths.join(", "))));
        }
    };
    push(HoldReason::Dirty, "changed", dirty);
    push(HoldReason::Untracked, "untracked", untracked);
    push(HoldReason::Ignored, "ignored", ignored);
    push(
        HoldReason::HiddenIndex,
        "edited behind skip-worktree/assume-unchanged",
        hidden,
    );
    push(HoldReason::OpInProgress, "in progress", ev.ops.clone());
    for (driver, trust, paths) in unverifiable {
        holds.push(Hold::new(
            HoldReason::FilterUnverifiable,
            filter_detail(&driver, trust, &paths),
        ));
    }
    if holds.is_empty() { Ok(()) } else { Err(holds) }
}

/// The detail of a `filter-unverifiable` hold: the driver, why it did not
/// run, the config line that lets it run, and the paths.
fn filter_detail(driver: &[u8], trust: FilterTrust, paths: &[String]) -> String {
    let d = crate::model::fmt::lossless(driver);
    let why = match trust {
        FilterTrust::Shadowed => format!(
            "`trusted_filters` names `{d}`, but the repository's config sets filter.{d}.process, which git would run instead of your clean command, so lease ran neither"
        ),
        FilterTrust::Undefined => format!(
            "`trusted_filters` names `{d}`, but your git config (global or system) defines neither filter.{d}.clean nor filter.{d}.process, so lease cannot run it (for git-lfs: `git lfs install`)"
        ),
        _ => format!(
            "filter `{d}` was neutralized (lease runs no filter unless trusted), so these paths cannot be compared with the index; to run it as your git config defines it, add `trusted_filters = [\"{d}\"]` to ~/.config/lease/config.toml"
        ),
    };
    format!("{why}: {}", paths.join(", "))
}

/// Gate 2, protected paths: the candidate is not `/`, `$HOME`, the root, the
/// common git dir (or inside it), nor an ancestor of any of them or of the
/// state root. Compared on canonical paths (gate 2 also requires the
/// candidate to be canonical).
pub fn gate_protected(wt: &std::path::Path, p: &Protected) -> Result<(), Hold> {
    let hit = |what: &str| {
        Err(Hold::new(
            HoldReason::ProtectedPath,
            format!("`{}` is {what}", wt.display()),
        ))
    };
    if wt.parent().is_none() {
        return hit("the filesystem root");
    }
    if p.home.as_deref() == Some(wt) {
        return hit("the home directory");
    }
    if wt == p.root {
        return hit("the worktree root itself");
    }
    if wt.starts_with(&p.common) {
        return hit("inside the common git dir");
    }
    for (what, other) in [
        ("an ancestor of the worktree root", &p.root),
        ("an ancestor of the common git dir", &p.common),
        ("an ancestor of the state root", &p.state_root),
    ] {
        if other.starts_with(wt) {
            return hit(what);
        }
    }
    if let Some(h) = &p.home
        && h.starts_with(wt)
    {
        return hit("an ancestor of the home directory");
    }
    Ok(())
}

/// Gate 5, the walk: no mount, special file, unreadable directory, nested
/// repository (an initialized submodule, when its path is a gitlink in the
/// index), directory lease could not delete from, or immutable or
/// append-only entry.
pub fn gate_inventory(inv: &Inventory, gitlinks: &[Vec<u8>]) -> Result<(), Vec<Hold>> {
    let show = |paths: &[Vec<u8>]| {
        paths
            .iter()
            .map(|p| crate::model::fmt::lossless(p))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (submodules, nested): (Vec<Vec<u8>>, Vec<Vec<u8>>) = inv
        .nested
        .iter()
        .cloned()
        .partition(|n| gitlinks.contains(n));
    let mut holds = Vec::new();
    for (reason, what, paths) in [
        (HoldReason::MountInside, "mount points", &inv.mounts),
        (HoldReason::SpecialFile, "special files", &inv.special),
        (HoldReason::Uninventoriable, "unreadable", &inv.unreadable),
        (HoldReason::Submodule, "initialized submodules", &submodules),
        (HoldReason::NestedRepo, "nested repositories", &nested),
    ] {
        if !paths.is_empty() {
            holds.push(Hold::new(reason, format!("{what}: {}", show(paths))));
        }
    }
    // One `not-writable` hold for both kinds of entry git cannot delete.
    let mut unwritable = Vec::new();
    if !inv.not_writable.is_empty() {
        unwritable.push(format!(
            "directories lease cannot delete from: {}",
            show(&inv.not_writable)
        ));
    }
    if !inv.pinned.is_empty() {
        unwritable.push(format!(
            "immutable or append-only entries (`lsattr -d PATH` shows `i` or `a`; root clears them with `chattr -i -a PATH`): {}",
            show(&inv.pinned)
        ));
    }
    if !unwritable.is_empty() {
        holds.push(Hold::new(HoldReason::NotWritable, unwritable.join("; ")));
    }
    if holds.is_empty() { Ok(()) } else { Err(holds) }
}

/// Gate 3 of a dry run, which never locks: the lease must look free to
/// `/proc`, by descriptors and by `/proc/locks`, and `/proc` must be able
/// to show every holder, so that a dry run never says "would remove" where
/// the real retire would find the lease busy. An exclusive flock is another
/// retire (`retire-in-progress`, as the real retire says); any other holder
/// is `consumer-alive`; a `/proc` that may hide holders is `unprovable`.
pub fn gate_lease_seen(seen: &LeaseSeen) -> Result<(), Hold> {
    if seen.lock == Some(FlockSeen::Exclusive) {
        return Err(Hold::new(
            HoldReason::RetireInProgress,
            "another retire holds the lease exclusively (/proc/locks)",
        ));
    }
    if seen.held() {
        return Err(Hold::new(
            HoldReason::ConsumerAlive,
            format!("held by {}", seen.describe()),
        ));
    }
    if !seen.complete {
        return Err(Hold::new(
            HoldReason::Unprovable,
            "this /proc belongs to a pid namespace other than the initial one, and the kernel omits from its /proc/locks the locks of processes it cannot show: a dry run cannot tell whether the lease is free (the real retire takes the lock and decides)",
        ));
    }
    Ok(())
}

/// Gate 4: no live process has its cwd, root, a descriptor or a mapping
/// inside the worktree (by device and inode, whatever name the process sees
/// the tree by), or a descriptor on the lease inode. Defense in depth behind
/// the lock: it catches descendants that closed or unlocked the inherited
/// descriptor and processes started outside lease.
pub fn gate_processes(ev: &ProcEvidence) -> Result<(), Hold> {
    if !ev.users.is_empty() {
        let who: Vec<String> = ev
            .users
            .iter()
            .map(|(p, how)| format!("pid {p} ({how})"))
            .collect();
        return Err(Hold::new(HoldReason::InUse, who.join(", ")));
    }
    if ev.traversable && ev.unaudited > 0 && ev.strict {
        return Err(Hold::new(
            HoldReason::Unprovable,
            format!(
                "{} processes of other users could not be audited and the worktree is reachable by them",
                ev.unaudited
            ),
        ));
    }
    Ok(())
}

/// Branch cleanup (`retire --delete-branch`): the branch must not be checked
/// out in any worktree (`checked_out` holds the short names `git worktree
/// list --porcelain -z` reports, read after the removal).
pub fn gate_branch_free(branch: &str, checked_out: &[String]) -> Result<(), Hold> {
    if checked_out.iter().any(|b| b == branch) {
        return Err(Hold::new(
            HoldReason::BranchCheckedOut,
            format!("branch `{branch}` is checked out in another worktree; kept"),
        ));
    }
    Ok(())
}

/// Branch cleanup: the tip must be proven, i.e. every commit reachable from
/// it is reachable from the durable ref or from a verified archive's tips.
/// `unproven` lists the commits `rev-list <tip> --not <durable> <archived>`
/// printed; any one keeps the branch.
pub fn gate_branch_proven(branch: &str, tip: &str, unproven: &[String]) -> Result<(), Hold> {
    if let Some(first) = unproven.first() {
        return Err(Hold::new(
            HoldReason::BranchUnproven,
            format!(
                "branch `{branch}` at {tip} has {} commit(s) neither durable nor archived (first {first}); kept",
                unproven.len()
            ),
        ));
    }
    Ok(())
}

/// Branch hygiene (SPEC "Provisioned files, disk, and hygiene"): returns
/// true if and only if lease named this branch itself, so a retire deletes
/// it once its tip is proven: the record is `created` by lease and its
/// branch is exactly `lease/<first 8 hex of the record id>`, the name exec
/// and create give when no `--branch` is asked for. A branch the user
/// named (any other name, or any adopted worktree's branch) is never one.
pub fn lease_named_branch(branch: Option<&str>, id: &str, created: bool) -> bool {
    let Some(prefix) = id.get(..8) else {
        return false;
    };
    created && branch.is_some_and(|b| b.strip_prefix("lease/") == Some(prefix))
}

/// The branches that may play the durable ref's part when there is no
/// trusted remote (SPEC "Words: durable", `durable: local`), in order: the
/// branch the main worktree's HEAD names (`main_head`, a full ref name from
/// `git symbolic-ref -q HEAD` in the common git dir; `None` when detached),
/// else `main`, else `master`. The worktree's own branch is never one of
/// them: it is what the retire is about, not a copy that outlives it.
/// Returns full ref names (`refs/heads/<b>`); the caller takes the first
/// that names a commit.
pub fn local_durable_candidates(main_head: Option<&str>, own_branch: Option<&str>) -> Vec<String> {
    let own = own_branch.map(|b| format!("refs/heads/{b}"));
    let mut v: Vec<String> = Vec::new();
    let named = main_head.filter(|h| h.starts_with("refs/heads/"));
    for r in named.map(str::to_string).into_iter().chain([
        "refs/heads/main".to_string(),
        "refs/heads/master".to_string(),
    ]) {
        if Some(&r) != own.as_ref() && !v.contains(&r) {
            v.push(r);
        }
    }
    v
}

/// What reports say about a durable ref (`durable: local` or `durable:
/// remote`): a local branch (`refs/heads/...`, the repository's own default
/// branch standing in for a trusted remote) is `local`; a tracking ref of
/// the trusted remote is `remote`.
pub fn durable_kind(durable_ref: &str) -> &'static str {
    if durable_ref.starts_with("refs/heads/") {
        "local"
    } else {
        "remote"
    }
}

/// Whether a retire runs the operator's teardown now (SPEC "Provisioned
/// files, disk, and hygiene": once per record, after the last consumer is
/// gone, before removal). `configured`: config `teardown` names a command;
/// `last`: the record's teardown so far, `(finished, ok)`. Returns `None`
/// when there is nothing to run (none configured, or it already
/// succeeded), else `Some(after_interrupt)`: true when the last run
/// started and never finished (a crash), so the report says it runs again.
pub fn teardown_due(configured: bool, last: Option<(bool, bool)>) -> Option<bool> {
    match (configured, last) {
        (false, _) | (true, Some((true, true))) => None,
        (true, None) => Some(false),
        (true, Some((finished, _))) => Some(!finished),
    }
}

/// How one teardown command ended (what the adapter's `run_bounded` saw).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeardownSeen {
    /// The command line.
    pub command: String,
    /// Its exit code, if it exited.
    pub code: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// True if it outlived `teardown_timeout` and was killed.
    pub timed_out: bool,
    /// The end of what it wrote to stderr (lossy UTF-8, bounded).
    pub stderr: String,
    /// Why it could not be started, if it could not.
    pub spawn_error: Option<String>,
}

/// The teardown gate: the command must have exited 0 within its bound;
/// anything else holds `teardown-failed` (the tree stays).
pub fn gate_teardown(t: &TeardownSeen) -> Result<(), Hold> {
    let how = if let Some(e) = &t.spawn_error {
        format!("could not start: {e}")
    } else if t.timed_out {
        "outlived teardown_timeout and was killed".to_string()
    } else {
        match (t.code, t.signal) {
            (Some(0), _) => return Ok(()),
            (Some(c), _) => format!("exited {c}"),
            (None, Some(s)) => format!("died of signal {s}"),
            (None, None) => "ended without a status".to_string(),
        }
    };
    let tail = t.stderr.trim();
    Err(Hold::new(
        HoldReason::TeardownFailed,
        if tail.is_empty() {
            format!("teardown `{}` {how}", t.command)
        } else {
            format!("teardown `{}` {how}: {tail}", t.command)
        },
    ))
}

/// The files provisioning copies: those git ignores (`ignored`) that
/// `.worktreeinclude` or a config `provision` pattern matched
/// (`included`), except those at or below a `provision_symlink` entry
/// (symlinked instead). Sorted, without duplicates.
pub fn provisioned_files(
    ignored: &[Vec<u8>],
    included: &[Vec<u8>],
    links: &[String],
) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = included
        .iter()
        .filter(|p| ignored.contains(p))
        .filter(|p| {
            !is_rebuildable(
                p,
                &links
                    .iter()
                    .map(|l| l.as_bytes().to_vec())
                    .collect::<Vec<_>>(),
            )
        })
        .cloned()
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The slot a new record gets (SPEC "Provisioned files, disk, and
/// hygiene"): the lowest integer from 0 up that `taken` (the slots of every
/// other non-`removed` record of the state root) does not hold.
pub fn lowest_free_slot(taken: &[u32]) -> u32 {
    (0..=u32::MAX)
        .find(|n| !taken.contains(n))
        .unwrap_or(u32::MAX)
}

/// `lease archive drop`: every commit the archive holds must be reachable
/// from a durable ref now; `unreachable` lists the archived tips that are not.
pub fn gate_archive_droppable(unreachable: &[String]) -> Result<(), Hold> {
    if unreachable.is_empty() {
        return Ok(());
    }
    Err(Hold::new(
        HoldReason::ArchiveUnreachable,
        format!(
            "{} archived commit(s) are not reachable from a durable ref: {}",
            unreachable.len(),
            unreachable.join(", ")
        ),
    ))
}

/// Archival refs: what `git ls-remote` read back (`(oid, ref)` pairs) must
/// name every pushed ref at exactly the pushed commit.
pub fn check_readback(
    pushed: &std::collections::BTreeMap<String, String>,
    listed: &[(String, String)],
) -> Result<(), Hold> {
    for (name, oid) in pushed {
        match listed.iter().find(|(_, r)| r == name) {
            Some((got, _)) if got == oid => {}
            Some((got, _)) => {
                return Err(Hold::new(
                    HoldReason::ArchivePushFailed,
                    format!("readback: `{name}` is at {got}, not at the pushed {oid}"),
                ));
            }
            None => {
                return Err(Hold::new(
                    HoldReason::ArchivePushFailed,
                    format!("readback: `{name}` is not on the remote"),
                ));
            }
        }
    }
    Ok(())
}

/// `reap --until-free`: the order in which candidates go to the retire
/// engine, given each one's estimated reclaim in bytes (`estimates[i]` for the
/// i-th record of the scan): indices, largest estimate first; equal
/// estimates keep the scan's order. Every index appears exactly once, so the
/// order decides only *when* a candidate is tried, never *whether* the gates
/// run (SPEC "Provisioned files, disk, and hygiene").
pub fn reclaim_order(estimates: &[u64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..estimates.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(estimates[i]));
    order
}

/// `reap --until-free`: true when `free` bytes on a candidate's filesystem
/// already reach `target` bytes, so the candidate is not retired (the reap
/// stops taking candidates there). A stop, never a gate: `false` only lets
/// the retire engine's gates run.
pub fn target_met(free: u64, target: u64) -> bool {
    free >= target
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::evidence::{FilteredPath, StatusEntry};

    #[test]
    fn reclaim_order_takes_the_largest_first() {
        assert_eq!(reclaim_order(&[1, 3, 2, 3]), vec![1, 3, 2, 0]);
        assert!(reclaim_order(&[]).is_empty());
    }

    #[test]
    fn the_target_is_met_at_or_above_it() {
        assert!(target_met(10, 10));
        assert!(target_met(11, 10));
        assert!(!target_met(9, 10));
    }

    fn dir(dev: u64, ino: u64) -> Seen {
        Seen {
            dev,
            ino,
            uid: 7,
            mode: libc::S_IFDIR | 0o700,
            nlink: 2,
        }
    }
    fn file(dev: u64, ino: u64) -> Seen {
        Seen {
            dev,
            ino,
            uid: 7,
            mode: libc::S_IFREG | 0o600,
            nlink: 1,
        }
    }
    fn good_path() -> PathEvidence {
        PathEvidence {
            seen: Some(dir(1, 2)),
            canonical: true,
            linked_back: true,
            lock: LockSeen::Unlocked,
            listed: true,
            is_main: false,
            cwd_inside: false,
        }
    }

    #[test]
    fn retention_gate_holds_a_running_or_crashed_record_only() {
        let r = Retention {
            owner: crate::model::record::Owner::parse("agent:x").unwrap(),
            reason: "inspect".into(),
            until: None,
        };
        for s in [State::Active, State::Interrupted] {
            let h = gate_retention(s, Some(&r)).unwrap_err();
            assert_eq!(h.reason, HoldReason::Retained, "{s:?}");
            assert_eq!(gate_retention(s, None), Ok(()), "{s:?} without one");
        }
        // Terminal and retained records are gate 1's to decide.
        for s in [State::Terminal, State::Retained, State::Retiring] {
            assert_eq!(gate_retention(s, Some(&r)), Ok(()), "{s:?}");
        }
    }

    #[test]
    fn codes_are_kebab_case() {
        assert_eq!(HoldReason::ConsumerAlive.code(), "consumer-alive");
        assert_eq!(
            HoldReason::UniqueCommitsUnarchived.code(),
            "unique-commits-unarchived"
        );
    }

    #[test]
    fn only_a_lease_in_use_is_busy_for_an_intent() {
        for r in [
            HoldReason::ConsumerAlive,
            HoldReason::LauncherAlive,
            HoldReason::RetireInProgress,
        ] {
            assert!(r.is_busy(), "{}", r.code());
        }
        // The tree, the evidence or an owner: an intent never waits those out.
        for r in [
            HoldReason::InUse,
            HoldReason::Dirty,
            HoldReason::Untracked,
            HoldReason::Retained,
            HoldReason::LockUnsupported,
            HoldReason::Unprovable,
            HoldReason::NotTerminal,
        ] {
            assert!(!r.is_busy(), "{}", r.code());
        }
    }

    #[test]
    fn state_gate_table() {
        assert_eq!(gate_state(State::Terminal, false), Ok(StateGate::Proceed));
        assert_eq!(gate_state(State::Interrupted, true), Ok(StateGate::Proceed));
        assert_eq!(
            gate_state(State::Active, false),
            Ok(StateGate::ProceedIfFree)
        );
        let reason = |s, alive| gate_state(s, alive).unwrap_err().reason;
        assert_eq!(reason(State::Active, true), HoldReason::LauncherAlive);
        assert_eq!(reason(State::Retained, false), HoldReason::Retained);
        assert_eq!(reason(State::Retiring, false), HoldReason::RetireInProgress);
        assert_eq!(reason(State::Planned, false), HoldReason::NotTerminal);
        assert_eq!(reason(State::Removed, false), HoldReason::NotTerminal);
    }

    #[test]
    fn path_gate_accepts_the_recorded_directory() {
        assert_eq!(gate_path((1, 2), 7, &good_path()), Ok(()));
        // lease's own lock on this record, in this state root, is no hold.
        let mut ours = good_path();
        ours.lock = LockSeen::Ours;
        assert_eq!(gate_path((1, 2), 7, &ours), Ok(()));
    }

    #[test]
    fn a_lock_of_another_lease_names_its_root_and_the_command_to_run_there() {
        let h = gate_lock(&LockSeen::Lease {
            id: "ab".repeat(16),
            root: "/srv/other state".into(),
        })
        .unwrap_err();
        assert_eq!(h.reason, HoldReason::LeasedElsewhere);
        assert!(
            h.detail.contains(&format!(
                "LEASE_HOME='/srv/other state' lease retire {}",
                "ab".repeat(16)
            )),
            "{}",
            h.detail
        );
        let h = gate_lock(&LockSeen::Other("usb disk".into())).unwrap_err();
        assert_eq!(
            (h.reason, h.detail.as_str()),
            (HoldReason::GitLocked, "locked: usb disk")
        );
        assert_eq!(shell_quote("/a/b_c-1.d"), "/a/b_c-1.d");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn path_gate_refusals() {
        type Mutate = fn(&mut PathEvidence);
        let cases: Vec<(Mutate, HoldReason)> = vec![
            (|e| e.seen = None, HoldReason::PathIdentity),
            (|e| e.seen = Some(file(1, 2)), HoldReason::PathIdentity),
            (|e| e.seen = Some(dir(1, 3)), HoldReason::PathIdentity),
            (|e| e.seen = Some(dir(9, 2)), HoldReason::PathIdentity),
            (
                |e| e.seen.as_mut().unwrap().uid = 0,
                HoldReason::PathIdentity,
            ),
            (|e| e.canonical = false, HoldReason::PathIdentity),
            (|e| e.linked_back = false, HoldReason::PathIdentity),
            (|e| e.listed = false, HoldReason::NotRegistered),
            (|e| e.is_main = true, HoldReason::ProtectedPath),
            (
                |e| e.lock = LockSeen::Other(String::new()),
                HoldReason::GitLocked,
            ),
            (
                |e| {
                    e.lock = LockSeen::Lease {
                        id: "0".repeat(32),
                        root: "/elsewhere".into(),
                    }
                },
                HoldReason::LeasedElsewhere,
            ),
            (|e| e.cwd_inside = true, HoldReason::CwdInsideTarget),
        ];
        for (i, (mutate, want)) in cases.into_iter().enumerate() {
            let mut ev = good_path();
            mutate(&mut ev);
            assert_eq!(
                gate_path((1, 2), 7, &ev).unwrap_err().reason,
                want,
                "case {i}"
            );
        }
    }

    #[test]
    fn lease_gate() {
        let f = Some(file(1, 2));
        let ok = gate_lease((1, 2), 7, f, &LockOutcome::Acquired, f, f);
        assert_eq!(ok, Ok(()));
        let r = |before, lock: LockOutcome, fd, name| {
            gate_lease((1, 2), 7, before, &lock, fd, name)
                .unwrap_err()
                .reason
        };
        assert_eq!(r(f, LockOutcome::Busy, f, f), HoldReason::ConsumerAlive);
        assert_eq!(
            r(f, LockOutcome::Error("ENOLCK".into()), f, f),
            HoldReason::LockUnsupported
        );
        assert_eq!(
            r(None, LockOutcome::Acquired, f, f),
            HoldReason::LeaseMissing
        );
        assert_eq!(
            r(f, LockOutcome::Acquired, f, None),
            HoldReason::LeaseMissing
        );
        assert_eq!(
            r(f, LockOutcome::Acquired, Some(file(1, 5)), f),
            HoldReason::LeaseIdentity
        );
        assert_eq!(
            r(f, LockOutcome::Acquired, f, Some(file(1, 5))),
            HoldReason::LeaseIdentity
        );
        let mut two = file(1, 2);
        two.nlink = 2;
        assert_eq!(
            r(f, LockOutcome::Acquired, Some(two), f),
            HoldReason::LeaseIdentity
        );
        let mut open = file(1, 2);
        open.mode = libc::S_IFREG | 0o644;
        assert_eq!(
            r(Some(open), LockOutcome::Acquired, f, f),
            HoldReason::LeaseInsecure
        );
        let mut theirs = file(1, 2);
        theirs.uid = 0;
        assert_eq!(
            r(Some(theirs), LockOutcome::Acquired, f, f),
            HoldReason::LeaseInsecure
        );
        let fifo = Seen {
            mode: libc::S_IFIFO | 0o600,
            ..file(1, 2)
        };
        assert_eq!(
            r(Some(fifo), LockOutcome::Acquired, f, f),
            HoldReason::LeaseIdentity
        );
    }

    #[test]
    fn content_gate_collects_every_reason() {
        let clean = ContentEvidence::default();
        assert_eq!(gate_content(&clean), Ok(()));
        let ev = ContentEvidence {
            status: vec![
                StatusEntry {
                    xy: *b" M",
                    path: b"a".to_vec(),
                },
                StatusEntry {
                    xy: *b"??",
                    path: b"b".to_vec(),
                },
                StatusEntry {
                    xy: *b"!!",
                    path: b".env".to_vec(),
                },
            ],
            hidden: vec![b"c".to_vec()],
            ops: vec!["MERGE_HEAD".into()],
            rebuildable: vec![],
            filtered: vec![],
            provisioned: vec![],
        };
        let reasons: Vec<_> = gate_content(&ev)
            .unwrap_err()
            .into_iter()
            .map(|h| h.reason)
            .collect();
        assert_eq!(
            reasons,
            [
                HoldReason::Dirty,
                HoldReason::Untracked,
                HoldReason::Ignored,
                HoldReason::HiddenIndex,
                HoldReason::OpInProgress
            ]
        );
    }

    /// A provisioned path still identical to what was provisioned is not
    /// work; one that changed is `ignored`, and the detail says so.
    #[test]
    fn an_unchanged_provisioned_path_is_not_work() {
        let entry = |p: &str| StatusEntry {
            xy: *b"!!",
            path: p.as_bytes().to_vec(),
        };
        let mut ev = ContentEvidence {
            status: vec![entry(".env"), entry("node_modules")],
            provisioned: vec![(b".env".to_vec(), true), (b"node_modules".to_vec(), true)],
            ..ContentEvidence::default()
        };
        assert_eq!(gate_content(&ev), Ok(()));
        ev.provisioned[0].1 = false;
        let h = gate_content(&ev).unwrap_err();
        assert_eq!(h[0].reason, HoldReason::Ignored);
        assert!(
            h[0].detail
                .contains(".env (provisioned at creation, changed since)"),
            "{}",
            h[0].detail
        );
        assert!(!h[0].detail.contains("node_modules"), "{}", h[0].detail);
        ev.provisioned.clear();
        assert_eq!(
            gate_content(&ev).unwrap_err()[0].reason,
            HoldReason::Ignored
        );
    }

    /// A path that differs only because lease neutralized its filter is
    /// `filter-unverifiable`, never `dirty` and never clean; a staged
    /// change, a deletion or a path whose trusted driver ran stays `dirty`.
    #[test]
    fn filtered_paths_that_look_changed_cannot_be_judged() {
        let entry = |xy: &[u8; 2], p: &str| StatusEntry {
            xy: *xy,
            path: p.as_bytes().to_vec(),
        };
        let f = |p: &str, d: &str, trust| FilteredPath {
            path: p.as_bytes().to_vec(),
            driver: d.as_bytes().to_vec(),
            trust,
        };
        let ev = ContentEvidence {
            status: vec![
                entry(b" M", "a.bin"),
                entry(b" M", "b.bin"),
                entry(b"M ", "staged.bin"),
                entry(b" D", "gone.bin"),
                entry(b" M", "ran.bin"),
                entry(b" M", "x.txt"),
                entry(b" M", "plain"),
            ],
            hidden: vec![b"h.bin".to_vec(), b"h.plain".to_vec()],
            filtered: vec![
                f("a.bin", "lfs", FilterTrust::Untrusted),
                f("b.bin", "lfs", FilterTrust::Untrusted),
                f("staged.bin", "lfs", FilterTrust::Untrusted),
                f("gone.bin", "lfs", FilterTrust::Untrusted),
                f("ran.bin", "lfs", FilterTrust::Ran),
                f("x.txt", "x", FilterTrust::Undefined),
                f("h.bin", "lfs", FilterTrust::Untrusted),
            ],
            ..ContentEvidence::default()
        };
        let holds = gate_content(&ev).unwrap_err();
        let by = |r| {
            holds
                .iter()
                .filter(|h| h.reason == r)
                .map(|h| h.detail.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            by(HoldReason::Dirty),
            ["changed: staged.bin, gone.bin, ran.bin, plain"]
        );
        assert_eq!(
            by(HoldReason::HiddenIndex),
            ["edited behind skip-worktree/assume-unchanged: h.plain"]
        );
        let unverifiable = by(HoldReason::FilterUnverifiable);
        assert_eq!(
            unverifiable.len(),
            2,
            "one hold per driver: {unverifiable:?}"
        );
        assert!(unverifiable[0].contains("trusted_filters = [\"lfs\"]"));
        assert!(
            unverifiable[0].ends_with(": a.bin, b.bin, h.bin"),
            "{}",
            unverifiable[0]
        );
        assert!(unverifiable[1].contains("defines neither filter.x.clean nor filter.x.process"));
        assert!(unverifiable[1].ends_with(": x.txt"));
        // Only filtered paths: nothing is dirty, and nothing is clean.
        let only = ContentEvidence {
            status: vec![entry(b" M", "a.bin")],
            filtered: vec![f("a.bin", "lfs", FilterTrust::Untrusted)],
            ..ContentEvidence::default()
        };
        let holds = gate_content(&only).unwrap_err();
        assert_eq!(holds.len(), 1);
        assert_eq!(holds[0].reason, HoldReason::FilterUnverifiable);
    }

    #[test]
    fn protected_paths() {
        use std::path::{Path, PathBuf};
        let p = Protected {
            root: PathBuf::from("/s/worktrees/r-1"),
            common: PathBuf::from("/src/r/.git"),
            state_root: PathBuf::from("/s"),
            home: Some(PathBuf::from("/home/u")),
        };
        assert_eq!(
            gate_protected(Path::new("/s/worktrees/r-1/abc"), &p),
            Ok(())
        );
        for bad in [
            "/",
            "/home/u",
            "/home",
            "/s/worktrees/r-1",
            "/s/worktrees",
            "/s",
            "/src/r/.git",
            "/src/r/.git/worktrees/x",
            "/src/r",
        ] {
            assert_eq!(
                gate_protected(Path::new(bad), &p).unwrap_err().reason,
                HoldReason::ProtectedPath,
                "{bad}"
            );
        }
    }

    #[test]
    fn inventory_gate() {
        assert_eq!(gate_inventory(&Inventory::default(), &[]), Ok(()));
        let inv = Inventory {
            mounts: vec![b"build".to_vec()],
            special: vec![b"fifo".to_vec()],
            unreadable: vec![b"secret".to_vec()],
            nested: vec![b"sub".to_vec(), b"vendor/x".to_vec()],
            not_writable: vec![b"ro".to_vec()],
            ..Inventory::default()
        };
        let reasons: Vec<_> = gate_inventory(&inv, &[b"sub".to_vec()])
            .unwrap_err()
            .into_iter()
            .map(|h| h.reason)
            .collect();
        assert_eq!(
            reasons,
            [
                HoldReason::MountInside,
                HoldReason::SpecialFile,
                HoldReason::Uninventoriable,
                HoldReason::Submodule,
                HoldReason::NestedRepo,
                HoldReason::NotWritable
            ]
        );
        // An immutable or append-only entry alone holds, and with an
        // undeletable directory both share one `not-writable` hold.
        let pinned = Inventory {
            pinned: vec![b"sub/f".to_vec()],
            ..Inventory::default()
        };
        let holds = gate_inventory(&pinned, &[]).unwrap_err();
        assert_eq!(holds.len(), 1);
        assert_eq!(holds[0].reason, HoldReason::NotWritable);
        assert!(holds[0].detail.contains("immutable or append-only entries"));
        assert!(holds[0].detail.contains("sub/f"));
        let both = Inventory {
            not_writable: vec![b"ro".to_vec()],
            ..pinned
        };
        let holds = gate_inventory(&both, &[]).unwrap_err();
        assert_eq!(holds.len(), 1, "{holds:?}");
        assert!(holds[0].detail.contains("ro") && holds[0].detail.contains("sub/f"));
    }

    #[test]
    fn lease_seen_gate() {
        let free = LeaseSeen {
            complete: true,
            ..LeaseSeen::default()
        };
        assert_eq!(gate_lease_seen(&free), Ok(()));
        let reason = |seen: LeaseSeen| gate_lease_seen(&seen).unwrap_err().reason;
        let by_fd = LeaseSeen {
            pids: vec![42],
            ..free.clone()
        };
        assert_eq!(reason(by_fd.clone()), HoldReason::ConsumerAlive);
        assert!(
            gate_lease_seen(&by_fd)
                .unwrap_err()
                .detail
                .contains("pid 42")
        );
        let by_lock = LeaseSeen {
            lock: Some(FlockSeen::Shared),
            ..free.clone()
        };
        assert_eq!(reason(by_lock.clone()), HoldReason::ConsumerAlive);
        assert!(
            gate_lease_seen(&by_lock)
                .unwrap_err()
                .detail
                .contains("/proc/locks")
        );
        let retire = LeaseSeen {
            pids: vec![7],
            lock: Some(FlockSeen::Exclusive),
            ..free.clone()
        };
        assert_eq!(reason(retire), HoldReason::RetireInProgress);
        // A /proc that may hide holders proves nothing about a free lease,
        // but a holder it does show still decides.
        let blind = LeaseSeen {
            complete: false,
            ..free.clone()
        };
        assert_eq!(reason(blind), HoldReason::Unprovable);
        let blind_held = LeaseSeen {
            complete: false,
            ..by_lock
        };
        assert_eq!(reason(blind_held), HoldReason::ConsumerAlive);
        assert!(!free.held() && by_fd.held());
    }

    #[test]
    fn process_gate() {
        assert_eq!(gate_processes(&ProcEvidence::default()), Ok(()));
        let used = ProcEvidence {
            users: vec![(42, "cwd".into())],
            ..Default::default()
        };
        assert_eq!(gate_processes(&used).unwrap_err().reason, HoldReason::InUse);
        let blind = ProcEvidence {
            unaudited: 3,
            traversable: true,
            ..Default::default()
        };
        assert_eq!(gate_processes(&blind), Ok(()), "lenient by default");
        let strict = ProcEvidence {
            strict: true,
            ..blind.clone()
        };
        assert_eq!(
            gate_processes(&strict).unwrap_err().reason,
            HoldReason::Unprovable
        );
        let all_audited = ProcEvidence {
            unaudited: 0,
            ..strict.clone()
        };
        assert_eq!(
            gate_processes(&all_audited),
            Ok(()),
            "strict, and every process was audited"
        );
        let private = ProcEvidence {
            traversable: false,
            ..strict
        };
        assert_eq!(
            gate_processes(&private),
            Ok(()),
            "others cannot be inside a 0700 tree"
        );
    }

    #[test]
    fn rebuildable_outputs_are_exact_paths() {
        let d = vec![b"target".to_vec(), b"web/dist".to_vec()];
        assert!(is_rebuildable(b"target/", &d));
        assert!(is_rebuildable(b"target/debug/app", &d));
        assert!(is_rebuildable(b"web/dist/", &d));
        assert!(!is_rebuildable(b"targets/", &d), "whole components only");
        assert!(!is_rebuildable(b"web/", &d), "a parent is not declared");
        assert!(!is_rebuildable(b".env", &d));
        let ev = ContentEvidence {
            status: vec![
                StatusEntry {
                    xy: *b"!!",
                    path: b"target/".to_vec(),
                },
                StatusEntry {
                    xy: *b"!!",
                    path: b".env".to_vec(),
                },
            ],
            rebuildable: d,
            ..ContentEvidence::default()
        };
        assert_eq!(ev.rebuildable_ignored(), vec![b"target".to_vec()]);
        let holds = gate_content(&ev).unwrap_err();
        assert_eq!(holds.len(), 1);
        assert!(holds[0].detail.contains(".env") && !holds[0].detail.contains("target"));
    }

    #[test]
    fn branch_cleanup_gates() {
        assert!(gate_branch_free("feat", &["main".into()]).is_ok());
        let h = gate_branch_free("feat", &["main".into(), "feat".into()]).unwrap_err();
        assert_eq!(h.reason, HoldReason::BranchCheckedOut);
        assert!(gate_branch_proven("feat", "abc", &[]).is_ok());
        let h = gate_branch_proven("feat", "abc", &["abc".into()]).unwrap_err();
        assert_eq!(h.reason, HoldReason::BranchUnproven);
    }

    #[test]
    fn teardown_runs_once_and_again_only_after_a_failure_or_a_crash() {
        assert_eq!(teardown_due(false, None), None);
        assert_eq!(teardown_due(false, Some((false, false))), None);
        assert_eq!(teardown_due(true, None), Some(false));
        assert_eq!(teardown_due(true, Some((true, true))), None, "once");
        assert_eq!(
            teardown_due(true, Some((true, false))),
            Some(false),
            "failed: again"
        );
        assert_eq!(
            teardown_due(true, Some((false, false))),
            Some(true),
            "crashed: again, said"
        );
        let seen = |code, signal, timed_out| TeardownSeen {
            command: "down".into(),
            code,
            signal,
            timed_out,
            stderr: "boom\n".into(),
            spawn_error: None,
        };
        assert!(gate_teardown(&seen(Some(0), None, false)).is_ok());
        for t in [
            seen(Some(3), None, false),
            seen(None, Some(9), false),
            seen(None, Some(9), true),
            seen(None, None, false),
        ] {
            let h = gate_teardown(&t).unwrap_err();
            assert_eq!(h.reason, HoldReason::TeardownFailed);
            assert!(
                h.detail.contains("`down`") && h.detail.contains("boom"),
                "{}",
                h.detail
            );
        }
        let mut t = seen(None, None, false);
        t.spawn_error = Some("no such file".into());
        assert!(
            gate_teardown(&t)
                .unwrap_err()
                .detail
                .contains("no such file")
        );
    }

    #[test]
    fn only_ignored_included_files_are_copied() {
        let b = |s: &str| s.as_bytes().to_vec();
        let ignored = vec![b(".env"), b("node_modules/a/x.js"), b("secret.key")];
        let included = vec![b("node_modules/a/x.js"), b(".env"), b("README.local")];
        assert_eq!(
            provisioned_files(&ignored, &included, &["node_modules".into()]),
            vec![b(".env")],
            "README.local is not ignored; node_modules is symlinked"
        );
    }

    #[test]
    fn a_new_record_gets_the_lowest_slot_nobody_holds() {
        assert_eq!(lowest_free_slot(&[]), 0);
        assert_eq!(lowest_free_slot(&[0, 1, 2]), 3);
        assert_eq!(lowest_free_slot(&[1, 0, 3]), 2);
        assert_eq!(lowest_free_slot(&[5]), 0);
    }

    #[test]
    fn only_the_branch_lease_named_itself_is_its_own() {
        let id = "0123abcd".to_string() + &"e".repeat(24);
        assert!(lease_named_branch(Some("lease/0123abcd"), &id, true));
        // adopted, user-named, another record's name, detached
        assert!(!lease_named_branch(Some("lease/0123abcd"), &id, false));
        assert!(!lease_named_branch(Some("feature"), &id, true));
        assert!(!lease_named_branch(Some("lease/0123abce"), &id, true));
        assert!(!lease_named_branch(
            Some("lease/0123abcd-restored-x"),
            &id,
            true
        ));
        assert!(!lease_named_branch(Some("x/lease/0123abcd"), &id, true));
        assert!(!lease_named_branch(None, &id, true));
        assert!(!lease_named_branch(Some("lease/"), "", true));
    }

    #[test]
    fn the_local_durable_ref_is_the_main_worktree_s_branch_never_the_own() {
        assert_eq!(
            local_durable_candidates(Some("refs/heads/trunk"), Some("lease/0123abcd")),
            ["refs/heads/trunk", "refs/heads/main", "refs/heads/master"]
        );
        assert_eq!(
            local_durable_candidates(None, None),
            ["refs/heads/main", "refs/heads/master"]
        );
        // the worktree's own branch never proves itself durable
        assert_eq!(
            local_durable_candidates(Some("refs/heads/main"), Some("main")),
            ["refs/heads/master"]
        );
        assert_eq!(
            local_durable_candidates(Some("refs/remotes/o/x"), Some("master")),
            ["refs/heads/main"]
        );
        assert_eq!(durable_kind("refs/heads/main"), "local");
        assert_eq!(durable_kind("refs/remotes/origin/HEAD"), "remote");
    }

    #[test]
    fn archive_drop_gate() {
        assert!(gate_archive_droppable(&[]).is_ok());
        let h = gate_archive_droppable(&["abc".into()]).unwrap_err();
        assert_eq!(h.reason, HoldReason::ArchiveUnreachable);
        assert!(h.detail.contains("abc"));
    }

    #[test]
    fn readback_must_match_exactly() {
        let mut pushed = std::collections::BTreeMap::new();
        pushed.insert("refs/lease/archive/x/head".to_string(), "aaa".to_string());
        let ok = vec![("aaa".to_string(), "refs/lease/archive/x/head".to_string())];
        assert!(check_readback(&pushed, &ok).is_ok());
        let moved = vec![("bbb".to_string(), "refs/lease/archive/x/head".to_string())];
        assert_eq!(
            check_readback(&pushed, &moved).unwrap_err().reason,
            HoldReason::ArchivePushFailed
        );
        assert!(check_readback(&pushed, &[]).is_err(), "missing ref");
        let other = vec![("aaa".to_string(), "refs/lease/archive/y/head".to_string())];
        assert!(check_readback(&pushed, &other).is_err(), "another ref");
    }
}

/// Property tests of the gates taken together, as the retire engine runs
/// them: the decision removes only when every piece of evidence is the one a
/// safe removal needs, and every unknown or unprovable piece (a missing
/// `lstat`, a lock error, an unreadable directory, processes that could not be
/// audited under strict) holds with its own reason code.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod props {
    use super::*;
    use crate::model::evidence::StatusEntry;
    use crate::model::record::Owner;
    use proptest::collection::vec;
    use proptest::prelude::*;
    use proptest::sample::select;

    proptest! {
        /// `reclaim_order` is a permutation, largest estimate first, equal
        /// estimates in scan order.
        #[test]
        fn reclaim_order_is_a_largest_first_permutation(est in vec(0u64..5, 0..12)) {
            let order = reclaim_order(&est);
            let mut seen = order.clone();
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..est.len()).collect::<Vec<_>>());
            for w in order.windows(2) {
                prop_assert!(est[w[0]] > est[w[1]] || (est[w[0]] == est[w[1]] && w[0] < w[1]));
            }
        }
    }

    const UID: u32 = 7;
    const WT: (u64, u64) = (1, 2);
    const LEASE: (u64, u64) = (1, 9);

    fn seen(mode: u32, (dev, ino): (u64, u64), uid: u32, nlink: u64) -> Seen {
        Seen {
            dev,
            ino,
            uid,
            mode,
            nlink,
        }
    }
    fn good_dir() -> Seen {
        seen(libc::S_IFDIR | 0o700, WT, UID, 2)
    }
    fn good_lease() -> Seen {
        seen(libc::S_IFREG | 0o600, LEASE, UID, 1)
    }

    /// Everything gates 1 to 5 look at.
    #[derive(Debug, Clone)]
    struct Evidence {
        state: State,
        launcher_alive: bool,
        retained: bool,
        path: PathEvidence,
        lease_before: Option<Seen>,
        lock: LockOutcome,
        fd_after: Option<Seen>,
        name_after: Option<Seen>,
        procs: ProcEvidence,
        content: ContentEvidence,
        inventory: Inventory,
    }

    /// Runs every gate and returns every reason that held.
    fn decide(ev: &Evidence) -> Vec<HoldReason> {
        let retention = ev.retained.then(|| Retention {
            owner: Owner {
                kind: "person".into(),
                name: "ann".into(),
            },
            reason: "review".into(),
            until: None,
        });
        let mut held: Vec<HoldReason> = Vec::new();
        held.extend(
            gate_state(ev.state, ev.launcher_alive)
                .err()
                .map(|h| h.reason),
        );
        held.extend(
            gate_retention(ev.state, retention.as_ref())
                .err()
                .map(|h| h.reason),
        );
        held.extend(gate_path(WT, UID, &ev.path).err().map(|h| h.reason));
        held.extend(
            gate_lease(
                LEASE,
                UID,
                ev.lease_before,
                &ev.lock,
                ev.fd_after,
                ev.name_after,
            )
            .err()
            .map(|h| h.reason),
        );
        held.extend(gate_processes(&ev.procs).err().map(|h| h.reason));
        for holds in [
            gate_content(&ev.content),
            gate_inventory(&ev.inventory, &[]),
        ] {
            held.extend(holds.err().into_iter().flatten().map(|h| h.reason));
        }
        held
    }

    /// The oracle, written from SPEC rather than from the gates: is every
    /// piece of evidence the one a safe removal needs?
    fn all_clear(ev: &Evidence) -> bool {
        let state_ok = match ev.state {
            State::Terminal => true,
            State::Interrupted => !ev.retained,
            State::Active => !ev.launcher_alive && !ev.retained,
            _ => false,
        };
        let path_ok = ev.path.seen == Some(good_dir())
            && ev.path.canonical
            && ev.path.linked_back
            && matches!(ev.path.lock, LockSeen::Unlocked | LockSeen::Ours)
            && ev.path.listed
            && !ev.path.is_main
            && !ev.path.cwd_inside;
        let lease_ok = [ev.lease_before, ev.fd_after, ev.name_after]
            .iter()
            .all(|s| *s == Some(good_lease()))
            && ev.lock == LockOutcome::Acquired;
        let procs_ok = ev.procs.users.is_empty()
            && !(ev.procs.strict && ev.procs.traversable && ev.procs.unaudited > 0);
        let content_ok = ev.content.hidden.is_empty()
            && ev.content.ops.is_empty()
            && ev
                .content
                .status
                .iter()
                .all(|e| &e.xy == b"!!" && is_rebuildable(&e.path, &ev.content.rebuildable));
        let i = &ev.inventory;
        let inventory_ok = i.mounts.is_empty()
            && i.special.is_empty()
            && i.unreadable.is_empty()
            && i.nested.is_empty()
            && i.not_writable.is_empty()
            && i.pinned.is_empty();
        state_ok && path_ok && lease_ok && procs_ok && content_ok && inventory_ok
    }

    /// Mostly the good value, sometimes another.
    fn mostly<T: Clone + std::fmt::Debug + 'static>(
        good: T,
        others: Vec<T>,
    ) -> impl Strategy<Value = T> {
        prop_oneof![3 => Just(good), 1 => select(others)]
    }

    fn some_paths() -> impl Strategy<Value = Vec<Vec<u8>>> {
        prop_oneof![
            3 => Just(vec![]),
            1 => vec(select(vec![b"a".to_vec(), b"target/x".to_vec(), b"\xff\n".to_vec()]), 1..3),
        ]
    }

    fn path_evidence() -> impl Strategy<Value = PathEvidence> {
        let seen = mostly(
            Some(good_dir()),
            vec![
                None,
                Some(seen(libc::S_IFLNK | 0o777, WT, UID, 1)),
                Some(seen(libc::S_IFDIR | 0o700, (1, 3), UID, 2)),
                Some(seen(libc::S_IFDIR | 0o700, WT, 0, 2)),
            ],
        );
        let flags = (
            mostly(true, vec![false]),
            mostly(true, vec![false]),
            mostly(
                LockSeen::Unlocked,
                vec![
                    LockSeen::Ours,
                    LockSeen::Other(String::new()),
                    LockSeen::Other("usb".into()),
                    LockSeen::Lease {
                        id: "0".repeat(32),
                        root: "/elsewhere".into(),
                    },
                ],
            ),
            mostly(true, vec![false]),
            mostly(false, vec![true]),
            mostly(false, vec![true]),
        );
        (seen, flags).prop_map(
            |(seen, (canonical, linked_back, lock, listed, is_main, cwd_inside))| PathEvidence {
                seen,
                canonical,
                linked_back,
                lock,
                listed,
                is_main,
                cwd_inside,
            },
        )
    }

    fn lease_seen() -> impl Strategy<Value = Option<Seen>> {
        mostly(
            Some(good_lease()),
            vec![
                None,
                Some(seen(libc::S_IFREG | 0o600, (1, 10), UID, 1)),
                Some(seen(libc::S_IFREG | 0o600, LEASE, UID, 2)),
                Some(seen(libc::S_IFREG | 0o644, LEASE, UID, 1)),
                Some(seen(libc::S_IFREG | 0o600, LEASE, 0, 1)),
                Some(seen(libc::S_IFIFO | 0o600, LEASE, UID, 1)),
            ],
        )
    }

    fn evidence() -> impl Strategy<Value = Evidence> {
        let gate1 = (
            mostly(
                State::Terminal,
                vec![
                    State::Interrupted,
                    State::Active,
                    State::Planned,
                    State::Retained,
                    State::Retiring,
                    State::Removed,
                ],
            ),
            mostly(false, vec![true]),
            mostly(false, vec![true]),
        );
        let gate3 = (
            lease_seen(),
            mostly(
                LockOutcome::Acquired,
                vec![LockOutcome::Busy, LockOutcome::Error("ENOLCK".into())],
            ),
            lease_seen(),
            lease_seen(),
        );
        let procs = (
            mostly(vec![], vec![vec![(42, "cwd".to_string())]]),
            mostly(0usize, vec![1, 5]),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(users, unaudited, traversable, strict)| ProcEvidence {
                users,
                unaudited,
                traversable,
                strict,
            });
        let status = vec(
            (
                select(vec![*b"!!", *b"??", *b" M", *b"A "]),
                select(vec![
                    b"target/".to_vec(),
                    b"target/debug/x".to_vec(),
                    b".env".to_vec(),
                    b"src/a".to_vec(),
                ]),
            )
                .prop_map(|(xy, path)| StatusEntry { xy, path }),
            0..3,
        );
        let content = (
            status,
            some_paths(),
            mostly(vec![], vec![vec!["MERGE_HEAD".to_string()]]),
            mostly(vec![], vec![vec![b"target".to_vec()]]),
        )
            .prop_map(|(status, hidden, ops, rebuildable)| ContentEvidence {
                status,
                hidden,
                ops,
                rebuildable,
                filtered: Vec::new(),
                provisioned: Vec::new(),
            });
        let inventory = (
            some_paths(),
            some_paths(),
            some_paths(),
            some_paths(),
            some_paths(),
            some_paths(),
        )
            .prop_map(
                |(mounts, special, unreadable, nested, not_writable, pinned)| Inventory {
                    mounts,
                    special,
                    unreadable,
                    nested,
                    not_writable,
                    pinned,
                    ..Inventory::default()
                },
            );
        (gate1, path_evidence(), gate3, procs, content, inventory).prop_map(
            |(
                (state, launcher_alive, retained),
                path,
                (lease_before, lock, fd_after, name_after),
                procs,
                content,
                inventory,
            )| {
                Evidence {
                    state,
                    launcher_alive,
                    retained,
                    path,
                    lease_before,
                    lock,
                    fd_after,
                    name_after,
                    procs,
                    content,
                    inventory,
                }
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn removes_only_when_every_piece_is_clear(ev in evidence()) {
            let held = decide(&ev);
            prop_assert_eq!(held.is_empty(), all_clear(&ev), "held {:?} for {:?}", held, ev);
        }

        #[test]
        fn every_unknown_holds_with_its_reason(ev in evidence()) {
            let held = decide(&ev);
            let mut unknown: Vec<HoldReason> = Vec::new();
            if ev.path.seen.is_none() {
                unknown.push(HoldReason::PathIdentity);
            }
            if ev.lease_before.is_none() {
                unknown.push(HoldReason::LeaseMissing);
            } else if let LockOutcome::Error(_) = ev.lock
                && ev.lease_before == Some(good_lease())
            {
                unknown.push(HoldReason::LockUnsupported);
            }
            if !ev.inventory.unreadable.is_empty() {
                unknown.push(HoldReason::Uninventoriable);
            }
            if ev.procs.users.is_empty() && ev.procs.strict && ev.procs.traversable && ev.procs.unaudited > 0 {
                unknown.push(HoldReason::Unprovable);
            }
            for reason in unknown {
                prop_assert!(held.contains(&reason), "{:?} missing from {:?} for {:?}", reason, held, ev);
            }
        }
    }
}
