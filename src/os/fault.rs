//! Fault injection for tests: crash or pause at a named step.
//!
//! Compiled in only with the cargo feature `fault-injection`; without it,
//! [`point`] is an empty function and the `LEASE_FI_*` variables are never
//! read, so a shipped binary cannot be steered into a half-done state
//! (cargo's release binary reads `__CARGO_TEST_LAST_USE_NOW`, a test clock
//! for its cache GC: `now()` in rust-lang/cargo's
//! `src/cargo/core/global_cache_tracker.rs`).
//!
//! - `LEASE_FI_CRASH=<step>`: the process kills itself with SIGKILL at `step`.
//! - `LEASE_FI_PAUSE=<step>` with `LEASE_FI_DIR=<dir>`: at `step` lease writes
//!   its pid and a newline to `<dir>/paused-<step>` (through a temp name and
//!   a rename, so the file exists only complete: a test's readiness
//!   handshake) and waits until `<dir>/resume-<step>` exists.
//! - `LEASE_FI_FAIL_WRITE=<n>`: the n-th durable write of the process (a
//!   record or an audit line) fails with `ENOSPC`.
//! - `LEASE_FI_TORN_WRITE=<n>`: the n-th durable write, if it is an audit
//!   line, writes the first half of its bytes, then fails with `ENOSPC` (a
//!   disk that filled in the middle of the line).
//! - `LEASE_FI_CRASH_WRITE=<n>`: the process kills itself with SIGKILL just
//!   before its n-th durable write (kill -9 at every step, in order).
//! - `LEASE_FI_WRITES_TO=<file>`: each durable write first writes its
//!   number to `file` (a plain write, not counted), so a test learns how
//!   many a fault-free run makes and can fail or crash each one in turn.
//! - `LEASE_FI_ENOSPC_AFTER=<step>`: once the process passed the named
//!   step, every durable write fails with `ENOSPC` (a disk that filled
//!   while the command ran).
//! - `LEASE_FI_LOCK_ERROR=1`: the retirer's flock fails (`os/lease.rs`).
//! - `LEASE_FI_FULL_WHILE=<path>`: every filesystem reports 0 free bytes
//!   while `path` exists (a disk that a reap can free by removing it).
//! - `LEASE_FI_DISK_BYTES=<n>` with `LEASE_FI_DISK_HOLDS=<dir>`: every
//!   filesystem reports `n` minus the bytes of the files under `dir` free (a
//!   disk of `n` bytes holding only `dir`), so a test sees free space grow by
//!   what each removal under `dir` freed, without filling a real disk.

/// Set once the step `LEASE_FI_ENOSPC_AFTER` names was passed.
#[cfg(feature = "fault-injection")]
static FULL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// How many durable writes this process has begun.
#[cfg(feature = "fault-injection")]
static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cfg(feature = "fault-injection")]
fn knob(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok())
}

#[cfg(feature = "fault-injection")]
fn enospc() -> std::io::Error {
    std::io::Error::from_raw_os_error(libc::ENOSPC)
}

/// Marks a named step; see the module docs. Logs it at info (`-v`; a
/// record write at debug), in every build.
#[cfg(feature = "fault-injection")]
pub fn point(step: &str) {
    log_step(step);
    if std::env::var_os("LEASE_FI_CRASH").is_some_and(|s| s == step) {
        crate::os::process::kill_self();
    }
    if std::env::var_os("LEASE_FI_ENOSPC_AFTER").is_some_and(|s| s == step) {
        FULL.store(true, std::sync::atomic::Ordering::SeqCst);
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
/// `LEASE_FI_FAIL_WRITE` names or `LEASE_FI_ENOSPC_AFTER`'s step was
/// passed; dies of SIGKILL before the one `LEASE_FI_CRASH_WRITE` names.
#[cfg(feature = "fault-injection")]
pub fn write() -> std::io::Result<()> {
    use std::sync::atomic::Ordering;
    let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
    if let Some(to) = std::env::var_os("LEASE_FI_WRITES_TO") {
        let _ = std::fs::write(to, n.to_string());
    }
    if knob("LEASE_FI_CRASH_WRITE") == Some(n) {
        crate::os::process::kill_self();
    }
    if knob("LEASE_FI_FAIL_WRITE") == Some(n) || FULL.load(Ordering::SeqCst) {
        return Err(enospc());
    }
    Ok(())
}

/// After [`write`] counted an audit line's write: when it is the one
/// `LEASE_FI_TORN_WRITE` names, writes the first half of `bytes` to `f`
/// and fails with `ENOSPC`, as a disk that filled in the middle would.
#[cfg(feature = "fault-injection")]
pub fn write_torn(f: &mut impl std::io::Write, bytes: &[u8]) -> std::io::Result<()> {
    let n = WRITES.load(std::sync::atomic::Ordering::SeqCst);
    if knob("LEASE_FI_TORN_WRITE") == Some(n) {
        f.write_all(&bytes[..bytes.len() / 2])?;
        return Err(enospc());
    }
    Ok(())
}

/// Without the `fault-injection` feature, no write is ever torn on purpose.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn write_torn(_f: &mut impl std::io::Write, _bytes: &[u8]) -> std::io::Result<()> {
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

/// The free bytes `LEASE_FI_DISK_BYTES` and `LEASE_FI_DISK_HOLDS` fake (see
/// the module docs), `None` when they are not both set.
#[cfg(feature = "fault-injection")]
pub fn fake_free() -> Option<u64> {
    let size = knob("LEASE_FI_DISK_BYTES")?;
    let holds = std::env::var_os("LEASE_FI_DISK_HOLDS")?;
    Some(size.saturating_sub(bytes_under(std::path::Path::new(&holds))))
}

/// Bytes of the files below `dir` (`st_size`, never following a symlink).
#[cfg(feature = "fault-injection")]
fn bytes_under(dir: &std::path::Path) -> u64 {
    let mut sum = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => sum = sum.saturating_add(e.metadata().map_or(0, |m| m.len())),
                Err(_) => {}
            }
        }
    }
    sum
}

/// Free space is never faked without the `fault-injection` feature.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn fake_free() -> Option<u64> {
    None
}

/// Counts a durable write; without the `fault-injection` feature it does nothing.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn write() -> std::io::Result<()> {
    Ok(())
}

/// Marks a named step; without the `fault-injection` feature it only logs
/// it (info; a record write at debug).
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn point(step: &str) {
    log_step(step);
}

/// The info event of a named step (`lease -v`: exec's `exec-planned`,
/// `exec-leased`, `exec-added`, `exec-active`, `exec-ran`; retire's
/// `retire-locked`, `archive-written`, `retire-before-remove`, ...).
fn log_step(step: &str) {
    if step == "record-written" {
        tracing::debug!(step, "step");
    } else {
        tracing::info!(step, "step");
    }
}
