//! Consumers lease cannot see by path (SPEC gate 4): a process in another
//! mount namespace or behind a bind-mount alias of the tree, a thread that
//! keeps a cwd or a descriptor table of its own (the main thread may have
//! exited), a lease held only through `/proc/locks` (a descriptor in flight
//! over a unix socket, a holder in another pid namespace); and what git
//! cannot delete (SPEC "Truthful content probes"): an immutable or
//! append-only entry.
//!
//! Every holder is a real process (python3 with ctypes for the per-thread
//! cases), every namespace a real `unshare`; each refusal asserts that
//! nothing changed, and each case ends with its positive control.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

use crate::adversarial::Fx;
use crate::support::*;

/// A holder: `python3 -c HOLDER MODE PATH READY`. It sets up what MODE says
/// with PATH, writes its pid to `READY.tmp`, renames that to READY (the
/// readiness handshake) and sleeps until killed.
///
/// - `cwd`: its cwd is PATH.
/// - `fd`: it keeps PATH open (cwd elsewhere).
/// - `map`: it maps PATH and closes the descriptor.
/// - `thread-cwd`: a second thread calls `unshare(CLONE_FS)` and `chdir`s
///   to PATH; the main thread stays elsewhere.
/// - `thread-fd`: a second thread calls `unshare(CLONE_FILES)` and opens
///   PATH in its own descriptor table.
/// - `leader-exits`: cwd PATH, then the main thread ends with the raw
///   `exit` system call (not `exit_group`), leaving a second thread alive.
/// - `in-flight`: takes `LOCK_SH` on PATH, sends the descriptor over a unix
///   socket pair to nobody and closes it: the lock lives on an open file
///   description no process has a descriptor for.
const HOLDER: &str = r#"
import ctypes, fcntl, mmap, os, platform, socket, sys, threading, time
mode, path, ready = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
keep = []
def signal_ready():
    with open(ready + ".tmp", "w") as f:
        f.write(str(os.getpid()) + "\n")
    os.rename(ready + ".tmp", ready)
def check(rc, what):
    if rc != 0:
        raise OSError(ctypes.get_errno(), what)
def in_thread(setup):
    done = threading.Event()
    def run():
        setup()
        done.set()
        while True:
            time.sleep(3600)
    threading.Thread(target=run, daemon=True).start()
    done.wait()
if mode == "cwd":
    os.chdir(path)
elif mode == "fd":
    keep.append(open(path, "rb"))
elif mode == "map":
    with open(path, "rb") as f:
        keep.append(mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ))
elif mode == "thread-cwd":
    in_thread(lambda: (check(libc.unshare(0x200), "unshare(CLONE_FS)"), os.chdir(path)))
elif mode == "thread-fd":
    in_thread(lambda: (check(libc.unshare(0x400), "unshare(CLONE_FILES)"), keep.append(open(path, "rb"))))
elif mode == "leader-exits":
    nr = {"x86_64": 60, "aarch64": 93, "riscv64": 93}[platform.machine()]
    os.chdir(path)
    in_thread(lambda: None)
    signal_ready()
    libc.syscall(nr, 0)  # SYS_exit: this thread only
elif mode == "in-flight":
    f = open(path, "rb")
    fcntl.flock(f.fileno(), fcntl.LOCK_SH)
    a, b = socket.socketpair()
    socket.send_fds(a, [b"lease"], [f.fileno()])
    f.close()
    keep.extend([a, b])
else:
    raise SystemExit("unknown mode " + mode)
signal_ready()
while True:
    time.sleep(3600)
"#;

/// `python3 -c BIND SOURCE TARGET`: `mount(SOURCE, TARGET, MS_BIND)` by
/// system call, so that it works in `unshare --map-current-user`'s
/// namespace, where mount(8) refuses a user whose uid is not 0.
const BIND: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.mount(sys.argv[1].encode(), sys.argv[2].encode(), None, 4096, None) != 0:
    e = ctypes.get_errno()
    raise SystemExit("mount --bind: " + os.strerror(e))
"#;

/// Starts a holder (see [`HOLDER`]) in this namespace, waits for its
/// readiness file, and returns it.
fn holder(fx: &Fx, mode: &str, path: &Path) -> (Child, u32) {
    let ready = fx.env.file(&format!("ready-{mode}"));
    let _ = fs::remove_file(&ready);
    let child = fx
        .env
        .cmd("python3")
        .args(["-c", HOLDER, mode, path.to_str().unwrap()])
        .arg(&ready)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = read_pid(&ready);
    (child, pid)
}

/// Kills and reaps a holder, then waits until no thread of it is left.
fn end(mut child: Child) {
    signal(child.id(), "KILL");
    let _ = child.wait();
}

