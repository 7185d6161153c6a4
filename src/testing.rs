//! Test-only: how a test that cannot run on this machine says so, and how
//! a test waits for a handshake. One file
//! for both test binaries: the crate's unit tests (`#[cfg(test)] mod
//! testing` in lib.rs) and the integration binary (`tests/it/support.rs`
//! includes it by path), so both write the same record.
//!
//! cargo test has no "skipped" status: a test that returns early is counted
//! as passed. So a skip is said twice: a `SKIPPED: <test> (<why>)` line
//! written straight to the process's stderr (not through `eprintln!`, which
//! the test harness captures and hides for a passing test), and, when the
//! variable `LEASE_TEST_SKIPS` names a file (scripts/test sets it), one line
//! `<test>\t<why>` appended to that file, from which scripts/test counts the
//! test as skipped instead of passed and names it in its summary line.

use std::io::Write;
use std::time::{Duration, Instant};

/// The variable naming the file that collects one line per skipped test.
const SKIPS_VAR: &str = "LEASE_TEST_SKIPS";

/// Records that the running test is skipped because of `why` (a short
/// reason naming what the machine lacks, e.g. "needs root to chown"). The
/// caller returns right after. The test's name is its thread's name, which
/// the test harness sets to the test's path (`module::test`); call this
/// from the test's own thread. Never fails: an unwritable record file is
/// said on stderr, and the SKIPPED line is printed regardless.
pub(crate) fn skip(why: &str) {
    let thread = std::thread::current();
    let name = thread
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("<unnamed test>");
    let why = why.replace(['\t', '\n'], " ");
    let _ = writeln!(std::io::stderr(), "SKIPPED: {name} ({why})");
    let Some(file) = std::env::var_os(SKIPS_VAR) else {
        return;
    };
    let file = std::path::PathBuf::from(file);
    if let Err(e) = record_skip(&file, name, &why) {
        let _ = writeln!(
            std::io::stderr(),
            "cannot record the skip in {}: {e}",
            file.display()
        );
    }
}

/// Appends the record line `<name>\t<why>\n` for one skipped test to
/// `file` (created if missing): one write of one short line with
/// `O_APPEND`, so lines from tests in parallel threads (or binaries) never
/// interleave. `why` holds no tab or newline ([`skip`] replaces them).
pub(crate) fn record_skip(file: &std::path::Path, name: &str, why: &str) -> std::io::Result<()> {
    let line = format!("{name}\t{why}\n");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(line.as_bytes()))
}

/// Waits until `cond` holds, polling every 10 ms; panics with `what` after
/// 60 s. Only for true handshakes: `cond` must turn true because of an event
/// the test caused or is owed (a readiness file written, a killed process
/// reaped, a descriptor closed at another process's exec), never because
/// time passed. The deadline only turns a hang into a failure, so it is
/// generous: a loaded 2-core machine can stall a process for seconds.
pub(crate) fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
