//! `lease list`: every record, its state and holders.

use super::exit;
use crate::error::Result;
use crate::model::record::{Record, State};
use crate::store::registry::{Loaded, Registry};

/// The arguments of `lease list`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Only records in these states (repeatable, or comma-separated: active,terminal).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "STATE")]
    pub(super) state: Vec<StateArg>,
    /// Only records of this repository (a path inside it, or its directory name).
    #[arg(long, value_name = "R")]
    pub(super) repo: Option<String>,
    /// Include removed records (the table hides them by default; --json lists them unless --state is given).
    #[arg(long)]
    pub(super) all: bool,
    /// Print sizes in bytes instead of K/M/G.
    #[arg(long)]
    pub(super) bytes: bool,
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// A record state as `--state` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum StateArg {
    /// `planned`.
    Planned,
    /// `active`.
    Active,
    /// `terminal`.
    Terminal,
    /// `retained`.
    Retained,
    /// `interrupted`.
    Interrupted,
    /// `retiring`.
    Retiring,
    /// `removed`.
    Removed,
    /// A record file lease cannot read (corrupt, newer schema).
    Unreadable,
}

impl StateArg {
    fn name(self) -> &'static str {
        match self {
            StateArg::Planned => "planned",
            StateArg::Active => "active",
            StateArg::Terminal => "terminal",
            StateArg::Retained => "retained",
            StateArg::Interrupted => "interrupted",
            StateArg::Retiring => "retiring",
            StateArg::Removed => "removed",
            StateArg::Unreadable => "unreadable",
        }
    }
}

/// Runs `lease list`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    list(ctx, &a)
}

/// A record as JSON with its current `holders` (pids, from `holders`, a
/// map built by one `/proc` scan).
/// What `/proc` says about the leases of a listing: descriptors per lease
/// (one scan of `/proc`), the flocks of `/proc/locks` (one read), and the
/// superblock device of the lease directory's mount when it differs from
/// `st_dev` (btrfs), to match `/proc/locks` lines.
pub(super) struct SeenLeases {
    holders: std::collections::HashMap<(u64, u64), Vec<u32>>,
    flocks: Option<crate::os::procfs::Flocks>,
    table_dev: Option<u64>,
}

impl SeenLeases {
    pub(super) fn of(reg: &Registry, ids: &[(u64, u64)]) -> SeenLeases {
        SeenLeases {
            holders: crate::os::procfs::holders_of(ids),
            flocks: crate::os::procfs::Flocks::read(),
            table_dev: crate::os::procfs::table_dev_of(&reg.root().leases()),
        }
    }

    /// What `/proc` shows of record `r`'s lease (a removed record's lease
    /// file was unlinked: its inode number may name another file now).
    pub(super) fn of_record(&self, r: &Record) -> crate::model::evidence::LeaseSeen {
        let Some(l) = r.lease.as_ref().filter(|_| r.state != State::Removed) else {
            return crate::model::evidence::LeaseSeen {
                complete: true,
                ..Default::default()
            };
        };
        crate::model::evidence::LeaseSeen {
            pids: self.holders.get(&l.id()).cloned().unwrap_or_default(),
            lock: self
                .flocks
                .as_ref()
                .and_then(|f| f.on(l.id(), self.table_dev)),
            complete: self.flocks.as_ref().is_some_and(|f| f.complete()),
        }
    }
}

/// `holders` (pids with a descriptor on the lease) and `locked`: `shared`
/// or `exclusive` when `/proc/locks` lists that flock on it, `none`, or
/// `unknown` when this `/proc` cannot show every lock and none is listed.
pub(super) fn record_json(
    r: &Record,
    seen: &crate::model::evidence::LeaseSeen,
) -> serde_json::Value {
    serde_json::to_value(Listed::of(r, seen)).expect("a record serializes")
}

/// One record as `list --json` and `show --json` print it: the record's
/// own fields in the record file's order, then `holders` and `locked`
/// ([`record_json`]). `list` serializes it straight to its output, with
/// no `serde_json::Value` in between (issue 19: the `Value` of every
/// record was half of a listing's instructions).
#[derive(serde::Serialize)]
pub(super) struct Listed<'a> {
    #[serde(flatten)]
    record: &'a Record,
    holders: Vec<u32>,
    locked: &'static str,
}

