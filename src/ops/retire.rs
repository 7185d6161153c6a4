//! The retire engine: gather evidence, decide with `plan`, archive, re-probe,
//! `git worktree remove`, tombstone. Shared by `lease retire` and `lease exec`.
//!
//! # Theory of operation
//! Gates run in SPEC order (1 state, 2 path, 3 lease, 4 process audit, 5
//! content, 6 reachability, 7 refresh, 8 removal). Any refusal holds: the
//! worktree and its admin directory are untouched, the record gains one
//! `attempts` entry and the audit log one line. Only after every gate, under
//! the exclusive lease lock taken in gate 3 and held to the end, is the record
//! made `retiring` and a non-forced `git worktree remove` run on the
//! canonical path. A dry run never takes the exclusive lock (holders come from
//! `/proc`) and writes nothing.
//!
//! # Remaining window
//! `git worktree remove` deletes by path. A process of the same user that
//! swaps the worktree for a symlink after the last identity check and before
//! git's own walk is outside SPEC's threat model; lease checks identity
//! immediately before the call to keep that window as short as it can.

use std::fs;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoResultExt, Result};
use crate::git::admin::linked_admin;
use crate::git::refs::{durable_ref, trusted_remote};
use crate::git::{self, Git, RepoGit, ops};
use crate::model::disk::{DiskUsage, Size};
use crate::model::evidence;
use crate::model::reason::{self, Disposition, Hold, HoldReason};
use crate::model::record::{Archive, Record, State, Tombstone};
use crate::model::report::TargetReport;
use crate::os::atomic::free_bytes;
use crate::plan::{self, StateGate};
use crate::policy::ArchiveMode;
use crate::store::registry::{Loaded, Registry};

mod archive;
mod branch;
mod remote;
mod teardown;

use archive::bundle_changed;
pub(crate) use archive::{fd_sha256, read_header, verify_bundle};
pub(crate) use remote::{archival_ref, read_back};

/// Files in a worktree's admin directory that mean an operation is in progress.
const OPS: &[&str] = &[
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "BISECT_LOG",
    "rebase-merge",
    "rebase-apply",
    "index.lock",
];

/// Runs retires against one registry with one git.
#[derive(Debug)]
pub struct Engine {
    reg: Registry,
    git: Git,
    dry_run: bool,
    /// Declared rebuildable output paths (relative to each worktree's top).
    rebuildable: Vec<Vec<u8>>,
    /// Where unique commits are archived.
    archive_mode: ArchiveMode,
    /// `--delete-branch`: delete the task branch after a removal, with proof.
    delete_branch: bool,
    /// `--fetch`: confirm the trusted remote's branches during this retire.
    fetch: bool,
    /// A dry run of the content gates only ([`Engine::content_only`]).
    content_only: bool,
    /// `lease du`'s assessment ([`Engine::assessing`]).
    assess: bool,
}

/// Everything the later gates need once gates 1 to 3 passed.
struct Held {
    rec: Record,
    rg: RepoGit,
    wt: PathBuf,
    admin: PathBuf,
    /// The exclusive lock, kept open until the end (closing releases it).
    lock: Option<fs::File>,
    /// The worktree's top directory, opened beneath the root (gate 2).
    top: OwnedFd,
    /// The open bundle, re-hashed through this descriptor before removal.
    bundle: Option<fs::File>,
    /// What the walk found; its byte count goes into the tombstone.
    inventory: evidence::Inventory,
    /// Ignored entries inside declared rebuildable output, deleted at gate 8.
    rebuildable: Vec<Vec<u8>>,
    /// Trusted drivers the repository's `process` shadows (not run).
    shadowed: Vec<evidence::TrustedFilter>,
    /// git's status of the tree, once gate 5 read it (for the measurement).
    status: Option<Vec<evidence::StatusEntry>>,
    /// Provisioned paths and whether each is unchanged, once gate 5 judged them.
    provisioned: Option<Vec<(Vec<u8>, bool)>>,
}

impl Engine {
    /// An engine over `reg`; with `dry_run` it decides but changes nothing.
    /// Declared rebuildable output paths (relative to a worktree's top) come
    /// from the policy: ignored entries at or below them do not hold, and
    /// lease deletes them itself, descriptor-relative, right before removal.
    pub fn new(reg: Registry, git: Git, dry_run: bool) -> Engine {
        Engine {
            reg,
            git,
            dry_run,
            rebuildable: crate::policy::current().rebuildable_bytes(),
            archive_mode: crate::policy::current().archive.value,
            delete_branch: false,
            fetch: false,
            content_only: false,
            assess: false,
        }
    }

    /// Makes this engine `lease du`'s read-only assessment: a dry run (no
    /// lock taken, nothing written) that runs every gate it can without
    /// the exclusive lease and reports all that would hold, not only the
    /// first: retention, a live launcher (gate 1), the lease's holders as
    /// `/proc` shows them (gate 3) and processes inside (gate 4) are noted
    /// and the walk and gate 5 run anyway, so the tree is measured
    /// ([`TargetReport::usage`]) whatever holds it. Only a gate that leaves
    /// nothing to walk (a missing repository, gate 2's identity) stops it.
    pub fn assessing(mut self) -> Engine {
        self.dry_run = true;
        self.assess = true;
        self
    }

    /// Makes this engine a dry run that judges the worktree's content only,
    /// as `retire --when-free` does while the lease is held (SPEC "Hosts
    /// that lease does not start"): retention and gates 2, 5 and 6 run as
    /// in any dry run, but a live launcher (gate 1), the lease's holders
    /// (gate 3, whose identity check stays) and processes inside the tree
    /// (gate 4) do not hold: those are the consumers the intent waits for.
    /// A `would-remove` answer means only that nothing in the tree holds
    /// now.
    pub fn content_only(mut self) -> Engine {
        self.dry_run = true;
        self.content_only = true;
        self
    }

    /// Asks each retire to confirm the trusted remote's branches first
    /// (`retire --fetch`, SPEC "Words: durable"): their tips count as
    /// durable. A real retire fetches them into the tracking refs; a dry
    /// run only reads them (`git ls-remote`).
    pub fn with_fetch(mut self, fetch: bool) -> Engine {
        self.fetch = fetch;
        self
    }

