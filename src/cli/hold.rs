//! `lease hold ID`: keep a worktree for a named owner.

use super::exit;
use crate::error::Result;
use crate::model::record::Owner;
use crate::store::registry::Registry;

/// The arguments of `lease hold`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Record id, unique prefix of 8+ hex digits, or worktree top directory.
    pub(super) id: String,
    /// Why it is kept.
    #[arg(long, value_name = "R")]
    pub(super) reason: String,
    /// Who keeps it, as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER).
    #[arg(long, value_name = "KIND:NAME")]
    pub(super) owner: Option<String>,
    /// Until when: RFC 3339 or a span such as 7d or 12h (default: no expiry).
    #[arg(long, value_name = "WHEN")]
    pub(super) until: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease hold`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    hold(
        ctx,
        &a.id,
        a.reason,
        a.owner.as_deref(),
        a.until.as_deref(),
        a.json,
    )
}

/// Opens the state root for a command that changes one existing record:
/// a usage error (nothing created) when there is none yet.
pub(super) fn root_for_record(ctx: &crate::ops::Ctx, id: &str) -> Result<Registry> {
    if ctx.existing_root()?.is_none() {
        return Err(super::target::nothing_recorded(id));
    }
    Ok(Registry::new(ctx.open_root()?))
}

pub(super) fn hold(
    ctx: &crate::ops::Ctx,
    id: &str,
    reason: String,
    owner: Option<&str>,
    until: Option<&str>,
    json: bool,
) -> Result<u8> {
    let reg = root_for_record(ctx, id)?;
    let id = super::target::resolve_id(&reg, id)?;
    let req = crate::ops::hold::HoldRequest {
        id: id.clone(),
        reason,
        owner: owner.map(Owner::parse).transpose()?,
        until: until
            .map(|u| crate::ops::hold::parse_until(u, std::time::SystemTime::now()))
            .transpose()?,
    };
    let r = crate::ops::hold::hold(&reg, &req).map_err(super::target::about(Some(&reg), &id))?;
    print_hold(&r, json);
    Ok(exit::OK)
}

pub(super) fn print_hold(r: &crate::ops::hold::HoldReport, json: bool) {
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(r).expect("a report serializes")
        );
        return;
    }
    for line in render_hold(r) {
        out!("{line}");
    }
}

fn render_hold(r: &crate::ops::hold::HoldReport) -> Vec<String> {
    let what = r.worktree.as_deref().unwrap_or("-");
    let id = super::short_id(&r.id);
    let states = if r.from == r.state {
        r.state.name().to_string()
    } else {
        format!("{} -> {}", r.from.name(), r.state.name())
    };
    match &r.retention {
        Some(t) => {
            let until = t
                .until
                .as_deref()
                .map(|u| format!(" until {u}"))
                .unwrap_or_default();
            let mut out = vec![format!(
                "held `{what}` ({id}) for {}:{} ({}){until}: {states}",
                t.owner.kind, t.owner.name, t.reason
            )];
            if r.pending {
                out.push(
                    "  the record is not terminal yet: the hold takes effect when it is".into(),
                );
            }
            out
        }
        None => vec![format!("released `{what}` ({id}): {states}")],
    }
}
