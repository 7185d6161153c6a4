//! Records: one versioned JSON file per worktree, their states and legal
//! transitions, atomic fsynced writes, and read-modify-write under a short
//! exclusive flock on the record's own lock file.
//!
//! # Invariants
//! - A record is only ever replaced whole (`store::root::write_atomic`).
//! - Every state change goes through [`Record::set_state`], which refuses an
//!   illegal transition and queues an audit line written with the record.
//! - Every audit line about a record has exactly one copy in the log, even
//!   when a crash falls between the record's write and its lines: the record
//!   numbers its events (`audit_seq`) and keeps those of its latest write
//!   (`unaudited`); `<id>.lock` holds the last number known to be in the log.
//!   Under the record's lock, before any change, [`Registry::update`] appends
//!   what the log lacks ([`Registry::recover_audit`]).
//! - A record that is corrupt or of a newer schema is listed as such and never
//!   changed: [`Registry::update`] fails with [`Error::Record`] (exit 3).

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoResultExt, Result};
use crate::model::fmt::now;
use crate::model::reason::HoldReason;
use crate::model::record::{Attempt, Event, Record, SCHEMA, State, is_id};
use crate::store::audit::Audit;
use crate::store::root::StateRoot;

/// The largest record file lease reads (bytes; docs/record.md "Bounds"). A
/// record keeps at most [`crate::model::record::MAX_SESSIONS`] sessions and
/// [`crate::model::record::MAX_ATTEMPTS`]
/// attempts with bounded details, so a record lease wrote stays far below
/// it; a larger file is reported corrupt, never read without end.
pub const MAX_RECORD_BYTES: u64 = 4 << 20;

