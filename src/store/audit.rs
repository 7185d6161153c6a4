//! The append-only audit log: one JSON line per transition or held retire,
//! each carrying the sha256 of the line before it, so a torn or edited line is
//! detected by [`verify`], never rewritten.
//!
//! Lines about a record carry its per-record sequence number `seq`. The
//! registry writes a record before its lines, keeps the lines of its latest
//! write in the record (`unaudited`), and appends any a crash lost before the
//! record's next change (`registry::Registry::update`), marked `recovered`.

use std::fs;
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{IoResultExt, Result};
use crate::model::fmt::{hex, sha256_hex};
use crate::model::record::Event;
use crate::store::root::StateRoot;

/// The `prev` of the first line: 64 zeros.
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The longest audit line lease reads back (bytes; docs/record.md
/// "Bounds"). Event details are bounded
/// ([`crate::model::record::bound_details`]), so a line lease wrote stays far
/// below it; a longer line is a break (`too-long`), and an append after one
/// fails rather than read without end.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// How far back from the end an append looks for the last complete line
/// (bytes): room for a run of torn lines before it.
const MAX_TAIL_BYTES: u64 = 4 * MAX_LINE_BYTES as u64;

/// A line that a crash or a full disk cut short (or anything else that is
/// not a line of the chain), acknowledged by the next line lease appends
/// (its `torn` list), so [`verify`] can tell a recovered tear from an edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Torn {
    /// Its length in bytes, without the newline that ends it.
    pub bytes: u64,
    /// The sha256 of those bytes, lowercase hex.
    pub sha256: String,
}

#[derive(Serialize)]
struct Line<'a> {
    time: String,
    #[serde(flatten)]
    event: &'a Event,
    /// Torn lines between this line and the one `prev` names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    torn: Vec<Torn>,
    prev: String,
}

/// The audit log of one state root.
#[derive(Debug)]
pub struct Audit {
    path: PathBuf,
}

impl Audit {
    /// Opens the log of `root` (created on first append).
    pub fn new(root: &StateRoot) -> Audit {
        Audit {
            path: root.audit_log(),
        }
    }

    /// Appends one line, under an exclusive flock on the log, and fsyncs it.
    ///
    /// The log must be a regular file (never followed, never waited on). If
    /// it does not end in a line of the chain (a crash or `ENOSPC` tore the
    /// last write, SPEC "Bad input and faults"), the new line starts on a
    /// line of its own, names the torn lines in `torn` and chains (`prev`)
    /// to the last complete line before them.
    ///
    /// # Errors
    /// [`crate::Error::Io`] naming the log when it cannot be opened, is not
    /// a regular file, has no complete line in its last
    /// `4 * MAX_LINE_BYTES` bytes, or a write or fsync fails (the line may
    /// then be torn; the next append recovers).
    pub fn append(&self, event: &Event) -> Result<()> {
        self.append_with(event, true)
    }

    /// [`Audit::append`], fsynced only when `durable` (SPEC invariant 7: the
    /// lines of a session's start and end need none; a later fsynced line
    /// makes them durable too, since fsync flushes the whole file).
    pub fn append_with(&self, event: &Event, durable: bool) -> Result<()> {
        let mut f = fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(crate::os::fs::UNTRUSTED_OPEN_FLAGS)
            .open(&self.path)
            .map_err(crate::os::fs::symlink_is_invalid)
            .at_do("cannot open", &self.path)?;
        crate::os::fs::check_regular(&f).at_do("cannot use", &self.path)?;
        f.lock().at_do("cannot lock", &self.path)?;
        let tail = read_tail(&mut f).at_do("cannot read", &self.path)?;
        let line = Line {
            time: crate::model::fmt::now(),
            event,
            torn: tail.torn.iter().map(|t| torn_of(t)).collect(),
            prev: tail
                .last
                .as_deref()
                .map_or_else(|| GENESIS.to_string(), sha256_hex),
        };
        let mut bytes = Vec::new();
        if !tail.ends_with_newline {
            bytes.push(b'\n');
        }
        serde_json::to_writer(&mut bytes, &line).expect("an audit line serializes");
        bytes.push(b'\n');
        crate::os::fault::write().at_do("cannot write", &self.path)?;
        crate::os::fault::write_torn(&mut f, &bytes).at_do("cannot write", &self.path)?;
        f.write_all(&bytes).at_do("cannot write", &self.path)?;
        if !durable {
            return Ok(());
        }
        crate::os::atomic::fsync(&f, &self.path, "the appended audit line")
            .at_do("cannot fsync", &self.path)
    }
}

