//! Progress on a terminal: `lease retire` and `lease reap` show their long
//! steps when stderr is a terminal (a pty from script(1)), and stay silent
//! with `--json` or when stderr is not a terminal.

use std::path::Path;
use std::process::Output;

use crate::support::*;

/// A retirable worktree with one unpushed commit (so the retire archives):
/// kept by exec, then released back to `terminal`.
fn committed(env: &TestEnv) -> (std::path::PathBuf, String) {
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "sh", "-c"])
        .arg("echo work > work.txt && git add work.txt && git commit -qm agent-work")
        .output()
        .unwrap();
    assert_code(&o, 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let o = env.lease().args(["release", &id]).output().unwrap();
    assert_code(&o, 0);
    assert_eq!(env.record()["state"], "terminal");
    (repo, id)
}

/// Runs `lease ARGS` under script(1), so its stdin, stdout and stderr are a
/// pty; returns what the pty showed.
fn on_tty(env: &TestEnv, dir: &Path, args: &str) -> Output {
    let bin = env!("CARGO_BIN_EXE_lease");
    env.cmd("script")
        .current_dir(dir)
        .env("TERM", "xterm")
        .args(["-qefc", &format!("'{bin}' {args}"), "/dev/null"])
        .output()
        .unwrap()
}

#[test]
fn retire_on_a_terminal_shows_archiving_and_verifying() {
    let env = TestEnv::new();
    let (repo, id) = committed(&env);
    let o = on_tty(&env, &repo, &format!("retire {id}"));
    let shown = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{shown}");
    assert!(
        shown.contains("archiving"),
        "no archiving progress: {shown:?}"
    );
    assert!(
        shown.contains("verifying"),
        "no verifying progress: {shown:?}"
    );
    assert!(shown.contains("removed"), "{shown:?}");
}

#[test]
fn retire_json_on_a_terminal_shows_no_progress() {
    let env = TestEnv::new();
    let (repo, id) = committed(&env);
    let o = on_tty(&env, &repo, &format!("retire --json {id}"));
    let shown = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{shown}");
    assert!(!shown.contains("archiving"), "{shown:?}");
    assert!(!shown.contains("verifying"), "{shown:?}");
    assert_eq!(env.record()["state"], "removed");
}

#[test]
fn retire_without_a_terminal_shows_no_progress() {
    let env = TestEnv::new();
    let (repo, id) = committed(&env);
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["retire", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(!stderr(&o).contains("archiving"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("verifying"), "{}", stderr(&o));
}

#[test]
fn reap_on_a_terminal_shows_a_bar_and_quiet_hides_it() {
    let env = TestEnv::new();
    let (repo, _) = committed(&env);
    let o = on_tty(&env, &repo, "reap --apply");
    let shown = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(shown.contains("reaping"), "no reap progress: {shown:?}");
    assert_eq!(env.record()["state"], "removed", "{shown}");
    let o = on_tty(&env, &repo, "-q reap");
    let shown = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(!shown.contains("reaping"), "{shown:?}");
}