/// `unshare` options for a mount namespace of the holder's own, which
/// lease stays outside of: as root `unshare -m`; as an ordinary user a user
/// namespace that maps only our uid to itself, keeping its capabilities so
/// that [`BIND`] may mount (`--keep-caps`). `None` after recording the test
/// as skipped when neither works here.
fn holder_ns(fx: &Fx) -> Option<Vec<&'static str>> {
    let ns: Vec<&'static str> = if is_root() {
        vec!["-m", "--propagation", "private"]
    } else {
        vec!["-cm", "--keep-caps"]
    };
    let probe = fx.env.cmd("unshare").args(&ns).arg("true").output();
    if probe.as_ref().is_ok_and(|o| o.status.success()) {
        return Some(ns);
    }
    let why = match &probe {
        Ok(o) => stderr(o).trim().to_string(),
        Err(e) => e.to_string(),
    };
    skip(&format!("unshare {} fails here: {why}", ns.join(" ")));
    None
}

/// Writes [`HOLDER`] and [`BIND`] into the sandbox (which
/// `support::in_mount_ns` shows at the same path), returning their paths.
fn scripts(fx: &Fx) -> (PathBuf, PathBuf) {
    let (holder, bind) = (fx.env.file("holder.py"), fx.env.file("bind.py"));
    fs::write(&holder, HOLDER).unwrap();
    fs::write(&bind, BIND).unwrap();
    (holder, bind)
}

/// A worktree with a tracked directory `sub` holding `sub/f`.
fn tree_with_sub(fx: &Fx) -> (String, PathBuf) {
    fx.worktree("mkdir sub && echo data > sub/f && git add sub && git commit -qm sub")
}

/// Retires `id` expecting `in-use` whose detail mentions `how`, and
/// asserts nothing changed.
#[track_caller]
fn refuse_in_use(fx: &Fx, id: &str, how: &str) {
    let snap = Snapshot::take(&fx.env, &fx.repo, id);
    let o = fx.retire(id);
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["in-use"], "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let detail = v["targets"][0]["detail"][0].as_str().unwrap();
    assert!(detail.contains(how), "want `{how}` in: {detail}");
    snap.assert_held_unchanged(&fx.env, &fx.repo, "in-use");
    fx.assert_clean();
}

/// A process in another mount namespace, where the worktree is
/// bind-mounted at another path, with its cwd, an open descriptor or a
/// mapping there: its link texts name the alias, which no path prefix of
/// the worktree matches; the identities are the tree's.
#[test]
fn a3_a_process_in_another_mount_namespace_counts() {
    let fx = Fx::new();
    let Some(ns) = holder_ns(&fx) else { return };
    let (id, wt) = tree_with_sub(&fx);
    let alias = fx.env.root.join("alias");
    fs::create_dir(&alias).unwrap();
    for (mode, path, how) in [
        ("cwd", alias.join("sub"), "cwd"),
        ("fd", alias.join("sub/f"), "fd "),
        ("map", alias.join("sub/f"), "mapping"),
    ] {
        let ready = fx.env.file(&format!("ready-{mode}"));
        let _ = fs::remove_file(&ready);
        let script = format!(
            "python3 -c \"$1\" '{}' '{}' && exec python3 -c \"$0\" {mode} '{}' '{}'",
            wt.display(),
            alias.display(),
            path.display(),
            ready.display()
        );
        let child = fx
            .env
            .cmd("unshare")
            .args(&ns)
            .args(["sh", "-c", &script, HOLDER, BIND])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let _g = KillOnDrop(child.id());
        assert_eq!(
            read_pid(&ready),
            child.id(),
            "sh and unshare exec the holder"
        );
        assert!(
            !alias.join("sub").exists(),
            "the alias exists only in the holder's namespace"
        );
        refuse_in_use(&fx, &id, how);
        end(child);
    }
    fx.remove(&id);
}

