//! The reconciler (`lease reap`): one reaper at a time finishes what crashes
//! left half-done, sends candidates through the retire engine, and reports
//! every record and every orphan.
//!
//! # Theory of operation
//! The reaper takes `<state root>/locks/reap.lock` exclusively and without
//! blocking; a second reaper is refused at once. Then, per record (SPEC
//! "Reconciler"):
//!
//! - `planned`: protected while its creator (pid and start time) lives;
//!   otherwise finished: `interrupted` if the worktree exists and is
//!   registered (then retired like any candidate), `removed` with a tombstone
//!   saying nothing was created if neither exists. Anything in between holds.
//! - `active`: protected while a launcher lives or a process holds the lease
//!   (read from `/proc`, never by locking); otherwise the retire engine proves
//!   `interrupted` under the exclusive lease lock and takes it. Adopted or
//!   held records are only proven `interrupted`.
//! - `terminal` / `interrupted`: created records go through
//!   [`Engine::retire`]; adopted ones are reported, never taken (lease did not
//!   allocate them), unless a `retire --when-free` intent is recorded (an
//!   explicit retire, completed with the reap's own options); a pending
//!   `lease hold` keeps them.
//! - `retiring`: resumed under the exclusive lease lock (a running retire
//!   holds it, so it is never disturbed). Directory and registration gone:
//!   the tombstone is completed. Directory present: back to `terminal`, and
//!   the gates run again.
//! - `retained`: reported, expired or not; never deleted.
//! - `removed`: skipped.
//!
//! Then it scans the worktree roots (`<state root>/worktrees/*/*`) and
//! `git worktree list --porcelain -z` of every repository a record names:
//! directories and registrations no record claims are orphans, persisted with
//! the time they were first seen in `orphans.json`, and never deleted;
//! registrations whose directory is gone are reported, never pruned.
//! Last, what killed commands left under the state root and no record names
//! (lease files, bundles, scratch repositories, temporary files) is reported
//! with its bytes, and removed with `--apply` when provably lease's own and
//! nobody's (`reap/leftovers.rs`).
//!
//! A dry run (the default) takes no lease lock, and writes nothing: it takes
//! the reaper lock only if the lock file already exists.

use std::collections::BTreeSet;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use crate::error::{Error, IoResultExt, Result};
use crate::git::Git;
use crate::model::fmt::lossless;
use crate::model::reason::{Hold, HoldReason};
use crate::model::record::{Origin, Record, State};
use crate::model::report::{GitInfo, TargetReport};
use crate::ops::retire::Engine;
use crate::os::atomic::free_bytes;
use crate::store::registry::{Loaded, Registry};
use crate::store::root::StateRoot;

mod leftovers;
mod recover;
mod scan;
pub mod until_free;

pub use leftovers::{Leftover, LeftoverKind};
pub use scan::{Orphan, OrphanKind, Unadoptable};

/// How one record ended up in a reap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReapDisposition {
    /// The worktree is gone (or nothing was ever created); the record is `removed`.
    Removed,
    /// A dry run found that it would be removed.
    WouldRemove,
    /// A dry run found a crashed step that an `--apply` would finish first
    /// (`detail` says how); the retire gates run after that.
    WouldFinish,
    /// A named owner keeps it (`retained`, or a hold waiting for `terminal`).
    Retained,
    /// Something refused now: reason codes say what.
    Held,
    /// Adopted: lease did not allocate it, so reap reports it and never takes it.
    Reported,
    /// `--until-free`: its filesystem already had the target free, so it
    /// was not sent to the retire engine (it stays as it was).
    NotNeeded,
}

