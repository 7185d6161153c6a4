//! `lease join` and the consumer shims: the git PATH shim, the Python helper
//! and its unit tests, each against real leases and real retires.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::*;

/// The checked-in `shim/` directory.
fn shim_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("shim")
}

/// Makes a FIFO: a child that opens it for reading blocks until the test
/// writes a line, with no polling on either side.
fn fifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// Releases whoever waits on `fifo` (the write blocks until it has opened it).
fn release(fifo: &Path) {
    fs::write(fifo, "go\n").unwrap();
}

/// A created worktree left `terminal`: kept by a first session, then ended
/// by an adopted one that does not keep it.
pub(crate) fn terminal_worktree(env: &TestEnv, repo: &Path) -> (String, PathBuf) {
    let o = env
        .lease()
        .current_dir(repo)
        .args(["exec", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
    let o = env
        .lease()
        .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(env.record_of(&id)["state"], "terminal");
    (id, wt)
}

/// The variables `lease exec` gave the record's command, minus `LEASE_FD`.
pub(crate) fn lease_vars(env: &TestEnv, id: &str) -> Vec<(String, String)> {
    let rec = env.record_of(id);
    let l = &rec["lease"];
    vec![
        ("LEASE_ID".into(), id.to_string()),
        ("LEASE_FILE".into(), l["path"].as_str().unwrap().to_string()),
        (
            "LEASE_IDENTITY".into(),
            format!("{}:{}", l["dev"], l["ino"]),
        ),
        (
            "LEASE_WORKTREE".into(),
            rec["worktree"]["path"].as_str().unwrap().to_string(),
        ),
    ]
}

fn retire(env: &TestEnv, id: &str) -> Output {
    env.lease().args(["retire", "--json", id]).output().unwrap()
}

#[track_caller]
fn assert_held(env: &TestEnv, id: &str, reason: &str) {
    let o = retire(env, id);
    assert_code(&o, 1);
    assert!(
        reasons(&o).contains(&reason.to_string()),
        "want {reason}: {}",
        stdout(&o)
    );
}

#[track_caller]
fn assert_removed(env: &TestEnv, id: &str) {
    let o = retire(env, id);
    assert_code(&o, 0);
    assert_eq!(env.record_of(id)["state"], "removed");
}

// ---- lease join ----

#[test]
fn join_runs_the_command_holding_the_lease() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = terminal_worktree(&env, &repo);
    let vars = lease_vars(&env, &id);
    let identity = &vars[2].1;
    // The command sees LEASE_FD open on the lease inode, shared-locked.
    let o = env
        .lease()
        .envs(vars.clone())
        .args([
            "join",
            "--",
            "sh",
            "-c",
            "stat -L -c %d:%i /proc/$$/fd/$LEASE_FD; grep -c FLOCK /proc/$$/fdinfo/$LEASE_FD",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(stdout(&o), format!("{identity}\n1\n"), "{}", stderr(&o));
    // join execs the command: its status is the command's, 126/127 as exec.
    let run = |args: &[&str]| {
        env.lease()
            .envs(vars.clone())
            .arg("join")
            .arg("--")
            .args(args)
            .output()
            .unwrap()
    };
    assert_code(&run(&["sh", "-c", "exit 7"]), 7);
    assert_code(&run(&["no-such-command-lease-test"]), 127);
    let plain = env.file("plain.txt");
    fs::write(&plain, "x").unwrap();
    assert_code(&run(&[plain.to_str().unwrap()]), 126);
    // An executable file without `#!` that is no binary either (ENOEXEC):
    // 126, as `lease exec` gives it, and never run through /bin/sh, which
    // glibc's execvp (std's `CommandExt::exec`) would do. Every file is
    // written before the first run (an executable written moments before
    // its exec can meet ETXTBSY from a fork in another test's thread).
    let bin = env.file("join-bin");
    let later = env.file("join-later");
    let last = env.file("join-last");
    for d in [&bin, &last] {
        fs::create_dir(d).unwrap();
    }
    // In `later`, directories where the programs would be (EACCES).
    fs::create_dir_all(later.join("junk")).unwrap();
    fs::create_dir_all(later.join("ok")).unwrap();
    let ran = env.file("junk-ran");
    let junk = bin.join("junk");
    fs::write(&junk, format!("touch '{}'\n", ran.display())).unwrap();
    // A runnable `junk` after `bin` on PATH: the search must end at
    // bin/junk, whose ENOEXEC is final, and never reach this one.
    let ran_last = env.file("junk-last-ran");
    fs::write(
        last.join("junk"),
        format!("#!/bin/sh\ntouch '{}'\nexit 9\n", ran_last.display()),
    )
    .unwrap();
    fs::write(bin.join("ok"), "#!/bin/sh\nexit 9\n").unwrap();
    for f in [&junk, &last.join("junk"), &bin.join("ok")] {
        fs::set_permissions(f, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let o = run(&[junk.to_str().unwrap()]);
    assert_code(&o, 126);
    assert!(stderr(&o).contains("Exec format error"), "{}", stderr(&o));
    assert!(!ran.exists(), "the file never ran as a shell script");
    // A path through a regular file (ENOTDIR): 126, as exec gives it.
    let through = plain.join("x");
    assert_code(&run(&[through.to_str().unwrap()]), 126);
    let path = |dirs: &[&std::path::Path]| {
        let mut v: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        v.push(std::env::var("PATH").unwrap());
        v.join(":")
    };
    let via_path = |p: String, prog: &str| {
        env.lease()
            .envs(vars.clone())
            .env("PATH", p)
            .args(["join", "--", prog])
            .output()
            .unwrap()
    };
    // Found through PATH: the directory in `later` is passed over, the
    // search ends at bin/junk (ENOEXEC), the runnable one after it is
    // never tried, and nothing runs through /bin/sh.
    let o = via_path(path(&[&later, &bin, &last]), "junk");
    assert_code(&o, 126);
    assert!(stderr(&o).contains("Exec format error"), "{}", stderr(&o));
    assert!(!ran.exists() && !ran_last.exists(), "nothing ran");
    // The control: without bin/junk in the way, the later one runs.
    assert_code(&via_path(path(&[&later, &last]), "junk"), 9);
    assert!(ran_last.exists());
    // A name found nowhere: 127; found only where it cannot run: 126.
    assert_code(&via_path(path(&[&later]), "junk"), 126);
    assert_code(
        &via_path(path(&[&later]), "no-such-command-lease-test"),
        127,
    );
    assert_code(&via_path(path(&[&later, &bin]), "ok"), 9);
    // Usage errors are 125 too, like exec.
    let o = env
        .lease()
        .envs(vars.clone())
        .args(["join", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert_eq!(
        env.record_of(&id)["state"],
        "terminal",
        "join changes no record"
    );
    assert!(lock_is_free(&env, &env.lease_of(&id)));
}

/// Runs `lease join -- touch <marker>` and asserts a refusal with `code`
/// that never ran the command.
#[track_caller]
fn assert_join_refused(env: &TestEnv, vars: &[(String, String)], code: &str) {
    let marker = env.file("joined-marker");
    let o = env
        .lease()
        .envs(vars.iter().cloned())
        .args(["join", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(
        stderr(&o).contains(&format!("[{code}]")),
        "want [{code}]: {}",
        stderr(&o)
    );
    assert!(!marker.exists(), "the command never ran");
}

#[test]
fn join_refuses_a_lease_that_is_not_the_one_named() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = terminal_worktree(&env, &repo);
    let vars = lease_vars(&env, &id);
    let lease = env.lease_of(&id);
    let with = |k: &str, v: &str| -> Vec<(String, String)> {
        vars.iter()
            .map(|(k2, v2)| (k2.clone(), if k2 == k { v.to_string() } else { v2.clone() }))
            .collect()
    };
    // A wrong identity, and a malformed one.
    let (dev, ino) = vars[2].1.split_once(':').unwrap();
    let ino: u64 = ino.parse().unwrap();
    assert_join_refused(
        &env,
        &with("LEASE_IDENTITY", &format!("{dev}:{}", ino + 1)),
        "lease-identity",
    );
    assert_join_refused(&env, &with("LEASE_IDENTITY", "12"), "lease-identity");
    // A file that is not `<state root>/leases/<LEASE_ID>.lease`.
    let elsewhere = env.file(&format!("{id}.lease"));
    fs::copy(&lease, &elsewhere).unwrap();
    assert_join_refused(
        &env,
        &with("LEASE_FILE", elsewhere.to_str().unwrap()),
        "lease-identity",
    );
    // Renamed away: missing. Another file in its place: a new inode.
    let old = env.state.join("leases/old");
    fs::rename(&lease, &old).unwrap();
    assert_join_refused(&env, &vars, "lease-missing");
    fs::write(&lease, "").unwrap();
    fs::set_permissions(&lease, fs::Permissions::from_mode(0o600)).unwrap();
    assert_join_refused(&env, &vars, "lease-identity");
    // The original back, hardlinked: two links.
    fs::rename(&old, &lease).unwrap();
    fs::hard_link(&lease, &old).unwrap();
    assert_join_refused(&env, &vars, "lease-identity");
    fs::remove_file(&old).unwrap();
    // A symlink to the right inode is never followed.
    let real = env.state.join("leases/real");
    fs::rename(&lease, &real).unwrap();
    std::os::unix::fs::symlink(&real, &lease).unwrap();
    assert_join_refused(&env, &vars, "lease-identity");
    fs::remove_file(&lease).unwrap();
    fs::rename(&real, &lease).unwrap();
    // Open to others.
    fs::set_permissions(&lease, fs::Permissions::from_mode(0o644)).unwrap();
    assert_join_refused(&env, &vars, "lease-insecure");
    fs::set_permissions(&lease, fs::Permissions::from_mode(0o600)).unwrap();
    // The record rewritten by hand, one field at a time from the original.
    let path = env.state.join("records").join(format!("{id}.json"));
    let saved = fs::read(&path).unwrap();
    let rewrite = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut rec: serde_json::Value = serde_json::from_slice(&saved).unwrap();
        edit(&mut rec);
        fs::write(&path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    };
    // A record that is retiring.
    rewrite(&|r| r["state"] = serde_json::json!("retiring"));
    assert_join_refused(&env, &vars, "retire-in-progress");
    // A record already removed (its lease file not yet unlinked by a retire
    // that crashed): nothing to join.
    rewrite(&|r| r["state"] = serde_json::json!("removed"));
    assert_join_refused(&env, &vars, "lease-missing");
    // A record that names another lease file, or another inode.
    let other = env.state.join("leases/other.lease");
    rewrite(&|r| r["lease"]["path"] = serde_json::json!(other));
    assert_join_refused(&env, &vars, "lease-identity");
    rewrite(&|r| r["lease"]["ino"] = serde_json::json!(r["lease"]["ino"].as_u64().unwrap() + 1));
    assert_join_refused(&env, &vars, "lease-identity");
    // No record at all: not recorded. A corrupt one is an error naming it,
    // never taken for "no record".
    fs::remove_file(&path).unwrap();
    assert_join_refused(&env, &vars, "not-recorded");
    fs::write(&path, b"{ not json").unwrap();
    let o = env
        .lease()
        .envs(vars.clone())
        .args(["join", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(
        stderr(&o).contains(path.to_str().unwrap()) && !stderr(&o).contains("not-recorded"),
        "{}",
        stderr(&o)
    );
    fs::write(&path, &saved).unwrap();
    // Not inside a lease at all.
    let o = env.lease().args(["join", "--", "true"]).output().unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("LEASE_ID"), "{}", stderr(&o));
    // Everything restored: join works, and nothing above changed the worktree.
    let o = env
        .lease()
        .envs(vars.clone())
        .args(["join", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_removed(&env, &id);
}

#[test]
fn join_fails_at_once_while_the_lease_is_held_exclusively() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = terminal_worktree(&env, &repo);
    let vars = lease_vars(&env, &id);
    // What a retire holds: LOCK_EX on its own open (flock -x).
    let ex = LockHolder::new(&env, &env.lease_of(&id), true);
    assert_join_refused(&env, &vars, "retire-in-progress");
    drop(ex);
    // A real retire paused while it holds the lock.
    let fi = env.file("fi");
    fs::create_dir(&fi).unwrap();
    let mut c = env.lease();
    c.env("LEASE_FI_PAUSE", "retire-locked")
        .env("LEASE_FI_DIR", &fi)
        .args(["retire", "--json", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let bg = Bg(Some(c.spawn().unwrap()));
    wait_until("the retire to hold the lease", || {
        fi.join("paused-retire-locked").exists()
    });
    assert_join_refused(&env, &vars, "retire-in-progress");
    fs::write(fi.join("resume-retire-locked"), "").unwrap();
    assert_code(&bg.wait(), 0);
    assert_eq!(env.record_of(&id)["state"], "removed");
    // After the retire: the lease file is gone.
    assert_join_refused(&env, &vars, "lease-missing");
}

#[test]
fn join_keeps_retire_held_while_the_command_runs() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = terminal_worktree(&env, &repo);
    let ready = env.file("ready");
    let go = env.file("go");
    fifo(&go);
    let mut c = env.lease();
    c.envs(lease_vars(&env, &id))
        .args(["join", "--", "sh", "-c"])
        .arg(format!("{}; read _ < {}", ready_sh(&ready), sh_quote(&go)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let bg = Bg(Some(c.spawn().unwrap()));
    let pid = read_pid(&ready);
    assert_eq!(pid, bg.pid(), "join replaced itself with the command");
    assert_held(&env, &id, "consumer-alive");
    release(&go);
    assert_code(&bg.wait(), 0);
    assert_removed(&env, &id);
}

// ---- shim/git ----

/// A sandbox PATH with a `bin/` holding `lease` first, then the machine's.
fn lease_on_path(env: &TestEnv) -> String {
    let bin = env.file("bin");
    fs::create_dir_all(&bin).unwrap();
    let link = bin.join("lease");
    if !link.exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_lease"), &link).unwrap();
    }
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap())
}

/// The two git shims: the script shim/git and the compiled
/// `lease-git-shim`, which every shim test runs alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shim {
    Script,
    Compiled,
}

impl Shim {
    /// A directory holding this shim as `git`: the checked-in `shim/` for
    /// the script; for the compiled shim a directory of the test's own
    /// with `git` a symlink to the built binary (as the guide installs it).
    fn dir(self, env: &TestEnv) -> PathBuf {
        match self {
            Shim::Script => shim_dir(),
            Shim::Compiled => {
                let d = env.file("compiled-shim");
                if !d.exists() {
                    fs::create_dir(&d).unwrap();
                    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_lease-git-shim"), d.join("git"))
                        .unwrap();
                }
                d
            }
        }
    }
}

/// [`lease_on_path`] with the git shim in front.
fn shim_path(env: &TestEnv, shim: Shim) -> String {
    format!("{}:{}", shim.dir(env).display(), lease_on_path(env))
}

#[test]
fn git_shim_picks_the_real_git_and_joins_only_without_the_descriptor() {
    picks_the_real_git_and_joins_only_without_the_descriptor(Shim::Script);
}

#[test]
fn compiled_shim_picks_the_real_git_and_joins_only_without_the_descriptor() {
    picks_the_real_git_and_joins_only_without_the_descriptor(Shim::Compiled);
}

fn picks_the_real_git_and_joins_only_without_the_descriptor(shim: Shim) {
    let env = TestEnv::new();
    let shim_dir = || shim.dir(&env);
    // A second copy of the shim (skipped: it carries the marker), then a
    // fake "real" git and a fake lease that print their argv.
    let other = env.file("other-shim");
    fs::create_dir(&other).unwrap();
    fs::copy(
        fs::canonicalize(shim_dir().join("git")).unwrap(),
        other.join("git"),
    )
    .unwrap();
    let real = env.file("real");
    fs::create_dir(&real).unwrap();
    let print =
        "#!/bin/sh\nprintf '%s' \"$0\"; for a in \"$@\"; do printf ' [%s]' \"$a\"; done; echo\n";
    write_exe(&real.join("git"), print);
    let fake_lease = env.file("fake-lease");
    write_exe(&fake_lease, print);
    let path = format!(
        "{}:{}:{}:{}",
        shim_dir().display(),
        other.display(),
        real.display(),
        std::env::var("PATH").unwrap()
    );
    let real_git = real.join("git");
    let args = ["a", "b c", "", "*", "-c", "x=$HOME"];
    let want_args = " [a] [b c] [] [*] [-c] [x=$HOME]";
    let run = |c: &mut Command| {
        let o = c.output().unwrap();
        assert_code(&o, 0);
        stdout(&o)
    };
    // Outside a lease: the real git, argv exact.
    let out = run(env.cmd("git").env("PATH", &path).args(args));
    assert_eq!(out, format!("{}{want_args}\n", real_git.display()));
    // Inside a lease without the descriptor: under `lease join --`.
    let lease = env.file("x.lease");
    fs::write(&lease, "").unwrap();
    let m = fs::metadata(&lease).unwrap();
    use std::os::unix::fs::MetadataExt;
    let identity = format!("{}:{}", m.dev(), m.ino());
    let inside = |c: &mut Command| -> String {
        run(c
            .env("PATH", &path)
            .env("LEASE_BIN", &fake_lease)
            .env("LEASE_FILE", &lease)
            .env("LEASE_IDENTITY", &identity))
    };
    let joined = format!(
        "{} [join] [--] [{}]{want_args}\n",
        fake_lease.display(),
        real_git.display()
    );
    assert_eq!(inside(env.cmd("git").args(args)), joined);
    assert_eq!(
        inside(env.cmd("git").args(args).env("LEASE_FD", "9")),
        joined,
        "LEASE_FD not open"
    );
    // Holding it (fd 7 open on the lease inode): the real git directly.
    let held = |fd_target: &Path| {
        inside(
            env.cmd("sh")
                .args(["-c", "exec 7<\"$T\"; exec git \"$@\"", "sh"])
                .args(args)
                .env("T", fd_target)
                .env("LEASE_FD", "7"),
        )
    };
    assert_eq!(held(&lease), format!("{}{want_args}\n", real_git.display()));
    // fd 7 open on another file: not the lease, so join.
    assert_eq!(held(&env.file("other-shim/git")), joined);
    // Run by absolute path with its directory off PATH: still the real git.
    let off_path = format!("{}:{}", real.display(), std::env::var("PATH").unwrap());
    let out = run(env
        .cmd(shim_dir().join("git"))
        .env("PATH", &off_path)
        .args(args));
    assert_eq!(out, format!("{}{want_args}\n", real_git.display()));
    // LEASE_GIT wins; a LEASE_GIT that is a shim is refused.
    let alt = env.file("alt-git");
    write_exe(&alt, print);
    let out = run(env
        .cmd("git")
        .env("PATH", &path)
        .env("LEASE_GIT", &alt)
        .arg("x"));
    assert_eq!(out, format!("{} [x]\n", alt.display()));
    let o = env
        .cmd("git")
        .env("PATH", &path)
        .env("LEASE_GIT", other.join("git"))
        .output()
        .unwrap();
    assert_code(&o, 125);
    // A "real" git that execs the shim again, and a PATH without the tools
    // to read the marker (so the second shim copy cannot be told from git):
    // both refuse at once instead of exec'ing forever.
    let timeout = which("timeout");
    let looping = env.file("loop");
    fs::create_dir(&looping).unwrap();
    write_exe(
        &looping.join("git"),
        &format!(
            "#!/bin/sh\nexec '{}' \"$@\"\n",
            shim_dir().join("git").display()
        ),
    );
    for (dirs, says) in [
        (vec![shim_dir(), looping.clone()], "leads back to this shim"),
        (vec![shim_dir(), other.clone()], "no git found"),
    ] {
        let mut p: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        if says.contains("leads back") {
            p.push(std::env::var("PATH").unwrap());
        }
        let o = env
            .cmd(&timeout)
            .env("PATH", p.join(":"))
            .args(["20", "git", "--version"])
            .output()
            .unwrap();
        assert_code(&o, 125);
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    // Inside a lease with a LEASE_BIN that is not there: refuse, never run
    // git unprotected.
    let bare_path = format!("{}:{}:/usr/bin:/bin", shim_dir().display(), real.display());
    let inside_bare = |c: &mut Command| {
        c.env("PATH", &bare_path)
            .env("LEASE_FILE", &lease)
            .env("LEASE_IDENTITY", &identity)
            .output()
            .unwrap()
    };
    let o = inside_bare(env.cmd("git").env("LEASE_BIN", env.file("no-such-lease")));
    assert_code(&o, 125);
    assert!(stderr(&o).contains("LEASE_BIN"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "git never ran");
    // No LEASE_BIN: the script looks for `lease` on PATH and refuses
    // without one; the compiled shim joins with its own copy of `lease
    // join`, which refuses a lease it cannot check (no LEASE_ID here).
    let o = inside_bare(&mut env.cmd("git"));
    assert!(stdout(&o).is_empty(), "git never ran");
    match shim {
        Shim::Compiled => {
            assert_code(&o, 125);
            assert!(stderr(&o).contains("LEASE_ID"), "{}", stderr(&o));
        }
        Shim::Script
            if Path::new("/usr/bin/lease").exists() || Path::new("/bin/lease").exists() =>
        {
            skip("the no-lease-binary case: a lease is installed in /usr/bin or /bin");
        }
        Shim::Script => {
            assert_code(&o, 125);
            assert!(stderr(&o).contains("LEASE_BIN"), "{}", stderr(&o));
        }
    }
}

#[test]
fn git_shim_fast_path_starts_no_process_held_or_lost() {
    fast_path_starts_no_process_held_or_lost(Shim::Script);
}

#[test]
fn compiled_shim_fast_path_starts_no_process_held_or_lost() {
    fast_path_starts_no_process_held_or_lost(Shim::Compiled);
}

fn fast_path_starts_no_process_held_or_lost(shim_kind: Shim) {
    // Inside a lease with LEASE_GIT set (as `lease exec` exports it), the
    // shim decides with shell builtins (or in its own process) and execs
    // once: the real git when it holds the lease descriptor, `lease join`
    // when it lost it.
    let env = TestEnv::new();
    let shim_dir = || shim_kind.dir(&env);
    let real = env.file("real-git");
    let print =
        "#!/bin/sh\nprintf '%s' \"$0\"; for a in \"$@\"; do printf ' [%s]' \"$a\"; done; echo\n";
    write_exe(&real, print);
    let fake_lease = env.file("fake-lease");
    write_exe(&fake_lease, print);
    let lease = env.file("x.lease");
    fs::write(&lease, "").unwrap();
    let other = env.file("other");
    fs::write(&other, "").unwrap();
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(&lease).unwrap();
    let identity = format!("{}:{}", m.dev(), m.ino());
    // No git on this PATH at all: the fast path never looks for one.
    let path = format!("{}:/usr/bin:/bin", shim_dir().display());
    let args = ["rev-parse", "HEAD", "a b", ""];
    let want_args = " [rev-parse] [HEAD] [a b] []";
    let shim = shim_dir().join("git");
    // `sh -c 'exec 7<T; exec SHIM ARGS'`: fd 7 on T, then the shim itself
    // (exec, no fork), under strace when STRACE is given.
    let case = |fd_target: &Path, strace: Option<&Path>| {
        let mut c = match strace {
            Some(log) => {
                let mut c = Command::new("strace");
                c.args([
                    "-f",
                    "-qq",
                    "-e",
                    "trace=clone,clone3,fork,vfork",
                    "-e",
                    "signal=none",
                    "-o",
                ])
                .arg(log)
                .arg("sh");
                c
            }
            None => Command::new("sh"),
        };
        c.args(["-c", "exec 7<\"$T\"; exec \"$SHIM\" \"$@\"", "sh"])
            .args(args)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", env.file("."))
            .env("T", fd_target)
            .env("SHIM", &shim)
            .env("LEASE_GIT", &real)
            .env("LEASE_BIN", &fake_lease)
            .env("LEASE_FILE", &lease)
            .env("LEASE_IDENTITY", &identity)
            .env("LEASE_FD", "7");
        c
    };
    let held = format!("{}{want_args}\n", real.display());
    let joined = format!(
        "{} [join] [--] [{}]{want_args}\n",
        fake_lease.display(),
        real.display()
    );
    for (target, want) in [(&lease, &held), (&other, &joined)] {
        let o = case(target, None).output().unwrap();
        assert_code(&o, 0);
        assert_eq!(&stdout(&o), want);
    }
    // LEASE_FD not a number: not held, so join.
    let o = case(&lease, None).env("LEASE_FD", "x").output().unwrap();
    assert_code(&o, 0);
    assert_eq!(stdout(&o), joined);
    // A LEASE_GIT that is the shim itself comes back in the same process:
    // refused at once, never a loop.
    let o = case(&lease, None).env("LEASE_GIT", &shim).output().unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("leads back"), "{}", stderr(&o));
    // No lease binary to be found on the lost path: refuse, never run git
    // unprotected.
    let o = case(&other, None)
        .env("LEASE_BIN", env.file("no-such-lease"))
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("LEASE_BIN"), "{}", stderr(&o));
    // Zero processes started on either path (the fake git and lease print
    // with builtins only, so any clone is the shim's).
    let probe = Command::new("strace")
        .args(["-o", "/dev/null", "true"])
        .output();
    if !probe.is_ok_and(|p| p.status.success()) {
        skip("the fork count: strace cannot run here");
        return;
    }
    for (target, want) in [(&lease, &held), (&other, &joined)] {
        let log = env.file("forks.strace");
        let o = case(target, Some(&log)).output().unwrap();
        assert_code(&o, 0);
        assert_eq!(&stdout(&o), want);
        let trace = fs::read_to_string(&log).unwrap();
        let forks: Vec<&str> = trace
            .lines()
            .filter(|l| !l.contains("+++") && !l.contains("---"))
            .collect();
        assert!(forks.is_empty(), "the shim started processes: {forks:?}");
    }
}

#[test]
fn git_commit_from_a_python_worker_holds_the_lease_after_the_launcher_died() {
    commit_from_a_python_worker_holds_the_lease_after_the_launcher_died(Shim::Script);
}

#[test]
fn compiled_shim_commit_from_a_python_worker_holds_the_lease_after_the_launcher_died() {
    // No LEASE_BIN: the compiled shim joins in its own process.
    commit_from_a_python_worker_holds_the_lease_after_the_launcher_died(Shim::Compiled);
}

fn commit_from_a_python_worker_holds_the_lease_after_the_launcher_died(shim: Shim) {
    let env = TestEnv::new();
    let repo = env.repo();
    let path = shim_path(&env, shim);
    let shim_dir = || shim.dir(&env);
    let worker_ready = env.file("worker-ready");
    let worker_go = env.file("worker-go");
    let editor_ready = env.file("editor-ready");
    let editor_go = env.file("editor-go");
    let held = env.file("editor-held");
    let done = env.file("worker-done");
    fifo(&worker_go);
    fifo(&editor_go);
    // The editor git runs: proves what it inherited, then blocks.
    let editor = env.file("editor");
    write_exe(
        &editor,
        &format!(
            "#!/bin/sh\nprintf 'shim commit\\n' > \"$1\"\n\
             stat -L -c %d:%i /proc/$$/fd/${{LEASE_FD:-none}} > {held} 2>/dev/null\n\
             {ready}\nread _ < {go}\n",
            held = held.display(),
            ready = ready_sh(&editor_ready),
            go = editor_go.display()
        ),
    );
    // A supervisor's worker that lost its descriptor and then runs git with
    // subprocess's defaults (close_fds=True).
    let worker = env.file("worker.py");
    fs::write(
        &worker,
        format!(
            r#"import os, subprocess, sys
os.close(int(os.environ["LEASE_FD"]))
{ready}
open({go:?}).read()
p = subprocess.Popen(["git", "-c", "core.editor=" + {editor:?}, "commit", "-q",
                      "--allow-empty", "--author", "A U Thor <a@example.com>"])
rc = p.wait()
open({done:?}, "w").write(str(rc))
"#,
            ready = ready_py(&worker_ready),
            go = worker_go.to_str().unwrap(),
            editor = editor.to_str().unwrap(),
            done = done.to_str().unwrap(),
        ),
    )
    .unwrap();
    let mut c = env.lease();
    c.env("PATH", &path)
        .args(["exec", "--repo", repo.to_str().unwrap(), "--", "python3"])
        .arg(&worker)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let launcher = Bg(Some(c.spawn().unwrap()));
    let worker_pid = read_pid(&worker_ready);
    let _w = KillOnDrop(worker_pid);
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
    signal(launcher.pid(), "KILL");
    wait_until("the launcher to die", || !alive(launcher.pid()));
    // The worker closed its descriptor and the launcher is dead: nobody
    // holds the lease (the kernel drops the killed launcher's lock as it exits).
    let lease = env.lease_of(&id);
    wait_until("the lease to be free", || lock_is_free(&env, &lease));
    release(&worker_go);
    let editor_pid = read_pid(&editor_ready);
    let _e = KillOnDrop(editor_pid);
    // Retire, with the shim first on PATH: held, and lease's own git is not the shim.
    let o = env
        .lease()
        .env("PATH", &path)
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(
        reasons(&o).contains(&"consumer-alive".to_string()),
        "{}",
        stdout(&o)
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let git_path = report["git"]["path"].as_str().unwrap();
    assert!(
        !git_path.starts_with(shim_dir().to_str().unwrap()),
        "{git_path}"
    );
    assert_eq!(
        fs::read_to_string(&held).unwrap().trim(),
        lease_vars(&env, &id)[2].1,
        "git (and its editor) run holding the lease"
    );
    release(&editor_go);
    wait_until("the worker to finish", || {
        done.exists() && !alive(worker_pid)
    });
    assert_eq!(
        fs::read_to_string(&done).unwrap(),
        "0",
        "git commit succeeded"
    );
    assert_eq!(
        env.git(&wt, &["log", "-1", "--format=%an|%s"]),
        "A U Thor|shim commit",
        "the shim passed argv through exactly"
    );
    drop(launcher);
    // Every holder is gone: the commit is archived and the worktree removed.
    assert_removed(&env, &id);
    assert!(env.record_of(&id)["archive"]["commits"].as_u64().unwrap() >= 1);
}

#[test]
fn compiled_shim_carries_the_marker_in_its_first_4_kib() {
    // lease never takes a file carrying the marker in its first 4 KiB for
    // git (git.rs `is_lease_shim`), and neither does either shim: the
    // binary's ELF note must land there.
    let bin = fs::read(env!("CARGO_BIN_EXE_lease-git-shim")).unwrap();
    let head = &bin[..bin.len().min(4096)];
    assert!(
        head.windows(10).any(|w| w == b"lease-shim"),
        "no `lease-shim` in the first 4 KiB of the compiled shim"
    );
    // And `lease doctor` sees it as the shim when it is the first git.
    let env = TestEnv::new();
    let o = env
        .lease()
        .env("PATH", shim_path(&env, Shim::Compiled))
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    assert!(stdout(&o).contains("is lease's git shim"), "{}", stdout(&o));
}

#[test]
fn compiled_shim_joins_in_its_own_process_with_the_checks_of_lease_join() {
    // No LEASE_BIN and no `lease` on PATH: the compiled shim takes the lease
    // again itself, and refuses as `lease join` does.
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = terminal_worktree(&env, &repo);
    let git = env.file("real-git");
    write_exe(
        &git,
        "#!/bin/sh\nstat -L -c %d:%i /proc/$$/fd/$LEASE_FD; grep -c FLOCK /proc/$$/fdinfo/$LEASE_FD; echo \"$@\"\n",
    );
    let path = format!("{}:/usr/bin:/bin", Shim::Compiled.dir(&env).display());
    let vars = lease_vars(&env, &id);
    let shim = |extra: &[(&str, &str)]| -> Output {
        env.cmd("git")
            .env("PATH", &path)
            .env("LEASE_GIT", &git)
            .envs(vars.iter().cloned())
            .envs(extra.iter().copied())
            .args(["rev-parse", "HEAD"])
            .output()
            .unwrap()
    };
    let o = shim(&[]);
    assert_code(&o, 0);
    assert_eq!(
        stdout(&o),
        format!("{}\n1\nrev-parse HEAD\n", vars[2].1),
        "git ran holding the lease: {}",
        stderr(&o)
    );
    // While a retire holds the lease exclusively: refused at once, git
    // never runs, the record unchanged.
    let before = fs::read(env.state.join("records").join(format!("{id}.json"))).unwrap();
    let ex = LockHolder::new(&env, &env.lease_of(&id), true);
    let o = shim(&[]);
    assert_code(&o, 125);
    assert!(
        stderr(&o).contains("[retire-in-progress]"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "git never ran");
    drop(ex);
    assert_eq!(
        fs::read(env.state.join("records").join(format!("{id}.json"))).unwrap(),
        before
    );
    // A lease that is not the one named: refused, git never runs.
    let o = shim(&[("LEASE_IDENTITY", "1:2")]);
    assert_code(&o, 125);
    assert!(stderr(&o).contains("[lease-identity]"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "git never ran");
    // While the joined git runs, retire is held.
    let ready = env.file("ready");
    let go = env.file("go");
    fifo(&go);
    write_exe(
        &git,
        &format!(
            "#!/bin/sh\n{}\nread _ < {}\n",
            ready_sh(&ready),
            sh_quote(&go)
        ),
    );
    let mut c = env.cmd("git");
    c.env("PATH", &path)
        .env("LEASE_GIT", &git)
        .envs(vars.iter().cloned())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let bg = Bg(Some(c.spawn().unwrap()));
    assert_eq!(read_pid(&ready), bg.pid(), "the shim became git");
    assert_held(&env, &id, "consumer-alive");
    release(&go);
    assert_code(&bg.wait(), 0);
    assert_removed(&env, &id);
}

// ---- shim/python ----

#[test]
fn python_helper_unit_tests_pass() {
    let env = TestEnv::new();
    let o = env
        .cmd("python3")
        .current_dir(shim_dir().join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["-m", "unittest", "-v", "test_lease_shim"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn python_popen_wrapper_passes_the_lease_to_the_child() {
    let env = TestEnv::new();
    let repo = env.repo();
    let ready = env.file("child-ready");
    let go = env.file("child-go");
    fifo(&go);
    let child = format!(
        "{}\nopen({:?}).read()\n",
        ready_py(&ready),
        go.to_str().unwrap()
    );
    // The worker starts a child outside the worktree through the wrapper and
    // exits at once.
    let worker = format!(
        "import subprocess, sys\nsys.path.insert(0, {:?})\nimport lease_shim\n\
         lease_shim.Popen([sys.executable, '-c', {child:?}], cwd='/',\n\
         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n",
        shim_dir().join("python").to_str().unwrap()
    );
    let o = env
        .lease()
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args([
            "exec",
            "--repo",
            repo.to_str().unwrap(),
            "--",
            "python3",
            "-c",
            &worker,
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let child_pid = read_pid(&ready);
    let _g = KillOnDrop(child_pid);
    assert!(
        stderr(&o).contains("consumer-alive"),
        "exec's own retire was held: {}",
        stderr(&o)
    );
    let id = env.record()["id"].as_str().unwrap().to_string();
    assert_held(&env, &id, "consumer-alive");
    release(&go);
    wait_until("the child to exit", || !alive(child_pid));
    assert_removed(&env, &id);
}

#[test]
fn python_joined_holds_the_lease_in_process_until_the_block_ends() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = terminal_worktree(&env, &repo);
    let (ready1, go1, ready2, go2) = (
        env.file("ready1"),
        env.file("go1"),
        env.file("ready2"),
        env.file("go2"),
    );
    fifo(&go1);
    fifo(&go2);
    let script = format!(
        "import os, sys\nsys.path.insert(0, {shim:?})\nimport lease_shim\n\
         with lease_shim.joined():\n    {r1}\n    open({g1:?}).read()\n\
         {r2}\nopen({g2:?}).read()\n",
        shim = shim_dir().join("python").to_str().unwrap(),
        r1 = ready_py(&ready1),
        g1 = go1.to_str().unwrap(),
        r2 = ready_py(&ready2),
        g2 = go2.to_str().unwrap(),
    );
    let mut c = env.cmd("python3");
    c.envs(lease_vars(&env, &id))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["-c", &script])
        .process_group(0);
    let bg = Bg(Some(c.spawn().unwrap()));
    read_pid(&ready1);
    assert_held(&env, &id, "consumer-alive");
    release(&go1);
    read_pid(&ready2);
    // The process lives on, but it closed the lease when the block ended.
    assert_removed(&env, &id);
    release(&go2);
    assert_code(&bg.wait(), 0);
}

// ---- shim/ci.sh ----

/// Runs `script` as one CI step would: a fresh `sh` under `set -e` that
/// sources shim/ci.sh, in the repository's checkout.
fn ci_step(env: &TestEnv, repo: &Path, script: &str) -> Output {
    env.cmd("sh")
        .current_dir(repo)
        .env("PATH", lease_on_path(env))
        .env("LEASE_CI_STATE", env.file("ci-state"))
        .arg("-c")
        .arg(format!(
            "set -e; . '{}'; {script}",
            shim_dir().join("ci.sh").display()
        ))
        .output()
        .unwrap()
}

#[test]
fn ci_steps_share_one_kept_worktree_and_finish_retires_it() {
    let env = TestEnv::new();
    let repo = env.repo();
    let state = env.file("ci-state");
    let o = ci_step(&env, &repo, "lease_ci_finish");
    assert_code(&o, 0);
    assert!(
        stderr(&o).contains("no worktree to finish"),
        "{}",
        stderr(&o)
    );
    let o = ci_step(&env, &repo, "lease_ci_step sh -c 'echo built > out.txt'");
    assert_code(&o, 0);
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    let wt = rec["worktree"]["path"].as_str().unwrap().to_string();
    assert_eq!(rec["state"], "retained", "kept between steps");
    assert_eq!(rec["owner"]["kind"], "ci");
    assert_eq!(fs::read_to_string(&state).unwrap(), format!("{id}\n{wt}\n"));
    // A failing step fails the CI shell with its status; the worktree stays.
    let o = ci_step(
        &env,
        &repo,
        "lease_ci_step sh -c 'exit 3'; echo not reached",
    );
    assert_code(&o, 3);
    assert!(!stdout(&o).contains("not reached"));
    assert_eq!(env.record_of(&id)["state"], "retained");
    // The next step runs in the same worktree and sees the first step's file.
    let o = ci_step(
        &env,
        &repo,
        "lease_ci_step sh -c 'test \"$(cat out.txt)\" = built && rm out.txt'; lease_ci_worktree",
    );
    assert_code(&o, 0);
    assert_eq!(stdout(&o), format!("{wt}\n"));
    assert_eq!(env.records().len(), 1, "one worktree for the whole job");
    let o = ci_step(&env, &repo, "lease_ci_finish");
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed", "{}", stderr(&o));
    assert_eq!(rec["sessions"].as_array().unwrap().len(), 4);
    assert!(!state.exists(), "the state file goes with the worktree");
}

#[test]
fn ci_finish_reports_a_held_worktree_and_can_be_retried() {
    let env = TestEnv::new();
    let repo = env.repo();
    let state = env.file("ci-state");
    assert_code(
        &ci_step(&env, &repo, "lease_ci_step sh -c 'echo x > left-behind'"),
        0,
    );
    let o = ci_step(&env, &repo, "lease_ci_finish");
    assert_code(&o, 1);
    assert!(stdout(&o).contains("untracked"), "{}", stdout(&o));
    let id = env.record()["id"].as_str().unwrap().to_string();
    assert_eq!(env.record_of(&id)["state"], "terminal");
    assert!(state.exists(), "kept for a retry");
    assert_code(&ci_step(&env, &repo, "lease_ci_step rm left-behind"), 0);
    assert_code(&ci_step(&env, &repo, "lease_ci_finish"), 0);
    assert_eq!(env.record_of(&id)["state"], "removed");
    // A state file that is a symlink is refused, never followed.
    std::os::unix::fs::symlink(env.file("elsewhere"), &state).unwrap();
    let o = ci_step(&env, &repo, "lease_ci_step true");
    assert_code(&o, 125);
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
}