    /// `--fetch`: lists the trusted remote's branches by URL (`git
    /// ls-remote`, the far side sanitized for a local remote), and unless
    /// this is a dry run fetches them into its tracking refs
    /// (`+refs/heads/*:refs/remotes/<remote>/*`: no tags, no prune, no
    /// submodules, objects checked with `transfer.fsckObjects`). Returns
    /// the listed tips this repository has: their value on the remote was
    /// confirmed during this retire, so what they reach is durable. A
    /// tracking ref the remote no longer lists proves nothing, and is not
    /// pruned. No trusted remote: nothing is confirmed.
    fn confirm_remote(&self, held: &Held) -> Result<Vec<String>> {
        let common = Path::new(&held.rec.repo);
        let rg = &held.rg;
        let Some(remote) = trusted_remote(
            rg,
            common,
            configured_remote().as_deref(),
            held.rec.branch.as_deref(),
        )?
        else {
            return Ok(Vec::new());
        };
        let url = git::refs::remote_url(rg, common, &remote)?;
        let listed = ops::ls_remote(rg, common, &url, &[])?;
        if !self.dry_run {
            ops::fetch_branches(rg, common, &url, &remote)?;
        }
        let mut tips: Vec<String> = Vec::new();
        for (oid, name) in listed {
            if name.starts_with("refs/heads/") && !tips.contains(&oid) {
                tips.push(oid);
            }
        }
        if tips.is_empty() {
            return Ok(tips);
        }
        ops::commits_present(rg, common, &tips)
    }

    /// The drivers named by config `trusted_filters` that the user's own
    /// git config (global or system, never the repository's) defines for
    /// the repository at `dir`: the status probe runs these (SPEC
    /// "Truthful content probes").
    fn trusted_filters(&self, dir: &Path) -> Result<Vec<evidence::TrustedFilter>> {
        let mut v = Vec::new();
        for d in &crate::policy::current().trusted_filters.value {
            if let Some(f) = self.git.user_filter(d, dir)? {
                v.push(f);
            }
        }
        Ok(v)
    }

    /// Asks for the task branch to be deleted after a removal, only when its
    /// tip is proven (durable, or in the verified archive) and it is checked
    /// out nowhere.
    pub fn with_delete_branch(mut self, delete: bool) -> Engine {
        self.delete_branch = delete;
        self
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.reg
    }

    /// Retires record `id`, returning what happened. Never panics on bad
    /// evidence: every unknown holds.
    pub fn retire(&self, id: &str) -> TargetReport {
        let rec = match self.reg.load(id) {
            Loaded::Ok(r) => *r,
            Loaded::Bad { path, problem, .. } => {
                let mut t = TargetReport::new(Some(id.to_string()), None, Disposition::Held);
                t.error = Some(format!("record `{}` is {problem}", path.display()));
                return t;
            }
        };
        let wt = rec.worktree.as_ref().map(|w| w.path.clone());
        let mut report = TargetReport::new(Some(id.to_string()), wt, Disposition::Held);
        match self.run(rec, &mut report) {
            Ok(Ok(())) => {
                tracing::info!(id, disposition = ?report.disposition, "every gate passed");
                report
            }
            Ok(Err(holds)) => {
                let codes: Vec<String> = holds.iter().map(|h| h.reason.code()).collect();
                tracing::info!(id, reasons = ?codes, dry_run = self.dry_run, "held by a gate");
                let size = report.usage.as_ref().map(|u| Size {
                    bytes: u.total(),
                    at: crate::model::fmt::now(),
                });
                if !self.dry_run
                    && let Err(e) = self.reg.record_hold_measured(id, &holds, size)
                {
                    report.error = Some(e.to_string());
                }
                let retained = holds.iter().any(|h| h.reason == HoldReason::Retained);
                let mut r = report.held(&holds);
                if retained {
                    r.disposition = Disposition::Retained;
                }
                r
            }
            Err(e) => {
                tracing::info!(id, error = %e, "held: evidence could not be gathered");
                let hold = Hold::new(e.reason().unwrap_or(HoldReason::Unprovable), e.to_string());
                if !self.dry_run {
                    let _ = self.reg.record_hold(id, std::slice::from_ref(&hold));
                }
                let mut r = report.held(&[hold]);
                if e.class() == crate::error::Class::Failed {
                    r.error = Some(e.to_string());
                }
                r
            }
        }
    }

    fn run(&self, rec: Record, report: &mut TargetReport) -> Result<Result<(), Vec<Hold>>> {
        // An assessment notes the holds of the gates it does not stop at
        // (`soft`) and reports them first, with whatever held later.
        let mut soft = Vec::new();
        let out = self.run_gates(rec, report, &mut soft);
        if soft.is_empty() {
            return out;
        }
        Ok(match out? {
            Ok(()) => Err(soft),
            Err(holds) => {
                soft.extend(holds);
                Err(soft)
            }
        })
    }

    /// Notes `h` as a hold an assessment goes on past (`Ok`), or returns it
    /// as the one that stops every other engine (`Err`).
    fn soft(&self, soft: &mut Vec<Hold>, h: Hold) -> std::result::Result<(), Vec<Hold>> {
        if self.assess {
            soft.push(h);
            Ok(())
        } else {
            Err(vec![h])
        }
    }