impl<'a> Listed<'a> {
    pub(super) fn of(r: &'a Record, seen: &crate::model::evidence::LeaseSeen) -> Listed<'a> {
        Listed {
            record: r,
            holders: seen.pids.clone(),
            locked: locked_word(seen),
        }
    }
}

/// One entry of `list --json`: a record, or a record file lease cannot
/// read (`{id, state: "unreadable", path, problem}`).
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Record(Listed<'a>),
    Unreadable {
        id: &'a str,
        state: &'static str,
        path: std::borrow::Cow<'a, str>,
        problem: &'a str,
    },
}

/// Writes `loaded` (each record with its file's bytes, from
/// [`Registry::scan_raw`]) to stdout as one JSON array, entry by entry
/// through a buffered writer: the listing is never held as one string.
/// Write errors are ignored, as by `out_raw!` (a closed pipe ends the
/// listing).
fn print_json(loaded: &[(Loaded, Option<Vec<u8>>)], seen: &SeenLeases) {
    use std::io::Write as _;
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    if write_listing(&mut w, loaded, seen).is_ok() {
        let _ = w.flush();
    }
}

/// The array [`print_json`] writes. A record is the bytes of its file as
/// they were read and parsed, its closing brace replaced by `holders` and
/// `locked` ([`open_object`]): what docs/record.md promises ("the record
/// file plus two keys"), without serializing again what was just parsed
/// (issue 19: serialization was a third of a listing's instructions). A
/// file [`open_object`] does not take is serialized from its record
/// ([`Listed`]), as `show --json` prints it.
fn write_listing(
    w: &mut impl std::io::Write,
    loaded: &[(Loaded, Option<Vec<u8>>)],
    seen: &SeenLeases,
) -> std::io::Result<()> {
    w.write_all(b"[")?;
    for (i, (l, raw)) in loaded.iter().enumerate() {
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        match l {
            Loaded::Ok(r) => {
                let seen = seen.of_record(r);
                match raw.as_deref().and_then(open_object) {
                    Some(body) => {
                        w.write_all(body)?;
                        w.write_all(b",\n  \"holders\": ")?;
                        serde_json::to_writer(&mut *w, &seen.pids)?;
                        write!(w, ",\n  \"locked\": \"{}\"\n}}", locked_word(&seen))?;
                    }
                    None => {
                        serde_json::to_writer_pretty(&mut *w, &Entry::Record(Listed::of(r, &seen)))?
                    }
                }
            }
            Loaded::Bad { id, path, problem } => serde_json::to_writer_pretty(
                &mut *w,
                &Entry::Unreadable {
                    id,
                    state: "unreadable",
                    path: path.to_string_lossy(),
                    problem,
                },
            )?,
        }
    }
    w.write_all(if loaded.is_empty() { b"]\n" } else { b"\n]\n" })
}

/// The bytes of a record file (a JSON object the record parse accepted)
/// without its closing brace and the JSON whitespace (RFC 8259 section 2)
/// around it, for [`write_listing`] to append `holders` and `locked`;
/// `None` when appending would not make that record plus the two keys:
/// no closing brace, an empty object, or a file that already names a
/// `"holders"` or `"locked"` anywhere (a key the record type ignores, or
/// a value that only looks like one: either way, serialized instead).
fn open_object(file: &[u8]) -> Option<&[u8]> {
    fn trim_end(b: &[u8]) -> &[u8] {
        let n = b
            .iter()
            .rposition(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
            .map_or(0, |i| i + 1);
        &b[..n]
    }
    let body = trim_end(trim_end(file).strip_suffix(b"}")?);
    let named = |key: &[u8]| memchr::memmem::find(file, key).is_some();
    if body.is_empty() || body.ends_with(b"{") || named(b"\"holders\"") || named(b"\"locked\"") {
        return None;
    }
    Some(body)
}

pub(super) fn locked_word(seen: &crate::model::evidence::LeaseSeen) -> &'static str {
    match seen.lock {
        Some(crate::model::evidence::FlockSeen::Shared) => "shared",
        Some(crate::model::evidence::FlockSeen::Exclusive) => "exclusive",
        None if seen.complete || !seen.pids.is_empty() => "none",
        None => "unknown",
    }
}

/// Which records a listing shows: `--state`, `--repo`, `--all`.
struct Filter {
    states: Vec<&'static str>,
    repo: Option<(String, Option<std::path::PathBuf>)>,
    removed: bool,
}

impl Filter {
    fn of(a: &Args) -> Filter {
        Filter {
            states: a.state.iter().map(|s| s.name()).collect(),
            // A path names a repository by its canonical directory, else by name.
            repo: a
                .repo
                .as_ref()
                .map(|r| (r.clone(), std::fs::canonicalize(r).ok())),
            // The table hides removed records unless asked; `--json` lists
            // them (scripts read tombstones there) unless `--state` picks.
            removed: a.all || a.json || a.state.contains(&StateArg::Removed),
        }
    }

    /// Whether the listing can show a record of `records/removed/`: a
    /// removed one, or a file there that cannot be read. When not, only
    /// the live directory is read ([`Registry::scan_live`]), so the default
    /// table costs what the live worktrees cost.
    fn reads_removed(&self) -> bool {
        if self.states.is_empty() {
            self.removed
        } else {
            self.states.contains(&"removed") || self.states.contains(&"unreadable")
        }
    }