fn torn_of(bytes: &[u8]) -> Torn {
    Torn {
        bytes: bytes.len() as u64,
        sha256: sha256_hex(bytes),
    }
}

/// What the end of the log holds: the last line of the chain, the torn
/// lines after it, and whether the file ends with a newline.
#[derive(Debug, Default, PartialEq)]
struct Tail {
    /// The last complete chain line (without its newline); `None` when
    /// there is none (an empty log, or only torn lines).
    last: Option<Vec<u8>>,
    /// The lines after it that are not chain lines, in order.
    torn: Vec<Vec<u8>>,
    /// False when the log is non-empty and its last byte is not `\n`.
    ends_with_newline: bool,
}

/// True if `line` is a line of the chain: a JSON object with a string `prev`.
fn is_chain_line(line: &[u8]) -> bool {
    line.len() <= MAX_LINE_BYTES
        && serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .is_some_and(|v| v.get("prev").is_some_and(serde_json::Value::is_string))
}

/// Reads the end of the log backwards, in growing windows of at most
/// [`MAX_TAIL_BYTES`], until it finds the last chain line.
fn read_tail(f: &mut fs::File) -> std::io::Result<Tail> {
    let len = f.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(Tail {
            ends_with_newline: true,
            ..Tail::default()
        });
    }
    let mut window: u64 = 4096;
    loop {
        let start = len.saturating_sub(window);
        f.seek(SeekFrom::Start(start))?;
        // The window's size reserved: one read, not a doubling series.
        let mut buf = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
        (&mut *f).take(len - start).read_to_end(&mut buf)?;
        let ends_with_newline = buf.last() == Some(&b'\n');
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let mut lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
        // The first piece of a window that does not start the file may be
        // the end of a longer line: never judged.
        let whole_first = start == 0;
        let first = if whole_first { 0 } else { 1 };
        let mut torn: Vec<Vec<u8>> = Vec::new();
        while lines.len() > first {
            let l = lines.pop().unwrap_or_default();
            if is_chain_line(l) {
                torn.reverse();
                return Ok(Tail {
                    last: Some(l.to_vec()),
                    torn,
                    ends_with_newline,
                });
            }
            torn.push(l.to_vec());
        }
        if whole_first {
            torn.reverse();
            return Ok(Tail {
                last: None,
                torn,
                ends_with_newline,
            });
        }
        if window >= MAX_TAIL_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "no complete audit line in its last {MAX_TAIL_BYTES} bytes; run `lease audit verify`"
                ),
            ));
        }
        window = (window * 4).min(MAX_TAIL_BYTES);
    }
}

/// How the chain breaks at a line ([`verify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BreakKind {
    /// Not JSON (cut short by a crash or a full disk, or garbage), and no
    /// later line records the recovery.
    Torn,
    /// JSON, but not a line of the chain (no string `prev`), and no later
    /// line records the recovery.
    Malformed,
    /// Longer than [`MAX_LINE_BYTES`]: lease never writes one.
    TooLong,
    /// Its `prev` is not the sha256 of the line before it and names no
    /// other line of the log: the line before it was changed or removed
    /// (or this line's `prev` was), or its `torn` list does not match the
    /// lines before it.
    Edited,
    /// Its `prev` names another line of the log than the one before it:
    /// lines were moved.
    Reordered,
    /// The same bytes as an earlier line: a line was copied.
    Duplicate,
    /// The first line does not start the chain (its `prev` is not 64
    /// zeros): the head of the log was cut off.
    Truncated,
}

