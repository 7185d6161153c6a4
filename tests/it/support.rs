//! Test fixtures: a hermetic environment, real repositories with a bare
//! remote, the `lease` command, readiness waits, and byte-level manifests.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use sha2::Digest;

/// A private sandbox: HOME, state root and repositories under one temp dir,
/// and an environment with nothing from the developer's machine but PATH.
pub(crate) struct TestEnv {
    _tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) state: PathBuf,
}

impl TestEnv {
    pub(crate) fn new() -> TestEnv {
        // Orphans of a SIGKILLed launcher re-parent to the nearest subreaper:
        // make that this test process, so they stay inside the test run.
        rustix::process::set_child_subreaper(Some(rustix::process::getpid())).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir(root.join("home")).unwrap();
        TestEnv {
            state: root.join("state"),
            root,
            _tmp: tmp,
        }
    }

    /// The hermetic environment every process of a test gets.
    pub(crate) fn vars(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = [
            ("HOME", self.root.join("home").to_str().unwrap()),
            ("LEASE_HOME", self.state.to_str().unwrap()),
            ("LEASE_MIN_FREE", "1M"),
            // The sandbox lives under the temp dir, which exec refuses as a
            // worktree root unless allowed (OS cleaners sweep it by age).
            ("LEASE_ALLOW_TEMP_ROOT", "1"),
            ("GIT_CONFIG_GLOBAL", "/dev/null"),
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("GIT_AUTHOR_NAME", "Test"),
            ("GIT_AUTHOR_EMAIL", "test@example.com"),
            ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
            ("GIT_COMMITTER_NAME", "Test"),
            ("GIT_COMMITTER_EMAIL", "test@example.com"),
            ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
            ("LC_ALL", "C"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        v.push(("PATH".into(), std::env::var("PATH").unwrap()));
        v
    }

    /// A `Command` with the hermetic environment.
    pub(crate) fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .envs(self.vars())
            .current_dir(&self.root)
            .stdin(Stdio::null());
        c
    }

    /// The `lease` binary under test.
    #[must_use]
    pub(crate) fn lease(&self) -> Command {
        self.cmd(env!("CARGO_BIN_EXE_lease"))
    }

    /// Runs git in `dir`, panicking with its output if it fails.
    pub(crate) fn git(&self, dir: &Path, args: &[&str]) -> String {
        let out = self
            .cmd("git")
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// A repository `repo` cloned from a bare `remote.git`, with one commit
    /// pushed to `main` and `origin/HEAD` set: the durable ref exists.
    pub(crate) fn repo(&self) -> PathBuf {
        let remote = self.root.join("remote.git");
        self.git(
            &self.root,
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                remote.to_str().unwrap(),
            ],
        );
        let repo = self.root.join("repo");
        self.git(
            &self.root,
            &["init", "-q", "-b", "main", repo.to_str().unwrap()],
        );
        fs::write(repo.join("README"), "hello\n").unwrap();
        fs::write(repo.join(".gitignore"), ".env\ntarget/\n").unwrap();
        self.git(&repo, &["add", "."]);
        self.git(&repo, &["commit", "-qm", "initial"]);
        self.git(
            &repo,
            &["remote", "add", "origin", remote.to_str().unwrap()],
        );
        self.git(&repo, &["push", "-q", "origin", "main"]);
        self.git(&repo, &["fetch", "-q", "origin"]);
        self.git(&repo, &["remote", "set-head", "origin", "main"]);
        repo
    }

    /// All records, parsed.
    pub(crate) fn records(&self) -> Vec<serde_json::Value> {
        let dir = self.state.join("records");
        let mut v: Vec<serde_json::Value> = fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .map(|e| serde_json::from_slice(&fs::read(e.path()).unwrap()).unwrap())
                    .collect()
            })
            .unwrap_or_default();
        v.sort_by_key(|r| r["created_at"].as_str().unwrap_or("").to_string());
        v
    }

    /// The only record.
    pub(crate) fn record(&self) -> serde_json::Value {
        let r = self.records();
        assert_eq!(r.len(), 1, "expected one record: {r:#?}");
        r.into_iter().next().unwrap()
    }

    /// One record by id.
    pub(crate) fn record_of(&self, id: &str) -> serde_json::Value {
        serde_json::from_slice(
            &fs::read(self.state.join("records").join(format!("{id}.json"))).unwrap(),
        )
        .unwrap()
    }

    /// The audit log's lines, parsed.
    pub(crate) fn audit(&self) -> Vec<serde_json::Value> {
        fs::read_to_string(self.state.join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// A readiness file path under the sandbox.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Runs `lease exec -- sh -c SCRIPT` in `repo` and returns its output.
    pub(crate) fn exec_sh(&self, repo: &Path, script: &str) -> Output {
        self.lease()
            .current_dir(repo)
            .args(["exec", "--", "sh", "-c", script])
            .output()
            .unwrap()
    }

    /// `lease exec --keep --branch BRANCH -- sh -c SCRIPT` in `repo`, then
    /// `lease release`: a terminal record whose worktree is still there.
    /// Returns (id, worktree).
    pub(crate) fn kept(&self, repo: &Path, branch: &str, script: &str) -> (String, PathBuf) {
        let o = self
            .lease()
            .current_dir(repo)
            .args([
                "exec", "--keep", "--branch", branch, "--", "sh", "-c", script,
            ])
            .output()
            .unwrap();
        assert_code(&o, 0);
        let rec = self
            .records()
            .into_iter()
            .find(|r| r["branch"] == branch && r["state"] == "retained")
            .unwrap_or_else(|| panic!("no retained record: {}", stderr(&o)));
        let id = rec["id"].as_str().unwrap().to_string();
        assert_code(&self.lease().args(["release", &id]).output().unwrap(), 0);
        let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
        (id, wt)
    }

    /// `git worktree add -q -b BRANCH PATH` in `repo`: a linked worktree
    /// lease did not make (panics if git fails, as [`TestEnv::git`]).
    pub(crate) fn add_worktree(&self, repo: &Path, branch: &str, path: &Path) {
        self.git(
            repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                branch,
                path.to_str().unwrap(),
            ],
        );
    }

    /// The lease file a record names (`lease.path`).
    pub(crate) fn lease_of(&self, id: &str) -> PathBuf {
        PathBuf::from(self.record_of(id)["lease"]["path"].as_str().unwrap())
    }

    /// A git for `LEASE_GIT` that lies about `git worktree remove`: for that
    /// command it runs the shell text `lie` (which sees the real git as
    /// `$REAL`, the arguments as `"$@"` and the last one, the worktree, as
    /// `$last`); every other command is the real git's.
    pub(crate) fn lying_git(&self, lie: &str) -> PathBuf {
        let git = self.file("lying-git");
        write_exe(
            &git,
            &format!(
                "#!/bin/sh\nREAL='{}'\n\
                 r=; p=; last=; for a in \"$@\"; do [ \"$p\" = worktree ] && [ \"$a\" = remove ] && r=1; p=$a; last=$a; done\n\
                 if [ -n \"$r\" ]; then {lie}; fi\nexec \"$REAL\" \"$@\"\n",
                which("git").display()
            ),
        );
        git
    }

    /// Starts `lease exec OPTS -- sh -c <holder_script>` in the background
    /// and waits until the command has written its pid (the readiness
    /// handshake): returns the launcher and the command's pid. The holder
    /// sleeps 600 s in the launcher's process group, so dropping the `Bg`
    /// kills it.
    pub(crate) fn spawn_holder(&self, opts: &[&str]) -> (Bg, u32) {
        let ready = self.file("ready");
        let script = holder_script(&ready);
        let mut args = vec!["exec"];
        args.extend_from_slice(opts);
        args.extend(["--", "sh", "-c", &script]);
        let bg = self.spawn_lease(&args);
        let child = read_pid(&ready);
        (bg, child)
    }

    /// Starts `lease` in the background in its own process group (killed on drop).
    pub(crate) fn spawn_lease(&self, args: &[&str]) -> Bg {
        let mut c = self.lease();
        c.args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        Bg(Some(c.spawn().unwrap()))
    }
}

