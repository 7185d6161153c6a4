//! `lease create` and its keeper (SPEC "Hosts that lease does not start"):
//! real bound processes, real SIGKILLs, the real `systemd-tmpfiles`.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::support::*;

/// A process to bind a keeper to: `sleep 600` in its own process group,
/// SIGKILLed on drop.
pub(crate) fn bound(env: &TestEnv) -> Bg {
    let mut c = env.cmd("sleep");
    c.arg("600").process_group(0);
    Bg(Some(c.spawn().unwrap()))
}

/// `lease create --bind-pid PID ARGS` in `repo`.
pub(crate) fn create(env: &TestEnv, repo: &Path, pid: u32, args: &[&str]) -> Output {
    env.lease()
        .current_dir(repo)
        .args(["create", "--bind-pid", &pid.to_string()])
        .args(args)
        .output()
        .unwrap()
}

/// The JSON object `lease create --json` printed: (id, path, keeper pid).
pub(crate) fn created(o: &Output) -> (String, PathBuf, u32) {
    assert_code(o, 0);
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)));
    (
        v["id"].as_str().unwrap().to_string(),
        PathBuf::from(v["path"].as_str().unwrap()),
        u32::try_from(v["keeper_pid"].as_u64().unwrap()).unwrap(),
    )
}

/// True if `dir` can be locked `LOCK_EX|LOCK_NB` now (what systemd-tmpfiles
/// tries before it ages a directory), probed from python3.
fn dir_lock_free(env: &TestEnv, dir: &Path) -> bool {
    let py = "import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)\ntry:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    sys.exit(1)\n";
    let o = env
        .cmd("python3")
        .args(["-c", py])
        .arg(dir)
        .output()
        .unwrap();
    match o.status.code() {
        Some(0) => true,
        Some(1) => false,
        _ => panic!("cannot probe {}: {}", dir.display(), stderr(&o)),
    }
}

/// Field `n` (1-based) of `/proc/<pid>/stat`, counted after the command name.
fn stat_field(pid: u32, n: usize) -> String {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = s.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(n - 3).unwrap().to_string()
}

