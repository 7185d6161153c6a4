//! Adapters that talk to the kernel (ARCHITECTURE.md floor 3): the only
//! code that calls `rustix` (`scripts/forbid.sh`), and in [`process`] the
//! only `unsafe` blocks but libgit2's options (`git/libgit2.rs`).

use std::io;
use std::path::Path;

use crate::error::{IoResultExt, Result};

pub mod atomic;
pub mod fault;
pub mod fs;
pub mod lease;
pub mod process;
pub mod procfs;
pub mod walk;

/// A `rustix` error, attached to a path like an [`io::Error`].
impl<T> IoResultExt<T> for rustix::io::Result<T> {
    fn at_do(self, action: &'static str, path: &Path) -> Result<T> {
        self.map_err(io::Error::from).at_do(action, path)
    }
    fn at(self, path: &Path) -> Result<T> {
        self.at_do("cannot access", path)
    }
}
