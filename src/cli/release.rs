//! `lease release ID`: let a retained worktree be retired again.

use super::exit;
use super::hold::{print_hold, root_for_record};
use crate::error::Result;

pub(super) fn release(id: &str, json: bool) -> Result<u8> {
    let reg = root_for_record(id)?;
    let r = crate::hold::release(&reg, id)?;
    print_hold(&r, json);
    Ok(exit::OK)
}