/// The repository's registrations and refs, and the state root's records:
/// what a refused `lease create` must leave as it was.
fn scene(env: &TestEnv, repo: &Path) -> (String, String, usize, Vec<PathBuf>) {
    let worktrees = env.state.join("worktrees");
    let mut trees: Vec<PathBuf> = fs::read_dir(&worktrees)
        .map(|d| {
            d.flatten()
                .flat_map(|e| fs::read_dir(e.path()).into_iter().flatten().flatten())
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    trees.sort();
    (
        env.git(repo, &["worktree", "list", "--porcelain"]),
        env.git(repo, &["for-each-ref"]),
        env.records().len(),
        trees,
    )
}

#[test]
fn create_prints_only_the_path_once_the_keeper_holds_the_lease_and_the_top_directory() {
    let env = TestEnv::new();
    let repo = env.repo();
    let host = bound(&env);
    // The caller's descriptor 7 and a runner's tracking variable must not
    // reach the keeper.
    let o = env
        .cmd("sh")
        .current_dir(&repo)
        .env("RUNNER_TRACKING_ID", "github_0123")
        .args([
            "-c",
            "exec 7</dev/null; exec \"$0\" create --bind-pid \"$1\"",
            env!("CARGO_BIN_EXE_lease"),
            &host.pid().to_string(),
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let out = stdout(&o);
    let path = complete_line(&out).unwrap_or_else(|| panic!("not one line: {out:?}"));
    let wt = PathBuf::from(path);
    assert!(wt.is_absolute() && wt.is_dir(), "{path}");
    assert_eq!(fs::canonicalize(&wt).unwrap(), wt, "canonical");
    let rec = env.record();
    let id = rec["id"].as_str().unwrap();
    assert_eq!(rec["state"], "active");
    assert_eq!(rec["worktree"]["path"], path);
    // Held now, by the keeper alone: `lease create` has exited.
    assert!(!lock_is_free(&env, &env.lease_of(id)), "the lease is held");
    assert!(!dir_lock_free(&env, &wt), "the top directory is locked");
    let sessions = rec["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let keeper = u32::try_from(sessions[0]["pid"].as_u64().unwrap()).unwrap();
    let _k = KillOnDrop(keeper);
    assert_eq!(sessions[0]["bound"]["pid"], host.pid());
    assert!(alive(keeper));
    // Its own session, cwd /, stdio /dev/null, nothing of the caller's.
    assert_eq!(stat_field(keeper, 6), keeper.to_string(), "session leader");
    assert_eq!(
        fs::read_link(format!("/proc/{keeper}/cwd")).unwrap(),
        Path::new("/")
    );
    let mut fds: Vec<(u32, String)> = fs::read_dir(format!("/proc/{keeper}/fd"))
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_str().unwrap().parse().unwrap(),
                fs::read_link(e.path()).unwrap().display().to_string(),
            )
        })
        .collect();
    fds.sort();
    for (n, target) in &fds[..3] {
        assert_eq!(target, "/dev/null", "fd {n}");
    }
    let rest: Vec<&str> = fds[3..].iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        rest.len(),
        3,
        "lease, top directory and pidfd only: {fds:?}"
    );
    assert!(
        rest.contains(&env.lease_of(id).to_str().unwrap()),
        "{fds:?}"
    );
    assert!(rest.contains(&path), "{fds:?}");
    assert!(rest.iter().any(|t| t.contains("pidfd")), "{fds:?}");
    let environ = fs::read(format!("/proc/{keeper}/environ")).unwrap();
    assert!(
        !environ
            .split(|&b| b == 0)
            .any(|v| v.starts_with(b"RUNNER_TRACKING_ID=")),
        "the runner's tracking variable was dropped"
    );
    // git's own lock carries lease's reason, as for exec.
    let listed = env.git(&repo, &["worktree", "list", "--porcelain"]);
    assert!(listed.contains(&format!("locked lease {id}")), "{listed}");
    // A retire now is held: the keeper is a live launcher of the record.
    let snap = Snapshot::take(&env, &repo, id);
    let r = env.lease().args(["retire", "--json", id]).output().unwrap();
    assert_code(&r, 1);
    assert_eq!(reasons(&r), ["launcher-alive"]);
    snap.assert_held_unchanged(&env, &repo, "launcher-alive");
}

#[test]
fn create_json_is_one_object_with_id_path_branch_keeper_pid_and_slot() {
    let env = TestEnv::new();
    let repo = env.repo();
    let host = bound(&env);
    let o = create(&env, &repo, host.pid(), &["--json", "--branch", "task"]);
    let (id, path, keeper) = created(&o);
    let _k = KillOnDrop(keeper);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["branch"], "task");
    assert_eq!(id.len(), 32);
    assert_eq!(env.record()["worktree"]["path"], path.to_str().unwrap());
    assert_eq!(
        v.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["branch", "id", "keeper_pid", "path", "slot"]
    );
    assert_eq!(v["slot"], env.record()["slot"]);
    assert_eq!(v["slot"], 0, "the first record of the state root");
}

#[test]
fn a_keeper_bound_to_a_process_killed_by_sigkill_releases_the_tree() {
    let env = TestEnv::new();
    let repo = env.repo();
    let host = bound(&env);
    let (id, wt, keeper) = created(&create(&env, &repo, host.pid(), &["--json"]));
    let _k = KillOnDrop(keeper);
    signal(host.pid(), "KILL");
    drop(host);
    wait_until("the keeper to end its session", || {
        env.record_of(&id)["state"] == "terminal" && !alive(keeper)
    });
    let rec = env.record_of(&id);
    assert_eq!(rec["outcome"]["note"], "bound process exited");
    assert_eq!(
        rec["sessions"][0]["outcome"]["note"],
        "bound process exited"
    );
    assert!(rec["sessions"][0]["ended_at"].is_string());
    assert!(lock_is_free(&env, &env.lease_of(&id)));
    assert!(dir_lock_free(&env, &wt));
    // No intent: the tree stays terminal for an explicit retire or a reap.
    assert!(wt.is_dir());
    let r = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&r, 0);
    assert_eq!(disposition(&r), "removed");
    assert!(!wt.exists());
}