/// One record in a reap report.
#[derive(Debug, Clone, Serialize)]
pub struct ReapItem {
    /// The record id.
    pub id: String,
    /// The worktree's path (for a `planned` record, where it would be).
    pub worktree: Option<String>,
    /// `created` or `adopted`; `None` for an unreadable record.
    pub origin: Option<Origin>,
    /// The state before the reap; `None` for an unreadable record.
    pub state: Option<State>,
    /// The state after (`--apply`), or as it stays (dry run).
    pub after: Option<State>,
    /// What happened.
    pub disposition: ReapDisposition,
    /// Reason codes (held or retained).
    pub reasons: Vec<HoldReason>,
    /// What was found and done, one line each.
    pub detail: Vec<String>,
    /// What to do next.
    pub next: Option<String>,
    /// True for a retention whose `until` has passed (reported, not acted on).
    pub expired: bool,
    /// The retire engine's report, when the gates ran.
    pub retire: Option<TargetReport>,
    /// An error lease hit on this record (the reap then exits 3).
    pub error: Option<String>,
    /// `--until-free`: the estimated bytes retiring it would reclaim (the
    /// files under its worktree), which ordered the candidates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<u64>,
    /// The record file, when it could not be read (the next step is to
    /// look at it); not serialized.
    #[serde(skip)]
    pub record_file: Option<String>,
}

impl ReapItem {
    fn new(rec: &Record) -> ReapItem {
        ReapItem {
            id: rec.id.clone(),
            worktree: rec
                .expected_worktree()
                .map(|p| lossless(p.as_os_str().as_bytes())),
            origin: Some(rec.origin),
            state: Some(rec.state),
            after: Some(rec.state),
            disposition: ReapDisposition::Held,
            reasons: Vec::new(),
            detail: Vec::new(),
            next: None,
            expired: false,
            retire: None,
            error: None,
            estimate: None,
            record_file: None,
        }
    }

    fn hold(&mut self, h: Hold) {
        self.disposition = ReapDisposition::Held;
        if self.next.is_none() {
            self.next = Some(h.reason.next_action().to_string());
        }
        self.reasons.push(h.reason);
        self.detail.push(h.detail);
    }

    fn take_retire(&mut self, t: TargetReport) {
        use crate::model::reason::Disposition;
        self.disposition = match t.disposition {
            Disposition::Removed => ReapDisposition::Removed,
            Disposition::WouldRemove => ReapDisposition::WouldRemove,
            Disposition::Retained => ReapDisposition::Retained,
            // A reap's retire never records an intent.
            Disposition::Held | Disposition::Pending => ReapDisposition::Held,
        };
        self.reasons.extend(t.reasons.iter().copied());
        self.detail.extend(t.detail.iter().cloned());
        if t.next.is_some() {
            self.next.clone_from(&t.next);
        }
        if let Some(e) = &t.error {
            self.error = Some(e.clone());
        }
        self.retire = Some(t);
    }
}

/// Free space on one filesystem lease uses, before and after the reap.
#[derive(Debug, Clone, Serialize)]
pub struct FreeSpace {
    /// A directory on that filesystem.
    pub path: String,
    /// Free bytes (for unprivileged users) before.
    pub before: u64,
    /// Free bytes after (`None` in a dry run).
    pub after: Option<u64>,
}