impl BreakKind {
    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            BreakKind::Torn => "torn",
            BreakKind::Malformed => "malformed",
            BreakKind::TooLong => "too-long",
            BreakKind::Edited => "edited",
            BreakKind::Reordered => "reordered",
            BreakKind::Duplicate => "duplicate",
            BreakKind::Truncated => "truncated",
        }
    }
}

/// The first break of the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Break {
    /// Its 1-based line number.
    pub line: u64,
    /// What is wrong there.
    pub kind: BreakKind,
    /// In words.
    pub detail: String,
}

/// A torn line a later line recorded the recovery of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovered {
    /// The torn line's 1-based number.
    pub line: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// The line that records the recovery.
    pub recovered_at: u64,
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verified {
    /// How many lines the log has (a last line without a newline counts).
    pub lines: u64,
    /// The first break, or `None` when the chain is intact.
    pub broken: Option<Break>,
    /// Torn lines before the first break that later lines recovered from.
    pub recovered: Vec<Recovered>,
}

/// Reads the log at `path` line by line (each at most [`MAX_LINE_BYTES`]
/// kept), calling `f(number, line, ended)` for each; `line` is `None` for a
/// line over the bound, `ended` is false for a last line with no newline.
fn each_line(path: &Path, mut f: impl FnMut(u64, Option<&[u8]>, bool)) -> std::io::Result<()> {
    let file = crate::os::fs::open_regular(path)?;
    let mut r = std::io::BufReader::new(file);
    let mut line: Vec<u8> = Vec::new();
    let mut too_long = false;
    let mut n = 0u64;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            if !line.is_empty() || too_long {
                n += 1;
                f(n, (!too_long).then_some(line.as_slice()), false);
            }
            return Ok(());
        }
        let (chunk, ended) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > MAX_LINE_BYTES {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = ended.unwrap_or(buf.len());
        r.consume(used);
        if ended.is_some() {
            n += 1;
            f(n, (!too_long).then_some(line.as_slice()), true);
            line.clear();
            too_long = false;
        }
    }
}