#[test]
fn a_keeper_killed_by_sigkill_leaves_what_reap_finishes_like_a_killed_launcher() {
    let env = TestEnv::new();
    let repo = env.repo();
    let host = bound(&env);
    let (id, wt, keeper) = created(&create(&env, &repo, host.pid(), &["--json"]));
    signal(keeper, "KILL");
    wait_until("the keeper to die", || !alive(keeper));
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "active", "nothing recorded its end");
    assert!(lock_is_free(&env, &env.lease_of(&id)));
    let dry = env.lease().args(["reap", "--json"]).output().unwrap();
    assert_code(&dry, 0);
    assert!(wt.is_dir(), "a dry run changes nothing");
    let o = env
        .lease()
        .args(["reap", "--apply", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let item = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(item["disposition"], "removed", "{item:#}");
    assert!(!wt.exists());
    assert_eq!(env.record_of(&id)["state"], "removed");
    drop(host);
}

#[test]
fn create_bound_to_no_live_process_is_a_usage_error_that_creates_nothing() {
    let env = TestEnv::new();
    let repo = env.repo();
    let mut gone = env.cmd("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let before = scene(&env, &repo);
    for bad in [pid, 0] {
        let o = create(&env, &repo, bad, &[]);
        assert_code(&o, 2);
        assert_eq!(stdout(&o), "", "nothing on stdout");
        assert!(stderr(&o).contains("--bind-pid"), "{}", stderr(&o));
        let j = create(&env, &repo, bad, &["--json"]);
        assert_code(&j, 2);
        let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--bind-pid"),
            "{v}"
        );
        assert_eq!(v["error"]["kind"], "usage", "{v}");
    }
    assert_eq!(scene(&env, &repo), before, "nothing changed");
}

#[test]
fn systemd_tmpfiles_skips_an_aged_tree_under_a_keeper_and_ages_a_free_one() {
    let env = TestEnv::new();
    let Some(tmpfiles) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("systemd-tmpfiles"))
            .find(|c| c.is_file())
    }) else {
        skip("systemd-tmpfiles is not installed (apt-get install systemd)");
        return;
    };
    let repo = env.repo();
    let host = bound(&env);
    let (id, kept, keeper) = created(&create(&env, &repo, host.pid(), &["--json"]));
    let _k = KillOnDrop(keeper);
    // A control: a worktree of the same repository that nobody holds.
    let (_free_id, free) = env.kept(&repo, "free", "echo x > .env");
    let parent = kept.parent().unwrap().to_path_buf();
    assert_eq!(free.parent().unwrap(), parent);
    // Age everything below the repository's directory by mtime.
    for tree in [&kept, &free] {
        let o = env
            .cmd("find")
            .arg(tree)
            .args(["-exec", "touch", "-h", "-d", "2020-01-01", "{}", "+"])
            .output()
            .unwrap();
        assert_code(&o, 0);
    }
    let before = manifest(&kept);
    let conf = env.file("tmpfiles.conf");
    fs::write(&conf, format!("e {} - - - mM:1s\n", parent.display())).unwrap();
    let o = env
        .cmd(&tmpfiles)
        .arg("--clean")
        .arg(&conf)
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(
        !free.join(".env").exists() && !free.join("README").exists(),
        "the free tree was aged: systemd-tmpfiles did clean"
    );
    assert_eq!(manifest(&kept), before, "the kept tree is untouched");
    assert_eq!(env.record_of(&id)["state"], "active");
    drop(host);
}

#[test]
fn a_keeper_that_dies_before_it_is_ready_fails_create_and_the_fresh_tree_is_retired() {
    let env = TestEnv::new();
    let repo = env.repo();
    let host = bound(&env);
    let before = env.git(&repo, &["worktree", "list", "--porcelain"]);
    let o = env
        .lease()
        .current_dir(&repo)
        .env("LEASE_FI_CRASH", "keeper-holding")
        .args(["create", "--json", "--bind-pid", &host.pid().to_string()])
        .output()
        .unwrap();
    assert_code(&o, 3);
    let err = stderr(&o);
    assert!(err.contains("keeper did not start"), "{err}");
    assert!(err.contains("the new worktree was retired"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("path").is_none(), "no path was given: {v}");
    let rec = env.record();
    assert_eq!(rec["state"], "removed");
    assert!(
        rec["outcome"]["note"]
            .as_str()
            .unwrap()
            .starts_with("keeper did not start"),
        "{rec:#}"
    );
    assert!(!Path::new(rec["worktree"]["path"].as_str().unwrap()).exists());
    assert_eq!(
        env.git(&repo, &["worktree", "list", "--porcelain"]),
        before,
        "the registration is gone too"
    );
}
