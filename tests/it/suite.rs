//! The test suite's own machinery: a skipped test is recorded and counted
//! as skipped, never as passed (SPEC "Testing knobs and tests"), and the
//! readiness handshake never takes a half-written file for a pid.

use std::fs;
use std::path::Path;

use crate::support::*;

/// Runs scripts/test-summary on a cargo test log and a skips file.
fn summary(env: &TestEnv, log: &str, skips: &str) -> String {
    let (l, s) = (env.file("test.log"), env.file("skips"));
    fs::write(&l, log).unwrap();
    fs::write(&s, skips).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/test-summary");
    let o = env.cmd(script).arg(&l).arg(&s).output().unwrap();
    assert_code(&o, 0);
    stdout(&o)
}

#[test]
fn a_skipped_test_is_counted_as_skipped_not_passed() {
    let env = TestEnv::new();
    let log = "\
running 3 tests
test a::runs ... ok
test a::needs_root ... SKIPPED: a::needs_root (needs root: chowns)
ok
test a::broke ... FAILED

failures:

---- a::broke stdout ----
assertion failed

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

running 1 test
test b::also ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
";
    let skips = "a::needs_root\tneeds root: chowns\na::needs_root\tneeds root: chowns\n\
                 a::broke\tpart skipped\nscripts/soak\tnot asked for\n";
    let out = summary(&env, log, skips);
    let last = out.lines().last().unwrap();
    assert_eq!(
        last, "tests: 2 passed, 1 failed, 1 skipped (a::needs_root); checks skipped: scripts/soak",
        "{out}"
    );
    assert!(
        out.contains("skipped test: a::needs_root (needs root: chowns)"),
        "{out}"
    );
    // Nothing skipped: every pass is a pass.
    let last = summary(&env, log, "").lines().last().unwrap().to_string();
    assert_eq!(last, "tests: 3 passed, 1 failed, 0 skipped");
}

#[test]
fn a_skip_is_one_line_naming_the_test_and_why() {
    let env = TestEnv::new();
    let file = env.file("skips");
    crate::support::record_skip(&file, "m::t", "needs root").unwrap();
    crate::support::record_skip(&file, "m::u", "no strace").unwrap();
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        "m::t\tneeds root\nm::u\tno strace\n"
    );
}

#[test]
fn a_pid_is_read_only_from_a_complete_line() {
    let env = TestEnv::new();
    // A half-written file is not a line: "12" of "1234\n".
    for partial in ["", "12", "1234\n5"] {
        assert_eq!(complete_line(partial), None, "{partial:?}");
    }
    assert_eq!(complete_line("1234\n"), Some("1234"));
    let ready = env.file("ready");
    fs::write(&ready, "1234\n").unwrap();
    assert_eq!(read_pid(&ready), 1234);
    // ready_sh's shell and ready_py's python write such a line.
    let sh = env.file("sh-ready");
    let o = env
        .cmd("sh")
        .args(["-c", &format!("{}; echo $$", ready_sh(&sh))])
        .output()
        .unwrap();
    assert_eq!(read_pid(&sh).to_string(), stdout(&o).trim());
    let py = env.file("py-ready");
    let o = env
        .cmd("python3")
        .args(["-c", &format!("{}\nprint(os.getpid())", ready_py(&py))])
        .output()
        .unwrap();
    assert_eq!(read_pid(&py).to_string(), stdout(&o).trim());
}
