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
use std::path::{Path, PathBuf};

use crate::error::{Error, IoResultExt, Result};
use crate::git::refs::trusted_remote;
use crate::git::{self, Git, RepoGit, ops};
use crate::model::disk::Size;
use crate::model::evidence;
use crate::model::reason::{self, Disposition, Hold, HoldReason};
use crate::model::record::{Archive, Record, State};
use crate::model::report::TargetReport;
use crate::plan::{self, StateGate};
use crate::policy::ArchiveMode;
use crate::store::registry::{Loaded, Registry};

mod archive;
mod branch;
mod content;
mod gates;
mod reach;
mod remote;
mod remove;
mod teardown;

use archive::bundle_changed;
pub(crate) use archive::{fd_sha256, read_header, verify_bundle};
pub(crate) use remote::{archival_ref, read_back};

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

/// Everything the later gates need once gates 1 to 3 passed: the record,
/// the worktree's paths and top directory, and the lease held exclusively
/// until the end (named for the lock it holds; "held" is SPEC's word for a
/// retire a gate refused).
struct Locked {
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
    /// When lease's walk began, in nanoseconds since the epoch (gate 7).
    walk_started_ns: i128,
    /// git's own files as gate 5 saw them before its status ran
    /// ([`Engine::git_files`]; gate 7).
    git_files: Vec<evidence::EntryStat>,
}

