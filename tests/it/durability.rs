//! SPEC invariant 7's fsync rule on the launch path (docs/record.md
//! "Durability"): a session's start and end are written atomically without
//! an fsync, and the crash paths that rule relies on: a lost start is
//! covered by the flock, a lost end by retire and reap.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::*;

/// A created worktree left `terminal` (kept, then released), clean and
/// pushed: (repo, id, worktree).
fn terminal(env: &TestEnv) -> (PathBuf, String, PathBuf) {
    let repo = env.repo();
    let (id, wt) = env.kept(&repo, "dur", "true");
    assert_eq!(env.record_of(&id)["state"], "terminal");
    (repo, id, wt)
}

#[test]
fn a_session_in_a_recorded_worktree_fsyncs_nothing_and_runs_no_git() {
    let probe = std::process::Command::new("strace")
        .args(["-o", "/dev/null", "true"])
        .output();
    if !probe.is_ok_and(|p| p.status.success()) {
        skip("strace cannot run here");
        return;
    }
    let env = TestEnv::new();
    let (_repo, id, wt) = terminal(&env);
    let trace = env.file("launch.strace");
    let o = env
        .cmd("strace")
        .args(["-f", "-qq", "-y", "-s", "4096", "-e"])
        .arg("trace=fsync,fdatasync,sync_file_range,syncfs,rename,renameat,renameat2,execve")
        .arg("-o")
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_lease"))
        .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let t = fs::read_to_string(&trace).unwrap();
    let calls: Vec<&str> = t.lines().filter(|l| !l.contains("+++")).collect();
    let syncs: Vec<&&str> = calls.iter().filter(|l| l.contains("sync")).collect();
    assert!(syncs.is_empty(), "the launch path fsynced: {syncs:?}");
    let record = format!(
        "{}\"",
        env.state.join(format!("records/{id}.json")).display()
    );
    let writes = calls
        .iter()
        .filter(|l| l.contains("rename") && l.contains(&record))
        .count();
    assert_eq!(
        writes, 2,
        "one record write per transition (start, end):\n{t}"
    );
    // Successful execs only (execvp tries each PATH entry in turn).
    let execs: Vec<&&str> = calls
        .iter()
        .filter(|l| l.contains("execve(") && l.ends_with("= 0"))
        .collect();
    assert_eq!(
        execs.len(),
        2,
        "lease itself and the command, no git: {execs:?}"
    );
    // The session is recorded all the same: started, ended, HEAD read.
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "terminal");
    let last = rec["sessions"].as_array().unwrap().last().unwrap().clone();
    assert!(last["ended_at"].is_string(), "{last}");
    let head = env.git(&wt, &["rev-parse", "HEAD"]);
    assert_eq!(rec["outcome"]["head"], head.trim(), "{rec}");
}

#[test]
fn a_lost_session_end_leaves_an_active_record_that_retire_resolves() {
    // The launcher dies right after its command (as if the unsynced end
    // never reached the disk): `active`, a dead launcher, a free lease.
    let env = TestEnv::new();
    let (_repo, id, wt) = terminal(&env);
    let o = env
        .lease()
        .env("LEASE_FI_CRASH", "exec-ran")
        .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), None, "killed at exec-ran: {}", stderr(&o));
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "active", "{rec}");
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 0);
    assert_eq!(env.record_of(&id)["state"], "removed");
    assert!(!wt.exists());
}

#[test]
fn a_lost_session_start_is_covered_by_the_flock() {
    // A session runs, but its record reads as before it started (as if the
    // unsynced start never reached the disk): the record says `terminal`
    // with no live launcher, and only the flock stands in the way. Retire
    // is held `consumer-alive` and changes nothing.
    let env = TestEnv::new();
    let (repo, id, wt) = terminal(&env);
    let file = env.state.join(format!("records/{id}.json"));
    let before = fs::read(&file).unwrap();
    let (bg, _child) = env.spawn_holder(&["--adopt", wt.to_str().unwrap()]);
    assert_eq!(env.record_of(&id)["state"], "active");
    lose(&file, &before);
    assert_eq!(env.record_of(&id)["state"], "terminal");
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["consumer-alive"], "{}", stderr(&o));
    snap.assert_held_unchanged(&env, &repo, "consumer-alive");
    assert!(wt.join(".git").exists());
    drop(bg);
}

/// Puts `bytes` back as the record file `path`, the way lease writes it
/// (a temp file renamed into place).
fn lose(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("lost");
    fs::write(&tmp, bytes).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600)).unwrap();
    fs::rename(&tmp, path).unwrap();
}

#[test]
fn a_git_lock_naming_another_worktrees_record_is_never_joined() {
    // exec --adopt finds a recorded worktree through git's lock, but only
    // the record decides: a lock copied onto another worktree names a
    // record that does not name that tree, so no session starts in it.
    let env = TestEnv::new();
    let (repo, id, wt) = terminal(&env);
    let other = env.file("other-wt");
    env.add_worktree(&repo, "other", &other);
    let reason = fs::read(admin_dir(&repo, &wt).join("locked")).unwrap();
    fs::write(admin_dir(&repo, &other).join("locked"), &reason).unwrap();
    let before = fs::read(env.state.join(format!("records/{id}.json"))).unwrap();
    let ran = env.file("ran");
    let o = env
        .lease()
        .args(["exec", "--adopt", other.to_str().unwrap(), "--", "touch"])
        .arg(&ran)
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("[leased-elsewhere]"), "{}", stderr(&o));
    assert!(!ran.exists(), "the command ran");
    assert_eq!(
        fs::read(env.state.join(format!("records/{id}.json"))).unwrap(),
        before,
        "the other worktree's record changed"
    );
    assert_eq!(env.records().len(), 1, "no record for the refused tree");
}