/// A background process whose whole group is SIGKILLed on drop.
pub(crate) struct Bg(pub(crate) Option<Child>);

impl Bg {
    pub(crate) fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }
    pub(crate) fn wait(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            if let Some(pgid) = pid_of(c.id()) {
                let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Kills `pid` (and what a guard must clean up) on drop.
pub(crate) struct KillOnDrop(pub(crate) u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        signal(self.0, "KILL");
    }
}

/// Sends a signal by name to one process. Never shells out to kill(1):
/// procps `kill -KILL -<pgid>` was seen sending `kill(-1, SIGKILL)`, which as
/// root ends every process on the machine.
pub(crate) fn signal(pid: u32, sig: &str) {
    let sig = match sig {
        "KILL" => Signal::KILL,
        "TERM" => Signal::TERM,
        "INT" => Signal::INT,
        "HUP" => Signal::HUP,
        "USR1" => Signal::USR1,
        other => panic!("unknown signal {other}"),
    };
    if let Some(pid) = pid_of(pid) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// A pid fit to signal: never 0 (our group) or 1 (init), never negative.
fn pid_of(pid: u32) -> Option<Pid> {
    i32::try_from(pid)
        .ok()
        .filter(|&p| p > 1)
        .and_then(Pid::from_raw)
}

/// Waits until `cond` holds, polling; panics with `what` after 20 s.
pub(crate) fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads a pid a child wrote to a readiness file, once it is complete.
pub(crate) fn read_pid(path: &Path) -> u32 {
    let mut pid = 0;
    wait_until(&format!("a pid in {}", path.display()), || {
        pid = fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        pid != 0
    });
    pid
}

/// True while `pid` exists and is not a zombie (a zombie holds no descriptors).
pub(crate) fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, r)| r.trim_start().chars().next())
        })
        .is_some_and(|state| state != 'Z' && state != 'X')
}

