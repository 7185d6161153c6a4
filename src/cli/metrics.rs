//! `lease metrics [--out FILE]`: the state root in Prometheus text format.

use std::path::Path;

use super::exit;
use crate::error::{Error, Result};
use crate::store::registry::Registry;

/// The arguments of `lease metrics`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Write to FILE atomically (a temp file in its directory, then rename) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub(super) out: Option<std::path::PathBuf>,
    /// Print the counts as one JSON object instead (with --out: write the text format there and print what was written).
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease metrics`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    metrics(ctx, a.out.as_deref(), a.json)
}

/// Prints the metrics, or writes them to `out` atomically with mode 0644 so
/// node_exporter (often another user) can read them. Creates no state root.
pub(super) fn metrics(ctx: &crate::ops::Ctx, out: Option<&Path>, json: bool) -> Result<u8> {
    let snapshot = match ctx.existing_root()? {
        Some(root) => crate::ops::metrics::gather(&Registry::new(root))?,
        None => crate::ops::metrics::empty(),
    };
    let text = crate::ops::metrics::render(&snapshot);
    match out {
        None if json => out_raw!(
            "{}",
            serde_json::to_string_pretty(&snapshot_json(&snapshot)).expect("json serializes")
        ),
        None => {
            use std::io::Write as _;
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
        }
        Some(path) => {
            // `write_atomic` needs a parent to rename in and fsync: make a
            // bare file name relative to the current directory explicit.
            let path = std::path::absolute(path)
                .map_err(|e| Error::Usage(format!("cannot resolve `{}`: {e}", path.display())))?;
            crate::os::atomic::write_atomic_mode(&path, text.as_bytes(), 0o644)?;
            if json {
                out_raw!(
                    "{}",
                    serde_json::json!({"written": path.to_string_lossy(), "bytes": text.len()})
                );
            }
        }
    }
    Ok(exit::OK)
}

/// The counts of `s` as JSON: `records` by state name, `unreadable`,
/// `archives`, `archive_bytes`, `reclaimed_bytes` (bytes), and
/// `worktree_bytes` by state name (the last measured sizes, bytes).
fn snapshot_json(s: &crate::ops::metrics::Snapshot) -> serde_json::Value {
    let records: serde_json::Map<String, serde_json::Value> = crate::model::record::State::ALL
        .iter()
        .zip(s.records)
        .map(|(st, n)| (st.name().to_string(), serde_json::json!(n)))
        .collect();
    let worktree_bytes: serde_json::Map<String, serde_json::Value> =
        crate::model::record::State::ALL
            .iter()
            .zip(s.worktree_bytes)
            .map(|(st, n)| (st.name().to_string(), serde_json::json!(n)))
            .collect();
    serde_json::json!({
        "records": records,
        "worktree_bytes": worktree_bytes,
        "unreadable": s.unreadable,
        "archives": s.archives,
        "archive_bytes": s.archive_bytes,
        "reclaimed_bytes": s.reclaimed_bytes,
    })
}
