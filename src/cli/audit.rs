//! `lease audit verify [--json]`: the audit log's hash chain, checked.

use super::exit;
use crate::error::Result;
use crate::store::root::StateRoot;

/// The actions of `lease audit`.
#[derive(Debug, clap::Subcommand)]
pub(super) enum AuditCmd {
    /// Walk the audit log's hash chain: exit 0 when intact, 3 at the first
    /// break (line and kind: torn, malformed, too-long, edited, reordered,
    /// duplicate, truncated).
    ///
    /// A torn line (a crash or a full disk cut a write short) that the next
    /// line records the recovery of is reported, not a break. Reads only.
    Verify {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Walks the chain of `<state root>/audit.jsonl` ([`crate::store::audit::verify`]):
/// exit 0 when it is intact (no state root or no log yet counts: nothing
/// was written), 3 at the first break. Writes nothing.
pub(super) fn verify(ctx: &crate::ops::Ctx, json: bool) -> Result<u8> {
    let root = ctx.existing_root()?;
    let path = match &root {
        Some(r) => r.audit_log(),
        None => StateRoot::locate()?.join("audit.jsonl"),
    };
    let present = root.is_some() && std::fs::symlink_metadata(&path).is_ok();
    let v = if present {
        crate::store::audit::verify(&path)?
    } else {
        crate::store::audit::Verified {
            lines: 0,
            broken: None,
            recovered: Vec::new(),
        }
    };
    let code = if v.broken.is_some() {
        exit::FAILED
    } else {
        exit::OK
    };
    let shown = path.display();
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "path": path.to_string_lossy(),
                "exists": present,
                "lines": v.lines,
                "intact": v.broken.is_none(),
                "break": v.broken,
                "recovered": v.recovered,
            }))
            .expect("json serializes")
        );
        return Ok(code);
    }
    if !present {
        out!("no audit log at `{shown}` yet: nothing was recorded");
        return Ok(code);
    }
    match &v.broken {
        None => out!("audit log `{shown}`: intact, {} line(s)", v.lines),
        Some(b) => {
            out!(
                "audit log `{shown}`: broken at line {}: {} ({})",
                b.line,
                b.kind.name(),
                b.detail
            );
            out!(
                "hint: lease never rewrites the log; keep it as evidence, and read line {} and the one before it (`sed -n '{},{}p' {shown}`)",
                b.line,
                b.line.saturating_sub(1).max(1),
                b.line
            );
        }
    }
    for r in &v.recovered {
        out!(
            "  line {}: a torn write ({} bytes), recovered at line {}",
            r.line,
            r.bytes,
            r.recovered_at
        );
    }
    Ok(code)
}