    fn run_gates(
        &self,
        rec: Record,
        report: &mut TargetReport,
        soft: &mut Vec<Hold>,
    ) -> Result<Result<(), Vec<Hold>>> {
        // A hold made while the record was active waits for `terminal`.
        if let Err(h) = plan::gate_retention(rec.state, rec.retention.as_ref())
            && let Err(holds) = self.soft(soft, h)
        {
            return Ok(Err(holds));
        }
        // Gate 1: state.
        let alive = rec.any_launcher_alive(crate::os::process::is_alive)
            && (!self.content_only || self.assess);
        let state_gate = match plan::gate_state(rec.state, alive) {
            Ok(g) => g,
            Err(mut h) => {
                if h.reason == reason::HoldReason::LauncherAlive {
                    let pids: Vec<String> = rec
                        .sessions
                        .iter()
                        .filter(|s| s.launcher_alive(crate::os::process::is_alive))
                        .map(|s| s.pid.to_string())
                        .collect();
                    h.detail = format!("{}: pid {}", h.detail, pids.join(", "));
                }
                if let Some(r) = &rec.retention {
                    h.detail = format!(
                        "retained by {}:{} ({}) until {}",
                        r.owner.kind,
                        r.owner.name,
                        r.reason,
                        r.until.as_deref().unwrap_or("released")
                    );
                }
                // An assessment goes on past a live launcher or a retention
                // (the tree is there to measure), as if the record were free.
                let past = match h.reason {
                    HoldReason::LauncherAlive => plan::gate_state(rec.state, false).ok(),
                    HoldReason::Retained => Some(StateGate::Proceed),
                    _ => None,
                };
                match past {
                    Some(g) if self.assess => {
                        soft.push(h);
                        g
                    }
                    _ => return Ok(Err(vec![h])),
                }
            }
        };
        // Gates 2 and 3.
        let mut held = match self.gates_path_and_lease(rec, state_gate, soft)? {
            Ok(h) => h,
            Err(holds) => return Ok(Err(holds)),
        };
        tracing::info!(id = %held.rec.id, "gates 1-3 passed: state, path and lease");
        // The operator's teardown: the last consumer is gone (gate 3 holds
        // the lease exclusive), the removal has not begun, and gate 4's
        // audit below sees whatever it left in the tree.
        if let Err(h) = self.teardown(&mut held, report)? {
            return Ok(Err(vec![h]));
        }
        report.filters = held.rg.trusted().to_vec();
        // Lease's own walk of the tree, under the lock: gate 4 judges
        // processes by the identities it reached, gate 5 by what it found.
        held.inventory = crate::os::walk::inventory(&held.top);

        // Gate 4: defense in depth behind the lock.
        let lease_id = held
            .rec
            .lease
            .as_ref()
            .map(crate::model::record::FileId::id);
        if !self.content_only || self.assess {
            let procs =
                crate::os::procfs::audit(&held.wt, &held.inventory, lease_id, strict_audit());
            if let Err(h) = plan::gate_processes(&procs)
                && let Err(holds) = self.soft(soft, h)
            {
                return Ok(Err(holds));
            }
        }

        // Gate 5: lease's own walk, then git.
        let tree = self.probe_tree(&mut held)?;
        // The walk's bytes by class, from the status gate 5 read (an
        // assessment that gate 5 stopped early asks git for it once).
        report.usage = self.measure(&mut held)?;
        if let Err(holds) = tree {
            return Ok(Err(holds));
        }

        // Gate 6: reachability.
        let reach = self.probe_reachability(&held)?;
        tracing::info!(id = %held.rec.id, unique_commits = reach.unique.len(), "gates 4-6 passed: processes, tree, reachability");
        report.unique_commits = reach.unique.len() as u64;
        report.durable = reach
            .durable
            .as_ref()
            .map(|(r, _)| plan::durable_kind(r).to_string());
        let own_branch = plan::lease_named_branch(
            held.rec.branch.as_deref(),
            &held.rec.id,
            held.rec.origin == crate::model::record::Origin::Created,
        );
        if self.dry_run && !reach.unique.is_empty() && self.archive_mode.remote() {
            // Never promise a removal the push would not allow.
            if let Err(h) = self.check_push(&held.rg, &held.rec, &reach) {
                return Ok(Err(vec![h]));
            }
        }
        if self.dry_run {
            report.disposition = Disposition::WouldRemove;
            if !held.rebuildable.is_empty() {
                let paths: Vec<String> = held
                    .rebuildable
                    .iter()
                    .map(|p| crate::model::fmt::lossless(p))
                    .collect();
                report.detail.push(format!(
                    "would delete rebuildable output: {}",
                    paths.join(", ")
                ));
            }
            report.detail.push(if reach.unique.is_empty() {
                "every commit is durable; would remove".to_string()
            } else {
                let into = match self.archive_mode {
                    ArchiveMode::Bundle => "a bundle",
                    ArchiveMode::Remote => "archival refs on the trusted remote",
                    ArchiveMode::Both => "a bundle and archival refs on the trusted remote",
                };
                format!(
                    "would archive {} commit(s) into {into}, then remove",
                    reach.unique.len()
                )
            });
            if let Some((r, _)) = reach
                .durable
                .as_ref()
                .filter(|(r, _)| plan::durable_kind(r) == "local")
            {
                report.detail.push(format!(
                    "durable: local (no trusted remote: `{r}` plays the durable ref's part)"
                ));
            }
            if reach.confirmed > 0 {
                report.detail.push(format!(
                    "{} branch tip(s) of the trusted remote confirmed with ls-remote (--fetch)",
                    reach.confirmed
                ));
            }
            if own_branch && !self.delete_branch {
                report.detail.push(format!(
                    "would then delete `{}` (lease named it) if its tip is proven and checked out nowhere",
                    held.rec.branch.as_deref().unwrap_or_default()
                ));
            }
            if self.delete_branch {
                report.detail.push(
                    "would then delete the task branch if its tip is proven and checked out nowhere"
                        .to_string(),
                );
            }
            return Ok(Ok(()));
        }
        let archive = if reach.unique.is_empty() {
            None
        } else {
            match self.archive_all(&mut held, &reach)? {
                Ok(a) => Some(a),
                Err(h) => return Ok(Err(vec![h])),
            }
        };
        report.archive = archive.clone();

        // Gate 7: nothing moved while archiving.
        if let Err(holds) = self.refresh(&held, &reach.head, archive.as_ref())? {
            return Ok(Err(holds));
        }

        // Gate 8: remove.
        self.remove(&mut held, &reach, report, own_branch)
    }