/// A manifest of a tree: path -> (type, mode, size, content sha256 or link text).
pub(crate) type Manifest = BTreeMap<PathBuf, String>;

/// Takes a manifest of `dir` without following symlinks.
pub(crate) fn manifest(dir: &Path) -> Manifest {
    let mut m = Manifest::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let meta = fs::symlink_metadata(&d).unwrap();
        m.insert(
            d.strip_prefix(dir).unwrap().to_path_buf(),
            format!("dir {:o}", meta.mode()),
        );
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let meta = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            let ft = meta.file_type();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_symlink() {
                m.insert(
                    rel,
                    format!("link {}", fs::read_link(&p).unwrap().display()),
                );
            } else if !ft.is_file() {
                // FIFOs, sockets, devices: never opened (a FIFO would block).
                m.insert(rel, format!("special {:o}", meta.mode()));
            } else {
                let hash = sha2::Sha256::digest(fs::read(&p).unwrap());
                let h: String = hash.iter().map(|b| format!("{b:02x}")).collect();
                m.insert(
                    rel,
                    format!("file {:o} {} {h}", meta.permissions().mode(), meta.len()),
                );
            }
        }
    }
    m
}

/// The output's stderr as text.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The output's stdout as text.
pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts the exit code, printing both streams on mismatch.
#[track_caller]
pub(crate) fn assert_code(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

/// Everything a refusal must leave unchanged about one worktree: the tree,
/// its admin directory in the common git dir, and the record except for
/// one more `attempts` entry.
pub(crate) struct Snapshot {
    tree: Manifest,
    admin: Manifest,
    record: serde_json::Value,
    audit_lines: usize,
}

impl Snapshot {
    pub(crate) fn take(env: &TestEnv, repo: &Path, id: &str) -> Snapshot {
        let rec = env.record_of(id);
        let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
        Snapshot {
            tree: manifest(&wt),
            admin: manifest(&admin_dir(repo, &wt)),
            record: rec,
            audit_lines: env.audit().len(),
        }
    }

    /// Asserts a held retire changed nothing but one attempt and one audit line.
    #[track_caller]
    pub(crate) fn assert_held_unchanged(&self, env: &TestEnv, repo: &Path, reason: &str) {
        let after = Snapshot::take(env, repo, self.record["id"].as_str().unwrap());
        assert_eq!(self.tree, after.tree, "the worktree changed");
        assert_eq!(self.admin, after.admin, "the admin directory changed");
        let mut before = self.record.clone();
        let mut now = after.record.clone();
        let attempts = now["attempts"].as_array_mut().unwrap();
        let last = attempts.pop().expect("one more attempt");
        assert!(
            last["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r == reason),
            "attempt lacks {reason}: {last}"
        );
        before["attempts"] = serde_json::json!(before["attempts"].as_array().unwrap());
        // The hold's one audit event, numbered and kept with the record.
        let seq = before["audit_seq"].as_u64().unwrap() + 1;
        assert_eq!(now["audit_seq"], seq, "one audit event per hold");
        let held = now["unaudited"].as_array().unwrap();
        assert!(
            held.len() == 1 && held[0]["event"] == "held" && held[0]["seq"] == seq,
            "the hold's event: {held:?}"
        );
        for key in ["audit_seq", "unaudited"] {
            before.as_object_mut().unwrap().remove(key);
            now.as_object_mut().unwrap().remove(key);
        }
        assert_eq!(before, now, "the record changed beyond one attempt");
        assert_eq!(
            after.audit_lines,
            self.audit_lines + 1,
            "one audit line per hold"
        );
    }
}

/// The admin directory `<common>/worktrees/<name>` of a linked worktree.
pub(crate) fn admin_dir(_repo: &Path, wt: &Path) -> PathBuf {
    let text = fs::read_to_string(wt.join(".git")).unwrap();
    PathBuf::from(text.trim().strip_prefix("gitdir: ").unwrap())
}

/// The reason codes of the first target of a `retire --json` report.
pub(crate) fn reasons(o: &Output) -> Vec<String> {
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)));
    v["targets"][0]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect()
}

