//! Adapters that talk to the kernel (ARCHITECTURE.md floor 3).

pub mod fault;
pub mod fs;
pub mod lease;
pub mod process;
pub mod procfs;
pub mod walk;