/// A bind-mount alias of the worktree in lease's own namespace: a process
/// whose cwd is the alias is inside (lease runs in the namespace too).
#[test]
fn a3_a_process_behind_a_bind_mount_alias_counts() {
    let fx = Fx::new();
    let (id, wt) = tree_with_sub(&fx);
    let (holder, bind) = scripts(&fx);
    let alias = fx.env.root.join("alias");
    fs::create_dir(&alias).unwrap();
    let ready = fx.env.file("ready");
    let lease = env!("CARGO_BIN_EXE_lease");
    // In the namespace: the alias, then (with a holder) a holder whose cwd
    // is the alias's `sub`, waited for by its readiness file (exit 90 if
    // the holder died first, 91 after 60 s), then the retire.
    let run = |with_holder: bool| -> Option<Output> {
        let start = if with_holder {
            format!(
                "python3 {h} cwd {a}/sub {r} & hp=$!; i=0; \
                 while [ ! -e {r} ]; do kill -0 $hp 2>/dev/null || exit 90; \
                 i=$((i+1)); [ $i -gt 6000 ] && exit 91; sleep 0.01; done; ",
                h = sh_quote(&holder),
                a = sh_quote(&alias),
                r = sh_quote(&ready)
            )
        } else {
            "hp=; ".to_string()
        };
        let script = format!(
            "python3 {b} {w} {a} || exit 92; {start}'{lease}' retire --json {id}; rc=$?; \
             [ -n \"$hp\" ] && kill -9 $hp; exit $rc",
            b = sh_quote(&bind),
            w = sh_quote(&wt),
            a = sh_quote(&alias),
        );
        crate::support::in_mount_ns(&fx.env, &script)
    };
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let Some(o) = run(true) else { return };
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["in-use"], "{}", stdout(&o));
    snap.assert_held_unchanged(&fx.env, &fx.repo, "in-use");
    fx.assert_clean();
    // Positive control, in the same namespace with the same alias mounted.
    let o = run(false).unwrap();
    assert_code(&o, 0);
    assert_eq!(disposition(&o), "removed");
    assert_eq!(fx.env.record_of(&id)["state"], "removed");
    fx.assert_clean();
}

/// cwd is per thread (`CLONE_FS`), and so is the descriptor table
/// (`CLONE_FILES`); a process whose main thread exited has no cwd, no
/// descriptors and no mappings under `/proc/PID`, but its live thread does
/// under `/proc/PID/task/TID`.
#[test]
fn a3_a_thread_keeps_the_tree_even_after_the_main_thread_exited() {
    let fx = Fx::new();
    let (id, wt) = tree_with_sub(&fx);
    let machine = fx.env.cmd("uname").arg("-m").output().unwrap();
    let arch = String::from_utf8_lossy(&machine.stdout).trim().to_string();
    for (mode, path) in [
        ("thread-cwd", wt.join("sub")),
        ("thread-fd", wt.join("sub/f")),
        ("leader-exits", wt.join("sub")),
    ] {
        if mode == "leader-exits" && !["x86_64", "aarch64", "riscv64"].contains(&arch.as_str()) {
            skip(&format!(
                "leader-exits: no SYS_exit number known for {arch}"
            ));
            continue;
        }
        let (child, pid) = holder(&fx, mode, &path);
        let _g = KillOnDrop(pid);
        if mode == "leader-exits" {
            // The leader shows as a zombie while its thread group lives.
            wait_until("the main thread to exit", || !alive(pid));
            assert!(
                fs::read_link(format!("/proc/{pid}/cwd")).is_err(),
                "the exited leader has no cwd"
            );
        }
        refuse_in_use(&fx, &id, "(thread ");
        end(child);
    }
    fx.remove(&id);
}

/// The lease held through an open file description no process has a
/// descriptor for (in flight over a unix socket): `/proc/*/fd` shows no
/// holder, `/proc/locks` shows the flock. The dry run, `list` and `show`
/// say what the real retire finds: busy.
#[test]
fn dry_run_list_and_show_see_a_lease_held_without_a_descriptor() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let lease_file = fx.env.lease_of(&id);
    let (child, pid) = holder(&fx, "in-flight", &lease_file);
    let _g = KillOnDrop(pid);
    assert!(
        fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .flatten()
            .all(|fd| fs::canonicalize(fd.path()).ok().as_deref() != Some(&lease_file)),
        "the holder has no descriptor on the lease"
    );
    let (tree, record) = (manifest(&wt), fx.env.record_of(&id));
    let o = fx
        .env
        .lease()
        .args(["retire", "--dry-run", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["consumer-alive"], "{}", stdout(&o));
    assert!(stdout(&o).contains("/proc/locks"), "{}", stdout(&o));
    assert_eq!(manifest(&wt), tree, "a dry run changed the worktree");
    assert_eq!(
        fx.env.record_of(&id),
        record,
        "a dry run changed the record"
    );
    // The real retire agrees.
    fx.refuse(&id, "consumer-alive");
    let o = fx.env.lease().args(["list", "--json"]).output().unwrap();
    assert_code(&o, 0);
    let items: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let item = items
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id.as_str())
        .unwrap();
    assert_eq!(item["locked"], "shared", "{item:#}");
    assert_eq!(item["holders"], serde_json::json!([]), "{item:#}");
    let o = fx.env.lease().args(["show", &id]).output().unwrap();
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("/proc/locks lists a shared flock"),
        "{}",
        stdout(&o)
    );
    // Positive control: the description closes with the holder's sockets.
    end(child);
    let o = fx
        .env
        .lease()
        .args(["retire", "--dry-run", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(disposition(&o), "would-remove");
    let o = fx
        .env
        .lease()
        .args(["show", "--json", &id])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["locked"], "none", "{v:#}");
    fx.remove(&id);
}