/// The outcome of `lease reap`.
#[derive(Debug, Clone, Serialize)]
pub struct ReapReport {
    /// True for a dry run: nothing was changed.
    pub dry_run: bool,
    /// The git binary used.
    pub git: GitInfo,
    /// True if every record, worktree root and repository could be read.
    pub complete: bool,
    /// What discovery could not read (non-empty means incomplete).
    pub problems: Vec<String>,
    /// Things worth knowing that do not make discovery incomplete.
    pub notes: Vec<String>,
    /// One entry per record that is not `removed`.
    pub items: Vec<ReapItem>,
    /// Directories and registrations no record claims.
    pub orphans: Vec<Orphan>,
    /// How many `removed` records were skipped.
    pub skipped_removed: usize,
    /// Bytes reclaimed by removals in this reap.
    pub bytes_reclaimed: u64,
    /// Free space per filesystem.
    pub free: Vec<FreeSpace>,
    /// Scratch repositories a crashed archive or verify step left under
    /// `<state root>/scratch` (their creator is gone), removed or to remove
    /// (also in `leftovers`).
    pub scratch: Vec<String>,
    /// What killed commands left under the state root and no record
    /// names: lease files, bundles, scratch repositories, temporary files,
    /// with bytes; removed by `--apply` when provably lease's own and
    /// nobody's, else kept with the reason.
    pub leftovers: Vec<Leftover>,
    /// Bytes of all `leftovers`, removed or kept.
    pub leftover_bytes: u64,
    /// Archives of `removed` records whose commits all became durable:
    /// dropped by `--apply`, to drop in a dry run (SPEC "Provisioned files,
    /// disk, and hygiene").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub archives_dropped: Vec<DroppedArchive>,
    /// Errors that are not about one record (persisting `orphans.json`).
    pub errors: Vec<String>,
    /// `--until-free` (and `exec --reap-if-low`): the target, how far from
    /// it each filesystem holding candidates stayed, and what kept it there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until_free: Option<until_free::UntilFree>,
}

/// An archive the reconciler dropped (or, in a dry run, would drop)
/// because every commit it holds became durable.
#[derive(Debug, Clone, Serialize)]
pub struct DroppedArchive {
    /// The record id.
    pub id: String,
    /// `bundle`, `remote` or `both`.
    pub kind: String,
    /// The bundle path (for `remote`, the URL).
    pub location: String,
    /// The bundle's size in bytes (0 for `remote` or a missing file).
    pub bytes: u64,
    /// True if it was dropped; false in a dry run.
    pub dropped: bool,
}

impl ReapReport {
    /// A complete report with nothing in it (no state root yet).
    pub fn empty(dry_run: bool, git: &Git) -> ReapReport {
        ReapReport {
            dry_run,
            git: GitInfo {
                path: git.path().to_string_lossy().into_owned(),
                version: git.version().to_string(),
            },
            complete: true,
            problems: Vec::new(),
            notes: Vec::new(),
            items: Vec::new(),
            orphans: Vec::new(),
            skipped_removed: 0,
            bytes_reclaimed: 0,
            free: Vec::new(),
            scratch: Vec::new(),
            leftovers: Vec::new(),
            leftover_bytes: 0,
            archives_dropped: Vec::new(),
            errors: Vec::new(),
            until_free: None,
        }
    }

    /// Returns true if and only if some record was held.
    pub fn any_held(&self) -> bool {
        self.items
            .iter()
            .any(|i| i.disposition == ReapDisposition::Held)
    }

    /// Returns true if and only if `--until-free` missed its target.
    pub fn target_missed(&self) -> bool {
        self.until_free.as_ref().is_some_and(|u| !u.met)
    }

    /// Returns true if and only if lease hit an error (a record, or persisting).
    pub fn any_error(&self) -> bool {
        !self.errors.is_empty() || self.items.iter().any(|i| i.error.is_some())
    }
}

/// The reaper's root lock: held while this value lives (closing releases it).
#[derive(Debug)]
pub struct ReaperLock {
    _file: Option<fs::File>,
}

/// Takes `<state root>/locks/reap.lock` exclusively without blocking. With
/// `create` (an `--apply`) the lock file is made if missing; a dry run only
/// locks an existing file and writes nothing.
///
/// # Errors
/// [`Error::Refused`] with `retire-in-progress` (exit 1) while another reaper
/// holds it.
pub fn lock_reaper(root: &StateRoot, create: bool) -> Result<ReaperLock> {
    let path = root.locks().join("reap.lock");
    // Never through a symlink, never waiting on a FIFO, regular files only.
    let Some(file) = crate::os::atomic::open_lock_file(&path, create, create)? else {
        return Ok(ReaperLock { _file: None });
    };
    match file.try_lock() {
        Ok(()) => Ok(ReaperLock { _file: Some(file) }),
        Err(fs::TryLockError::WouldBlock) => Err(Error::refused(
            HoldReason::RetireInProgress,
            format!(
                "another `lease reap` is running (it holds `{}`); nothing was changed, retry when it ends",
                path.display()
            ),
        )),
        Err(fs::TryLockError::Error(e)) => Err(e).at_do("cannot lock", &path),
    }
}