/// The first target's `disposition` in `lease retire --json` output.
pub(crate) fn disposition(o: &Output) -> String {
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)));
    v["targets"][0]["disposition"]
        .as_str()
        .unwrap_or_else(|| panic!("no disposition: {v:#}"))
        .to_string()
}

/// True if the audit log's hash chain is intact: each line's `prev` is the
/// sha256 of the line before (the first's is 64 zeros).
pub(crate) fn audit_chain_ok(env: &TestEnv) -> bool {
    let text = fs::read(env.state.join("audit.jsonl")).unwrap_or_default();
    let mut prev = "0".repeat(64);
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(_) => return false,
        };
        if v["prev"].as_str() != Some(prev.as_str()) {
            return false;
        }
        prev = sha2::Sha256::digest(line)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
    }
    true
}

/// A command script that writes its pid to `ready`, then becomes `sleep 600`
/// holding the inherited lease.
fn holder_script(ready: &Path) -> String {
    format!("echo $$ > {}; exec sleep 600", ready.display())
}

/// A command script that daemonizes a grandchild (new session, stdio
/// closed, the lease descriptor inherited) which writes its pid to `ready`
/// and sleeps, then exits at once.
pub(crate) fn daemon_script(ready: &Path) -> String {
    format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 600' </dev/null >/dev/null 2>&1 &",
        ready.display()
    )
}