    /// Gates 2 (path identity, registration) and 3 (lease identity and lock).
    fn gates_path_and_lease(
        &self,
        rec: Record,
        state_gate: StateGate,
        soft: &mut Vec<Hold>,
    ) -> Result<Result<Held, Vec<Hold>>> {
        let repo = PathBuf::from(&rec.repo);
        if !repo.is_dir() {
            return Ok(Err(vec![Hold::new(
                HoldReason::RepoMissing,
                format!("repository `{}` is missing", repo.display()),
            )]));
        }
        let Some(wt_id) = rec.worktree.clone() else {
            return Ok(Err(vec![Hold::new(
                HoldReason::PathIdentity,
                "the record has no worktree",
            )]));
        };
        let wt = wt_id.path();
        let top = match self.gate_identity(&self.git.repo(&repo)?, &rec) {
            Ok(fd) => fd,
            Err(h) => return Ok(Err(vec![h])),
        };
        // Only now, with the worktree proven, run git inside it.
        let Some(admin) = linked_admin(&repo, &wt) else {
            return Ok(Err(vec![Hold::new(
                HoldReason::PathIdentity,
                "no admin directory",
            )]));
        };
        let (rg, shadowed) = self
            .git
            .repo_at(&repo, &wt)?
            .with_trusted(self.trusted_filters(&wt)?);
        let rg = rg.pinned(&admin, &wt);

        // Gate 3.
        // An unsafe lease directory means lease cannot work at all (exit 3).
        crate::os::atomic::check_private_dir(&self.reg.root().leases(), true)?;
        let Some(lease) = rec.lease.clone() else {
            return Ok(Err(vec![Hold::new(
                HoldReason::LeaseMissing,
                "the record has no lease",
            )]));
        };
        let lock = if self.dry_run {
            if let Err(h) =
                plan::check_lease_seen(lease.id(), rec.uid, crate::os::fs::lstat(&lease.path()))
            {
                return Ok(Err(vec![h]));
            }
            // Never locked: learn holders from descriptors and /proc/locks.
            if !self.content_only || self.assess {
                let seen = crate::os::procfs::lease_seen(&lease.path(), lease.id());
                if let Err(h) = plan::gate_lease_seen(&seen)
                    && let Err(holds) = self.soft(soft, h)
                {
                    return Ok(Err(holds));
                }
            }
            None
        } else {
            let before = crate::os::fs::lstat(&lease.path());
            let f = match crate::os::lease::open_checked(&lease, rec.uid) {
                Ok(f) => f,
                Err(h) => return Ok(Err(vec![h])),
            };
            let outcome = crate::os::lease::try_exclusive(&f);
            crate::os::fault::point("retire-locked");
            let fd_after = crate::os::fs::fstat(&f);
            let name_after = crate::os::fs::lstat(&lease.path());
            if let Err(mut h) =
                plan::gate_lease(lease.id(), rec.uid, before, &outcome, fd_after, name_after)
            {
                if h.reason == HoldReason::ConsumerAlive
                    && crate::os::procfs::exclusively_locked(lease.dev, lease.ino)
                {
                    h = Hold::new(
                        HoldReason::RetireInProgress,
                        "another retire holds the lease exclusively",
                    );
                } else if h.reason == HoldReason::ConsumerAlive {
                    let (pids, _) = crate::os::procfs::holders(lease.id());
                    if !pids.is_empty() {
                        h.detail = format!("{}: pid {}", h.detail, join(&pids));
                    }
                }
                return Ok(Err(vec![h]));
            }
            Some(f)
        };
        let mut rec = rec;
        if state_gate == StateGate::ProceedIfFree && !self.dry_run {
            // Every launcher is gone and the lease is free: proven interrupted.
            let id = rec.id.clone();
            self.reg
                .update(&id, |r| Ok(r.set_state(State::Interrupted)?))?;
            rec = self.reg.get(&id)?;
        }
        Ok(Ok(Held {
            rec,
            rg,
            wt,
            admin,
            lock,
            top,
            bundle: None,
            inventory: evidence::Inventory::default(),
            rebuildable: Vec::new(),
            shadowed,
            status: None,
            provisioned: None,
        }))
    }

    /// Gate 2: the worktree is its recorded, canonical directory directly
    /// below the recorded root (opened without following symlinks or
    /// crossing mounts), registered, unlocked, not protected, not our cwd.
    /// Returns the worktree's directory descriptor.
    fn gate_identity(&self, rg: &RepoGit, rec: &Record) -> Result<OwnedFd, Hold> {
        let wt_id = rec
            .worktree
            .clone()
            .ok_or_else(|| Hold::new(HoldReason::PathIdentity, "the record has no worktree"))?;
        let wt = wt_id.path();
        let repo = PathBuf::from(&rec.repo);
        let root = rec.root.path();
        let protected = evidence::Protected {
            root: root.clone(),
            common: repo.clone(),
            state_root: self.reg.root().path().to_path_buf(),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .and_then(|h| fs::canonicalize(h).ok()),
        };
        if wt.components().any(|c| {
            !matches!(
                c,
                std::path::Component::RootDir | std::path::Component::Normal(_)
            )
        }) {
            return Err(Hold::new(
                HoldReason::PathEscape,
                format!(
                    "recorded path `{}` is not normal (`.` or `..`)",
                    wt.display()
                ),
            ));
        }
        plan::gate_protected(&wt, &protected)?;
        let (Some(parent), Some(name)) = (wt.parent(), wt.file_name()) else {
            return Err(Hold::new(
                HoldReason::PathEscape,
                "the worktree path has no parent",
            ));
        };
        if parent != root {
            return Err(Hold::new(
                HoldReason::PathEscape,
                format!(
                    "`{}` is not directly below its root `{}`",
                    wt.display(),
                    root.display()
                ),
            ));
        }
        let top = crate::os::walk::open_beneath(&root, rec.root.id(), name)?;
        let (ev, _) = self
            .probe_path(rg, &repo, &wt, &rec.id)
            .map_err(|e| Hold::new(e.reason().unwrap_or(HoldReason::GitFailed), e.to_string()))?;
        plan::gate_path(wt_id.id(), rec.uid, &ev)?;
        let through_fd = crate::os::fs::fstat_fd(&top);
        if !wt_id.same_birth(crate::os::fs::birth(&fs::symlink_metadata(&wt).ok())) {
            return Err(Hold::new(
                HoldReason::PathIdentity,
                "a new directory reused the recorded inode number (another birth time)",
            ));
        }
        if through_fd.map(|s| (s.dev, s.ino)) != Some(wt_id.id()) {
            return Err(Hold::new(
                HoldReason::PathIdentity,
                "the opened directory is not the recorded one",
            ));
        }
        Ok(top)
    }