/// lease in a pid namespace of its own, with its own `/proc`, and the
/// consumer outside it: neither `/proc/*/fd` nor `/proc/locks` (the kernel
/// omits locks of processes that `/proc` cannot show) reveals the holder,
/// so the dry run cannot say "would remove"; the real retire, which takes
/// the lock, finds it busy.
#[test]
fn a_dry_run_that_cannot_see_every_holder_never_says_would_remove() {
    let fx = Fx::new();
    let ready = fx.env.file("ready");
    let (id, wt) = fx.worktree(&daemon_script(&ready));
    let consumer = read_pid(&ready);
    let guard = KillOnDrop(consumer);
    // lease in a pid namespace with its own /proc (`unshare -pf
    // --mount-proc`), inside `support::in_mount_ns`, which gives the power
    // to make one as root and as an ordinary user.
    let lease = env!("CARGO_BIN_EXE_lease");
    let inside = |args: &[&str]| -> Option<Output> {
        crate::support::in_mount_ns(
            &fx.env,
            &format!("exec unshare -pf --mount-proc '{lease}' {}", args.join(" ")),
        )
    };
    let (tree, record) = (manifest(&wt), fx.env.record_of(&id));
    let Some(o) = inside(&["retire", "--dry-run", "--json", &id]) else {
        return;
    };
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["unprovable"], "{}", stdout(&o));
    assert!(stdout(&o).contains("pid namespace"), "{}", stdout(&o));
    assert_eq!(manifest(&wt), tree, "a dry run changed the worktree");
    assert_eq!(
        fx.env.record_of(&id),
        record,
        "a dry run changed the record"
    );
    let o = inside(&["list", "--json"]).unwrap();
    assert_code(&o, 0);
    let items: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(items[0]["locked"], "unknown", "{items:#}");
    // The real retire inside the namespace takes the lock: busy.
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let o = inside(&["retire", "--json", &id]).unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["consumer-alive"], "{}", stdout(&o));
    snap.assert_held_unchanged(&fx.env, &fx.repo, "consumer-alive");
    fx.assert_clean();
    // Outside, where /proc shows every process, the dry run names the holder.
    let o = fx
        .env
        .lease()
        .args(["retire", "--dry-run", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["consumer-alive"], "{}", stdout(&o));
    // Positive control: the consumer gone, the real retire inside removes.
    signal(consumer, "KILL");
    wait_until("the consumer to exit", || !alive(consumer));
    drop(guard);
    let o = inside(&["retire", "--json", &id]).unwrap();
    assert_code(&o, 0);
    assert_eq!(disposition(&o), "removed");
    fx.assert_clean();
}

/// Clears a file attribute on drop (by exact path), so a failed assertion
/// never leaves an entry that the temp dir's cleanup cannot delete.
struct Chattr(PathBuf, &'static str);

impl Drop for Chattr {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr") // forbid: allow (a test fixture, not git)
            .arg(self.1)
            .arg(&self.0)
            .status();
    }
}

/// An immutable or append-only entry anywhere in the tree holds
/// `not-writable` before git runs: as root, git would delete part of such a
/// tree and then its admin entry. Needs root (`CAP_LINUX_IMMUTABLE`) and a
/// filesystem that keeps the attributes.
#[test]
fn an_immutable_or_append_only_entry_holds_not_writable() {
    if !root_or_skip("chattr +i / +a needs CAP_LINUX_IMMUTABLE") {
        return;
    }
    let fx = Fx::new();
    let (id, wt) = tree_with_sub(&fx);
    for (path, set, clear) in [
        (wt.join("sub/f"), "+i", "-i"),
        (wt.join("sub/f"), "+a", "-a"),
        (wt.join("sub"), "+i", "-i"),
        (wt.join("sub"), "+a", "-a"),
    ] {
        let set_it = fx.env.cmd("chattr").arg(set).arg(&path).output().unwrap();
        if !set_it.status.success() {
            skip(&format!(
                "`chattr {set}` failed (a filesystem without attributes?): {}",
                stderr(&set_it).trim()
            ));
            return;
        }
        let guard = Chattr(path.clone(), clear);
        let snap = Snapshot::take(&fx.env, &fx.repo, &id);
        let o = fx.retire(&id);
        assert_code(&o, 1);
        assert_eq!(reasons(&o), ["not-writable"], "{}", stdout(&o));
        assert!(
            stdout(&o).contains("immutable or append-only entries"),
            "{}",
            stdout(&o)
        );
        snap.assert_held_unchanged(&fx.env, &fx.repo, "not-writable");
        fx.assert_clean();
        drop(guard);
    }
    fx.remove(&id);
}
