//! Fault injection for tests: crash or pause at a named step.
//!
//! Compiled in only with the cargo feature `fault-injection`; without it,
//! [`point`] is an empty function and the `LEASE_FI_*` variables are never
//! read, so a shipped binary cannot be steered into a half-done state
//! (reliability.md finding 8: cargo's release binary reads a test clock).
//!
//! - `LEASE_FI_CRASH=<step>`: the process kills itself with SIGKILL at `step`.
//! - `LEASE_FI_PAUSE=<step>` with `LEASE_FI_DIR=<dir>`: at `step` lease writes
//!   its pid and a newline to `<dir>/paused-<step>` (through a temp name and
//!   a rename, so the file exists only complete: a test's readiness
//!   handshake) and waits until `<dir>/resume-<step>` exists.
//! - `LEASE_FI_FAIL_WRITE=<n>`: the n-th durable write of the process (a
//!   record or an audit line) fails with `ENOSPC`.
//! - `LEASE_FI_LOCK_ERROR=1`: the retirer's flock fails (`lease.rs`).
//! - `LEASE_FI_FULL_WHILE=<path>`: every filesystem reports 0 free bytes
//!   while `path` exists (a disk that a reap can free by removing it).

/// Marks a named step; see the module docs.
#[cfg(feature = "fault-injection")]
pub fn point(step: &str) {
    if std::env::var_os("LEASE_FI_CRASH").is_some_and(|s| s == step) {
        crate::sys::kill_self();
    }
    if std::env::var_os("LEASE_FI_PAUSE").is_some_and(|s| s == step) {
        let Some(dir) = std::env::var_os("LEASE_FI_DIR").map(std::path::PathBuf::from) else {
            return;
        };
        let paused = dir.join(format!("paused-{step}"));
        let tmp = dir.join(format!(".paused-{step}.tmp"));
        let _ = std::fs::write(&tmp, format!("{}\n", std::process::id()))
            .and_then(|()| std::fs::rename(&tmp, &paused));
        while !dir.join(format!("resume-{step}")).exists() {
            // A pause point waits for the test harness; polling here is lease
            // waiting on a file, not a test waiting on time.
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Counts a durable write; fails it with `ENOSPC` when it is the one
/// `LEASE_FI_FAIL_WRITE` names.
#[cfg(feature = "fault-injection")]
pub fn write() -> std::io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
    let fail = std::env::var("LEASE_FI_FAIL_WRITE")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    if fail == Some(n) {
        return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
    }
    Ok(())
}

/// True while the path named by `LEASE_FI_FULL_WHILE` exists: free-space
/// reads then report 0 bytes.
#[cfg(feature = "fault-injection")]
pub fn disk_full() -> bool {
    std::env::var_os("LEASE_FI_FULL_WHILE")
        .is_some_and(|p| std::fs::symlink_metadata(std::path::Path::new(&p)).is_ok())
}

/// Free space is never faked without the `fault-injection` feature.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn disk_full() -> bool {
    false
}

/// Counts a durable write; without the `fault-injection` feature it does nothing.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn write() -> std::io::Result<()> {
    Ok(())
}

/// Marks a named step; without the `fault-injection` feature it does nothing.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn point(_step: &str) {}