/// Runs one reap over the registry of `root`; with `apply` it acts, else it
/// only reports. The caller holds the [`ReaperLock`]. Retires archive where
/// the policy says (config `archive`, joined with `reap --archive`).
pub fn reap(root: &StateRoot, git: &Git, apply: bool) -> Result<ReapReport> {
    run(root, git, apply, None)
}

/// `lease reap --apply --until-free TARGET` and exec's `--reap-if-low`: an
/// `--apply` reap that tries records largest estimated reclaim first and
/// leaves a candidate alone once its filesystem has `target` bytes free
/// (`reap/until_free.rs`). The caller holds the [`ReaperLock`].
pub fn reap_until_free(root: &StateRoot, git: &Git, target: u64) -> Result<ReapReport> {
    run(root, git, true, Some(target))
}

fn run(root: &StateRoot, git: &Git, apply: bool, until: Option<u64>) -> Result<ReapReport> {
    crate::os::fault::point("reap-locked");
    let reg = Registry::new(root.clone());
    let reaper = Reaper {
        engine: Engine::new(reg.clone(), git.clone(), !apply),
        reg,
        git,
        apply,
        now: SystemTime::now(),
        until,
    };
    let mut report = ReapReport::empty(!apply, git);
    let mut loaded = reaper.reg.scan()?;
    let before = free_space(root, &loaded);
    let roots = until_free::roots(root.worktrees(), &loaded);
    let mut estimates = Vec::new();
    if until.is_some() {
        let est: Vec<u64> = loaded.iter().map(until_free::estimate).collect();
        let order = crate::plan::reclaim_order(&est);
        let mut slots: Vec<Option<Loaded>> = loaded.into_iter().map(Some).collect();
        loaded = order.iter().filter_map(|&i| slots[i].take()).collect();
        estimates = order.iter().map(|&i| est[i]).collect();
    }
    let step = crate::progress::begin("reaping", Some(loaded.len() as u64));
    for (n, l) in loaded.into_iter().enumerate() {
        step.inc();
        let estimate = estimates.get(n).copied();
        // Audit lines a crash lost after a record's last write, removed
        // records included: nothing else will ever update those.
        if let (true, Loaded::Ok(rec)) = (apply, &l)
            && let Err(e) = reaper.reg.recover_audit(&rec.id)
        {
            report.errors.push(format!("record {}: {e}", rec.id));
        }
        match l {
            Loaded::Ok(rec) if rec.state == State::Removed => {
                report.skipped_removed += 1;
                if rec.archive.is_some() {
                    reaper.drop_durable_archive(&rec, &mut report);
                }
                // A removed record a crash (or an older lease) left in the
                // live directory moves out of it.
                if apply {
                    match reaper.reg.shelve(&rec.id) {
                        Ok(true) => tracing::info!(id = %rec.id, "reap: removed record shelved"),
                        Ok(false) => {}
                        Err(e) => report.errors.push(format!("record {}: {e}", rec.id)),
                    }
                }
            }
            Loaded::Ok(rec) => {
                let mut item = reaper.reconcile(*rec);
                item.estimate = estimate;
                log_item(&item, apply);
                report.items.push(item);
            }
            Loaded::Bad { id, path, problem } => {
                let what = format!("record `{}` is {problem}", path.display());
                tracing::info!(id, problem = %what, "reap: record unreadable, left as it is");
                report.complete = false;
                report.problems.push(what.clone());
                report.items.push(ReapItem {
                    id,
                    worktree: None,
                    origin: None,
                    state: None,
                    after: None,
                    disposition: ReapDisposition::Held,
                    reasons: Vec::new(),
                    detail: vec![what.clone()],
                    next: Some(
                        "inspect the record file; lease never changes a corrupt or newer record"
                            .into(),
                    ),
                    expired: false,
                    retire: None,
                    error: Some(what),
                    estimate: None,
                    record_file: Some(lossless(path.as_os_str().as_bytes())),
                });
            }
        }
    }
    drop(step);
    report.bytes_reclaimed = report
        .items
        .iter()
        .filter_map(|i| i.retire.as_ref()?.tombstone.as_ref())
        .map(|t| t.bytes_reclaimed)
        .sum();
    scan::scan_orphans(&reaper.reg, git, apply, root, &mut report);
    for o in &report.orphans {
        tracing::info!(path = %o.path, kind = ?o.kind, registered = o.registered, past_grace = o.past_grace, "reap: orphan reported, never deleted");
    }
    leftovers::sweep(&reaper.reg, git, apply, &mut report);
    for l in &report.leftovers {
        tracing::info!(path = %l.path, kind = ?l.kind, bytes = l.bytes, removed = l.removed, kept = l.kept.as_deref().unwrap_or("-"), dry_run = !apply, "reap: leftover");
    }
    report.free = before
        .into_iter()
        .map(|(path, before)| FreeSpace {
            after: apply.then(|| free_bytes(&path)),
            path: lossless(path.as_os_str().as_bytes()),
            before,
        })
        .collect();
    if let Some(target) = until {
        report.until_free = Some(until_free::summarize(target, &roots, &report.items));
    }
    Ok(report)
}

