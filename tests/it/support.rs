//! Test fixtures: a hermetic environment, real repositories with a bare
//! remote, the `lease` command, readiness waits, and byte-level manifests.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use rustix::process::{Pid, Signal};
use sha2::Digest;

#[path = "../../src/testing.rs"]
mod testing;
/// Appends one skip record line (see `src/testing.rs`).
pub(crate) use testing::record_skip;
/// Says `SKIPPED: <test> (<why>)` and records the running test as skipped
/// (see `src/testing.rs`); the caller returns right after.
pub(crate) use testing::skip;
/// Waits for a true handshake, 60 s at most (see `src/testing.rs`).
pub(crate) use testing::wait_until;

/// True when the tests run as root (uid 0 in this user namespace).
pub(crate) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// True when the tests run as root; otherwise records the running test as
/// skipped because it `needs` what only root has (a second uid to chown
/// to, ...) and returns false: `if !root_or_skip("chowns to uid 65534") { return; }`.
pub(crate) fn root_or_skip(needs: &str) -> bool {
    if is_root() {
        return true;
    }
    skip(&format!("needs root: {needs}"));
    false
}

/// Runs `sh -c SCRIPT` (in the sandbox root) with the power to mount, in a
/// private mount namespace: `unshare -m` as root; as an ordinary user, a
/// user namespace that maps only our own uid ([`ns_as_ourselves`]; SPEC
/// "Testing knobs and tests": `unshare -Urm` but our uid kept) with a
/// private root ([`PRIVATE_ROOT`]).
/// Returns `None` after recording the test as skipped when the machine
/// cannot (no user namespaces, no `unshare`).
pub(crate) fn in_mount_ns(env: &TestEnv, script: &str) -> Option<Output> {
    let ns: Vec<String> = if is_root() {
        vec!["-m".into()]
    } else {
        ns_as_ourselves().into()
    };
    let probe = env.cmd("unshare").args(&ns).arg("true").output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        let why = match &probe {
            Ok(o) => stderr(o).trim().to_string(),
            Err(e) => e.to_string(),
        };
        skip(&format!("unshare {} fails here: {why}", ns.join(" ")));
        return None;
    }
    if is_root() {
        return Some(
            env.cmd("unshare")
                .args(["-m", "--propagation", "private", "sh", "-c", script])
                .output()
                .unwrap(),
        );
    }
    let new_root = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_lease")).parent().unwrap();
    let o = env
        .cmd("unshare")
        .args(ns_as_ourselves())
        .args(["sh", "-c", PRIVATE_ROOT, "sh"])
        .args([new_root.path(), &env.root, bin_dir])
        .arg(script)
        .output()
        .unwrap();
    if o.status.code() == Some(PRIVATE_ROOT_FAILED) {
        skip(&format!(
            "cannot build a private root under unshare -Urm: {}",
            stderr(&o).trim()
        ));
        return None;
    }
    Some(o)
}

/// `unshare` options for a user and mount namespace that map only our uid
/// and gid, each to itself (not to root, as `-r` would: lease records the
/// owner of every file it names, and a record written outside must match
/// inside), keeping the namespace's capabilities (`--keep-caps`, ambient)
/// so the script can mount.
pub(crate) fn ns_as_ourselves() -> [String; 7] {
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    [
        "--user".into(),
        format!("--map-user={uid}"),
        format!("--map-group={gid}"),
        "--keep-caps".into(),
        "--mount".into(),
        "--propagation".into(),
        "private".into(),
    ]
}

/// The exit status of [`PRIVATE_ROOT`] when the namespace cannot be set up.
pub(crate) const PRIVATE_ROOT_FAILED: i32 = 97;

/// In a user namespace that maps only our uid, every root-owned directory
/// (`/`, `/tmp`) shows as uid 65534, and lease rightly refuses a state root
/// below one (`lease-dir-unsafe`). This script (`sh -c` with NEW_ROOT
/// SANDBOX BIN_DIR SCRIPT) builds a root that we own: a tmpfs at NEW_ROOT with the system's /usr, /etc, /dev and /proc
/// (and /bin, /lib, ... as they are) bound in, and the sandbox and the
/// directory of the lease binary bound at their own paths, so every path a
/// test knows, and every (device, inode), is the same inside. It then runs
/// SCRIPT there, in the sandbox, with `sh -c`; arguments after SCRIPT are
/// its `"$@"`.
pub(crate) const PRIVATE_ROOT: &str = r#"
new=$1 sandbox=$2 bin_dir=$3 script=$4
shift 4
fail() { echo "$*" >&2; exit 97; }
mount -t tmpfs -o mode=0755 lease-test-root "$new" || fail "mount tmpfs on $new"
for d in usr etc dev proc; do
  mkdir "$new/$d" && mount --rbind "/$d" "$new/$d" || fail "bind /$d"