/// Checks that the audit log has exactly one line per event of record `id`:
/// a `create` line first, `transition` lines that chain from state to state
/// and end in the record's state, one `held` line per attempt, and `seq`
/// numbers 1, 2, 3, ... with none missing or repeated. Returns what is wrong.
pub(crate) fn audit_matches_record(env: &TestEnv, id: &str) -> Result<(), String> {
    if !audit_chain_ok(env) {
        return Err("the hash chain is broken".into());
    }
    let rec = env.record_of(id);
    let lines: Vec<serde_json::Value> = env.audit().into_iter().filter(|l| l["id"] == id).collect();
    let Some(first) = lines.first().filter(|l| l["event"] == "create") else {
        return Err(format!("no create line first: {lines:#?}"));
    };
    let mut state = first["to"].clone();
    let mut held = 0;
    for (n, l) in lines.iter().enumerate() {
        if l["seq"] != n + 1 {
            return Err(format!("line {n} has seq {}: {lines:#?}", l["seq"]));
        }
        match l["event"].as_str() {
            Some("transition") if l["from"] != state => {
                return Err(format!(
                    "{} -> {} from {state}: {lines:#?}",
                    l["from"], l["to"]
                ));
            }
            Some("transition") => state = l["to"].clone(),
            Some("held") => held += 1,
            _ => {}
        }
    }
    if state != rec["state"] {
        return Err(format!(
            "the log ends in {state}, the record is {}",
            rec["state"]
        ));
    }
    let attempts = rec["attempts"].as_array().map_or(0, Vec::len);
    if held != attempts {
        return Err(format!("{held} held lines for {attempts} attempts"));
    }
    Ok(())
}

/// O3's "before": every commit reachable in `repo` from any ref, any
/// worktree's HEAD, or any reflog (the stash included).
pub(crate) fn reachable_commits(env: &TestEnv, repo: &Path) -> std::collections::BTreeSet<String> {
    env.git(repo, &["rev-list", "--all", "--reflog"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// O3, reachability: the commits of `before` that are now neither reachable
/// in `repo` nor inside a bundle under the state root's `archives/` (each
/// bundle is fetched with fsck into a fresh repository that borrows `repo`'s
/// objects for the bundle's prerequisites).
pub(crate) fn lost_commits(
    env: &TestEnv,
    repo: &Path,
    before: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let mut kept = reachable_commits(env, repo);
    let mut stack = vec![env.state.join("archives")];
    let mut n = 0;
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "bundle") {
                n += 1;
                let scratch = env.root.join(format!("o3-scratch-{n}"));
                let _ = fs::remove_dir_all(&scratch);
                env.git(
                    &env.root,
                    &["init", "-q", "--bare", scratch.to_str().unwrap()],
                );
                // A bundle's prerequisites are the repository's durable
                // commits: borrow its objects, the bundle brings the rest.
                let common = repo.join(env.git(repo, &["rev-parse", "--git-common-dir"]));
                fs::write(
                    scratch.join("objects/info/alternates"),
                    format!("{}\n", common.join("objects").display()),
                )
                .unwrap();
                env.git(
                    &scratch,
                    &[
                        "-c",
                        "transfer.fsckObjects=true",
                        "fetch",
                        "-q",
                        p.to_str().unwrap(),
                        "refs/*:refs/*",
                    ],
                );
                kept.extend(reachable_commits(env, &scratch));
                fs::remove_dir_all(&scratch).unwrap();
            }
        }
    }
    before.difference(&kept).cloned().collect()
}

/// Runs `lease exec --branch BRANCH` with a script that commits in the new
/// worktree; the after-exit retire archives the commit and removes it.
/// Returns the record id and the archived tip.
pub(crate) fn archived(env: &TestEnv, repo: &Path, branch: &str) -> (String, String) {
    let o = env
        .lease()
        .current_dir(repo)
        .args([
            "exec",
            "--branch",
            branch,
            "--",
            "sh",
            "-c",
            "echo w > work.txt && git add work.txt && git commit -qm private-work",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env
        .records()
        .into_iter()
        .find(|r| r["branch"] == branch && r["archive"].is_object())
        .unwrap_or_else(|| panic!("no archived record: {}", stderr(&o)));
    assert_eq!(rec["state"], "removed");
    (
        rec["id"].as_str().unwrap().to_string(),
        rec["archive"]["tip"].as_str().unwrap().to_string(),
    )
}

/// The first `name` on the test's own PATH.
pub(crate) fn which(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not on PATH"))
}

/// Writes an executable script (mode 0755).
pub(crate) fn write_exe(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}