/// A record file as found on disk.
#[derive(Debug)]
pub enum Loaded {
    /// Parsed, known schema.
    Ok(Box<Record>),
    /// Unreadable, corrupt or of a newer schema: listed, never changed.
    Bad {
        /// The id from the file name.
        id: String,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

/// The set of records under a state root.
#[derive(Debug, Clone)]
pub struct Registry {
    root: StateRoot,
}

impl Registry {
    /// Opens the registry of a state root.
    pub fn new(root: StateRoot) -> Registry {
        Registry { root }
    }

    /// The state root.
    pub fn root(&self) -> &StateRoot {
        &self.root
    }

    /// `records/<id>.json`: where a record lives until it is removed (and
    /// where a crash between its tombstone and [`Registry::shelve`] leaves
    /// a removed one).
    fn live_file(&self, id: &str) -> PathBuf {
        self.root.records().join(format!("{id}.json"))
    }

    /// `records/removed/<id>.json`: where [`Registry::shelve`] moves a
    /// removed record.
    fn shelved_file(&self, id: &str) -> PathBuf {
        self.root.removed_records().join(format!("{id}.json"))
    }

    /// Where record `id` is now: its live file if anything is there, else
    /// its shelved file if that exists, else the live file. Stable while
    /// the record's lock is held (only [`Registry::shelve`] moves a
    /// record, under that lock).
    fn file(&self, id: &str) -> PathBuf {
        let live = self.live_file(id);
        if fs::symlink_metadata(&live).is_err() {
            let shelved = self.shelved_file(id);
            if fs::symlink_metadata(&shelved).is_ok() {
                return shelved;
            }
        }
        live
    }

    /// True if a file of record `id` exists, live or shelved (whatever it
    /// holds).
    pub fn exists(&self, id: &str) -> bool {
        fs::symlink_metadata(self.file(id)).is_ok()
    }

    /// Reads one record, live or shelved.
    pub fn load(&self, id: &str) -> Loaded {
        self.load_raw(id).0
    }

    /// [`Registry::load`], also returning the bytes of the record file when
    /// they parsed (`None` for [`Loaded::Bad`]): the exact file the record
    /// came from, read once, for a listing that prints the record as its
    /// file holds it (`lease list --json`).
    pub fn load_raw(&self, id: &str) -> (Loaded, Option<Vec<u8>>) {
        self.load_raw_from(id, false, false)
    }

    /// [`Registry::load_raw`], trying the shelved file first when
    /// `shelved_first` (an id listed in `records/removed/`: one lookup
    /// instead of two), then the other name; `listed_regular`: a listing
    /// just saw the first one as a regular file, which stands in for its
    /// `lstat` ([`crate::os::fs::read_listed_regular`]).
    fn load_raw_from(
        &self,
        id: &str,
        shelved_first: bool,
        listed_regular: bool,
    ) -> (Loaded, Option<Vec<u8>>) {
        let (first, other) = if shelved_first {
            (self.shelved_file(id), self.live_file(id))
        } else {
            (self.live_file(id), self.shelved_file(id))
        };
        let mut path = first;
        let mut read = if listed_regular {
            crate::os::fs::read_listed_regular(&path, MAX_RECORD_BYTES)
        } else {
            crate::os::fs::read_regular(&path, MAX_RECORD_BYTES)
        };
        // Not there: moved since (a reader takes no lock, and the move is
        // one rename, so one of the two names has it).
        if matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
            match crate::os::fs::read_regular(&other, MAX_RECORD_BYTES) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                r => {
                    path = other;
                    read = r;
                }
            }
        }
        let bad = |problem: String| {
            let bad = Loaded::Bad {
                id: id.to_string(),
                path: path.clone(),
                problem,
            };
            (bad, None)
        };
        let bytes = match read {
            Ok(b) => b,
            // A FIFO, device, symlink or oversized file where a record belongs.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return bad(format!("corrupt: {e}"));
            }
            Err(e) => return bad(format!("unreadable: {e}")),
        };
        match parse(id, &bytes) {
            Ok(r) => (Loaded::Ok(Box::new(r)), Some(bytes)),
            Err(problem) => bad(problem),
        }
    }

    /// Reads one record, failing if it is bad.
    pub fn get(&self, id: &str) -> Result<Record> {
        match self.load(id) {
            Loaded::Ok(r) => Ok(*r),
            Loaded::Bad { path, problem, .. } => Err(Error::Record { path, problem }),
        }
    }

    /// Returns every record id, live and shelved, sorted, each once (a
    /// record shelved while the two directories are read is in both).
    pub fn ids(&self) -> Result<Vec<String>> {
        Ok(self.files(false)?.into_iter().map(|f| f.id).collect())
    }

    /// Returns the ids in the live directory, sorted: every record that is
    /// not `removed`, and any removed one not shelved yet.
    pub fn live_ids(&self) -> Result<Vec<String>> {
        Ok(self.files(true)?.into_iter().map(|f| f.id).collect())
    }

    /// The record files of the live directory and, unless `live_only`, of
    /// `records/removed/`, sorted by id, each id once (a record shelved
    /// while the two are listed is taken where it was live).
    fn files(&self, live_only: bool) -> Result<Vec<RecordFile>> {
        let mut files = files_in(&self.root.records(), false)?;
        if !live_only {
            files.extend(files_in(&self.root.removed_records(), true)?);
        }
        // Stable: of two entries of one id, the live one stays first.
        files.sort_by(|a, b| a.id.cmp(&b.id));
        files.dedup_by(|later, first| later.id == first.id);
        Ok(files)
    }

    /// Reads every record, live and shelved, in id order.
    pub fn scan(&self) -> Result<Vec<Loaded>> {
        self.scan_files(false, false)
            .map(|v| v.into_iter().map(|(l, _)| l).collect())
    }

    /// [`Registry::scan`] (`live_only`: [`Registry::scan_live`]), each
    /// record with the bytes of its file ([`Registry::load_raw`]). Each
    /// file is read first in the directory that listed it, without an
    /// `lstat` when the listing saw a regular file
    /// ([`crate::os::fs::read_listed_regular`]). From [`PARALLEL_FROM`]
    /// files on, the reads and parses are shared among up to
    /// [`MAX_SCAN_THREADS`] threads (`in_order`); the result is in id
    /// order either way.
    pub fn scan_raw(&self, live_only: bool) -> Result<Vec<(Loaded, Option<Vec<u8>>)>> {
        self.scan_files(live_only, true)
    }

    /// [`Registry::scan_raw`], keeping each file's bytes only when
    /// `keep_bytes` (a scan that drops them at once never holds every
    /// file at the same time).
    fn scan_files(
        &self,
        live_only: bool,
        keep_bytes: bool,
    ) -> Result<Vec<(Loaded, Option<Vec<u8>>)>> {
        let files = self.files(live_only)?;
        Ok(in_order(&files, |f| {
            let (loaded, bytes) = self.load_raw_from(&f.id, f.shelved, f.regular);
            (loaded, bytes.filter(|_| keep_bytes))
        }))
    }

    /// Reads the records of the live directory ([`Registry::live_ids`]):
    /// what a command that skips `removed` records needs, at a cost that
    /// grows with the live worktrees, not with every worktree ever removed.
    /// It may still return removed records (one shelved while it runs, or
    /// one a crash left live): callers filter on the state as before.
    pub fn scan_live(&self) -> Result<Vec<Loaded>> {
        self.scan_files(true, false)
            .map(|v| v.into_iter().map(|(l, _)| l).collect())
    }

    /// Moves record `id` out of the live directory into
    /// `records/removed/` once it is `removed`, under its lock: one
    /// `rename(2)` in the same filesystem, so every reader finds it under
    /// one of its two names ([`Registry::load`]). Not fsynced: a rename a
    /// crash loses leaves the removed record live, which is how it was
    /// before and what `lease reap --apply` shelves. Returns whether it
    /// moved; a record that is not removed, already shelved or bad stays.
    ///
    /// # Errors
    /// The lock's, or a failed `mkdir`/`rename`.
    pub fn shelve(&self, id: &str) -> Result<bool> {
        let _lock = self.lock(id)?;
        let live = self.live_file(id);
        match crate::os::fs::read_regular(&live, MAX_RECORD_BYTES) {
            Ok(bytes) if parse(id, &bytes).is_ok_and(|r| r.state == State::Removed) => {}
            _ => return Ok(false),
        }
        let dir = self.root.removed_records();
        crate::os::atomic::make_private_dir(&dir)?;
        crate::os::fault::point("record-shelving");
        fs::rename(&live, self.shelved_file(id)).at_do("cannot move", &live)?;
        Ok(true)
    }

    /// Resolves a full id or a unique prefix of 8 or more hex digits.
    pub fn resolve(&self, prefix: &str) -> Result<String> {
        if prefix.len() < 8 || prefix.len() > 32 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::Usage(format!(
                "`{prefix}` is not a record id or a prefix of 8 or more hex digits"
            )));
        }
        let prefix = prefix.to_ascii_lowercase();
        // A whole id names one record or none: no directory listing.
        if prefix.len() == 32 && self.exists(&prefix) {
            return Ok(prefix);
        }
        let found: Vec<String> = self
            .ids()?
            .into_iter()
            .filter(|id| id.starts_with(&prefix))
            .collect();
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Error::Usage(format!("no record matches `{prefix}`"))),
            many => Err(Error::Usage(format!(
                "`{prefix}` is ambiguous: {}",
                many.join(", ")
            ))),
        }
    }

    /// Writes a new record (it must not exist yet) and audits its creation.
    ///
    /// Its `slot` is allocated here: under `<state root>/locks/slots.lock`
    /// (exclusive, blocking; every creation takes it, so two concurrent
    /// creations never see the same free slot), the lowest integer no other
    /// non-`removed` record holds ([`crate::plan::lowest_free_slot`]); the
    /// record is written before the lock is released.
    pub fn create(&self, rec: &mut Record) -> Result<()> {
        crate::os::atomic::make_private_dir(&self.root.locks())?;
        let _slots = crate::os::atomic::lock_private(&self.root.locks().join("slots.lock"))?;
        let lock = self.lock(&rec.id)?;
        if self.exists(&rec.id) {
            return Err(Error::Record {
                path: self.file(&rec.id),
                problem: "already exists".into(),
            });
        }
        let taken: Vec<u32> = self
            .scan_live()?
            .into_iter()
            .filter_map(|l| match l {
                Loaded::Ok(r) if r.state != State::Removed && r.id != rec.id => r.slot,
                _ => None,
            })
            .collect();
        rec.slot = Some(crate::plan::lowest_free_slot(&taken));
        crate::os::fault::point("slot-chosen");
        rec.queue_created();
        self.write(rec, &lock, true)
    }

    /// Read-modify-write of one record under its exclusive lock. `f` may change
    /// the record and call [`Record::set_state`]; the record is written only if
    /// `f` succeeds and changed it, then each transition is audited.
    ///
    /// First, audit lines a crash lost after the record's last write are
    /// appended ([`Registry::recover_audit`]), so the log keeps each record's
    /// lines in order.
    pub fn update<T>(&self, id: &str, f: impl FnOnce(&mut Record) -> Result<T>) -> Result<T> {
        self.update_with(id, true, f)
    }

    /// [`Registry::update`] for a session's start or end: the record and its
    /// audit lines are written atomically but not fsynced (SPEC invariant 7;
    /// docs/record.md "Durability": the flock, not the record, protects a
    /// live session, and a lost end leaves an `active` record with a dead
    /// launcher, which retire and reap resolve). Never for a transition that
    /// authorizes or records destruction.
    pub fn update_session<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut Record) -> Result<T>,
    ) -> Result<T> {
        self.update_with(id, false, f)
    }

    fn update_with<T>(
        &self,
        id: &str,
        durable: bool,
        f: impl FnOnce(&mut Record) -> Result<T>,
    ) -> Result<T> {
        let lock = self.lock(id)?;
        let mut rec = self.get(id)?;
        self.recover(&rec, &lock)?;
        let before = rec.clone();
        let out = f(&mut rec)?;
        if rec != before || rec.has_queued() {
            self.write(&mut rec, &lock, durable)?;
        }
        Ok(out)
    }

    /// Appends the audit lines of record `id`'s latest write that a crash
    /// lost, under the record's lock; `lease reap --apply` runs it on every
    /// record, removed ones included.
    pub fn recover_audit(&self, id: &str) -> Result<()> {
        let lock = self.lock(id)?;
        let rec = self.get(id)?;
        self.recover(&rec, &lock)
    }

    /// The recovery itself: `lock` is the record's lock file, which holds the
    /// last `seq` known to be in the log. Only when that lags the record does
    /// it read the log, to append exactly the lines that are missing.
    fn recover(&self, rec: &Record, lock: &fs::File) -> Result<()> {
        if read_audited(lock) >= rec.audit_seq {
            return Ok(());
        }
        let audit = Audit::new(&self.root);
        let logged = crate::store::audit::last_seq(&self.root.audit_log(), &rec.id)?;
        for e in rec.unaudited.iter().filter(|e| e.seq > logged) {
            audit.append(&Event {
                recovered: true,
                ..e.clone()
            })?;
        }
        self.write_audited(lock, &rec.id, rec.audit_seq)
    }

    fn write_audited(&self, lock: &fs::File, id: &str, seq: u64) -> Result<()> {
        lock.write_all_at(format!("{seq:020}\n").as_bytes(), 0)
            .at_do(
                "cannot write",
                &self.root.records().join(format!("{id}.lock")),
            )
    }

    /// Records a held retire: one more `attempts` entry and one audit line.
    pub fn record_hold(&self, id: &str, holds: &[crate::model::reason::Hold]) -> Result<()> {
        self.record_hold_measured(id, holds, None)
    }

    /// [`Registry::record_hold`], also keeping `size` (the walk's
    /// measurement, when the held retire walked the tree) as the record's
    /// last measured size, in the same write.
    pub fn record_hold_measured(
        &self,
        id: &str,
        holds: &[crate::model::reason::Hold],
        size: Option<crate::model::disk::Size>,
    ) -> Result<()> {
        let reasons: Vec<HoldReason> = holds.iter().map(|h| h.reason).collect();
        let detail: Vec<String> = holds.iter().map(|h| h.detail.clone()).collect();
        self.update(id, |rec| {
            if let Some(s) = &size {
                rec.size = Some(s.clone());
            }
            rec.push_attempt(Attempt {
                at: now(),
                reasons: reasons.clone(),
                detail: detail.clone(),
            });
            rec.audit("held", reasons, detail);
            Ok(())
        })
    }

    /// Numbers the queued events, writes the record (which keeps them as
    /// `unaudited`), appends them to the log, then notes in `lock` that the
    /// log has them. A crash anywhere in between loses no line: the next
    /// [`Registry::update`] appends what is missing.
    fn write(&self, rec: &mut Record, lock: &fs::File, durable: bool) -> Result<()> {
        rec.seal_queued();
        if durable {
            crate::os::atomic::write_atomic(&self.file(&rec.id), &encode(rec))?;
        } else {
            crate::os::atomic::write_atomic_unsynced(&self.file(&rec.id), &encode(rec))?;
        }
        crate::os::fault::point("record-written");
        let audit = Audit::new(&self.root);
        for e in &rec.unaudited {
            audit.append_with(e, durable)?;
        }
        if rec.unaudited.is_empty() {
            return Ok(());
        }
        self.write_audited(lock, &rec.id, rec.audit_seq)
    }

    /// Takes the short exclusive flock on `<id>.lock`; released when the guard drops (by close, never `LOCK_UN`).
    fn lock(&self, id: &str) -> Result<fs::File> {
        crate::os::atomic::lock_private(&self.root.records().join(format!("{id}.lock")))
    }
}