done
for d in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$d" ]; then
    ln -s "$(readlink "/$d")" "$new/$d" || fail "link /$d"
  elif [ -d "/$d" ]; then
    mkdir "$new/$d" && mount --rbind "/$d" "$new/$d" || fail "bind /$d"
  fi
done
for p in "$sandbox" "$bin_dir"; do
  mkdir -p "$new$p" && mount --rbind "$p" "$new$p" || fail "bind $p"
done
chroot=$(PATH=$PATH:/usr/sbin:/sbin command -v chroot) || fail "no chroot(8)"
cd / && exec "$chroot" "$new" sh -c 'cd "$1" && s=$2 && shift 2 && eval "$s"' sh "$sandbox" "$script" "$@"
"#;

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
        // The caller's temp dir, kept (SPEC "Testing knobs and tests"): the
        // sandbox is under it, and lease's temp-root check must know it.
        if let Some(t) = std::env::var_os("TMPDIR") {
            v.push(("TMPDIR".into(), t.into_string().unwrap()));
        }
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
        self.repo_with(&[])
    }

    /// [`TestEnv::repo`] with `init_args` added to both `git init`s (for
    /// example `--object-format=sha256`).
    pub(crate) fn repo_with(&self, init_args: &[&str]) -> PathBuf {
        let init = |extra: &[&str], path: &Path| {
            let mut a = vec!["init", "-q", "-b", "main"];
            a.extend_from_slice(init_args);
            a.extend_from_slice(extra);
            a.push(path.to_str().unwrap());
            self.git(&self.root, &a);
        };
        let remote = self.root.join("remote.git");
        init(&["--bare"], &remote);
        let repo = self.root.join("repo");
        init(&[], &repo);
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

    /// All records, live (`records/`) and shelved (`records/removed/`),
    /// parsed.
    pub(crate) fn records(&self) -> Vec<serde_json::Value> {
        let mut v: Vec<serde_json::Value> = Vec::new();
        for dir in [
            self.state.join("records"),
            self.state.join("records").join("removed"),
        ] {
            if let Ok(d) = fs::read_dir(&dir) {
                v.extend(
                    d.flatten()
                        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                        .map(|e| serde_json::from_slice(&fs::read(e.path()).unwrap()).unwrap()),
                );
            }
        }
        v.sort_by_key(|r| r["created_at"].as_str().unwrap_or("").to_string());
        v
    }

    /// The file of record `id`: `records/<id>.json` while it is live,
    /// `records/removed/<id>.json` once a removal shelved it.
    pub(crate) fn record_file(&self, id: &str) -> PathBuf {
        let live = self.state.join("records").join(format!("{id}.json"));
        let shelved = self
            .state
            .join("records")
            .join("removed")
            .join(format!("{id}.json"));
        if !live.exists() && shelved.exists() {
            shelved
        } else {
            live
        }
    }

    /// The only record.
    pub(crate) fn record(&self) -> serde_json::Value {
        let r = self.records();
        assert_eq!(r.len(), 1, "expected one record: {r:#?}");
        r.into_iter().next().unwrap()
    }

    /// One record by id.
    pub(crate) fn record_of(&self, id: &str) -> serde_json::Value {
        serde_json::from_slice(&fs::read(self.record_file(id)).unwrap()).unwrap()
    }

    /// The audit log's lines, parsed; torn lines (not JSON: a crash or a
    /// full disk cut them short) are left out ([`audit_chain_ok`] judges them).
    pub(crate) fn audit(&self) -> Vec<serde_json::Value> {
        fs::read_to_string(self.state.join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// A readiness file path under the sandbox.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// A path under the sandbox that no earlier call returned: `NAME-1`,
    /// `NAME-2`, ... (a second handshake in one test never sees the first
    /// one's file).
    pub(crate) fn fresh_file(&self, name: &str) -> PathBuf {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.root.join(format!("{name}-{n}"))
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
        let ready = self.fresh_file("holder-ready");
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

/// A flock on a file held by a python3 process the test controls, never by
/// the test process itself: a descriptor the test process holds is copied
/// into every child another test thread forks at that moment (close-on-exec
/// closes it only at that child's exec), so a lock the test drops could
/// outlive the drop for a moment and hold what should be free. Dropping the
/// holder closes its stdin, and it exits; the drop returns once it has
/// exited, so the lock is gone.
pub(crate) struct LockHolder(Option<Child>);

impl LockHolder {
    /// Takes `LOCK_SH` (or `LOCK_EX` if `exclusive`) on `path`, without
    /// blocking: panics if the lock is taken or `path` cannot be opened.
    pub(crate) fn new(env: &TestEnv, path: &Path, exclusive: bool) -> LockHolder {
        let ready = env.fresh_file("lock-ready");
        let op = if exclusive { "LOCK_EX" } else { "LOCK_SH" };
        let py = format!(
            "import fcntl, sys\nf = open({:?})\nfcntl.flock(f, fcntl.{op} | fcntl.LOCK_NB)\n{}\nsys.stdin.read()\n",
            path.to_str().unwrap(),
            ready_py(&ready)
        );
        let mut child = env
            .cmd("python3")
            .args(["-c", &py])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_until(&format!("{op} on {}", path.display()), || {
            ready.exists() || child.try_wait().unwrap().is_some()
        });
        if !ready.exists() {
            let o = child.wait_with_output().unwrap();
            panic!("cannot {op} {}: {}", path.display(), stderr(&o));
        }
        LockHolder(Some(child))
    }

    /// The pid of the python3 process that holds the lock.
    pub(crate) fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            drop(c.stdin.take());
            let _ = c.wait();
        }
    }
}

/// True if `path` can be locked `LOCK_EX|LOCK_NB` right now: nothing holds
/// the lease. Probed from a python3 process, never by the test process
/// itself (see [`LockHolder`]: its own probe could briefly hold the lock in
/// another test's child). Panics if `path` cannot be opened.
pub(crate) fn lock_is_free(env: &TestEnv, path: &Path) -> bool {
    let py = "import fcntl, sys\nf = open(sys.argv[1])\ntry:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    sys.exit(1)\n";
    let o = env
        .cmd("python3")
        .args(["-c", py])
        .arg(path)
        .output()
        .unwrap();
    match o.status.code() {
        Some(0) => true,
        Some(1) => false,
        _ => panic!(
            "cannot probe the lock on {}: {}",
            path.display(),
            stderr(&o)
        ),
    }
}

/// A `sleep 600` that opened `path` itself (on fd 3), in its own process
/// group (killed on drop), returned once it holds it; its pid is `.pid()`.
/// The test process never opens `path` for it (see [`LockHolder`]).
pub(crate) fn spawn_opener(env: &TestEnv, path: &Path) -> Bg {
    let ready = env.fresh_file("opener-ready");
    let script = format!(
        "exec 3< {} && {}; exec sleep 600",
        sh_quote(path),
        ready_sh(&ready)
    );
    let mut c = env.cmd("sh");
    c.args(["-c", &script]).process_group(0);
    let bg = Bg(Some(c.spawn().unwrap()));
    read_pid(&ready);
    bg
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

/// `path` quoted for sh (single quotes; a `'` inside becomes `'\''`).
pub(crate) fn sh_quote(path: &Path) -> String {
    format!("'{}'", path.to_str().unwrap().replace('\'', "'\\''"))
}

/// Shell text that announces readiness: `echo $$ > PATH`, the shell's pid
/// and a newline, which the builtin `echo` writes in one write(2) with the
/// newline last; [`read_pid`] waits for the newline, so it never takes a
/// half-written file for a pid. Put it after whatever must hold when the
/// test goes on (`cd sub && READY; exec sleep 600`). No rename through
/// `mv`: that would be one more process, holding the lease descriptor with
/// its cwd in the worktree, alive for a moment after the file appears,
/// which a test counting holders could see.
pub(crate) fn ready_sh(path: &Path) -> String {
    format!("echo $$ > {}", sh_quote(path))
}

/// Python text (one line of statements, `import os` included) that
/// announces readiness: the process's pid and a newline, written to a temp
/// name, closed, and renamed into place. It binds only `os` and `_ready`
/// (a script's own file object kept in another name stays open).
pub(crate) fn ready_py(path: &Path) -> String {
    let mut t = path.as_os_str().to_owned();
    t.push(".tmp");
    let (t, p) = (t.to_str().unwrap(), path.to_str().unwrap());
    format!(
        "import os; _ready = open({t:?}, 'w'); _ready.write('%d\\n' % os.getpid()); _ready.close(); os.rename({t:?}, {p:?})"
    )
}

/// Waits for the readiness file `path` ([`ready_sh`], [`ready_py`]) to hold
/// a complete line ([`complete_line`]), and returns the pid in it. A
/// complete line that is not a pid is a test bug and panics.
pub(crate) fn read_pid(path: &Path) -> u32 {
    let mut line = None;
    wait_until(&format!("a pid line in {}", path.display()), || {
        line = complete_line(&fs::read_to_string(path).unwrap_or_default()).map(str::to_string);
        line.is_some()
    });
    let line = line.unwrap();
    line.parse()
        .ok()
        .filter(|&p: &u32| p > 1)
        .unwrap_or_else(|| panic!("{} holds {line:?}, not a pid line", path.display()))
}

/// The line `text` holds once it is complete (ends in its one newline),
/// without the newline; `None` while it is still being written (`""`,
/// `"12"` of `"1234\n"`).
pub(crate) fn complete_line(text: &str) -> Option<&str> {
    text.strip_suffix('\n').filter(|l| !l.contains('\n'))
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

    /// Asserts the worktree and its admin directory are byte-identical to
    /// this snapshot (a hold whose attempt also changed the record, such
    /// as `teardown-failed`, checks the record itself).
    #[track_caller]
    pub(crate) fn assert_tree_and_admin_unchanged(&self, env: &TestEnv, repo: &Path) {
        let after = Snapshot::take(env, repo, self.record["id"].as_str().unwrap());
        assert_eq!(self.tree, after.tree, "the worktree changed");
        assert_eq!(self.admin, after.admin, "the admin directory changed");
    }

    /// Asserts a held retire changed nothing but one attempt and one audit line.
    #[track_caller]
    pub(crate) fn assert_held_unchanged(&self, env: &TestEnv, repo: &Path, reason: &str) {
        let after = Snapshot::take(env, repo, self.record["id"].as_str().unwrap());
        assert_eq!(self.tree, after.tree, "the worktree changed");
        assert_eq!(self.admin, after.admin, "the admin directory changed");
        let mut before = self.record.clone();
        let mut now = after.record.clone();
        // A record keeps the last 16 attempts: at the cap, the oldest one
        // goes and `attempts_dropped` counts it.
        if before["attempts"].as_array().unwrap().len() == 16 {
            before["attempts"].as_array_mut().unwrap().remove(0);
            let dropped = before["attempts_dropped"].as_u64().unwrap_or(0) + 1;
            before["attempts_dropped"] = serde_json::json!(dropped);
        }
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
        // A hold after the walk also keeps what the walk measured (`size`,
        // docs/record.md), in the same write: the only other key it sets.
        if now.get("size").is_some() && before.get("size") != now.get("size") {
            assert!(
                now["size"]["bytes"].as_u64().is_some() && now["size"]["at"].is_string(),
                "a measured size: {}",
                now["size"]
            );
        }
        for key in ["audit_seq", "unaudited", "size"] {
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
/// sha256 of the line before (the first's is 64 zeros). Lines a crash or a
/// full disk tore are allowed only where the next line names each of them
/// (`torn`: length and sha256, in order) and chains past them to the last
/// whole line; a torn last line is a break.
pub(crate) fn audit_chain_ok(env: &TestEnv) -> bool {
    let text = fs::read(env.state.join("audit.jsonl")).unwrap_or_default();
    let hex = |b: &[u8]| -> String {
        sha2::Sha256::digest(b)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let mut prev = "0".repeat(64);
    let mut torn: Vec<serde_json::Value> = Vec::new();
    let body = text.strip_suffix(b"\n").unwrap_or(&text);
    if body.is_empty() {
        return true;
    }
    for line in body.split(|&b| b == b'\n') {
        let v: Option<serde_json::Value> = serde_json::from_slice(line).ok();
        let Some(v) = v.filter(|v| v["prev"].is_string()) else {
            torn.push(serde_json::json!({"bytes": line.len(), "sha256": hex(line)}));
            continue;
        };
        let named = v.get("torn").cloned().unwrap_or(serde_json::json!([]));
        if named != serde_json::Value::Array(std::mem::take(&mut torn)) {
            return false;
        }
        if v["prev"].as_str() != Some(prev.as_str()) {
            return false;
        }
        prev = hex(line);
    }
    torn.is_empty()
}

/// A command script that announces its pid in `ready` ([`ready_sh`]), then
/// becomes `sleep 600` holding the inherited lease.
fn holder_script(ready: &Path) -> String {
    format!("{}; exec sleep 600", ready_sh(ready))
}

/// A command script that daemonizes a grandchild (new session, stdio
/// closed, the lease descriptor inherited) which announces its pid in
/// `ready` ([`ready_sh`]) and sleeps, then exits at once.
pub(crate) fn daemon_script(ready: &Path) -> String {
    let inner = format!("{}; exec sleep 600", ready_sh(ready));
    format!(
        "setsid sh -c {} </dev/null >/dev/null 2>&1 &",
        sh_quote(Path::new(&inner))
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
    let attempts = rec["attempts"].as_array().map_or(0, Vec::len)
        + rec["attempts_dropped"].as_u64().unwrap_or(0) as usize;
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
