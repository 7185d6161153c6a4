//! `lease archives`: the records that have archives.

use super::exit;
use crate::error::Result;

/// The arguments of `lease archives`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease archives`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    archives(ctx, a.json)
}

pub(super) fn archives(ctx: &crate::ops::Ctx, json: bool) -> Result<u8> {
    let list = crate::ops::restore::archives(ctx)?;
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&list).expect("a report serializes")
        );
        return Ok(exit::OK);
    }
    if list.is_empty() {
        out!("no archives");
        return Ok(exit::OK);
    }
    out!("ID            TIP           COMMITS  SIZE      RESTORED  REPOSITORY");
    for a in &list {
        out!(
            "{:<12}  {:<12}  {:>7}  {:>8}  {:>8}  {}",
            super::short_id(&a.id),
            super::short_id(&a.tip),
            a.commits,
            match (a.size, a.kind.as_str()) {
                (Some(s), _) => super::list::human_bytes(s),
                (None, "remote") => "remote".to_string(),
                (None, _) => "missing".to_string(),
            },
            a.receipts.len(),
            a.repository
        );
    }
    Ok(exit::OK)
}
