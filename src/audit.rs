//! The append-only audit log: one JSON line per transition or held retire,
//! each carrying the sha256 of the line before it, so a torn or edited line is
//! detected by [`verify`], never rewritten.
//!
//! Lines about a record carry its per-record sequence number `seq`. The
//! registry writes a record before its lines, keeps the lines of its latest
//! write in the record (`unaudited`), and appends any a crash lost before the
//! record's next change (`registry::Registry::update`), marked `recovered`.

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{IoResultExt, Result};
use crate::paths::StateRoot;
use crate::plan::HoldReason;
use crate::registry::State;

/// The `prev` of the first line: 64 zeros.
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One thing that happened to a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// `create`, `transition`, `held`, `archived`, `removed`, ...
    pub event: String,
    /// The record id.
    pub id: String,
    /// State before, for transitions.
    pub from: Option<State>,
    /// State after.
    pub to: Option<State>,
    /// Reason codes, for holds.
    pub reasons: Vec<HoldReason>,
    /// Free-form evidence.
    pub detail: Vec<String>,
    /// The record's sequence number of this event (1 for `create`); 0 for
    /// lines about no record (`repair`) and in logs written before it existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seq: u64,
    /// True on a line appended late because a crash lost it after its record
    /// was written; `time` is then when it was appended.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Event {
    /// An event about record `id` with no state change.
    pub fn note(event: &str, id: &str, reasons: Vec<HoldReason>, detail: Vec<String>) -> Event {
        Event {
            event: event.into(),
            id: id.into(),
            from: None,
            to: None,
            reasons,
            detail,
            seq: 0,
            recovered: false,
        }
    }
}

#[derive(Serialize)]
struct Line<'a> {
    time: String,
    #[serde(flatten)]
    event: &'a Event,
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
    pub fn append(&self, event: &Event) -> Result<()> {
        let mut f = fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.path)
            .at_do("cannot open", &self.path)?;
        f.lock().at_do("cannot lock", &self.path)?;
        let prev = last_line(&mut f)
            .at_do("cannot read", &self.path)?
            .map_or_else(|| GENESIS.to_string(), |l| sha256_hex(&l));
        let line = Line {
            time: crate::registry::now(),
            event,
            prev,
        };
        let mut bytes = serde_json::to_vec(&line).expect("an audit line serializes");
        bytes.push(b'\n');
        crate::fault::write().at_do("cannot write", &self.path)?;
        f.write_all(&bytes).at_do("cannot write", &self.path)?;
        f.sync_all().at_do("cannot fsync", &self.path)
    }
}

/// Returns the bytes of the last complete line (without its newline), if any.
fn last_line(f: &mut fs::File) -> std::io::Result<Option<Vec<u8>>> {
    let len = f.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(None);
    }
    let mut window: u64 = 4096;
    loop {
        let start = len.saturating_sub(window);
        f.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if let Some(nl) = body.iter().rposition(|&b| b == b'\n') {
            return Ok(Some(body[nl + 1..].to_vec()));
        }
        if start == 0 {
            return Ok(Some(body.to_vec()));
        }
        window *= 4;
    }
}

/// Returns the lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Formats bytes as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks the hash chain of a log; returns the 1-based number of the first
/// line whose `prev` does not match, or that is not JSON, if any.
pub fn verify(path: &Path) -> Result<Option<usize>> {
    let bytes = fs::read(path).at_do("cannot read", path)?;
    let mut prev = GENESIS.to_string();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() && i > 0 {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            return Ok(Some(i + 1));
        };
        if v.get("prev").and_then(|p| p.as_str()) != Some(prev.as_str()) {
            return Ok(Some(i + 1));
        }
        prev = sha256_hex(line);
    }
    Ok(None)
}

/// Returns the `seq` of the last line about record `id` in the log at `path`
/// (0 if there is none, or the log does not exist). Reads the whole log: only
/// a recovery after a crash calls it.
pub fn last_seq(path: &Path, id: &str) -> Result<u64> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).at_do("cannot read", path),
    };
    for line in bytes.rsplit(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        if v.get("id").and_then(|i| i.as_str()) == Some(id) {
            return Ok(v
                .get("seq")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0));
        }
    }
    Ok(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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

    #[test]
    fn chain_detects_edits() {
        let t = tempfile::tempdir().unwrap();
        let a = Audit {
            path: t.path().join("audit.jsonl"),
        };
        for i in 0..3 {
            a.append(&event(&format!("r{i}"))).unwrap();
        }
        assert_eq!(verify(&a.path).unwrap(), None);
        let text = fs::read_to_string(&a.path).unwrap().replacen("r1", "rX", 1);
        fs::write(&a.path, text).unwrap();
        assert_eq!(
            verify(&a.path).unwrap(),
            Some(3),
            "the line after the edit breaks"
        );
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
        assert_eq!(verify(&a.path).unwrap(), None);
    }

    #[test]
    fn verify_names_a_torn_tail_and_an_empty_first_line() {
        let t = tempfile::tempdir().unwrap();
        let a = Audit {
            path: t.path().join("audit.jsonl"),
        };
        for i in 0..3 {
            a.append(&event(&format!("r{i}"))).unwrap();
        }
        let good = fs::read(&a.path).unwrap();
        let mut torn = good.clone();
        torn.extend_from_slice(b"{\"event\":\"tor");
        fs::write(&a.path, &torn).unwrap();
        assert_eq!(verify(&a.path).unwrap(), Some(4), "the torn fourth line");
        let mut blank = b"\n".to_vec();
        blank.extend_from_slice(&good);
        fs::write(&a.path, &blank).unwrap();
        assert_eq!(verify(&a.path).unwrap(), Some(1), "an empty first line");
    }
}