    /// Gate 5, lease's own walk, made before gate 4 and kept in `held`
    /// (mounts, special files, unreadable or undeletable directories,
    /// immutable or append-only entries, nested repositories and
    /// submodules), then git's view (changes, untracked, ignored, hidden
    /// index edits, operations in progress).
    fn probe_tree(&self, held: &mut Held) -> Result<Result<(), Vec<Hold>>> {
        if let Some(h) = self.lfs_extensions(&held.rg, &held.wt)? {
            return Ok(Err(vec![h]));
        }
        let listed = ops::index_listing(&held.rg, &held.wt)?;
        if let Err(holds) =
            plan::gate_inventory(&held.inventory, &git::parse::parse_gitlinks(&listed))
        {
            return Ok(Err(holds));
        }
        // One index listing serves the walk's gitlinks and the hidden entries.
        let content = self.probe_content(
            &held.rg,
            &held.wt,
            &held.admin,
            Some(listed),
            &held.shadowed,
            &held.rec.provisioned,
        )?;
        held.rebuildable = content.rebuildable_ignored();
        let verdict = plan::gate_content(&content);
        held.status = Some(content.status);
        held.provisioned = Some(content.provisioned);
        Ok(verdict)
    }

    /// The tree's bytes by class ([`DiskUsage::classify`]) from the walk
    /// in `held` and gate 5's status, with the admin directory walked too.
    /// `None` when gate 5 held before reading the status, except in an
    /// assessment, which then reads it (`git status`, as gate 5 would).
    fn measure(&self, held: &mut Held) -> Result<Option<DiskUsage>> {
        if held.status.is_none() && self.assess {
            held.status = Some(ops::status(&held.rg, &held.wt)?);
        }
        let Some(status) = &held.status else {
            return Ok(None);
        };
        let provisioned = match &held.provisioned {
            Some(p) => p.clone(),
            None => held
                .rec
                .provisioned
                .iter()
                .map(|p| {
                    (
                        p.path.as_bytes().to_vec(),
                        crate::ops::provision::unchanged(&held.wt, p),
                    )
                })
                .collect(),
        };
        let admin = crate::os::walk::dir_bytes(&held.admin).unwrap_or(0);
        Ok(Some(DiskUsage::classify(
            &held.inventory.files,
            status,
            &provisioned,
            &self.rebuildable,
            admin,
        )))
    }

    /// `repo-config-executes` when a trusted driver runs git-lfs and the
    /// repository's config (or the worktree's) sets `lfs.extension.*`:
    /// git-lfs runs an extension's `clean` command inside its own clean
    /// filter (measured, git-lfs 3.3), a program the repository chose that
    /// lease's git config cannot switch off for git-lfs.
    fn lfs_extensions(&self, rg: &RepoGit, wt: &Path) -> Result<Option<Hold>> {
        let runs_lfs = rg.trusted().iter().any(|t| {
            t.driver == "lfs"
                || [&t.clean, &t.process]
                    .iter()
                    .any(|c| c.as_deref().is_some_and(|c| c.contains("git-lfs")))
        });
        if !runs_lfs {
            return Ok(None);
        }
        let keys = ops::config_names(rg, wt, r"^lfs\.extension\.")?;
        let Some(first) = keys.first() else {
            return Ok(None);
        };
        let section = first
            .rsplit_once('.')
            .map_or(first.as_str(), |(s, _)| s)
            .to_string();
        Ok(Some(Hold::new(
            HoldReason::RepoConfigExecutes,
            format!(
                "the repository's config sets `{}`: git-lfs runs lfs.extension programs inside the trusted `lfs` filter, and lease cannot switch them off; remove them (`git config --remove-section {section}`) or drop `lfs` from trusted_filters",
                keys.join("`, `")
            ),
        )))
    }

    /// Gathers gate 2's evidence; also returns the admin directory when the
    /// `.git` file and the admin `gitdir` point at each other.
    fn probe_path(
        &self,
        rg: &RepoGit,
        repo: &Path,
        wt: &Path,
        id: &str,
    ) -> Result<(evidence::PathEvidence, Option<PathBuf>)> {
        let entries = ops::worktrees(rg, repo)?;
        let bytes = wt.as_os_str().as_bytes();
        let mine = entries.iter().skip(1).find(|e| e.path == bytes);
        let admin = linked_admin(repo, wt);
        Ok((
            evidence::PathEvidence {
                seen: crate::os::fs::lstat(wt),
                canonical: crate::os::fs::is_canonical(wt),
                linked_back: admin.is_some(),
                lock: git::admin::classify_lock(
                    mine.and_then(|e| e.locked.as_deref()),
                    id,
                    self.reg.root().path(),
                ),
                listed: mine.is_some(),
                is_main: entries.first().is_some_and(|e| e.path == bytes),
                cwd_inside: crate::os::fs::cwd_inside(wt),
            },
            admin,
        ))
    }

    /// Gate 5's evidence: status with untracked and ignored files forced
    /// visible, hidden index edits, operations in progress.
    fn probe_content(
        &self,
        rg: &RepoGit,
        wt: &Path,
        admin: &Path,
        listed: Option<Vec<u8>>,
        shadowed: &[evidence::TrustedFilter],
        provisioned: &[crate::model::record::Provisioned],
    ) -> Result<evidence::ContentEvidence> {
        let status = ops::status(rg, wt)?;
        let listed = match listed {
            Some(l) => l,
            None => ops::index_listing(rg, wt)?,
        };
        let mut hidden = Vec::new();
        for e in git::parse::parse_hidden(&listed) {
            if !self.hidden_entry_matches(rg, wt, &e)? {
                hidden.push(e);
            }
        }
        // Paths that differ only in the worktree may differ only because
        // lease neutralized their filter driver: ask which driver each
        // names (SPEC "Truthful content probes").
        let mut candidates: Vec<Vec<u8>> = status
            .iter()
            .filter(|e| &e.xy == b" M")
            .map(|e| e.path.clone())
            .collect();
        candidates.extend(hidden.iter().map(|e| e.path.clone()));
        let mut filtered = Vec::new();
        for (path, driver) in ops::filter_attrs(rg, wt, &candidates)? {
            let named = |t: &evidence::TrustedFilter| t.driver.as_bytes() == driver;
            let trust = if rg.trusted().iter().any(named) {
                evidence::FilterTrust::Ran
            } else if shadowed.iter().any(named) {
                evidence::FilterTrust::Shadowed
            } else if crate::policy::current()
                .trusted_filters
                .value
                .iter()
                .any(|t| t.as_bytes() == driver)
            {
                evidence::FilterTrust::Undefined
            } else {
                evidence::FilterTrust::Untrusted
            };
            filtered.push(evidence::FilteredPath {
                path,
                driver,
                trust,
            });
        }
        // A hidden entry of a trusted driver is compared as git would
        // compare it: the file cleaned by that driver.
        let mut differs = Vec::new();
        for e in hidden {
            let ran = filtered
                .iter()
                .any(|f| f.path == e.path && f.trust == evidence::FilterTrust::Ran);
            if !(ran && self.hidden_entry_matches_filtered(rg, wt, &e)?) {
                differs.push(e.path);
            }
        }
        let ops = OPS
            .iter()
            .filter(|o| fs::symlink_metadata(admin.join(o)).is_ok())
            .map(|o| (*o).to_string())
            .collect();
        Ok(evidence::ContentEvidence {
            status,
            hidden: differs,
            ops,
            rebuildable: self.rebuildable.clone(),
            filtered,
            provisioned: provisioned
                .iter()
                .map(|p| {
                    (
                        p.path.as_bytes().to_vec(),
                        crate::ops::provision::unchanged(wt, p),
                    )
                })
                .collect(),
        })
    }

