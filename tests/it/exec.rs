//! `lease exec`: the inherited lease, the environment, exit status mirroring,
//! signals, concurrency, adoption, and refusals before the command runs.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use assert_cmd::assert::OutputAssertExt;

use crate::support::*;

/// The descriptor the test hands the launcher on purpose, besides 0, 1, 2.
const PASSED_FD: &str = "7";

/// Python that makes its descriptors exactly 0, 1, 2 and `PASSED_FD` (open
/// on /dev/null, inheritable), then execs `argv[1..]`: the launcher starts
/// with a descriptor set the test knows, instead of whatever the test
/// process and its other threads happen to have open at that moment.
const EXACT_FDS: &str = "import os, sys\n\
fd = os.open('/dev/null', os.O_RDONLY)\n\
os.dup2(fd, 7)\n\
os.closerange(3, 7)\n\
os.closerange(8, os.sysconf('SC_OPEN_MAX'))\n\
os.execv(sys.argv[1], sys.argv[1:])\n";

#[test]
fn command_gets_one_locked_descriptor_and_the_environment() {
    let env = TestEnv::new();
    let repo = env.repo();
    // Inspected from outside once it has exec'd sleep, so no shell internals
    // are in the way.
    let ready = env.file("ready");
    let script = format!("{}; exec sleep 600", ready_sh(&ready));
    let mut c = env.cmd("python3");
    c.args(["-c", EXACT_FDS, env!("CARGO_BIN_EXE_lease")])
        .args(["exec", "--keep", "--repo", repo.to_str().unwrap()])
        .args(["--", "sh", "-c", &script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let bg = Bg(Some(c.spawn().unwrap()));
    let child = read_pid(&ready);
    let _guard = KillOnDrop(child);
    wait_until("the command to exec sleep", || {
        fs::read_to_string(format!("/proc/{child}/comm")).is_ok_and(|c| c.trim() == "sleep")
    });
    let mut fds: Vec<String> = fs::read_dir(format!("/proc/{child}/fd"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    fds.sort();
    // What the launcher inherited from its caller: these, and only these,
    // pass through, plus LEASE_FD.
    let caller: Vec<String> = ["0", "1", "2", PASSED_FD].map(String::from).to_vec();
    let environ = fs::read(format!("/proc/{child}/environ")).unwrap();
    let var = |k: &str| -> String {
        environ
            .split(|&b| b == 0)
            .find_map(|kv| kv.strip_prefix(format!("{k}=").as_bytes()))
            .map(|v| String::from_utf8(v.to_vec()).unwrap())
            .unwrap_or_else(|| panic!("{k} not set"))
    };
    let lease_fd = var("LEASE_FD");
    let added: Vec<&String> = fds.iter().filter(|f| !caller.contains(f)).collect();
    assert_eq!(
        added,
        [&lease_fd],
        "lease adds exactly LEASE_FD: {fds:?} over {caller:?}"
    );
    assert!(
        caller.iter().all(|c| fds.contains(c)),
        "the caller's descriptors pass through"
    );
    let info = fs::read_to_string(format!("/proc/{child}/fdinfo/{lease_fd}")).unwrap();
    assert!(
        info.contains("FLOCK") && info.contains("READ"),
        "LEASE_FD holds a shared flock: {info}"
    );
    let rec = env.record();
    let id = rec["id"].as_str().unwrap();
    let lease = &rec["lease"];
    assert_eq!(var("LEASE_ID"), id);
    assert_eq!(var("LEASE_FILE"), lease["path"].as_str().unwrap());
    assert_eq!(
        var("LEASE_IDENTITY"),
        format!("{}:{}", lease["dev"], lease["ino"])
    );
    let wt = rec["worktree"]["path"].as_str().unwrap();
    assert_eq!(var("LEASE_WORKTREE"), wt);
    // The git lease resolved, for the shim's fork-free path: a real git.
    let git = var("LEASE_GIT");
    assert!(
        git.starts_with('/') && fs::metadata(&git).is_ok_and(|m| m.is_file()),
        "LEASE_GIT is an absolute path to a file: {git}"
    );
    assert!(
        !fs::read(&git)
            .unwrap()
            .windows(10)
            .any(|w| w == b"lease-shim"),
        "LEASE_GIT is not the shim"
    );
    assert_eq!(
        fs::read_link(format!("/proc/{child}/cwd"))
            .unwrap()
            .to_str()
            .unwrap(),
        wt,
        "the command runs in the worktree"
    );
    assert_eq!(rec["branch"], format!("lease/{}", &id[..8]));
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(lease["path"].as_str().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o600);
    signal(child, "TERM");
    let o = bg.wait();
    assert_eq!(o.status.code(), None, "lease dies of the command's signal");
    let rec = env.record();
    assert_eq!(rec["state"], "retained", "--keep records retained");
    assert_eq!(rec["retention"]["reason"], "kept at exit");
}

#[test]
fn exit_codes_are_the_commands() {
    let env = TestEnv::new();
    let repo = env.repo();
    let run = |args: &[&str]| env.lease().current_dir(&repo).args(args).output().unwrap();
    assert_code(&run(&["exec", "--", "sh", "-c", "exit 7"]), 7);
    assert_code(&run(&["exec", "--", "true"]), 0);
    assert_code(&run(&["exec", "--", "no-such-command-lease-test"]), 127);
    let not_exec = env.file("plain.txt");
    fs::write(&not_exec, "x").unwrap();
    assert_code(&run(&["exec", "--", not_exec.to_str().unwrap()]), 126);
    // Usage errors of exec are 125, like env(1).
    assert_code(&run(&["exec", "--no-such-flag", "--", "true"]), 125);
    assert_code(&run(&["exec", "--min-free", "lots", "--", "true"]), 125);
    // Every created worktree above was retired after exit.
    for r in env.records() {
        assert_eq!(r["state"], "removed", "{r}");
    }
}

#[test]
fn an_orphan_that_exits_first_is_not_taken_for_the_command() {
    // lease is a subreaper: a grandchild orphaned by its parent is
    // re-parented to it. Here the orphan exits 3 while the command still
    // runs (the command waits until lease has reaped it), then the command
    // exits 7: the exit status and the record are the command's.
    let env = TestEnv::new();
    let repo = env.repo();
    let script = "( sh -c 'while [ ! -e go ]; do :; done; exit 3' & echo $! > gpid ); \
                  g=$(cat gpid); touch go; while kill -0 \"$g\" 2>/dev/null; do :; done; exit 7";
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "sh", "-c", script])
        .output()
        .unwrap();
    assert_code(&o, 7);
    assert_eq!(env.record()["outcome"]["code"], 7, "{:#}", env.record());
}

#[test]
fn a_launcher_ends_its_own_session_not_a_later_one() {
    // Three sessions in one worktree; the middle one ends first. It must
    // close its own session, never the later one still running.
    let env = TestEnv::new();
    let repo = env.repo();
    let (r1, r2, r3, go) = (
        env.file("r1"),
        env.file("r2"),
        env.file("r3"),
        env.file("go"),
    );
    let hold = |ready: &std::path::Path| format!("{}; exec sleep 600", ready_sh(ready));
    let _l1 = env.spawn_lease(&[
        "exec",
        "--keep",
        "--repo",
        repo.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &hold(&r1),
    ]);
    read_pid(&r1);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let wait_go = format!(
        "{}; while [ ! -e {} ]; do sleep 0.05; done",
        ready_sh(&r2),
        sh_quote(&go)
    );
    let l2 = env.spawn_lease(&["exec", "--resume", &id, "--", "sh", "-c", &wait_go]);
    read_pid(&r2);
    let l3 = env.spawn_lease(&["exec", "--resume", &id, "--", "sh", "-c", &hold(&r3)]);
    read_pid(&r3);
    let (p2, p3) = (l2.pid(), l3.pid());
    fs::write(&go, "").unwrap();
    assert_code(&l2.wait(), 0);
    let rec = env.record_of(&id);
    let sessions = rec["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3, "{rec:#}");
    let of = |pid: u32| sessions.iter().find(|s| s["pid"] == pid).unwrap();
    assert!(of(p2)["ended_at"].is_string(), "{rec:#}");
    assert!(
        of(p3)["ended_at"].is_null(),
        "the later session still runs: {rec:#}"
    );
    assert!(sessions[0]["ended_at"].is_null(), "{rec:#}");
    drop(l3);
}

/// A linked worktree `wt` that lease did not make, for `exec --adopt`.
fn plain_worktree(env: &TestEnv) -> String {
    let repo = env.repo();
    let wt = env.file("wt");
    env.add_worktree(&repo, "w", &wt);
    wt.to_str().unwrap().to_string()
}

/// `lease exec --adopt W -- true`.
fn adopt_true(env: &TestEnv, w: &str) -> std::process::Output {
    env.lease()
        .args(["exec", "--adopt", w, "--", "true"])
        .output()
        .unwrap()
}

/// The pids an outcome names as holders, sorted.
fn outcome_holders(rec: &serde_json::Value) -> Vec<u64> {
    let mut pids: Vec<u64> = rec["outcome"]["holders"]
        .as_array()
        .map(|a| a.iter().map(|p| p.as_u64().unwrap()).collect())
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

#[test]
fn a_session_that_ends_beside_another_names_the_other_launcher_as_a_holder() {
    // The command of the second session exits while the first still runs:
    // its outcome names who still holds the lease, the first launcher and
    // its command (found by a scan of every process, which runs only when
    // the launcher's probe of the lease finds it locked).
    let env = TestEnv::new();
    let w = plain_worktree(&env);
    let (bg, child) = env.spawn_holder(&["--adopt", &w]);
    let o = adopt_true(&env, &w);
    assert_code(&o, 0);
    let rec = env.record();
    let mut want = vec![u64::from(bg.pid()), u64::from(child)];
    want.sort_unstable();
    assert_eq!(outcome_holders(&rec), want, "{rec:#}");
    assert!(
        stderr(&o).contains("still hold the lease"),
        "{}",
        stderr(&o)
    );
    assert_eq!(rec["state"], "active", "the first session runs on: {rec:#}");
    drop(bg);
}

#[test]
fn a_holder_no_session_knows_of_is_named_when_a_session_ends() {
    // Not a descendant of the launcher and not a recorded session: a
    // process that locked the lease file itself (as a joined command
    // started outside the session, or a command of an earlier session whose
    // launcher is gone, would hold it).
    let env = TestEnv::new();
    let w = plain_worktree(&env);
    assert_code(&adopt_true(&env, &w), 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let holder = LockHolder::new(&env, &env.lease_of(&id), false);
    let o = adopt_true(&env, &w);
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(outcome_holders(&rec), [u64::from(holder.pid())], "{rec:#}");
    assert!(
        stderr(&o).contains("still hold the lease"),
        "{}",
        stderr(&o)
    );
    drop(holder);
}

#[test]
fn a_lone_session_that_leaves_nothing_running_names_no_holder() {
    let env = TestEnv::new();
    let w = plain_worktree(&env);
    let o = adopt_true(&env, &w);
    assert_code(&o, 0);
    let rec = env.record();
    assert!(rec["outcome"]["holders"].is_null(), "none: {rec:#}");
    assert!(!stderr(&o).contains("still hold"), "{}", stderr(&o));
    assert_eq!(rec["state"], "terminal", "{rec:#}");
}

#[test]
fn a_command_killed_by_term_shows_143_in_a_shell() {
    let env = TestEnv::new();
    let repo = env.repo();
    let lease = env!("CARGO_BIN_EXE_lease");
    let o = env
        .cmd("sh")
        .current_dir(&repo)
        .args([
            "-c",
            &format!("'{lease}' exec -- sh -c 'kill -TERM $$'; echo \"status=$?\""),
        ])
        .output()
        .unwrap();
    assert!(
        stdout(&o).contains("status=143"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let rec = env.record();
    assert_eq!(rec["outcome"]["signal"], 15);
}

#[test]
fn term_sent_to_the_launcher_reaches_the_command_once() {
    let env = TestEnv::new();
    let repo = env.repo();
    let ready = env.file("ready");
    let count = env.file("count");
    // The child counts TERMs; on USR1 (sent by the test straight to it) it
    // exits with the count.
    let py = format!(
        r#"
import os, signal, sys
n = 0
def term(*_):
    global n
    n += 1
    # Renamed into place complete: the test waits for the file to exist.
    f = open({tmp:?}, "w"); f.write(str(n)); f.close(); os.rename({tmp:?}, {count:?})
def usr1(*_):
    sys.exit(n)
signal.signal(signal.SIGTERM, term)
signal.signal(signal.SIGUSR1, usr1)
{ready}
while True:
    signal.pause()
"#,
        tmp = env.file("count.tmp").to_str().unwrap(),
        count = count.to_str().unwrap(),
        ready = ready_py(&ready)
    );
    let repo_s = repo.to_str().unwrap();
    let bg = env.spawn_lease(&[
        "exec", "--keep", "--repo", repo_s, "--", "python3", "-c", &py,
    ]);
    let child = read_pid(&ready);
    signal(bg.pid(), "TERM");
    wait_until("the TERM to reach the command", || count.exists());
    signal(child, "USR1");
    let o = bg.wait();
    assert_code(&o, 1);
    assert_eq!(fs::read_to_string(&count).unwrap(), "1");
}

#[test]
fn ignored_signals_stay_ignored_in_the_command() {
    let env = TestEnv::new();
    let repo = env.repo();
    let lease = env!("CARGO_BIN_EXE_lease");
    let out = env.file("sigign");
    // `trap '' HUP` makes HUP ignored for lease and, through it, the command.
    let o = env
        .cmd("sh")
        .current_dir(&repo)
        .args([
            "-c",
            &format!(
                "trap '' HUP; '{lease}' exec -- sh -c 'grep SigIgn /proc/$$/status > {}'",
                out.display()
            ),
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let line = fs::read_to_string(&out).unwrap();
    let mask = u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap();
    assert_ne!(mask & 1, 0, "SIGHUP (bit 0) is still ignored: {line}");
}

#[test]
fn eight_concurrent_execs_all_succeed_without_orphan_branches() {
    let env = TestEnv::new();
    let repo = env.repo();
    let repo_s = repo.to_str().unwrap();
    let bgs: Vec<Bg> = (0..8)
        .map(|_| env.spawn_lease(&["exec", "--keep", "--repo", repo_s, "--", "true"]))
        .collect();
    for bg in bgs {
        assert_code(&bg.wait(), 0);
    }
    let recs = env.records();
    assert_eq!(recs.len(), 8);
    for r in &recs {
        assert_eq!(r["state"], "retained");
        assert!(PathBuf::from(r["worktree"]["path"].as_str().unwrap()).is_dir());
    }
    let list = env.git(&repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 9, "main plus eight");
    let branches = env.git(&repo, &["branch", "--list", "lease/*"]);
    assert_eq!(branches.lines().count(), 8, "no orphan branch: {branches}");
}

#[test]
fn existing_branch_checked_out_elsewhere_is_refused_and_names_the_worktree() {
    let env = TestEnv::new();
    let repo = env.repo();
    let other = env.root.join("other");
    env.add_worktree(&repo, "topic", &other);
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--branch", "topic", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(
        stderr(&o).contains(other.to_str().unwrap()),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("lease repair"), "{}", stderr(&o));
    // A free existing branch is checked out, not recreated.
    env.git(&repo, &["branch", "free"]);
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--branch", "free", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
}

#[test]
fn failed_worktree_add_deletes_only_the_branch_it_made() {
    let env = TestEnv::new();
    let repo = env.repo();
    // A branch name git accepts for check-ref-format but that cannot be
    // created next to an existing ref `x` (refs/heads/x/y conflicts).
    env.git(&repo, &["branch", "x"]);
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--branch", "x/y", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert_eq!(
        env.git(&repo, &["branch", "--list", "x"]),
        "x",
        "the existing branch is kept"
    );
    let rec = env.record();
    assert_eq!(rec["state"], "removed");
    assert!(rec["tombstone"]["evidence"]["nothing_created"].is_string());
    assert!(
        !PathBuf::from(rec["lease"]["path"].as_str().unwrap()).exists(),
        "lease file removed"
    );
}

#[test]
fn root_inside_a_worktree_is_refused() {
    let env = TestEnv::new();
    let repo = env.repo();
    let inside = repo.join("target/lease-state");
    let o = env
        .lease()
        .current_dir(&repo)
        .env("LEASE_HOME", &inside)
        .args(["exec", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(
        stderr(&o).contains("root-inside-worktree"),
        "{}",
        stderr(&o)
    );
    assert!(
        !inside
            .join("records")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some()),
        "no record written"
    );
}

#[test]
fn admission_refuses_below_the_watermark() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--min-free", "100%", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("watermark"), "{}", stderr(&o));
    assert!(env.records().is_empty());
}

#[test]
fn adopt_leases_an_existing_worktree_and_never_retires_it() {
    let env = TestEnv::new();
    let repo = env.repo();
    let wt = env.root.join("handoff");
    env.add_worktree(&repo, "handoff", &wt);
    let o = env
        .lease()
        .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    assert_eq!(rec["origin"], "adopted");
    assert_eq!(rec["state"], "terminal", "adopted worktrees end terminal");
    assert!(wt.is_dir(), "never auto-retired");
    // A second exec on the same worktree is a new session of the same record.
    let o = env
        .lease()
        .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    assert_eq!(rec["sessions"].as_array().unwrap().len(), 2);
    // The main worktree is not adopted.
    env.lease()
        .args(["exec", "--adopt", repo.to_str().unwrap(), "--", "true"])
        .assert()
        .code(125);
}

#[test]
fn adopt_next_to_another_live_record_makes_its_own() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let other = env.record();
    let wt = env.root.join("handoff");
    env.add_worktree(&repo, "handoff", &wt);
    let o = env
        .lease()
        .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let recs = env.records();
    assert_eq!(recs.len(), 2, "a new record, not a session of the other");
    let adopted = recs.iter().find(|r| r["id"] != other["id"]).unwrap();
    assert_eq!(adopted["origin"], "adopted");
    assert_eq!(adopted["worktree"]["path"], wt.to_str().unwrap());
    assert_eq!(
        env.record_of(other["id"].as_str().unwrap()),
        other,
        "untouched"
    );
}

#[test]
fn unlock_by_a_descendant_does_not_free_the_lease_while_the_launcher_lives() {
    let env = TestEnv::new();
    let repo = env.repo();
    let ready = env.file("ready");
    let script = format!("flock -u $LEASE_FD; {}; exec sleep 600", ready_sh(&ready));
    let bg = env.spawn_lease(&[
        "exec",
        "--repo",
        repo.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let child = read_pid(&ready);
    let _guard = KillOnDrop(child);
    let lease_file = env.record()["lease"]["path"].as_str().unwrap().to_string();
    // The launcher's private open still holds LOCK_SH: an exclusive try fails.
    let o = env
        .cmd("flock")
        .args(["--nonblock", "--exclusive", &lease_file, "true"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    // Without the launcher, nothing holds it any more.
    drop(bg);
    wait_until("the launcher to die", || {
        env.cmd("flock")
            .args(["--nonblock", "--exclusive", &lease_file, "true"])
            .status()
            .unwrap()
            .success()
    });
}

/// `lease exec` in a shell that exports `GIT_*` for another repository:
/// lease's own git ignores them, and so does the user-config git that runs
/// `git worktree add` (it keeps the user's config but never `GIT_*`).
#[test]
fn exec_in_a_hostile_git_environment_creates_where_it_was_asked() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .env("GIT_DIR", "/nonexistent")
        .env("GIT_WORK_TREE", "/")
        .env("GIT_INDEX_FILE", "/nonexistent/index")
        .args(["exec", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    let wt = rec["worktree"]["path"].as_str().unwrap();
    assert!(Path::new(wt).join("README").is_file(), "checked out: {wt}");
    assert!(
        env.git(&repo, &["worktree", "list", "--porcelain"])
            .contains(wt),
        "registered in this repository"
    );
}

#[test]
fn a_creation_lock_that_is_a_symlink_is_refused_and_nothing_is_created() {
    let env = TestEnv::new();
    let repo = env.repo();
    let exec = || {
        env.lease()
            .current_dir(&repo)
            .args(["exec", "--", "true"])
            .output()
            .unwrap()
    };
    assert_code(&exec(), 0);
    let lock = fs::read_dir(env.state.join("locks"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("repo-")
        })
        .expect("a creation lock");
    let mode = std::os::unix::fs::MetadataExt::mode(&fs::metadata(&lock).unwrap()) & 0o777;
    assert_eq!(mode, 0o600, "private");
    fs::remove_file(&lock).unwrap();
    let target = env.root.join("not-a-lock");
    std::os::unix::fs::symlink(&target, &lock).unwrap();
    let branches = env.git(&repo, &["branch", "--list"]);
    let o = exec();
    assert_code(&o, 125);
    assert!(
        stderr(&o).contains(lock.to_str().unwrap()),
        "{}",
        stderr(&o)
    );
    assert!(!target.exists(), "nothing created through the symlink");
    assert_eq!(env.git(&repo, &["branch", "--list"]), branches, "no branch");
}