/// Logs the decision a reap took on one record at info, as a retire logs
/// its gates.
fn log_item(item: &ReapItem, apply: bool) {
    let codes: Vec<String> = item.reasons.iter().map(|r| r.code()).collect();
    tracing::info!(
        id = %item.id,
        disposition = ?item.disposition,
        reasons = ?codes,
        state = ?item.state,
        after = ?item.after,
        expired = item.expired,
        error = item.error.as_deref().unwrap_or("-"),
        dry_run = !apply,
        "reap: decided"
    );
}

/// Free bytes on each distinct filesystem of the state root, the worktree
/// root and the records' roots.
fn free_space(root: &StateRoot, loaded: &[Loaded]) -> Vec<(PathBuf, u64)> {
    let mut dirs = vec![root.path().to_path_buf(), root.worktrees()];
    for l in loaded {
        if let Loaded::Ok(r) = l
            && r.state != State::Removed
        {
            dirs.push(r.root.path());
        }
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for d in dirs {
        if let Ok(m) = fs::metadata(&d)
            && seen.insert(m.dev())
        {
            out.push((d.clone(), free_bytes(&d)));
        }
    }
    out
}

struct Reaper<'a> {
    reg: Registry,
    engine: Engine,
    git: &'a Git,
    apply: bool,
    now: SystemTime,
    /// `--until-free`: the free bytes at which candidates stop being retired.
    until: Option<u64>,
}

/// What is at a path, by `lstat` (never following a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Dir,
    NotDir,
    Absent,
}

fn found(path: &Path) -> Result<Found> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_dir() => Ok(Found::Dir),
        Ok(_) => Ok(Found::NotDir),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Found::Absent),
        Err(e) => Err(e).at(path),
    }
}