    /// Returns true if the regular file behind hidden entry `e` hashes to
    /// the index's blob once cleaned by its (trusted) filter driver
    /// (`hash-object --stdin --path`, which applies the path's attributes).
    fn hidden_entry_matches_filtered(
        &self,
        rg: &RepoGit,
        wt: &Path,
        e: &git::parse::HiddenEntry,
    ) -> Result<bool> {
        let path = wt.join(std::ffi::OsStr::from_bytes(&e.path));
        let Ok(f) = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        else {
            return Ok(false);
        };
        if !f.metadata().at(&path)?.file_type().is_file() {
            return Ok(false);
        }
        Ok(ops::hash_cleaned(rg, wt, f, &e.path)? == e.oid)
    }

    /// Returns true if the file behind a skip-worktree or assume-unchanged
    /// entry is absent (sparse checkout) or equal to the index: a regular file
    /// hashed as a blob from an `O_NOFOLLOW|O_NONBLOCK` descriptor, a symlink
    /// compared by its link text. Anything else does not match.
    fn hidden_entry_matches(
        &self,
        rg: &RepoGit,
        wt: &Path,
        e: &git::parse::HiddenEntry,
    ) -> Result<bool> {
        let path = wt.join(std::ffi::OsStr::from_bytes(&e.path));
        let meta = match fs::symlink_metadata(&path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(true),
            Err(err) => return Err(err).at(&path),
            Ok(m) => m,
        };
        if meta.file_type().is_file() {
            let Ok(f) = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&path)
            else {
                return Ok(false);
            };
            let exec = meta.mode() & 0o111 != 0;
            if (e.mode == "100755") != exec {
                return Ok(false);
            }
            let oid = ops::hash_raw(rg, wt, f)?;
            Ok(oid == e.oid && e.mode.starts_with("100"))
        } else if meta.file_type().is_symlink() {
            let text = fs::read_link(&path).at(&path)?;
            let blob = ops::blob(rg, wt, &e.oid)?;
            Ok(e.mode == "120000" && blob == text.as_os_str().as_bytes())
        } else {
            Ok(false)
        }
    }

    /// Gate 6's evidence: the durable ref, HEAD and the private tips, and the
    /// commits reachable from the tips but not from the durable ref.
    fn probe_reachability(&self, held: &Held) -> Result<Reach> {
        let (rg, wt, rec) = (&held.rg, held.wt.as_path(), &held.rec);
        // Before anything reads the tracking refs: `--fetch` updates them.
        let confirmed = if self.fetch {
            self.confirm_remote(held)?
        } else {
            Vec::new()
        };
        let reader = crate::git::libgit2::Reader::open(Path::new(&rec.repo));
        let head = self.head(held)?;
        // The in-process reader answers for `origin` only: when config names
        // another trusted remote, or the reader cannot tell, the CLI does.
        let origin_trusted = crate::policy::current()
            .trusted_remote
            .as_ref()
            .is_none_or(|t| t.value == "origin");
        let fast = reader
            .as_ref()
            .filter(|_| origin_trusted)
            .and_then(crate::git::libgit2::Reader::durable_origin);
        let (remote, durable) = match fast {
            Some(d) => (Some("origin".to_string()), d),
            None => {
                let remote = trusted_remote(
                    rg,
                    Path::new(&rec.repo),
                    configured_remote().as_deref(),
                    rec.branch.as_deref(),
                )?;
                let durable = durable_ref(
                    rg,
                    Path::new(&rec.repo),
                    remote.as_deref(),
                    rec.branch.as_deref(),
                )?;
                (remote, durable)
            }
        };
        let mut tips: Vec<(String, String)> = Vec::new();
        if !head.is_empty() {
            tips.push((format!("refs/lease/{}/head", rec.id), head.clone()));
        }
        for (oid, name) in ops::private_refs(rg, wt)? {
            let rest = name.strip_prefix("refs/").unwrap_or(&name);
            tips.push((format!("refs/lease/{}/private/{rest}", rec.id), oid));
        }
        // ORIG_HEAD is per worktree and dies with it (reset, rebase, merge).
        if let Some(orig) = ops::resolve_commit(rg, wt, "ORIG_HEAD")? {
            tips.push((format!("refs/lease/{}/orig-head", rec.id), orig));
        }
        // Every commit a reflog of this worktree mentions, old and new side
        // (`reflog show --format=%H` gives only the new one). Shared branch
        // reflogs come along: archiving a little more is safe and cheap.
        if let Some(reflog) = ops::reflog_commits(rg, wt)? {
            for (n, oid) in reflog.into_iter().enumerate() {
                tips.push((format!("refs/lease/{}/reflog/{n}", rec.id), oid));
            }
        }
        // HEAD must be durable (SPEC gate 6). A private tip (reflogs,
        // refs/worktree|bisect|rewritten, ORIG_HEAD) needs archiving only
        // if nothing that survives the removal reaches it: not the durable
        // ref, and no branch, tag, tracking ref or stash, which are shared.
        let head_tip: Vec<String> = tips
            .first()
            .filter(|_| !head.is_empty())
            .map(|(_, o)| o.clone())
            .into_iter()
            .collect();
        let private: Vec<String> = tips
            .iter()
            .skip(head_tip.len())
            .map(|(_, o)| o.clone())
            .collect();
        let not_durable = |revs: &[String], shared_too: bool| -> Result<Vec<String>> {
            if revs.is_empty() {
                return Ok(Vec::new());
            }
            let hide: Vec<String> = durable
                .iter()
                .map(|(_, d)| d.clone())
                .chain(confirmed.iter().cloned())
                .collect();
            if let Some(v) = reader
                .as_ref()
                .and_then(|r| r.not_reachable(revs, &hide, shared_too))
            {
                return Ok(v);
            }
            let mut seen: Vec<String> = Vec::new();
            for oid in revs {
                if !seen.contains(oid) {
                    seen.push(oid.clone());
                }
            }
            let shared = if shared_too {
                ops::Shared::RefsAndStash
            } else {
                ops::Shared::None
            };
            ops::unreached(rg, wt, &seen, &hide, shared)
        };
        let mut unique = not_durable(&head_tip, false)?;
        for oid in not_durable(&private, true)? {
            if !unique.contains(&oid) {
                unique.push(oid);
            }
        }
        // Keep one ref per non-durable tip commit.
        let mut kept: Vec<(String, String)> = Vec::new();
        for (name, oid) in tips {
            if unique.contains(&oid) && !kept.iter().any(|(_, o)| *o == oid) {
                kept.push((name, oid));
            }
        }
        Ok(Reach {
            head,
            durable,
            remote,
            tips: kept,
            unique,
            confirmed: confirmed.len(),
        })
    }

    /// The worktree's HEAD commit (`rev-parse --verify -q HEAD^{commit}`;
    /// empty if unborn), read in process where [`crate::git::libgit2`] can.
    fn head(&self, held: &Held) -> Result<String> {
        let common = PathBuf::from(&held.rec.repo);
        if let Some(h) =
            crate::git::libgit2::Reader::open(&common).and_then(|r| r.head_commit(&held.admin))
        {
            return Ok(h.unwrap_or_default());
        }
        // Unborn: git prints nothing and the head is empty.
        Ok(ops::resolve_commit(&held.rg, &held.wt, "HEAD")?.unwrap_or_default())
    }

    /// Gate 7: HEAD, the bundle's sha256 and the record are unchanged; status
    /// and the walk are re-run when a bundle was written.
    fn refresh(
        &self,
        held: &Held,
        head: &str,
        archive: Option<&Archive>,
    ) -> Result<Result<(), Vec<Hold>>> {
        let now = self.head(held)?;
        if now != head {
            return Ok(Err(vec![Hold::new(
                HoldReason::Unprovable,
                format!("HEAD moved from {head} to {now} while archiving"),
            )]));
        }
        // Status and the walk again only if archiving ran: with nothing
        // archived, gate 5's probes ran moments ago under the same
        // exclusive lock, with only in-process reads since (SPEC gate 7 is
        // the refresh after archiving).
        if archive.is_some() {
            let content = self.probe_content(
                &held.rg,
                &held.wt,
                &held.admin,
                None,
                &held.shadowed,
                &held.rec.provisioned,
            )?;
            if let Err(holds) = plan::gate_content(&content) {
                return Ok(Err(holds));
            }
            let walk = crate::os::walk::inventory(&held.top);
            if let Err(holds) = plan::gate_inventory(&walk, &[]) {
                return Ok(Err(holds));
            }
        }
        if let Some(h) = archive
            .filter(|a| a.has_bundle())
            .and_then(|a| bundle_changed(a, held.bundle.as_ref()))
        {
            return Ok(Err(vec![h]));
        }
        if self.reg.get(&held.rec.id)? != held.rec {
            return Ok(Err(vec![Hold::new(
                HoldReason::RetireInProgress,
                "the record changed during the retire",
            )]));
        }
        Ok(Ok(()))
    }

    /// Gate 8: persist `retiring`, check identity once more, run a non-forced
    /// `git worktree remove`, read back, tombstone, unlink the lease file.
    fn remove(
        &self,
        held: &mut Held,
        reach: &Reach,
        report: &mut TargetReport,
        own_branch: bool,
    ) -> Result<Result<(), Vec<Hold>>> {
        let id = held.rec.id.clone();
        let repo = PathBuf::from(&held.rec.repo);
        let bytes = held.inventory.bytes;
        let free_before = free_bytes(&held.rec.root.path());
        self.reg
            .update(&id, |r| Ok(r.set_state(State::Retiring)?))?;
        crate::os::fault::point("retire-before-remove");
        // Identity once more, right before git deletes by path.
        let wt_id = held.rec.worktree.clone().expect("gate 2 saw a worktree");
        let again = self.gate_identity(&held.rg, &held.rec).and_then(|_| {
            let archive = report.archive.as_ref().filter(|a| a.has_bundle());
            match archive.and_then(|a| bundle_changed(a, held.bundle.as_ref())) {
                Some(h) => Err(h),
                None => Ok(()),
            }
        });
        let again = again.and_then(|()| {
            // Declared rebuildable output goes first, by lease itself.
            held.rebuildable
                .iter()
                .try_for_each(|p| crate::os::walk::remove_beneath(&held.top, p))
        });
        if let Err(h) = again {
            self.reg
                .update(&id, |r| Ok(r.set_state(State::Terminal)?))?;
            return Ok(Err(vec![h]));
        }
        // git's own lock comes off last, under the exclusive lease, right
        // before the removal (SPEC gate 8). A crash after this leaves a
        // `retiring` record with an unlocked tree: the reconciler locks it
        // again and runs the gates.
        let unlocked = match self.unlock_own(held, &repo) {
            Ok(u) => u,
            Err(e) => {
                self.reg
                    .update(&id, |r| Ok(r.set_state(State::Terminal)?))?;
                return Ok(Err(vec![Hold::new(
                    e.reason().unwrap_or(HoldReason::GitFailed),
                    format!("cannot take lease's lock off before removal: {e}"),
                )]));
            }
        };
        crate::os::fault::point("retire-unlocked");
        let out = ops::worktree_remove(&held.rg, &repo, &held.wt)?;
        let gone =
            fs::symlink_metadata(&held.wt).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        let listed = ops::worktrees(&held.rg, &repo)?
            .iter()
            .any(|e| e.path == held.wt.as_os_str().as_bytes());
        if !out.ok || !gone || listed {
            let detail = format!(
                "git worktree remove: {}; directory {}, registration {}",
                out.error(),
                if gone { "gone" } else { "present" },
                if listed { "present" } else { "gone" }
            );
            let mut detail = detail;
            if !gone && listed {
                // Refused and intact: locked again, back to terminal.
                if unlocked
                    && let Err(e) = ops::worktree_lock(
                        &held.rg,
                        &repo,
                        &held.wt,
                        &git::admin::lock_reason(&id, self.reg.root().path()),
                    )
                {
                    detail.push_str(&format!(
                        "; lease's lock could not be put back ({e}): `lease reap --apply` puts it back"
                    ));
                }
                self.reg
                    .update(&id, |r| Ok(r.set_state(State::Terminal)?))?;
            }
            return Ok(Err(vec![Hold::new(HoldReason::GitFailed, detail)]));
        }
        // Branch hygiene: lease's own `lease/<id prefix>` branch goes
        // without being asked; any other only with `--delete-branch`.
        let branch = if self.delete_branch || own_branch {
            self.clean_branch(held, reach, report.archive.as_ref(), !self.delete_branch)?
        } else {
            None
        };
        let tomb = Tombstone {
            path: wt_id.path.clone(),
            id: id.clone(),
            removed_at: crate::model::fmt::now(),
            bytes_reclaimed: bytes,
            free_before,
            free_after: free_bytes(&held.rec.root.path()),
            evidence: serde_json::json!({
                "head": reach.head,
                "durable": reach.durable.as_ref().map(|(r, o)| serde_json::json!({"ref": r, "oid": o, "kind": plan::durable_kind(r)})),
                "unique_commits": reach.unique.len(),
                "confirmed_remote_tips": reach.confirmed,
                "rebuildable_deleted": held.rebuildable.iter().map(|p| crate::model::fmt::lossless(p)).collect::<Vec<_>>(),
                "archive": held.rec.archive.as_ref().map(|a| a.location.clone()),
                "archival_refs": report.archive.as_ref().and_then(|a| a.remote.as_ref()).map(|r| serde_json::json!({"url": r.url, "refs": r.refs})),
                "git": {"path": self.git.path().to_string_lossy(), "version": self.git.version()},
                "trusted_filters": held.rg.trusted(),
            }),
            branch: branch.clone(),
        };
        let t2 = tomb.clone();
        let size = report.usage.as_ref().map(|u| Size {
            bytes: u.total(),
            at: tomb.removed_at.clone(),
        });
        self.reg.update(&id, |r| {
            r.tombstone = Some(t2);
            if size.is_some() {
                r.size = size;
            }
            Ok(r.set_state(State::Removed)?)
        })?;
        if let Some(lease) = &held.rec.lease {
            // Unlinked under the exclusive lock, which closes with `held.lock`.
            let _ = fs::remove_file(lease.path());
        }
        drop(held.lock.take());
        report.disposition = Disposition::Removed;
        report.tombstone = Some(tomb);
        report.branch = branch;
        Ok(Ok(()))
    }

    /// Takes lease's own lock off the worktree (`git worktree unlock`) when
    /// the admin directory's `locked` names this record and state root;
    /// returns whether it did. Any other lock was held by gate 2, which ran
    /// again just before.
    fn unlock_own(&self, held: &Held, repo: &Path) -> Result<bool> {
        let Some(reason) = crate::os::fs::read_small(&held.admin.join("locked")) else {
            return Ok(false);
        };
        let reason = String::from_utf8_lossy(&reason);
        let lock = git::admin::classify_lock(Some(&reason), &held.rec.id, self.reg.root().path());
        if lock != evidence::LockSeen::Ours {
            return Ok(false);
        }
        ops::worktree_unlock(&held.rg, repo, &held.wt)?;
        Ok(true)
    }

    /// Finds the record of the worktree whose top directory is `path`.
    ///
    /// # Errors
    /// [`Error::Usage`] if the path does not exist, or lies inside a recorded
    /// worktree without being its top directory.
    pub fn find_by_path(&self, path: &Path) -> Result<Option<String>> {
        let canon = fs::canonicalize(path).at(path)?;
        let mut inside = None;
        for loaded in self.reg.scan()? {
            let Loaded::Ok(r) = loaded else { continue };
            if r.state == State::Removed {
                continue;
            }
            if let Some(w) = &r.worktree {
                let wp = w.path();
                if wp == canon {
                    return Ok(Some(r.id.clone()));
                }
                if canon.starts_with(&wp) {
                    inside = Some(wp);
                }
            }
        }
        if let Some(top) = inside {
            return Err(Error::Usage(format!(
                "`{}` is inside worktree `{}`; name its top directory or its id",
                path.display(),
                top.display()
            )));
        }
        Ok(None)
    }
}

/// What gate 6 found.
#[derive(Debug)]
struct Reach {
    head: String,
    durable: Option<(String, String)>,
    /// The trusted remote's name, if there is one.
    remote: Option<String>,
    /// Bundle ref name and commit, one per non-durable tip.
    tips: Vec<(String, String)>,
    unique: Vec<String>,
    /// How many branch tips of the trusted remote `--fetch` confirmed.
    confirmed: usize,
}

/// Config `trusted_remote` (or `LEASE_TRUSTED_REMOTE`), if set: the one
/// remote [`trusted_remote`] may choose.
pub(crate) fn configured_remote() -> Option<String> {
    crate::policy::current()
        .trusted_remote
        .as_ref()
        .map(|t| t.value.clone())
}

/// Whether config `process_audit = "strict"` (or `LEASE_PROCESS_AUDIT`)
/// asks gate 4 to hold when processes of other users could not be audited.
fn strict_audit() -> bool {
    crate::policy::current().strict_audit()
}

fn join(pids: &[u32]) -> String {
    pids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
