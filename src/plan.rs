//! The retire gates as pure decisions over evidence: no I/O here.
//!
//! Probes (in `retire.rs`, `git.rs`, `lease.rs`) gather plain structs; the
//! functions below decide. Every unknown or missing piece of evidence decides
//! to hold (SPEC invariant 2, "uncertainty holds").

use crate::model::evidence::{
    ContentEvidence, EntryStat, FilterTrust, FlockSeen, Inventory, LeaseSeen, LockOutcome,
    LockSeen, PathEvidence, ProcEvidence, Protected, Seen, StatusEntry, is_rebuildable,
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

/// How long before the first walk began every entry must have last
/// changed for a second walk's equal [`EntryStat`]s to prove it unchanged,
/// in nanoseconds (50 ms). File times come from the kernel's coarse clock,
/// which moves once per tick (CONFIG_HZ is 100 at least: 10 ms or less,
/// time(7)); a change made after the walk within the same tick as the
/// entry's last change could leave its times as they were (git's "racy
/// git" problem, gitformat-index(5)). An entry changed within 50 ms, five
/// ticks or more, of the walk is treated as unproven.
pub const RACY_NS: i128 = 50_000_000;

/// statfs(2) `f_type` of the filesystems whose times gate 7 may compare
/// (`linux/magic.h`): ext2/3/4, xfs, btrfs, tmpfs, f2fs, local and
/// kernel-stamped. Network and FUSE filesystems may answer from an
/// attribute cache or let a process set ctime (FAT keeps no ctime of its
/// own), so a second walk there proves nothing.
pub const STAT_COMPARE_FS: [u64; 5] = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0xF2F5_2010];

/// True if the times of `first` (a walk of a tree on the filesystem of
/// type `magic`) can show a change: the filesystem is one of
/// [`STAT_COMPARE_FS`] and some entry has a sub-second part in its mtime
/// or ctime (ext4 with 128-byte inodes, and ext2/3, keep whole seconds,
/// within which a same-size rewrite leaves every time as it was).
pub fn stat_times_trusted(magic: Option<u64>, first: &[EntryStat]) -> bool {
    magic.is_some_and(|m| STAT_COMPARE_FS.contains(&m))
        && first
            .iter()
            .any(|e| e.mtime_ns % 1_000_000_000 != 0 || e.ctime_ns % 1_000_000_000 != 0)
}

/// Gate 7 without a second `git status`: true only if `second` (a walk
/// after archiving, or git's own files then) is `first` (gate 5's, taken
/// before its `git status` ran) entry for entry, and every entry of `first`
/// last changed (mtime and ctime) at least [`RACY_NS`] before
/// `started_ns`, the first walk's start (nanoseconds since the epoch).
/// Then nothing in the tree changed between the two walks, so the status
/// gate 5 read is the tree's status now. False asks for the status again
/// (SPEC gate 7).
pub fn tree_unchanged(first: &[EntryStat], second: &[EntryStat], started_ns: i128) -> bool {
    let settled =
        |e: &EntryStat| e.mtime_ns < started_ns - RACY_NS && e.ctime_ns < started_ns - RACY_NS;
    first == second && first.iter().all(settled)
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

/// Whole ignored directories that provisioning filled: git reports an
/// ignored directory as one `!!` entry (`big/`, `--ignored=matching`), so
/// the per-file provisioned records never match it. For each such entry of
/// `status`, when every file and symlink the walk found below it (`files`,
/// paths relative to the top) was provisioned (`provisioned`: path and
/// whether it is unchanged), returns the entry with `true` if all are
/// unchanged, `false` if one changed since. A directory with any file that
/// was not provisioned, or with none at all, is not returned: it is ignored
/// work as usual (gate 5 holds `ignored`).
pub fn provisioned_dirs(
    status: &[StatusEntry],
    files: &[(Vec<u8>, u64)],
    provisioned: &[(Vec<u8>, bool)],
) -> Vec<(Vec<u8>, bool)> {
    if provisioned.is_empty() {
        return Vec::new();
    }
    let known: std::collections::HashMap<&[u8], bool> = provisioned
        .iter()
        .map(|(p, u)| (p.as_slice(), *u))
        .collect();
    let mut out = Vec::new();
    for e in status
        .iter()
        .filter(|e| &e.xy == b"!!" && e.path.ends_with(b"/"))
    {
        let mut any = false;
        let mut unchanged = true;
        let mut all = true;
        for (f, _) in files.iter().filter(|(f, _)| f.starts_with(&e.path)) {
            any = true;
            match known.get(f.as_slice()) {
                Some(u) => unchanged &= *u,
                None => {
                    all = false;
                    break;
                }
            }
        }
        if any && all {
            out.push((e.path.clone(), unchanged));
        }
    }
    out
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
mod tests;

/// Property tests of the gates taken together, as the retire engine runs
/// them: the decision removes only when every piece of evidence is the one a
/// safe removal needs, and every unknown or unprovable piece (a missing
/// `lstat`, a lock error, an unreadable directory, processes that could not be
/// audited under strict) holds with its own reason code.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod props;