impl Engine {
    /// An engine over `reg`; with `dry_run` it decides but changes nothing.
    /// Declared rebuildable output paths (relative to a worktree's top) come
    /// from the policy: ignored entries at or below them do not hold, and
    /// lease deletes them itself, descriptor-relative, right before removal.
    pub fn new(reg: Registry, git: Git, dry_run: bool) -> Engine {
        let rebuildable = reg.root().policy().rebuildable_bytes();
        let archive_mode = reg.root().policy().archive.value;
        Engine {
            reg,
            git,
            dry_run,
            rebuildable,
            archive_mode,
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
    fn confirm_remote(&self, locked: &Locked) -> Result<Vec<String>> {
        let common = Path::new(&locked.rec.repo);
        let rg = &locked.rg;
        let Some(remote) = trusted_remote(
            rg,
            common,
            configured_remote(self.reg.root().policy()).as_deref(),
            locked.rec.branch.as_deref(),
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
        for d in &self.reg.root().policy().trusted_filters.value {
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
        let mut locked = match self.gates_path_and_lease(rec, state_gate, soft)? {
            Ok(h) => h,
            Err(holds) => return Ok(Err(holds)),
        };
        tracing::info!(id = %locked.rec.id, "gates 1-3 passed: state, path and lease");
        // The operator's teardown: the last consumer is gone (gate 3 holds
        // the lease exclusive), the removal has not begun, and gate 4's
        // audit below sees whatever it left in the tree.
        if let Err(h) = self.teardown(&mut locked, report)? {
            return Ok(Err(vec![h]));
        }
        report.filters = locked.rg.trusted().to_vec();
        // Lease's own walk of the tree, under the lock: gate 4 judges
        // processes by the identities it reached, gate 5 by what it found.
        locked.walk_started_ns = now_ns();
        locked.inventory = crate::os::walk::inventory(&locked.top);

        // Gate 4: defense in depth behind the lock.
        let lease_id = locked
            .rec
            .lease
            .as_ref()
            .map(crate::model::record::FileId::id);
        if !self.content_only || self.assess {
            let procs = crate::os::procfs::audit(
                &locked.wt,
                &locked.inventory,
                lease_id,
                self.reg.root().policy().strict_audit(),
            );
            if let Err(h) = plan::gate_processes(&procs)
                && let Err(holds) = self.soft(soft, h)
            {
                return Ok(Err(holds));
            }
        }

        // Gate 5: lease's own walk, then git.
        let tree = self.probe_tree(&mut locked)?;
        // The walk's bytes by class, from the status gate 5 read (an
        // assessment that gate 5 stopped early asks git for it once).
        report.usage = self.measure(&mut locked)?;
        if let Err(holds) = tree {
            return Ok(Err(holds));
        }

        // Gate 6: reachability.
        let reach = self.probe_reachability(&locked)?;
        tracing::info!(id = %locked.rec.id, unique_commits = reach.unique.len(), "gates 4-6 passed: processes, tree, reachability");
        report.unique_commits = reach.unique.len() as u64;
        report.durable = reach
            .durable
            .as_ref()
            .map(|(r, _)| plan::durable_kind(r).to_string());
        let own_branch = plan::lease_named_branch(
            locked.rec.branch.as_deref(),
            &locked.rec.id,
            locked.rec.origin == crate::model::record::Origin::Created,
        );
        if self.dry_run && !reach.unique.is_empty() && self.archive_mode.remote() {
            // Never promise a removal the push would not allow.
            if let Err(h) = self.check_push(&locked.rg, &locked.rec, &reach) {
                return Ok(Err(vec![h]));
            }
        }
        if self.dry_run {
            report.disposition = Disposition::WouldRemove;
            if !locked.rebuildable.is_empty() {
                let paths: Vec<String> = locked
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
                    locked.rec.branch.as_deref().unwrap_or_default()
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
            match self.archive_all(&mut locked, &reach)? {
                Ok(a) => Some(a),
                Err(h) => return Ok(Err(vec![h])),
            }
        };
        report.archive = archive.clone();

        // Gate 7: nothing moved while archiving.
        if let Err(holds) = self.refresh(&locked, &reach.head, archive.as_ref())? {
            return Ok(Err(holds));
        }

        // Gate 8: remove.
        self.remove(&mut locked, &reach, report, own_branch)
    }

    /// Gate 7: HEAD, the bundle's sha256 and the record are unchanged; when
    /// something was archived, the walk is run again, and git's status too
    /// unless the walk and git's own files show that nothing changed since
    /// gate 5 read it ([`Engine::status_stands`], [`plan::tree_unchanged`]:
    /// then that status is the tree's status now, SPEC gate 7's "status
    /// unchanged" without a second pass of git over the tree).
    fn refresh(
        &self,
        locked: &Locked,
        head: &str,
        archive: Option<&Archive>,
    ) -> Result<Result<(), Vec<Hold>>> {
        let now = self.head(locked)?;
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
            let walk = crate::os::walk::inventory(&locked.top);
            // The status gate 5 read is still the tree's when a second walk
            // and git's own files show nothing changed since before it ran;
            // every other content probe (hidden index edits, provisioned
            // files, operations in progress) runs again either way.
            let kept = if self.status_stands(locked, &walk)? {
                tracing::info!(id = %locked.rec.id, "gate 7: the tree and git's files are as gate 5 saw them; its status stands");
                locked.status.clone()
            } else {
                None
            };
            let mut content = self.probe_content(
                &locked.rg,
                &locked.wt,
                &locked.admin,
                None,
                kept,
                &locked.shadowed,
                &locked.rec.provisioned,
            )?;
            let dirs = plan::provisioned_dirs(&content.status, &walk.files, &content.provisioned);
            content.provisioned.extend(dirs);
            if let Err(holds) = plan::gate_content(&content) {
                return Ok(Err(holds));
            }
            if let Err(holds) = plan::gate_inventory(&walk, &[]) {
                return Ok(Err(holds));
            }
        }
        self.refresh_rest(locked, archive)
    }

    /// Gate 7's last checks: the bundle's sha256 re-read through its
    /// descriptor, and the record as gate 1 read it.
    fn refresh_rest(
        &self,
        locked: &Locked,
        archive: Option<&Archive>,
    ) -> Result<Result<(), Vec<Hold>>> {
        if let Some(h) = archive
            .filter(|a| a.has_bundle())
            .and_then(|a| bundle_changed(a, locked.bundle.as_ref()))
        {
            return Ok(Err(vec![h]));
        }
        if self.reg.get(&locked.rec.id)? != locked.rec {
            return Ok(Err(vec![Hold::new(
                HoldReason::RetireInProgress,
                "the record changed during the retire",
            )]));
        }
        Ok(Ok(()))
    }

    /// Finds the record of the worktree whose top directory is `path`.
    ///
    /// # Errors
    /// [`Error::Usage`] if the path does not exist, or lies inside a recorded
    /// worktree without being its top directory.
    pub fn find_by_path(&self, path: &Path) -> Result<Option<String>> {
        let canon = fs::canonicalize(path).at(path)?;
        let mut inside = None;
        for loaded in self.reg.scan_live()? {
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

/// Now, in nanoseconds since the epoch (0 if the clock is before it).
fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
}

/// Config `trusted_remote` (or `LEASE_TRUSTED_REMOTE`) of `policy`, if
/// set: the one remote [`trusted_remote`] may choose.
pub(crate) fn configured_remote(policy: &crate::policy::Policy) -> Option<String> {
    policy.trusted_remote.as_ref().map(|t| t.value.clone())
}

fn join(pids: &[u32]) -> String {
    pids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