impl Reaper<'_> {
    /// Drops the archive of the `removed` record `rec` once every commit it
    /// holds became durable ([`crate::ops::restore::archive_became_durable`]);
    /// a dry run says it would. A probe that fails keeps the archive and
    /// is a note (uncertainty keeps, and discovery is still complete).
    fn drop_durable_archive(&self, rec: &Record, report: &mut ReapReport) {
        let Some(a) = rec.archive.as_ref() else {
            return;
        };
        match crate::ops::restore::archive_became_durable(self.reg.root().policy(), self.git, rec) {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!(id = %rec.id, "reap: archive kept: its commits are not durable elsewhere");
                return;
            }
            Err(e) => {
                tracing::info!(id = %rec.id, error = %e, "reap: archive kept: cannot prove it durable");
                report.notes.push(format!(
                    "archive of {} kept: cannot prove it durable: {e}",
                    rec.id
                ));
                return;
            }
        }
        let bytes = a
            .has_bundle()
            .then(|| fs::metadata(&a.location).ok().map(|m| m.len()))
            .flatten()
            .unwrap_or(0);
        let mut d = DroppedArchive {
            id: rec.id.clone(),
            kind: a.kind.clone(),
            location: a.location.clone(),
            bytes,
            dropped: false,
        };
        if self.apply {
            match crate::ops::restore::drop_archive(&self.reg, self.git, rec, false) {
                Ok(_) => d.dropped = true,
                Err(e) => {
                    report
                        .notes
                        .push(format!("archive of {} kept: {e}", rec.id));
                    return;
                }
            }
        }
        tracing::info!(id = %rec.id, dropped = d.dropped, dry_run = !self.apply, "reap: archive durable elsewhere");
        report.archives_dropped.push(d);
    }

    fn reconcile(&self, rec: Record) -> ReapItem {
        let mut item = ReapItem::new(&rec);
        if matches!(
            rec.state,
            State::Active | State::Terminal | State::Interrupted | State::Retained
        ) {
            self.migrate_lock(&rec, &mut item);
        }
        let done = match rec.state {
            State::Planned => self.planned(&rec, &mut item),
            State::Active => self.active(&rec, &mut item),
            State::Terminal | State::Interrupted => {
                self.candidate(&rec, &mut item);
                Ok(())
            }
            State::Retained => {
                self.retained(&rec, &mut item);
                Ok(())
            }
            State::Retiring => self.retiring(&rec, &mut item),
            State::Removed => Ok(()),
        };
        if let Err(e) = done {
            if let Some(r) = e.reason() {
                item.reasons.push(r);
            }
            item.disposition = ReapDisposition::Held;
            item.error = Some(e.to_string());
        }
        if self.apply {
            item.after = match self.reg.load(&rec.id) {
                Loaded::Ok(r) => Some(r.state),
                Loaded::Bad { .. } => None,
            };
        }
        item
    }

    fn active(&self, rec: &Record, item: &mut ReapItem) -> Result<()> {
        let alive: Vec<String> = rec
            .sessions
            .iter()
            .filter(|s| s.launcher_alive(crate::os::process::is_alive))
            .map(|s| s.pid.to_string())
            .collect();
        if !alive.is_empty() {
            item.hold(Hold::new(
                HoldReason::LauncherAlive,
                format!("launcher pid {} still runs", alive.join(", ")),
            ));
            return Ok(());
        }
        if let Some(l) = &rec.lease {
            let seen = crate::os::procfs::lease_seen(&l.path(), l.id());
            if seen.held() {
                item.hold(Hold::new(
                    HoldReason::ConsumerAlive,
                    format!(
                        "every launcher is gone; {} holds the lease",
                        seen.describe()
                    ),
                ));
                return Ok(());
            }
        }
        let keeps = pending_hold(rec);
        // A `retire --when-free` intent is an explicit retire: adopted
        // records with one are taken too.
        if (rec.origin == Origin::Created || rec.intent.is_some()) && !keeps {
            // The engine proves `interrupted` under the exclusive lock itself.
            self.retire_candidate(rec, item);
            return Ok(());
        }
        // Adopted or held: prove `interrupted`, never take it.
        if self.apply {
            let Some(l) = &rec.lease else {
                item.hold(Hold::new(
                    HoldReason::LeaseMissing,
                    "the record has no lease",
                ));
                return Ok(());
            };
            let lock = match crate::os::lease::try_exclusive_checked(l, rec.uid) {
                Ok(f) => f,
                Err(h) => {
                    item.hold(h);
                    return Ok(());
                }
            };
            let moved = self.reg.update(&rec.id, |r| {
                if r.state != State::Active || r.any_launcher_alive(crate::os::process::is_alive) {
                    return Ok(false);
                }
                r.set_state(State::Interrupted)?;
                Ok(true)
            })?;
            drop(lock);
            if !moved {
                item.hold(Hold::new(
                    HoldReason::RetireInProgress,
                    "the record changed while reaping",
                ));
                return Ok(());
            }
            item.detail
                .push("every launcher is gone and the lease is free: recorded interrupted".into());
        } else {
            item.detail.push(
                "every launcher is gone and nothing holds the lease: would record interrupted"
                    .into(),
            );
        }
        let now = if self.apply {
            self.reg.get(&rec.id)?
        } else {
            rec.clone()
        };
        self.candidate(&now, item);
        Ok(())
    }

    /// A `terminal` or `interrupted` record (or one about to be).
    fn candidate(&self, rec: &Record, item: &mut ReapItem) {
        if pending_hold(rec) {
            let r = rec
                .retention
                .as_ref()
                .expect("pending_hold saw a retention");
            item.disposition = ReapDisposition::Retained;
            item.reasons.push(HoldReason::Retained);
            item.expired = r.is_expired(self.now);
            item.detail.push(format!(
                "held by {}:{} ({}){}; the hold takes effect when the record turns terminal",
                r.owner.kind,
                r.owner.name,
                r.reason,
                until(r.until.as_deref(), item.expired)
            ));
            item.next = Some(format!("`lease release {}` drops the hold", rec.prefix()));
            return;
        }
        if rec.origin == Origin::Adopted && rec.intent.is_none() {
            item.disposition = ReapDisposition::Reported;
            item.detail.push(
                "adopted: lease did not allocate this worktree, so reap never takes it".into(),
            );
            item.next = Some(format!("`lease retire {}` retires it", rec.prefix()));
            return;
        }
        self.retire_candidate(rec, item);
    }

    /// Sends a candidate through the retire engine, unless `--until-free`'s
    /// target is already met on its filesystem (then it stays as it was).
    fn retire_candidate(&self, rec: &Record, item: &mut ReapItem) {
        if let Some(target) = self.until {
            let free = free_bytes(&rec.root.path());
            if crate::plan::target_met(free, target) {
                item.disposition = ReapDisposition::NotNeeded;
                item.detail.push(until_free::not_needed(rec, free, target));
                return;
            }
        }
        item.take_retire(self.engine.retire(&rec.id));
    }

    fn retained(&self, rec: &Record, item: &mut ReapItem) {
        item.disposition = ReapDisposition::Retained;
        item.reasons.push(HoldReason::Retained);
        match &rec.retention {
            Some(r) => {
                item.expired = r.is_expired(self.now);
                item.detail.push(format!(
                    "held by {}:{} ({}){}",
                    r.owner.kind,
                    r.owner.name,
                    r.reason,
                    until(r.until.as_deref(), item.expired)
                ));
            }
            None => item
                .detail
                .push("retained, with no retention recorded".into()),
        }
        item.next = Some(if item.expired {
            format!(
                "the retention expired; reap never acts on that: `lease release {}` lets it be retired",
                rec.prefix()
            )
        } else {
            format!(
                "`lease release {}` when it is no longer needed",
                rec.prefix()
            )
        });
    }
}

/// True if the record carries a retention that waits for `terminal`
/// (see [`crate::plan::gate_retention`]).
fn pending_hold(rec: &Record) -> bool {
    matches!(rec.state, State::Active | State::Interrupted) && rec.retention.is_some()
}

fn until(until: Option<&str>, expired: bool) -> String {
    match (until, expired) {
        (Some(u), true) => format!(", expired at {u}"),
        (Some(u), false) => format!(" until {u}"),
        (None, _) => String::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