/// Walks the hash chain of the log at `path` (SPEC "Bad input and faults":
/// `lease audit verify`) and returns the first break, if any, with the
/// torn lines that later lines recovered from. A torn line is recovered
/// when the next chain line lists it (and every torn line between them)
/// in `torn`, in order, by length and sha256, and chains to the line before
/// them; a torn last line is a break until the next append recovers it.
///
/// # Errors
/// [`crate::Error::Io`] when the log cannot be read or is not a regular file.
pub fn verify(path: &Path) -> Result<Verified> {
    // First pass: the line number of each line's hash, for `reordered`.
    let mut first_of: std::collections::HashMap<[u8; 32], u64> = std::collections::HashMap::new();
    each_line(path, |n, l, _| {
        if let Some(l) = l {
            first_of.entry(Sha256::digest(l).into()).or_insert(n);
        }
    })
    .at_do("cannot read", path)?;
    let mut out = Verified {
        lines: 0,
        broken: None,
        recovered: Vec::new(),
    };
    let mut prev = GENESIS.to_string();
    let mut prev_line = 0u64;
    // Lines since the last chain line that are not chain lines.
    let mut pending: Vec<(u64, Torn, BreakKind)> = Vec::new();
    each_line(path, |n, l, _| {
        out.lines = n;
        if out.broken.is_some() {
            return;
        }
        let brk = |kind, detail: String| Some(Break { line: n, kind, detail });
        let Some(l) = l else {
            out.broken = brk(
                BreakKind::TooLong,
                format!("longer than {MAX_LINE_BYTES} bytes; lease never writes such a line"),
            );
            return;
        };
        let v: Option<serde_json::Value> = serde_json::from_slice(l).ok();
        let Some(p) = v
            .as_ref()
            .and_then(|v| v.get("prev"))
            .and_then(serde_json::Value::as_str)
        else {
            let kind = if v.is_some() {
                BreakKind::Malformed
            } else {
                BreakKind::Torn
            };
            pending.push((n, torn_of(l), kind));
            return;
        };
        let hash: [u8; 32] = Sha256::digest(l).into();
        let acked: Vec<Torn> = v
            .as_ref()
            .and_then(|v| v.get("torn"))
            .and_then(|t| serde_json::from_value(t.clone()).ok())
            .unwrap_or_default();
        let seen: Vec<Torn> = pending.iter().map(|(_, t, _)| t.clone()).collect();
        if acked != seen {
            out.broken = match pending.first() {
                Some((line, t, kind)) if acked.is_empty() => Some(Break {
                    line: *line,
                    kind: *kind,
                    detail: format!(
                        "{} bytes that are not an audit line, and no later line records a recovery",
                        t.bytes
                    ),
                }),
                _ => brk(
                    BreakKind::Edited,
                    format!(
                        "it records {} torn line(s) before it, the log has {}: lines before it were changed or removed",
                        acked.len(),
                        seen.len()
                    ),
                ),
            };
            return;
        }
        if p != prev {
            let named = hex_to_hash(p).and_then(|h| first_of.get(&h).copied());
            out.broken = if first_of.get(&hash).is_some_and(|&first| first < n) {
                brk(
                    BreakKind::Duplicate,
                    format!("the same bytes as line {}", first_of[&hash]),
                )
            } else if let Some(other) = named {
                brk(
                    BreakKind::Reordered,
                    format!(
                        "its prev names line {other}, not line {prev_line}: lines were moved"
                    ),
                )
            } else if prev_line == 0 && pending.is_empty() {
                brk(
                    BreakKind::Truncated,
                    "the first line does not start the chain (prev is not 64 zeros): lines before it were removed".into(),
                )
            } else {
                brk(
                    BreakKind::Edited,
                    format!(
                        "its prev is not the sha256 of line {prev_line}: that line was changed or removed, or this one was"
                    ),
                )
            };
            return;
        }
        for (line, t, _) in pending.drain(..) {
            out.recovered.push(Recovered {
                line,
                bytes: t.bytes,
                recovered_at: n,
            });
        }
        prev = hex(&hash);
        prev_line = n;
    })
    .at_do("cannot read", path)?;
    if out.broken.is_none()
        && let Some((line, t, kind)) = pending.first()
    {
        out.broken = Some(Break {
            line: *line,
            kind: *kind,
            detail: format!(
                "{} bytes that are not an audit line at the end of the log (a torn write); the next append records the recovery",
                t.bytes
            ),
        });
    }
    Ok(out)
}