    fn keeps(&self, state: &str, repo: Option<&str>) -> bool {
        if !self.states.is_empty() && !self.states.contains(&state) {
            return false;
        }
        if self.states.is_empty() && state == "removed" && !self.removed {
            return false;
        }
        match (&self.repo, repo) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some((name, canon)), Some(r)) => {
                let r = std::path::Path::new(r);
                canon
                    .as_ref()
                    .is_some_and(|c| r == c || r.starts_with(c) || c.starts_with(repo_top(r)))
                    || repo_name(r) == name.as_str()
            }
        }
    }
}

/// The directory a common git dir belongs to: `/x/repo` for `/x/repo/.git`,
/// the bare repository itself otherwise.
fn repo_top(common: &std::path::Path) -> &std::path::Path {
    match common.file_name() {
        Some(n) if n == ".git" => common.parent().unwrap_or(common),
        _ => common,
    }
}

/// The short name of a repository for the table: its directory's name,
/// without a `.git` suffix.
fn repo_name(common: &std::path::Path) -> String {
    let n = repo_top(common)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| common.to_string_lossy().into_owned());
    n.strip_suffix(".git").map(str::to_string).unwrap_or(n)
}

/// Returns `n` bytes for people: `512B`, `4.0K`, `1.5M`, `12G` (powers of
/// 1024, one decimal below 10).
pub(super) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "K", "M", "G", "T", "P"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    match u {
        0 => format!("{n}B"),
        _ if v < 10.0 => format!("{v:.1}{}", UNITS[u]),
        _ => format!("{v:.0}{}", UNITS[u]),
    }
}