/// The `<id>.json` files in `dir` (`shelved`: it is `records/removed/`),
/// unsorted; none when `dir` does not exist (a state root made by hand,
/// an empty 0700 directory, has no records until the first command that
/// writes; no record was ever shelved).
fn files_in(dir: &Path, shelved: bool) -> Result<Vec<RecordFile>> {
    let mut files = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(e) => return Err(e).at_do("cannot read", dir),
    };
    for entry in entries {
        let entry = entry.at_do("cannot read", dir)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(id) = name.strip_suffix(".json")
            && is_id(id)
        {
            files.push(RecordFile {
                id: id.to_string(),
                shelved,
                // `d_type` from the listing (no syscall where the
                // filesystem fills it in; std falls back to an lstat).
                regular: entry.file_type().is_ok_and(|t| t.is_file()),
            });
        }
    }
    Ok(files)
}

/// The fewest record files a scan shares among threads: below it one
/// thread reads them all (a thread's start costs about what reading a few
/// dozen records does).
pub const PARALLEL_FROM: usize = 512;

/// The most threads a scan uses (fewer on a machine with fewer CPUs,
/// `std::thread::available_parallelism`).
pub const MAX_SCAN_THREADS: usize = 4;

/// `read` of every item of `items`, in their order: on this thread for
/// fewer than [`PARALLEL_FROM`] items or a single CPU, else on up to
/// [`MAX_SCAN_THREADS`] scoped threads, each taking one contiguous run
/// (a scan of 10,000 records is reading and parsing, which two CPUs halve;
/// issue 19's `list --json` row). A panic in a thread is resumed here.
fn in_order<I: Sync, T: Send>(items: &[I], read: impl Fn(&I) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(MAX_SCAN_THREADS);
    if threads < 2 || items.len() < PARALLEL_FROM {
        return items.iter().map(read).collect();
    }
    let read = &read;
    std::thread::scope(|s| {
        let runs: Vec<_> = items
            .chunks(items.len().div_ceil(threads))
            .map(|run| s.spawn(move || run.iter().map(read).collect::<Vec<T>>()))
            .collect();
        runs.into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// One `<id>.json` a listing of `records/` or `records/removed/` found.
#[derive(Debug)]
struct RecordFile {
    /// The id its name gives.
    id: String,
    /// Listed in `records/removed/`.
    shelved: bool,
    /// The listing saw a regular file (readdir(3) `d_type`).
    regular: bool,
}

/// The bytes of a record file: pretty JSON, as [`parse`] reads it back.
fn encode(rec: &Record) -> Vec<u8> {
    serde_json::to_vec_pretty(rec).expect("a record serializes")
}

/// Parses the bytes of record file `<id>.json`: JSON of a known schema whose
/// `id` is `id`. The error says what is wrong, for [`Loaded::Bad`].
///
/// One parse, straight into [`Record`], decides every file that is good: a
/// JSON object (a derived struct would also take an array) whose `schema`
/// is [`SCHEMA`] and whose `id` is `id`. Anything else goes to
/// [`parse_checked`], which reads the file as a `serde_json::Value` first
/// and says what is wrong (a newer schema, no known schema, a field that
/// does not fit, another id), so a refusal is always the one that pass
/// makes. The fast pass accepts nothing [`parse_checked`] refuses: where
/// the two could differ (a field given twice, which the derived struct
/// refuses and a `Value` resolves to the last), it fails and hands over
/// (the `registry::props` properties check the two agree).
fn parse(id: &str, bytes: &[u8]) -> std::result::Result<Record, String> {
    match serde_json::from_slice::<Record>(bytes) {
        Ok(r) if is_object(bytes) && r.schema == SCHEMA && r.id == id => Ok(r),
        _ => parse_checked(id, bytes),
    }
}

/// True if the first byte of `bytes` after JSON whitespace (RFC 8259
/// section 2) opens an object.
fn is_object(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .is_some_and(|b| *b == b'{')
}

/// [`parse`]'s checked pass: the file as a `serde_json::Value`, its
/// `schema` checked (newer than [`SCHEMA`], or none known), then the
/// record and its id.
fn parse_checked(id: &str, bytes: &[u8]) -> std::result::Result<Record, String> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("corrupt: {e}"))?;
    match value.get("schema").and_then(serde_json::Value::as_u64) {
        Some(SCHEMA) => {}
        Some(n) if n > SCHEMA => {
            return Err(format!("of schema {n}, newer than this lease ({SCHEMA})"));
        }
        _ => return Err("corrupt: no known schema".into()),
    }
    match serde_json::from_value::<Record>(value) {
        Ok(r) if r.id == id => Ok(r),
        Ok(r) => Err(format!("corrupt: its id is {}", r.id)),
        Err(e) => Err(format!("corrupt: {e}")),
    }
}

/// Reads the last audited `seq` from a record's lock file; 0 when it is empty
/// or unreadable (then [`Registry::recover_audit`] reads the log to be sure).
fn read_audited(lock: &fs::File) -> u64 {
    let mut buf = [0u8; 32];
    let n = lock.read_at(&mut buf, 0).unwrap_or(0);
    std::str::from_utf8(&buf[..n])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// The most of a bad record file [`bad_record_naming`] reads, in bytes: a
/// longer one cannot be shown not to name a path.
const NAMING_READ_LIMIT: u64 = 1 << 20;

/// Returns the file and problem of the first record of `loaded` that is
/// corrupt, unreadable or of a newer schema and may name the worktree `wt`
/// (SPEC "A lease every tool can see": adoption refuses those): its bytes
/// hold `wt` as a JSON string, `wt`'s directory name is its id (lease's
/// layout `<root>/<repo>/<id>`), or it cannot be read in full as a regular
/// file (opened `O_NOFOLLOW|O_NONBLOCK`, at most 1 MiB), so nothing shows
/// it does not.
pub fn bad_record_naming(loaded: &[Loaded], wt: &Path) -> Option<(PathBuf, String)> {
    let quoted = wt
        .to_str()
        .and_then(|p| serde_json::to_string(p).ok())
        .map(String::into_bytes);
    let dir_name = wt.file_name().and_then(|n| n.to_str());
    loaded.iter().find_map(|l| {
        let Loaded::Bad { id, path, problem } = l else {
            return None;
        };
        let names = dir_name == Some(id.as_str())
            || match read_bounded(path, NAMING_READ_LIMIT) {
                None => true,
                Some(bytes) => quoted
                    .as_ref()
                    .is_some_and(|q| bytes.windows(q.len()).any(|w| w == q.as_slice())),
            };
        names.then(|| (path.clone(), problem.clone()))
    })
}

/// Reads a regular file of at most `limit` bytes without following a
/// symlink or blocking on a FIFO; `None` if it cannot, or is longer.
fn read_bounded(path: &Path, limit: u64) -> Option<Vec<u8>> {
    crate::os::fs::read_regular(path, limit).ok()
}

/// Makes a new random id: 128 bits from the OS, lowercase hex.
pub fn new_id() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::Io {
        action: "cannot get random bytes for",
        path: PathBuf::from("record id"),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_128_bit_hex() {
        let a = new_id().unwrap();
        assert!(is_id(&a));
        assert_ne!(a, new_id().unwrap());
        assert!(!is_id("ABCDEF00112233445566778899aabbcc"));
    }

    /// A whole record as JSON, `edit`ed, and the bytes of that.
    fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> (String, Vec<u8>) {
        let rec = crate::model::record::sample_record();
        let mut v = serde_json::to_value(&rec).unwrap();
        edit(&mut v);
        (rec.id.clone(), serde_json::to_vec_pretty(&v).unwrap())
    }

    #[test]
    fn a_whole_record_of_another_schema_is_refused_by_its_schema() {
        // Every field fits `Record`: only the schema check refuses it.
        let (id, bytes) = edited(|v| v["schema"] = (SCHEMA + 1).into());
        assert_eq!(
            parse(&id, &bytes).unwrap_err(),
            format!("of schema {}, newer than this lease ({SCHEMA})", SCHEMA + 1)
        );
        for old in [serde_json::json!(0), serde_json::json!(SCHEMA as f64)] {
            let (id, bytes) = edited(|v| v["schema"] = old);
            assert_eq!(parse(&id, &bytes).unwrap_err(), "corrupt: no known schema");
        }
        let (id, bytes) = edited(|_| {});
        assert!(parse(&id, &bytes).is_ok(), "the control parses");
    }

    #[test]
    fn a_record_as_a_json_array_is_corrupt() {
        // serde's derived struct takes its fields in order from an array
        // too; a record file is an object with a `schema` key.
        let (id, bytes) = edited(|v| {
            // The fields in declaration order, up to the last one without
            // a default (the derived visitor fills in the rest).
            let fields = [
                "schema",
                "id",
                "state",
                "repo",
                "worktree",
                "root",
                "origin",
                "branch",
                "base",
                "owner",
                "uid",
                "created_at",
                "lease",
                "sessions",
                "outcome",
                "retention",
                "archive",
                "attempts",
                "attempts_dropped",
                "tombstone",
            ];
            let fields = fields.map(|f| v.get(f).cloned().unwrap_or(0.into()));
            *v = serde_json::Value::Array(fields.into());
        });
        assert!(
            serde_json::from_slice::<Record>(&bytes).is_ok(),
            "the array fits Record"
        );
        assert_eq!(parse(&id, &bytes).unwrap_err(), "corrupt: no known schema");
        assert!(!is_object(b" \t\r\n["));
        assert!(is_object(b" \t\r\n{"));
        assert!(!is_object(b""));
    }

    #[test]
    fn a_scan_reads_each_record_once_where_it_was_listed_and_refuses_what_is_not_a_file() {
        let t = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(t.path()).unwrap().join("state");
        let root = StateRoot::at(base, &std::sync::Arc::new(crate::policy::defaults()));
        for d in [
            root.path().to_path_buf(),
            root.records(),
            root.removed_records(),
        ] {
            crate::os::atomic::make_private_dir(&d).unwrap();
        }
        let reg = Registry::new(root);
        let mut rec = crate::model::record::sample_record();
        // A fixed id that sorts before the FIFO's and the symlink's, so that
        // the listing's order is known (a random one sorts anywhere).
        rec.id = "0123456789abcdef0123456789abcdef".into();
        let id = rec.id.clone();
        // In both directories (a shelving caught between two listings):
        // one entry, read from the live directory.
        let mut live = rec.clone();
        live.branch = Some("live".into());
        let mut shelved = rec.clone();
        shelved.branch = Some("shelved".into());
        fs::write(reg.live_file(&id), encode(&live)).unwrap();
        fs::write(reg.shelved_file(&id), encode(&shelved)).unwrap();
        // A FIFO and a symlink where records belong: refused by name, as
        // `load` refuses them, never opened as records.
        let fifo = "f".repeat(32);
        let link = "e".repeat(32);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            reg.shelved_file(&fifo),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        std::os::unix::fs::symlink(reg.shelved_file(&id), reg.live_file(&link)).unwrap();
        let scanned = reg.scan_raw(false).unwrap();
        let seen: Vec<String> = scanned
            .iter()
            .map(|(l, raw)| match l {
                Loaded::Ok(r) => {
                    assert_eq!(raw.as_deref(), Some(&encode(r)[..]), "the bytes it parsed");
                    format!("{} {}", r.id, r.branch.as_deref().unwrap_or(""))
                }
                Loaded::Bad { id, problem, .. } => {
                    assert!(raw.is_none());
                    format!("{id} {problem}")
                }
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                format!("{id} live"),
                format!("{link} corrupt: is a symbolic link, not a regular file"),
                format!("{fifo} corrupt: is a FIFO, not a regular file"),
            ]
        );
        assert_eq!(
            reg.ids().unwrap(),
            vec![id.clone(), link.clone(), fifo.clone()]
        );
        assert_eq!(reg.live_ids().unwrap(), vec![id.clone(), link]);
        assert_eq!(reg.scan_live().unwrap().len(), 2);
        assert_eq!(reg.scan().unwrap().len(), 3);
        // Gone from the live directory since the listing: the shelved one.
        fs::remove_file(reg.live_file(&id)).unwrap();
        match reg.load_raw_from(&id, false, true).0 {
            Loaded::Ok(r) => assert_eq!(r.branch.as_deref(), Some("shelved")),
            Loaded::Bad { problem, .. } => panic!("{problem}"),
        }
    }

    #[test]
    fn a_shared_scan_keeps_the_order_of_its_items() {
        for n in [
            0,
            1,
            PARALLEL_FROM - 1,
            PARALLEL_FROM,
            4 * PARALLEL_FROM + 3,
        ] {
            let items: Vec<usize> = (0..n).collect();
            let threads = std::sync::Mutex::new(std::collections::HashSet::new());
            let out = in_order(&items, |i| {
                threads.lock().unwrap().insert(std::thread::current().id());
                i * 2
            });
            assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>(), "{n}");
            let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
            let used = threads.lock().unwrap().len();
            if n >= PARALLEL_FROM && cpus > 1 {
                assert!(used > 1, "{n} items on {used} thread(s)");
            } else {
                assert!(used <= 1, "{n} items on {used} threads");
            }
        }
    }

    #[test]
    fn a_field_given_twice_reads_as_it_always_did() {
        // The derived struct refuses a duplicate field; the checked pass
        // (serde_json's map) keeps the last one. Files read as before.
        let (id, bytes) = edited(|_| {});
        let text = String::from_utf8(bytes).unwrap();
        let twice = text.replacen('{', "{\n  \"state\": \"removed\",", 1);
        assert!(serde_json::from_slice::<Record>(twice.as_bytes()).is_err());
        assert_eq!(
            parse(&id, twice.as_bytes()),
            parse_checked(&id, twice.as_bytes())
        );
        assert!(parse(&id, twice.as_bytes()).is_ok());
    }
}

/// Property tests: every record survives a write and a read unchanged, and a
/// record file cut short anywhere is corrupt, never a different valid record.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod props {
    use super::*;
    use crate::model::record::{
        Archive, Bound, BranchCleanup, FileId, Intent, Origin, Outcome, Owner, RemoteRefs,
        Retention, Session, State, Tombstone,
    };
    use proptest::collection::{btree_map, vec};
    use proptest::option::of;
    use proptest::prelude::*;
    use proptest::sample::select;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9/._ -]{0,12}",
            vec(any::<char>(), 0..8).prop_map(|c| c.into_iter().collect()),
        ]
    }

    fn hex(n: usize) -> impl Strategy<Value = String> {
        vec(
            prop_oneof![b'0'..=b'9', b'a'..=b'f'].prop_map(char::from),
            n,
        )
        .prop_map(|c| c.into_iter().collect())
    }

    fn state() -> impl Strategy<Value = State> {
        proptest::sample::select(State::ALL.to_vec())
    }

    fn reason() -> impl Strategy<Value = HoldReason> {
        proptest::sample::select(vec![
            HoldReason::NotTerminal,
            HoldReason::ConsumerAlive,
            HoldReason::Dirty,
            HoldReason::UniqueCommitsUnarchived,
            HoldReason::Unprovable,
            HoldReason::AlreadyRestored,
        ])
    }

    fn file_id() -> impl Strategy<Value = FileId> {
        (text(), any::<u64>(), any::<u64>(), of(any::<u64>())).prop_map(
            |(path, dev, ino, btime)| FileId {
                path,
                dev,
                ino,
                btime,
            },
        )
    }

    fn owner() -> impl Strategy<Value = Owner> {
        (text(), text()).prop_map(|(kind, name)| Owner { kind, name })
    }

    fn outcome() -> impl Strategy<Value = Outcome> {
        (
            of(any::<i32>()),
            of(any::<i32>()),
            text(),
            of(hex(40)),
            of(text()),
            vec(any::<u32>(), 0..3),
            of(text()),
        )
            .prop_map(|(code, signal, at, head, error, holders, note)| Outcome {
                code,
                signal,
                at,
                head,
                error,
                holders,
                note,
            })
    }

    fn session() -> impl Strategy<Value = Session> {
        (
            any::<u32>(),
            any::<u64>(),
            text(),
            of(text()),
            of(outcome()),
            of((any::<u32>(), any::<u64>())),
        )
            .prop_map(
                |(pid, start_time, started_at, ended_at, outcome, bound)| Session {
                    pid,
                    start_time,
                    started_at,
                    ended_at,
                    outcome,
                    bound: bound.map(|(pid, start_time)| Bound { pid, start_time }),
                },
            )
    }

    fn json() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            text().prop_map(serde_json::Value::from),
            btree_map(text(), text(), 0..3).prop_map(|m| serde_json::json!(m)),
        ]
    }

    fn archive() -> impl Strategy<Value = Archive> {
        (
            text(),
            hex(64),
            hex(40),
            any::<u64>(),
            btree_map(text(), hex(40), 0..3),
            vec(hex(40), 0..3),
            text(),
            vec(json(), 0..2),
            of((text(), text(), btree_map(text(), hex(40), 0..3), text())),
        )
            .prop_map(
                |(
                    location,
                    sha256,
                    tip,
                    commits,
                    refs,
                    prerequisites,
                    verified_at,
                    receipts,
                    remote,
                )| {
                    Archive {
                        kind: "bundle".into(),
                        location,
                        sha256,
                        tip,
                        commits,
                        refs,
                        prerequisites,
                        verified_at,
                        receipts,
                        remote: remote.map(|(remote, url, refs, read_back_at)| RemoteRefs {
                            remote,
                            url,
                            refs,
                            read_back_at,
                        }),
                    }
                },
            )
    }

    fn tombstone() -> impl Strategy<Value = Tombstone> {
        (
            text(),
            hex(32),
            text(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            json(),
            of((text(), of(hex(40)), any::<bool>(), text())),
        )
            .prop_map(
                |(
                    path,
                    id,
                    removed_at,
                    bytes_reclaimed,
                    free_before,
                    free_after,
                    evidence,
                    branch,
                )| {
                    Tombstone {
                        path,
                        id,
                        removed_at,
                        bytes_reclaimed,
                        free_before,
                        free_after,
                        evidence,
                        branch: branch.map(|(name, old_tip, deleted, detail)| BranchCleanup {
                            name,
                            old_tip,
                            reason: (!deleted).then_some(HoldReason::BranchUnproven),
                            deleted,
                            detail,
                            automatic: false,
                        }),
                    }
                },
            )
    }

    fn event() -> impl Strategy<Value = Event> {
        (
            select(vec!["create", "transition", "held", "archived"]),
            hex(32),
            of(state()),
            of(state()),
            vec(reason(), 0..2),
            vec(text(), 0..2),
            any::<u64>(),
            any::<bool>(),
        )
            .prop_map(
                |(event, id, from, to, reasons, detail, seq, recovered)| Event {
                    event: event.into(),
                    id,
                    from,
                    to,
                    reasons,
                    detail,
                    seq,
                    recovered,
                },
            )
    }

    fn record() -> impl Strategy<Value = Record> {
        let head = (
            hex(32),
            state(),
            text(),
            of(file_id()),
            file_id(),
            any::<bool>(),
            of(text()),
            hex(40),
            owner(),
            any::<u32>(),
            text(),
            of(file_id()),
        );
        let tail = (
            vec(session(), 0..3),
            of(outcome()),
            of((owner(), text(), of(text()))),
            of(archive()),
            vec((text(), vec(reason(), 0..3), vec(text(), 0..2)), 0..3),
            of(tombstone()),
            of(hex(32)),
            (
                any::<u64>(),
                vec(event(), 0..3),
                any::<u64>(),
                of((text(), any::<bool>(), any::<bool>())),
            ),
        );
        (head, tail).prop_map(
            |(
                (
                    id,
                    state,
                    repo,
                    worktree,
                    root,
                    adopted,
                    branch,
                    base,
                    owner,
                    uid,
                    created_at,
                    lease,
                ),
                (
                    sessions,
                    outcome,
                    retention,
                    archive,
                    attempts,
                    tombstone,
                    restored_from,
                    (audit_seq, unaudited, attempts_dropped, intent),
                ),
            )| {
                let origin = if adopted {
                    Origin::Adopted
                } else {
                    Origin::Created
                };
                let mut r = Record::planned(id, repo, root, origin, branch, base, owner, uid);
                r.state = state;
                r.worktree = worktree;
                r.created_at = created_at;
                r.lease = lease;
                r.sessions = sessions;
                r.outcome = outcome;
                r.retention = retention.map(|(owner, reason, until)| Retention {
                    owner,
                    reason,
                    until,
                });
                r.archive = archive;
                r.attempts = attempts
                    .into_iter()
                    .map(|(at, reasons, detail)| Attempt {
                        at,
                        reasons,
                        detail,
                    })
                    .collect();
                r.attempts_dropped = attempts_dropped;
                r.slot = (audit_seq % 3 != 0).then_some((audit_seq % 7) as u32);
                r.tombstone = tombstone;
                r.restored_from = restored_from;
                r.intent = intent.map(|(at, delete_branch, fetch)| Intent {
                    kind: Intent::RETIRE_WHEN_FREE.into(),
                    at,
                    delete_branch,
                    fetch,
                });
                r.audit_seq = audit_seq;
                r.unaudited = unaudited;
                r
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn records_round_trip(rec in record()) {
            prop_assert_eq!(parse(&rec.id, &encode(&rec)), Ok(rec));
        }

        #[test]
        fn truncated_records_are_corrupt(rec in record(), cut in any::<proptest::sample::Index>()) {
            let bytes = encode(&rec);
            let cut = cut.index(bytes.len());
            let got = parse(&rec.id, &bytes[..cut]);
            prop_assert!(got.is_err(), "{} of {} bytes parsed as {:?}", cut, bytes.len(), got);
        }

        #[test]
        fn a_record_under_another_name_is_corrupt(rec in record(), other in hex(32)) {
            prop_assume!(other != rec.id);
            prop_assert!(parse(&other, &encode(&rec)).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..200), id in hex(32)) {
            let _ = parse(&id, &bytes);
            prop_assert_eq!(parse(&id, &bytes), parse_checked(&id, &bytes));
        }

        /// The one-pass parse and the checked pass agree on every record
        /// with a byte changed, cut, or given under another id.
        #[test]
        fn the_fast_parse_agrees_with_the_checked_pass(
            rec in record(),
            at in any::<proptest::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<proptest::sample::Index>(),
            other in hex(32),
        ) {
            let bytes = encode(&rec);
            let mut changed = bytes.clone();
            let i = at.index(changed.len());
            changed[i] = byte;
            let cut = &bytes[..cut.index(bytes.len())];
            for (id, b) in [(&rec.id, &bytes[..]), (&rec.id, &changed[..]), (&rec.id, cut), (&other, &bytes[..])] {
                prop_assert_eq!(parse(id, b), parse_checked(id, b));
            }
        }
    }
}