fn hex_to_hash(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Returns the `seq` of the last line about record `id` in the log at `path`
/// (0 if there is none, or the log does not exist). Reads the whole log,
/// line by line: only a recovery after a crash calls it.
pub fn last_seq(path: &Path, id: &str) -> Result<u64> {
    let mut seq = 0;
    let read = each_line(path, |_, l, _| {
        let Some(v) = l.and_then(|l| serde_json::from_slice::<serde_json::Value>(l).ok()) else {
            return;
        };
        if v.get("id").and_then(|i| i.as_str()) == Some(id) {
            seq = v
                .get("seq")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
        }
    });
    match read {
        Ok(()) => Ok(seq),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e).at_do("cannot read", path),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::record::State;

    fn event(id: &str) -> Event {
        Event {
            event: "transition".into(),
            id: id.into(),
            from: Some(State::Active),
            to: Some(State::Terminal),
            reasons: vec![],
            detail: vec![],
            seq: 1,
            recovered: false,
        }
    }

    #[test]
    fn last_seq_finds_the_last_line_of_a_record() {
        let t = tempfile::tempdir().unwrap();
        let a = Audit {
            path: t.path().join("audit.jsonl"),
        };
        assert_eq!(last_seq(&a.path, "r1").unwrap(), 0, "no log yet");
        for (id, seq) in [("r1", 1), ("r2", 1), ("r1", 2), ("r2", 2)] {
            a.append(&Event { seq, ..event(id) }).unwrap();
        }
        assert_eq!(last_seq(&a.path, "r1").unwrap(), 2);
        assert_eq!(last_seq(&a.path, "r3").unwrap(), 0);
    }

    fn log(n: usize) -> (tempfile::TempDir, Audit) {
        let t = tempfile::tempdir().unwrap();
        let a = Audit {
            path: t.path().join("audit.jsonl"),
        };
        for i in 0..n {
            a.append(&event(&format!("r{i}"))).unwrap();
        }
        (t, a)
    }

    fn lines(a: &Audit) -> Vec<Vec<u8>> {
        let b = fs::read(&a.path).unwrap();
        b.split(|&c| c == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    }

    fn write_lines(a: &Audit, ls: &[Vec<u8>]) {
        let mut out = Vec::new();
        for l in ls {
            out.extend_from_slice(l);
            out.push(b'\n');
        }
        fs::write(&a.path, out).unwrap();
    }

    fn broken(a: &Audit) -> Option<(u64, BreakKind)> {
        verify(&a.path).unwrap().broken.map(|b| (b.line, b.kind))
    }

    #[test]
    fn chain_detects_edits() {
        let (_t, a) = log(3);
        assert_eq!(verify(&a.path).unwrap().broken, None);
        assert_eq!(verify(&a.path).unwrap().lines, 3);
        let text = fs::read_to_string(&a.path).unwrap().replacen("r1", "rX", 1);
        fs::write(&a.path, text).unwrap();
        assert_eq!(
            broken(&a),
            Some((3, BreakKind::Edited)),
            "the line after the edit breaks"
        );
    }

    #[test]
    fn a_moved_a_copied_a_removed_and_a_cut_head_line_are_each_named() {
        let (_t, a) = log(4);
        let l = lines(&a);
        write_lines(
            &a,
            &[l[0].clone(), l[2].clone(), l[1].clone(), l[3].clone()],
        );
        assert_eq!(broken(&a), Some((2, BreakKind::Reordered)));
        write_lines(
            &a,
            &[l[0].clone(), l[1].clone(), l[1].clone(), l[2].clone()],
        );
        assert_eq!(broken(&a), Some((3, BreakKind::Duplicate)));
        write_lines(&a, &[l[0].clone(), l[2].clone(), l[3].clone()]);
        assert_eq!(broken(&a), Some((2, BreakKind::Edited)), "a removed line");
        write_lines(&a, &[l[1].clone(), l[2].clone(), l[3].clone()]);
        assert_eq!(broken(&a), Some((1, BreakKind::Truncated)));
        write_lines(
            &a,
            &[l[0].clone(), b"{\"no\":\"prev\"}".to_vec(), l[1].clone()],
        );
        assert_eq!(broken(&a), Some((2, BreakKind::Malformed)));
        write_lines(&a, &l);
        assert_eq!(broken(&a), None, "restored");
    }

    #[test]
    fn a_line_over_the_bound_is_too_long_and_never_read_whole() {
        let (_t, a) = log(1);
        let mut b = fs::read(&a.path).unwrap();
        b.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 1));
        b.push(b'\n');
        fs::write(&a.path, &b).unwrap();
        let v = verify(&a.path).unwrap();
        assert_eq!(v.lines, 2);
        assert_eq!(
            v.broken.map(|b| (b.line, b.kind)),
            Some((2, BreakKind::TooLong))
        );
    }

    #[test]
    fn after_a_torn_write_the_next_line_starts_on_its_own_line_and_records_the_recovery() {
        let (_t, a) = log(2);
        let good = lines(&a);
        // A write cut short: half a line, no newline.
        let mut b = fs::read(&a.path).unwrap();
        b.extend_from_slice(b"{\"time\":\"2026-01-01T00:00:00Z\",\"event\":\"tra");
        fs::write(&a.path, &b).unwrap();
        assert_eq!(
            broken(&a),
            Some((3, BreakKind::Torn)),
            "torn until the next append"
        );
        a.append(&event("r2")).unwrap();
        let after = fs::read(&a.path).unwrap();
        assert!(after.starts_with(&b), "nothing before it is rewritten");
        let rest = &after[b.len()..];
        assert_eq!(rest[0], b'\n', "the torn line is ended, not glued to");
        let line: serde_json::Value = serde_json::from_slice(&rest[1..]).unwrap();
        assert_eq!(line["id"], "r2");
        assert_eq!(
            line["prev"],
            sha256_hex(&good[1]),
            "chains to the last good line"
        );
        assert_eq!(line["torn"][0]["bytes"], 43);
        let v = verify(&a.path).unwrap();
        assert_eq!(v.broken, None, "a recovered tear is not a break");
        assert_eq!(
            v.recovered,
            vec![Recovered {
                line: 3,
                bytes: 43,
                recovered_at: 4
            }]
        );
        a.append(&event("r3")).unwrap();
        assert_eq!(broken(&a), None);
        assert_eq!(last_seq(&a.path, "r3").unwrap(), 1);
    }

    #[test]
    fn two_torn_writes_in_a_row_are_both_recovered() {
        let (_t, a) = log(1);
        let mut b = fs::read(&a.path).unwrap();
        // A torn line, then a recovery whose own write tore.
        b.extend_from_slice(b"{\"event\":\"one\n{\"event\":\"two");
        fs::write(&a.path, &b).unwrap();
        a.append(&event("r1")).unwrap();
        let v = verify(&a.path).unwrap();
        assert_eq!(v.broken, None);
        assert_eq!(
            v.recovered.iter().map(|r| r.line).collect::<Vec<_>>(),
            [2, 3]
        );
        // The torn lines removed by hand, the acknowledgement kept: an edit.
        let l = lines(&a);
        write_lines(&a, &[l[0].clone(), l[3].clone()]);
        assert_eq!(broken(&a), Some((2, BreakKind::Edited)));
    }

    #[test]
    fn a_complete_last_line_without_its_newline_is_not_torn() {
        let (_t, a) = log(2);
        let mut b = fs::read(&a.path).unwrap();
        b.pop();
        fs::write(&a.path, &b).unwrap();
        assert_eq!(broken(&a), None);
        a.append(&event("r2")).unwrap();
        let l = lines(&a);
        assert_eq!(l.len(), 3);
        let v: serde_json::Value = serde_json::from_slice(&l[2]).unwrap();
        assert!(v.get("torn").is_none(), "{v}");
        assert_eq!(broken(&a), None);
    }

    #[test]
    fn a_log_that_is_a_fifo_or_a_symlink_is_refused_without_waiting() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("audit.jsonl");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .unwrap();
        let a = Audit { path: fifo.clone() };
        let e = a.append(&event("r0")).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        assert!(verify(&fifo).unwrap_err().to_string().contains("a FIFO"));
        assert!(last_seq(&fifo, "r0").is_err());
        fs::remove_file(&fifo).unwrap();
        let real = t.path().join("real.jsonl");
        fs::write(&real, b"").unwrap();
        std::os::unix::fs::symlink(&real, &fifo).unwrap();
        let e = a.append(&event("r0")).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(fs::read(&real).unwrap(), b"", "nothing written through it");
    }

    #[test]
    fn a_last_line_longer_than_the_read_window_chains() {
        let t = tempfile::tempdir().unwrap();
        let a = Audit {
            path: t.path().join("audit.jsonl"),
        };
        let mut long = event("r0");
        long.detail = vec!["x".repeat(20_000)];
        a.append(&long).unwrap();
        a.append(&event("r1")).unwrap();
        assert_eq!(broken(&a), None);
    }

    #[test]
    fn verify_names_a_torn_tail_and_an_empty_first_line() {
        let (_t, a) = log(3);
        let good = fs::read(&a.path).unwrap();
        let mut torn = good.clone();
        torn.extend_from_slice(b"{\"event\":\"tor");
        fs::write(&a.path, &torn).unwrap();
        assert_eq!(
            broken(&a),
            Some((4, BreakKind::Torn)),
            "the torn fourth line"
        );
        let mut blank = b"\n".to_vec();
        blank.extend_from_slice(&good);
        fs::write(&a.path, &blank).unwrap();
        assert_eq!(
            broken(&a),
            Some((1, BreakKind::Torn)),
            "an empty first line"
        );
    }
}