/// Returns the age of RFC 3339 time `at` for people (`45s`, `12m`, `3h`,
/// `5d`), or `-` when it cannot be read.
fn age(at: &str, now: std::time::SystemTime) -> String {
    let Ok(t) = humantime::parse_rfc3339_weak(at.trim_end_matches('Z')) else {
        return "-".into();
    };
    let s = now.duration_since(t).map(|d| d.as_secs()).unwrap_or(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

/// The last measured size of record `r`'s worktree, in bytes: what its
/// removal reclaimed, for a removed record; else the record's `size` (the
/// last `lease du` or retire walk), if it was ever measured.
fn size_of(r: &Record) -> Option<u64> {
    match (&r.tombstone, &r.size) {
        (Some(t), _) if r.state == State::Removed => Some(t.bytes_reclaimed),
        (_, Some(s)) if r.state != State::Removed => Some(s.bytes),
        _ => None,
    }
}

pub(super) fn list(ctx: &crate::ops::Ctx, a: &Args) -> Result<u8> {
    let json = a.json;
    let filter = Filter::of(a);
    let Some(root) = ctx.existing_root()? else {
        if json {
            out_raw!("[]");
        } else {
            out!("no records");
        }
        return Ok(exit::OK);
    };
    let reg = Registry::new(root);
    // One scan: of live and shelved records, or of the live ones alone
    // when no removed one can be shown.
    // `--json` prints each record file's own bytes: keep them (only those
    // of the records shown).
    let mut loaded: Vec<(Loaded, Option<Vec<u8>>)> = reg
        .scan_raw(!filter.reads_removed())?
        .into_iter()
        .filter(|(l, _)| match l {
            Loaded::Ok(r) => filter.keeps(r.state.name(), Some(&r.repo)),
            Loaded::Bad { .. } => filter.keeps("unreadable", None),
        })
        .map(|(l, raw)| (l, raw.filter(|_| json)))
        .collect();
    // Oldest first, by creation time (RFC 3339 UTC sorts as text); an
    // unreadable record last, by id.
    loaded.sort_by(|x, y| {
        fn key(l: &Loaded) -> (u8, &str, &str) {
            match l {
                Loaded::Ok(r) => (0, &r.created_at, &r.id),
                Loaded::Bad { id, .. } => (1, "", id),
            }
        }
        key(&x.0).cmp(&key(&y.0))
    });
    // One /proc scan for every lease that can still be held.
    let ids: Vec<(u64, u64)> = loaded
        .iter()
        .filter_map(|(l, _)| match l {
            Loaded::Ok(r) if r.state != State::Removed => r.lease.as_ref().map(|l| l.id()),
            _ => None,
        })
        .collect();
    let seen = SeenLeases::of(&reg, &ids);
    if json {
        print_json(&loaded, &seen);
        return Ok(exit::OK);
    }
    if loaded.is_empty() {
        out!("no records");
        return Ok(exit::OK);
    }
    let now = std::time::SystemTime::now();
    out!(
        "{:<8}  {:<11}  {:<16}  {:<20}  {:>4}  {:>6}  {:<7}  {:<16}  WORKTREE",
        "ID",
        "STATE",
        "REPO",
        "BRANCH",
        "AGE",
        "SIZE",
        "HOLDERS",
        "OWNER"
    );
    for (l, _) in &loaded {
        match l {
            Loaded::Ok(r) => {
                // A count of visible holders; `locked` when only
                // /proc/locks shows the lease held, `?` when this /proc
                // cannot tell.
                let seen = seen.of_record(r);
                let holders = match (seen.pids.len(), locked_word(&seen)) {
                    (0, "shared" | "exclusive") => "locked".to_string(),
                    (0, "unknown") => "?".to_string(),
                    (n, _) => n.to_string(),
                };
                let size = match size_of(r) {
                    Some(b) if a.bytes => b.to_string(),
                    Some(b) => human_bytes(b),
                    None => "-".into(),
                };
                out!(
                    "{:<8}  {:<11}  {:<16}  {:<20}  {:>4}  {:>6}  {:<7}  {:<16}  {}",
                    super::short_id(&r.id),
                    r.state.name(),
                    repo_name(std::path::Path::new(&r.repo)),
                    r.branch.as_deref().unwrap_or("(detached)"),
                    age(&r.created_at, now),
                    size,
                    holders,
                    format!("{}:{}", r.owner.kind, r.owner.name),
                    format!(
                        "{}{}",
                        r.worktree.as_ref().map(|w| w.path.as_str()).unwrap_or("-"),
                        if r.intent.is_some() && r.state != State::Removed {
                            "  (retire when free: pending)"
                        } else {
                            ""
                        }
                    ),
                );
            }
            Loaded::Bad { id, problem, .. } => {
                out!(
                    "{:<8}  {:<11}  {problem}",
                    super::short_id(id),
                    "unreadable"
                );
            }
        }
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ages_for_people() {
        assert_eq!(human_bytes(0), "0B");
        assert_eq!(human_bytes(1023), "1023B");
        assert_eq!(human_bytes(1024), "1.0K");
        assert_eq!(human_bytes(1536 * 1024), "1.5M");
        assert_eq!(human_bytes(12 * 1024 * 1024 * 1024), "12G");
        let now = humantime::parse_rfc3339("2026-12-02T12:00:00Z").expect("a time");
        assert_eq!(age("2026-12-02T11:59:15Z", now), "45s");
        assert_eq!(age("2026-12-02T11:48:00Z", now), "12m");
        assert_eq!(age("2026-12-02T09:00:00Z", now), "3h");
        assert_eq!(age("2026-11-27T12:00:00Z", now), "5d");
        assert_eq!(age("garbage", now), "-");
    }

    #[test]
    fn a_record_file_is_printed_as_it_is_only_when_two_keys_can_be_appended() {
        // Pretty (as lease writes it), compact, with whitespace after.
        assert_eq!(
            open_object(b"{\n  \"id\": \"a\"\n}\n"),
            Some(&b"{\n  \"id\": \"a\""[..])
        );
        assert_eq!(
            open_object(b"{\"id\":\"a\"} \r\n\t"),
            Some(&b"{\"id\":\"a\""[..])
        );
        // Nothing to append to, or the keys already there (as a key the
        // record type ignores, or as a value): serialized instead.
        for file in [
            &b""[..],
            b"{}",
            b"{ \n}",
            b"{\"id\": \"a\"",
            b"[1]",
            b"{\"id\": \"a\", \"holders\": [1]}",
            b"{\"id\": \"a\", \"locked\": \"none\"}",
            b"{\"branch\": \"locked\"}",
        ] {
            assert_eq!(open_object(file), None, "{}", String::from_utf8_lossy(file));
        }
    }

    #[test]
    fn only_a_listing_that_can_show_removed_records_reads_them() {
        let args = |states: &[StateArg], all: bool, json: bool| Args {
            state: states.to_vec(),
            repo: None,
            all,
            bytes: false,
            json,
        };
        let reads = |a: Args| Filter::of(&a).reads_removed();
        assert!(!reads(args(&[], false, false)), "the default table");
        assert!(reads(args(&[], true, false)), "--all");
        assert!(reads(args(&[], false, true)), "--json lists them");
        assert!(
            !reads(args(&[StateArg::Active], true, true)),
            "--state active"
        );
        assert!(reads(args(&[StateArg::Removed], false, false)));
        assert!(reads(args(&[StateArg::Unreadable], false, false)));
        assert!(reads(args(
            &[StateArg::Active, StateArg::Removed],
            false,
            true
        )));
    }

    #[test]
    fn repositories_are_named_by_their_directory() {
        assert_eq!(
            repo_name(std::path::Path::new("/src/ripgrep/.git")),
            "ripgrep"
        );
        assert_eq!(
            repo_name(std::path::Path::new("/srv/git/lease.git")),
            "lease"
        );
    }
}
