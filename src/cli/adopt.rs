//! `lease adopt PATH`: record an unrecorded linked worktree.

use super::exit;
use crate::error::Result;
use crate::registry::Owner;

pub(super) fn adopt(path: &std::path::Path, owner: Option<&str>, json: bool) -> Result<u8> {
    let owner = owner.map(Owner::parse).transpose()?;
    let r = crate::launcher::adopt_only(path, owner)?;
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&r).expect("a report serializes")
        );
    } else {
        out!(
            "adopted `{}` as {} ({}); `lease retire {}` takes it through the gates",
            r.worktree,
            r.id,
            r.state.name(),
            &r.id[..8]
        );
    }
    Ok(exit::OK)
}
