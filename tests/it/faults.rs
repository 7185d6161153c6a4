//! Bad input and faults (SPEC "Bad input and faults"): special files where
//! lease reads, spans and sizes that overflow, hostile path spellings,
//! control characters in names, a disk that fills, torn audit writes.
//!
//! Every run of lease that could hang (a FIFO where a file belongs) runs
//! under [`within`]: a deadline that fails the test instead of hanging it.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

/// How long one lease command may take before it counts as hung. Far above
/// what any of them needs on a loaded machine; a FIFO open would never end.
const DEADLINE: Duration = Duration::from_secs(120);

/// Runs `c` to completion within [`DEADLINE`], draining its output on
/// threads; on timeout kills its process group and fails the test.
pub(crate) fn within(c: &mut Command) -> Output {
    within_group(c).0
}

/// [`within`], also returning the process group the child led.
fn within_group(c: &mut Command) -> (Output, u32) {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = c.spawn().unwrap();
    let pgid = child.id();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut b);
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > DEADLINE {
            let pgid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
            let _ = child.wait();
            panic!("{c:?} hung for {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let o = Output {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    };
    (o, pgid)
}

/// Makes a FIFO at `path` (mode 0600).
pub(crate) fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .unwrap();
}

/// Makes a character device at `path` with the numbers of `/dev/zero`
/// (1, 5), which reads forever: only root can (`CAP_MKNOD`).
fn mkdev(path: &Path) -> std::io::Result<()> {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        rustix::fs::makedev(1, 5),
    )?;
    Ok(())
}

/// The kinds of special entry a test puts where lease reads a file.
#[derive(Debug, Clone, Copy)]
enum Special {
    Fifo,
    Symlink,
    Device,
}

/// A special entry planted where lease reads a file, and how to run lease
/// so that it sees it. A device is a real device node for root; for an
/// ordinary user, who cannot make one, the name holds an empty file and
/// each lease command runs in a private mount namespace (support's
/// [`PRIVATE_ROOT`]) where `/dev/zero` is bind-mounted over it: a real
/// character device, under the same name, for that command.
struct Planted {
    path: PathBuf,
    bind: Option<tempfile::TempDir>,
}

impl Planted {
    /// `lease` as the tests run it, seeing the planted entry.
    fn lease(&self, env: &TestEnv) -> Command {
        let Some(new_root) = &self.bind else {
            return env.lease();
        };
        let lease = env!("CARGO_BIN_EXE_lease");
        let bin_dir = Path::new(lease).parent().unwrap();
        let mut c = env.cmd("unshare");
        c.args(ns_as_ourselves())
            .args(["sh", "-c", PRIVATE_ROOT, "sh"])
            .arg(new_root.path())
            .arg(&env.root)
            .arg(bin_dir)
            .arg(format!(
                "mount --bind /dev/zero '{}' || exit 97; exec '{lease}' \"$@\"",
                self.path.display()
            ));
        c
    }
}

/// Replaces `path` with a special entry of `kind`; a symlink points at a
/// copy of what was there (still valid content: lease must not follow it).
/// Returns `None`, the test recorded as skipped, when the kind cannot be
/// made here.
fn plant(path: &Path, kind: Special) -> Option<Planted> {
    let copy = path.with_extension("copy");
    if path.exists() {
        fs::copy(path, &copy).unwrap();
        fs::remove_file(path).unwrap();
    }
    let mut bind = None;
    match kind {
        Special::Fifo => mkfifo(path),
        Special::Symlink => std::os::unix::fs::symlink(&copy, path).unwrap(),
        Special::Device if is_root() => mkdev(path).unwrap(),
        Special::Device => {
            // Probe the namespace once: where it cannot be built, skip.
            fs::write(path, b"").unwrap();
            let env_probe = Command::new("unshare")
                .args(ns_as_ourselves())
                .arg("true")
                .output();
            if !env_probe.is_ok_and(|o| o.status.success()) {
                skip("an ordinary user needs unshare -Urm to put a device where lease reads");
                return None;
            }
            bind = Some(tempfile::tempdir().unwrap());
        }
    }
    Some(Planted {
        path: path.to_path_buf(),
        bind,
    })
}

fn what(kind: Special) -> &'static str {
    match kind {
        Special::Fifo => "a FIFO",
        Special::Symlink => "a symbolic link",
        Special::Device => "a character device",
    }
}

const KINDS: [Special; 3] = [Special::Fifo, Special::Symlink, Special::Device];

/// A retained record (`exec --keep`) whose worktree is still there.
fn kept_record(env: &TestEnv, repo: &Path, branch: &str) -> String {
    let o = env
        .lease()
        .current_dir(repo)
        .args(["exec", "--keep", "--branch", branch, "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    env.records()
        .into_iter()
        .find(|r| r["branch"] == branch)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_special_file_in_place_of_a_record_is_corrupt_and_never_waited_on() {
    for kind in KINDS {
        let env = TestEnv::new();
        let repo = env.repo();
        let id = kept_record(&env, &repo, "bad");
        let other = kept_record(&env, &repo, "good");
        let file = env.state.join("records").join(format!("{id}.json"));
        let Some(planted) = plant(&file, kind) else {
            continue;
        };
        let o = within(planted.lease(&env).args(["list", "--json"]));
        assert_code(&o, 0);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let bad = v
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap();
        assert_eq!(bad["state"], "unreadable", "{kind:?}: {bad}");
        let problem = bad["problem"].as_str().unwrap();
        assert!(
            problem.starts_with("corrupt") && problem.contains(what(kind)),
            "{kind:?}: {problem}"
        );
        let good = v
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == other)
            .unwrap();
        assert_eq!(
            good["state"], "retained",
            "every other record is unaffected"
        );
        // A command that would change it fails with exit 3, and says why.
        for args in [
            vec!["show", id.as_str()],
            vec!["retire", id.as_str()],
            vec!["release", id.as_str()],
        ] {
            let o = within(planted.lease(&env).args(&args));
            assert_code(&o, 3);
            let said = format!("{}{}", stdout(&o), stderr(&o));
            assert!(said.contains(what(kind)), "{kind:?} {args:?}: {said}");
        }
        let o = within(planted.lease(&env).args(["reap", "--json"]));
        assert_code(&o, 3);
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["complete"], false, "{kind:?}");
        // Nothing was written through a symlink.
        if let Special::Symlink = kind {
            let copy = file.with_extension("copy");
            let rec: serde_json::Value = serde_json::from_slice(&fs::read(copy).unwrap()).unwrap();
            assert_eq!(rec["state"], "retained");
        }
    }
}

#[test]
fn a_special_file_in_place_of_a_record_lock_fails_the_change_not_the_process() {
    for kind in KINDS {
        let env = TestEnv::new();
        let repo = env.repo();
        let id = kept_record(&env, &repo, "b");
        let lock = env.state.join("records").join(format!("{id}.lock"));
        let before = fs::read(env.state.join("records").join(format!("{id}.json"))).unwrap();
        let Some(planted) = plant(&lock, kind) else {
            continue;
        };
        let o = within(planted.lease(&env).args(["release", &id]));
        assert_code(&o, 3);
        assert!(stderr(&o).contains(what(kind)), "{kind:?}: {}", stderr(&o));
        assert_eq!(
            fs::read(env.state.join("records").join(format!("{id}.json"))).unwrap(),
            before,
            "{kind:?}: the record did not change"
        );
        assert_code(&within(planted.lease(&env).args(["list"])), 0);
    }
}

#[test]
fn a_special_file_in_place_of_a_lease_file_holds_and_never_blocks() {
    for kind in KINDS {
        let env = TestEnv::new();
        let repo = env.repo();
        let id = kept_record(&env, &repo, "b");
        assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
        let wt = PathBuf::from(env.record_of(&id)["worktree"]["path"].as_str().unwrap());
        let tree = manifest(&wt);
        let lease = env.lease_of(&id);
        let l = &env.record_of(&id)["lease"];
        let identity = format!("{}:{}", l["dev"], l["ino"]);
        let Some(planted) = plant(&lease, kind) else {
            continue;
        };
        let snap = Snapshot::take(&env, &repo, &id);
        let o = within(planted.lease(&env).args(["retire", "--json", &id]));
        assert_code(&o, 1);
        assert_eq!(reasons(&o), ["lease-identity"], "{kind:?}");
        snap.assert_held_unchanged(&env, &repo, "lease-identity");
        // A new session cannot take it either.
        let o = within(
            planted
                .lease(&env)
                .args(["exec", "--resume", &id, "--", "true"]),
        );
        assert_code(&o, 125);
        assert!(
            stderr(&o).contains("lease-identity"),
            "{kind:?}: {}",
            stderr(&o)
        );
        let o = within(
            planted
                .lease(&env)
                .env("LEASE_ID", &id)
                .env("LEASE_FILE", &lease)
                .env("LEASE_IDENTITY", &identity)
                .args(["join", "--", "true"]),
        );
        assert_code(&o, 125);
        assert_code(&within(planted.lease(&env).args(["list"])), 0);
        assert_eq!(manifest(&wt), tree, "{kind:?}");
    }
}

#[test]
fn a_special_orphans_file_is_reported_corrupt_and_left_alone() {
    for kind in KINDS {
        let env = TestEnv::new();
        let repo = env.repo();
        // An orphan so reap --apply writes orphans.json.
        env.add_worktree(&repo, "orphan", &env.root.join("orphan-wt"));
        let _id = kept_record(&env, &repo, "b");
        assert_code(&within(env.lease().args(["reap", "--apply"])), 0);
        let file = env.state.join("orphans.json");
        assert!(file.exists());
        let Some(planted) = plant(&file, kind) else {
            continue;
        };
        let seen = |f: &Path| {
            let m = fs::symlink_metadata(f).unwrap();
            (std::os::unix::fs::MetadataExt::ino(&m), m.file_type())
        };
        let planted_as = seen(&file);
        let o = within(planted.lease(&env).args(["reap", "--apply", "--json"]));
        assert_code(&o, 3);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let errors = v["errors"].to_string();
        assert!(
            errors.contains("corrupt") && errors.contains(what(kind)),
            "{kind:?}: {v:#}"
        );
        assert_eq!(seen(&file), planted_as, "{kind:?}: left as it is");
        assert_code(&within(planted.lease(&env).args(["reap"])), 3);
    }
}

#[test]
fn a_special_audit_log_is_refused_by_verify_and_by_every_change() {
    for kind in KINDS {
        let env = TestEnv::new();
        let repo = env.repo();
        let id = kept_record(&env, &repo, "b");
        let log = env.state.join("audit.jsonl");
        let logged = fs::read(&log).unwrap();
        let Some(planted) = plant(&log, kind) else {
            continue;
        };
        let o = within(planted.lease(&env).args(["audit", "verify"]));
        assert_code(&o, 3);
        assert!(stderr(&o).contains(what(kind)), "{kind:?}: {}", stderr(&o));
        // A change writes its record, then cannot append its line: exit 3,
        // and the line is kept in the record for a later recovery.
        let o = within(planted.lease(&env).args(["release", &id]));
        assert_code(&o, 3);
        assert!(stderr(&o).contains(what(kind)), "{kind:?}: {}", stderr(&o));
        let rec = env.record_of(&id);
        assert!(!rec["unaudited"].as_array().unwrap().is_empty(), "{rec:#}");
        if let Special::Symlink = kind {
            assert_eq!(
                fs::read(log.with_extension("copy")).unwrap(),
                logged,
                "nothing appended through the link"
            );
        }
    }
}

#[test]
fn a_special_reaper_lock_or_bundle_is_refused_without_waiting() {
    for kind in KINDS {
        let env = TestEnv::new();
        let repo = env.repo();
        let (id, _tip) = archived(&env, &repo, "work");
        let lock = env.state.join("locks/reap.lock");
        let _ = fs::remove_file(&lock);
        let Some(planted) = plant(&lock, kind) else {
            continue;
        };
        for args in [&["reap", "--apply"][..], &["reap"]] {
            let o = within(planted.lease(&env).args(args));
            assert_code(&o, 3);
            assert!(
                stderr(&o).contains(what(kind)),
                "{kind:?} {args:?}: {}",
                stderr(&o)
            );
        }
        let bundle = PathBuf::from(env.record_of(&id)["archive"]["location"].as_str().unwrap());
        let Some(planted) = plant(&bundle, kind) else {
            continue;
        };
        let o = within(planted.lease(&env).args(["archive", "verify", &id]));
        assert_code(&o, 1);
        assert!(stderr(&o).contains(what(kind)), "{kind:?}: {}", stderr(&o));
    }
}

#[test]
fn a_config_file_that_is_a_fifo_a_symlink_or_a_device_is_a_usage_error() {
    let env = TestEnv::new();
    let repo = env.repo();
    let fifo = env.root.join("fifo.toml");
    mkfifo(&fifo);
    let real = env.root.join("real.toml");
    fs::write(&real, "min_free = \"1M\"\n").unwrap();
    let link = env.root.join("link.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let big = env.root.join("big.toml");
    fs::write(&big, format!("# {}\n", "x".repeat(2 << 20))).unwrap();
    let dev = Path::new("/dev/zero");
    let cases: [(&Path, &str); 4] = [
        (&fifo, "a FIFO"),
        (&link, "a symbolic link"),
        (dev, "a character device"),
        (&big, "larger than"),
    ];
    for (file, says) in cases {
        let o = within(
            env.lease()
                .arg("--config")
                .arg(file)
                .args(["config", "--show"]),
        );
        assert_code(&o, 2);
        assert!(
            stderr(&o).contains(says),
            "--config {}: {}",
            file.display(),
            stderr(&o)
        );
        let o = within(env.lease().env("LEASE_CONFIG", file).args(["list"]));
        assert_code(&o, 2);
        assert!(
            stderr(&o).contains(says),
            "LEASE_CONFIG {}: {}",
            file.display(),
            stderr(&o)
        );
        // exec: 125, and nothing was created.
        let o = within(
            env.lease()
                .current_dir(&repo)
                .env("LEASE_CONFIG", file)
                .args(["exec", "--", "true"]),
        );
        assert_code(&o, 125);
        assert!(env.records().is_empty());
    }
    // The user's own file too ($XDG_CONFIG_HOME/lease/config.toml).
    let xdg = env.root.join("xdg");
    fs::create_dir_all(xdg.join("lease")).unwrap();
    mkfifo(&xdg.join("lease/config.toml"));
    let o = within(env.lease().env("XDG_CONFIG_HOME", &xdg).args(["list"]));
    assert_code(&o, 2);
    assert!(stderr(&o).contains("a FIFO"), "{}", stderr(&o));
    // Positive control: the regular file it pointed at is read.
    let o = within(
        env.lease()
            .arg("--config")
            .arg(&real)
            .args(["config", "--show"]),
    );
    assert_code(&o, 0);
}

#[test]
fn spans_sizes_and_lengths_that_overflow_are_usage_errors_never_panics() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = kept_record(&env, &repo, "b");
    let rec = fs::read(env.state.join("records").join(format!("{id}.json"))).unwrap();
    let lines = env.audit().len();
    let no_panic = |o: &Output| {
        assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
    };
    let reason = "r".repeat(5000);
    let owner = format!("agent:{}", "o".repeat(2000));
    for args in [
        vec!["hold", &id, "--reason", "x", "--until", "999999999999d"],
        vec![
            "hold",
            &id,
            "--reason",
            "x",
            "--until",
            "99999999999999999999999d",
        ],
        vec![
            "hold",
            &id,
            "--reason",
            "x",
            "--until",
            "9999-12-31T23:00:00-05:00",
        ],
        vec!["hold", &id, "--reason", &reason],
        vec!["hold", &id, "--reason", "x", "--owner", &owner],
    ] {
        let o = within(env.lease().args(&args));
        no_panic(&o);
        assert_code(&o, 2);
    }
    for size in [
        "99999999999999999999G",
        "18446744073709551615K",
        "101%",
        "256%",
        "-1%",
    ] {
        let o =
            within(
                env.lease()
                    .current_dir(&repo)
                    .args(["exec", "--min-free", size, "--", "true"]),
            );
        no_panic(&o);
        assert_code(&o, 125);
        let o = within(
            env.lease()
                .env("LEASE_MIN_FREE", size)
                .args(["config", "--show"]),
        );
        no_panic(&o);
        assert_code(&o, 2);
    }
    for grace in ["999999999999999999999d", "99999999999999999999999s"] {
        let o = within(env.lease().env("LEASE_ORPHAN_GRACE", grace).args(["reap"]));
        no_panic(&o);
        assert_code(&o, 2);
    }
    let cfg = env.root.join("c.toml");
    for text in [
        "min_free = \"99999999999999999999G\"\n",
        "orphan_grace = \"999999999999999999999d\"\n",
        "min_free = 99999999999999999999\n",
    ] {
        fs::write(&cfg, text).unwrap();
        let o = within(
            env.lease()
                .arg("--config")
                .arg(&cfg)
                .args(["config", "--show"]),
        );
        no_panic(&o);
        assert_code(&o, 2);
    }
    // Nothing changed: the record and the audit log are as they were.
    assert_eq!(
        fs::read(env.state.join("records").join(format!("{id}.json"))).unwrap(),
        rec
    );
    assert_eq!(env.audit().len(), lines);
    assert_eq!(env.records().len(), 1);
    // Positive control: the largest span that can be written is taken.
    let o = within(env.lease().args([
        "hold",
        &id,
        "--reason",
        "x",
        "--until",
        "9999-12-31T23:59:59Z",
    ]));
    assert_code(&o, 0);
}

#[test]
fn a_target_path_with_a_newline_is_a_usage_error_not_another_repository() {
    let env = TestEnv::new();
    let _repo = env.repo();
    // Two repositories: `other` and `other<newline>/inner`. Before the fix,
    // exec in the second recorded and worked in the first (git prints the
    // common dir on one line, and lease took the first line).
    let other = env.root.join("other");
    env.git(
        &env.root,
        &["init", "-q", "-b", "main", other.to_str().unwrap()],
    );
    env.git(&other, &["commit", "-q", "--allow-empty", "-m", "other"]);
    let odd = env.root.join("other\n/inner");
    fs::create_dir_all(&odd).unwrap();
    env.git(&odd, &["init", "-q", "-b", "main"]);
    env.git(&odd, &["commit", "-q", "--allow-empty", "-m", "inner"]);
    let o = within(
        env.lease()
            .arg("exec")
            .arg("--repo")
            .arg(&odd)
            .args(["--", "true"]),
    );
    assert_code(&o, 125);
    assert!(stderr(&o).contains("newline"), "{}", stderr(&o));
    let o = within(env.lease().current_dir(&odd).args(["exec", "--", "true"]));
    assert_code(&o, 125);
    assert!(stderr(&o).contains("newline"), "{}", stderr(&o));
    assert!(env.records().is_empty(), "no record, in either repository");
    assert_eq!(
        env.git(&other, &["worktree", "list", "--porcelain"])
            .lines()
            .count(),
        3
    );
    // Every other command that takes a path.
    let wt = env.root.join("wt\nx");
    for args in [
        vec!["adopt".to_string(), wt.to_str().unwrap().to_string()],
        vec!["repair".into(), wt.to_str().unwrap().into()],
        vec!["retire".into(), wt.to_str().unwrap().into()],
        vec![
            "restore".into(),
            "0123456789abcdef".into(),
            "--to".into(),
            wt.to_str().unwrap().into(),
        ],
        vec![
            "exec".into(),
            "--adopt".into(),
            wt.to_str().unwrap().into(),
            "--".into(),
            "true".into(),
        ],
    ] {
        let o = within(env.lease().args(&args));
        let want = if args[0] == "exec" { 125 } else { 2 };
        assert_code(&o, want);
        assert!(stderr(&o).contains("newline"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn lease_home_spelled_with_double_slashes_dots_or_a_trailing_slash_still_retires() {
    for spelling in ["//", "/./", "/"] {
        let env = TestEnv::new();
        let repo = env.repo();
        let home = env.state.to_str().unwrap();
        let (parent, name) = home.rsplit_once('/').unwrap();
        let spelled = if spelling == "/" {
            format!("{home}/")
        } else {
            format!("{parent}{spelling}{name}")
        };
        // Before the fix this worktree was held `not-registered` forever.
        let o = within(
            env.lease()
                .current_dir(&repo)
                .env("LEASE_HOME", &spelled)
                .args([
                    "exec",
                    "--",
                    "sh",
                    "-c",
                    "echo w > w && git add w && git commit -qm w",
                ]),
        );
        assert_code(&o, 0);
        let rec = env.record();
        assert_eq!(rec["state"], "removed", "{spelled}: {}", stderr(&o));
        let wt = rec["worktree"]["path"].as_str().unwrap();
        assert!(
            wt.starts_with(home) && !wt.contains("//") && !wt.contains("/./"),
            "{wt}"
        );
    }
}

#[test]
fn an_empty_state_root_made_by_hand_works_for_every_command() {
    let env = TestEnv::new();
    let repo = env.repo();
    fs::create_dir(&env.state).unwrap();
    fs::set_permissions(
        &env.state,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    for (args, want) in [
        (&["list"][..], 0),
        (&["list", "--json"], 0),
        (&["reap"], 0),
        (&["reap", "--json"], 0),
        (&["retire", "--all", "--dry-run"], 0),
        (&["archives"], 0),
        (&["metrics"], 0),
        (&["audit", "verify"], 0),
        (&["show", "0123456789abcdef"], 2),
        (&["config", "--show"], 0),
        (&["retire", "--all"], 0),
        (&["reap", "--apply"], 0),
    ] {
        let o = within(env.lease().args(args));
        assert_code(&o, want);
        assert!(
            !stderr(&o).contains("No such file"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // And exec creates its records in it.
    let o = within(env.lease().current_dir(&repo).args(["exec", "--", "true"]));
    assert_code(&o, 0);
    assert_eq!(env.record()["state"], "removed");
}

/// True if `bytes` has a control character other than the newline that
/// ends each line.
fn has_control(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes)
        .chars()
        .any(|c| c.is_control() && c != '\n')
}

#[test]
fn control_characters_in_names_are_escaped_in_human_output_and_exact_in_json() {
    let env = TestEnv::new();
    // A repository whose name holds an escape sequence and a tab: the
    // worktree root's directory, and so every worktree path, holds them.
    let remote = env.root.join("remote.git");
    env.git(
        &env.root,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    let name = "re\x1b[31mpo\tx";
    let repo = env.root.join(name);
    env.git(
        &env.root,
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );
    env.git(&repo, &["commit", "-q", "--allow-empty", "-m", "i"]);
    env.git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    env.git(&repo, &["push", "-q", "origin", "main"]);
    env.git(&repo, &["fetch", "-q", "origin"]);
    let owner = "agent:a\x1b]0;title\x07b";
    let o = within(env.lease().current_dir(&repo).args([
        "exec",
        "--keep",
        "--owner",
        owner,
        "--",
        "sh",
        "-c",
        "echo x > untracked",
    ]));
    assert_code(&o, 0);
    assert!(!has_control(&o.stderr), "{:?}", stderr(&o));
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    let wt = rec["worktree"]["path"].as_str().unwrap().to_string();
    assert!(
        wt.contains(name),
        "JSON on disk keeps the name exact: {wt:?}"
    );
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    let human: Vec<Vec<&str>> = vec![
        vec!["list"],
        vec!["show", &id],
        vec!["retire", &id],
        vec!["retire", "--dry-run", &id],
        vec!["reap"],
        vec!["archives"],
        vec!["retire", &wt],
    ];
    for args in &human {
        let o = within(env.lease().args(args));
        assert!(!has_control(&o.stdout), "{args:?} stdout: {:?}", stdout(&o));
        assert!(!has_control(&o.stderr), "{args:?} stderr: {:?}", stderr(&o));
    }
    let o = within(env.lease().args(["list"]));
    assert!(stdout(&o).contains("re\\x1b[31mpo\\tx"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("agent:a\\x1b]0;title\\x07b"),
        "{}",
        stdout(&o)
    );
    // JSON keeps them exact (escaped as JSON escapes them, parsed back equal).
    for args in [vec!["list", "--json"], vec!["show", "--json", &id]] {
        let o = within(env.lease().args(&args));
        assert!(!has_control(&o.stdout), "JSON escapes controls itself");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            v.to_string().contains("re\\u001b[31mpo\\tx"),
            "{args:?}: {v}"
        );
    }
    let o = within(env.lease().args(["retire", "--json", &id]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["targets"][0]["worktree"], wt);
    // An unrecorded worktree named by path: held, its path escaped.
    let loose = env.root.join("loose\x1b[2Jwt");
    env.add_worktree(&repo, "loose", &loose);
    let o = within(env.lease().arg("retire").arg(&loose));
    assert_code(&o, 1);
    assert!(!has_control(&o.stdout), "{:?}", stdout(&o));
    assert!(stdout(&o).contains("loose\\x1b[2Jwt"), "{}", stdout(&o));
}

#[test]
fn exec_keeps_the_commands_status_when_lease_cannot_record_its_end() {
    let env = TestEnv::new();
    let repo = env.repo();
    // Every durable write after the command ran fails with ENOSPC.
    let o = within(
        env.lease()
            .current_dir(&repo)
            .env("LEASE_FI_ENOSPC_AFTER", "exec-ran")
            .args(["exec", "--", "sh", "-c", "exit 7"]),
    );
    assert_code(&o, 7);
    let err = stderr(&o);
    assert!(
        err.contains("could not record its end") && err.contains("No space left"),
        "{err}"
    );
    let rec = env.record();
    assert_eq!(rec["state"], "active", "the end was not recorded");
    let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
    assert!(wt.is_dir());
    // A signal the command died of is passed on too.
    let o = within(
        env.lease()
            .current_dir(&repo)
            .env("LEASE_FI_ENOSPC_AFTER", "exec-ran")
            .args(["exec", "--", "sh", "-c", "kill -TERM $$"]),
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        Some(libc::SIGTERM),
        "{}",
        stderr(&o)
    );
    // Once the disk has room, the reconciler finishes both records.
    let o = within(env.lease().args(["reap", "--apply", "--json"]));
    assert_code(&o, 0);
    for r in env.records() {
        assert_eq!(r["state"], "removed", "{r:#}");
    }
    assert!(!wt.exists());
    assert!(audit_chain_ok(&env));
}

#[test]
fn a_record_keeps_the_last_16_attempts_with_bounded_details_and_counts_the_rest() {
    let env = TestEnv::new();
    let repo = env.repo();
    // 300 untracked files with long names: the `untracked` detail is far
    // over 4 KiB.
    let script =
        "for i in $(seq 1 300); do touch \"file-with-a-long-name-$i-$(printf '%080d' $i)\"; done";
    let id = {
        let o = env
            .lease()
            .current_dir(&repo)
            .args(["exec", "--keep", "--", "sh", "-c", script])
            .output()
            .unwrap();
        assert_code(&o, 0);
        env.record()["id"].as_str().unwrap().to_string()
    };
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    for n in 1..=20u64 {
        let snap = Snapshot::take(&env, &repo, &id);
        let o = env
            .lease()
            .args(["retire", "--json", &id])
            .output()
            .unwrap();
        assert_code(&o, 1);
        snap.assert_held_unchanged(&env, &repo, "untracked");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let full = v["targets"][0]["detail"][0].as_str().unwrap();
        assert!(
            full.len() > 4096,
            "the report itself keeps the whole detail"
        );
        let rec = env.record_of(&id);
        let attempts = rec["attempts"].as_array().unwrap();
        assert_eq!(attempts.len() as u64, n.min(16), "n={n}");
        assert_eq!(
            rec["attempts_dropped"].as_u64().unwrap_or(0),
            n.saturating_sub(16)
        );
        let kept = attempts.last().unwrap()["detail"][0].as_str().unwrap();
        assert!(
            kept.len() <= 4096 && kept.ends_with("bytes cut]"),
            "{}",
            kept.len()
        );
        assert!(full.starts_with(kept.split(" ... [").next().unwrap()));
    }
    if let Err(e) = audit_matches_record(&env, &id) {
        panic!("{e}");
    }
    // A record written before the bound (20 attempts, no count) still
    // reads; its next hold trims it to 16 and counts what it dropped.
    let path = env.state.join("records").join(format!("{id}.json"));
    let mut rec: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let one = rec["attempts"][0].clone();
    rec["attempts"] = serde_json::json!(vec![one; 20]);
    rec.as_object_mut().unwrap().remove("attempts_dropped");
    fs::write(&path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    let o = env.lease().args(["show", "--json", &id]).output().unwrap();
    assert_code(&o, 0);
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 1);
    let rec = env.record_of(&id);
    assert_eq!(rec["attempts"].as_array().unwrap().len(), 16);
    assert_eq!(rec["attempts_dropped"], 5);
}

/// `lease audit verify --json`: its exit code and report.
fn verify_json(env: &TestEnv) -> (i32, serde_json::Value) {
    let o = within(env.lease().args(["audit", "verify", "--json"]));
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), stderr(&o)));
    (o.status.code().unwrap(), v)
}

#[test]
fn audit_verify_reports_the_first_break_with_its_line_and_kind() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (code, v) = verify_json(&env);
    assert_eq!(
        (code, v["exists"].clone()),
        (0, serde_json::json!(false)),
        "no log yet"
    );
    let id = kept_record(&env, &repo, "b");
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    let (code, v) = verify_json(&env);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["intact"], true);
    let n = v["lines"].as_u64().unwrap();
    assert!(n >= 5, "{v:#}");
    let o = within(env.lease().args(["audit", "verify"]));
    assert_code(&o, 0);
    assert!(stdout(&o).contains("intact"), "{}", stdout(&o));
    let log = env.state.join("audit.jsonl");
    let text = fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let join = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    // An edited line (still JSON): the chain breaks at the line after it.
    let edited = lines[1].replacen("\"time\":\"", "\"time\":\"1", 1);
    let mut e = lines.clone();
    e[1] = &edited;
    fs::write(&log, join(&e)).unwrap();
    let (code, v) = verify_json(&env);
    assert_eq!(code, 3);
    assert_eq!(
        (v["break"]["line"].clone(), v["break"]["kind"].clone()),
        (serde_json::json!(3), serde_json::json!("edited"))
    );
    let o = within(env.lease().args(["audit", "verify"]));
    assert_code(&o, 3);
    assert!(
        stdout(&o).contains("broken at line 3: edited"),
        "{}",
        stdout(&o)
    );
    // Two lines swapped.
    let mut r = lines.clone();
    r.swap(1, 2);
    fs::write(&log, join(&r)).unwrap();
    let (code, v) = verify_json(&env);
    assert_eq!(
        (code, v["break"]["kind"].clone()),
        (3, serde_json::json!("reordered"))
    );
    // A torn last line: a break until the next append records the recovery.
    fs::write(&log, format!("{}{}", join(&lines), &lines[2][..40])).unwrap();
    let (code, v) = verify_json(&env);
    assert_eq!(code, 3);
    assert_eq!(v["break"]["line"], n + 1);
    assert_eq!(v["break"]["kind"], "torn");
    assert_code(
        &env.lease()
            .args(["hold", &id, "--reason", "r"])
            .output()
            .unwrap(),
        0,
    );
    let (code, v) = verify_json(&env);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["recovered"][0]["line"], n + 1);
    assert_eq!(v["recovered"][0]["bytes"], 40);
    let after = fs::read_to_string(&log).unwrap();
    let next = after.lines().nth(n as usize + 1).unwrap();
    let next: serde_json::Value = serde_json::from_str(next).unwrap();
    assert_eq!(
        next["torn"][0]["bytes"], 40,
        "the line records the recovery: {next}"
    );
    assert!(audit_chain_ok(&env));
}

#[test]
fn a_torn_audit_write_is_followed_by_a_line_of_its_own_that_records_the_recovery() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = kept_record(&env, &repo, "b");
    let log = env.state.join("audit.jsonl");
    let before = fs::read(&log).unwrap();
    // The first durable write of `release` is the record, the second its
    // audit line: half of that line reaches the disk, then ENOSPC.
    let o = env
        .lease()
        .env("LEASE_FI_TORN_WRITE", "2")
        .args(["release", &id])
        .output()
        .unwrap();
    assert_code(&o, 3);
    assert!(stderr(&o).contains("No space left"), "{}", stderr(&o));
    let torn = fs::read(&log).unwrap();
    assert!(
        torn.len() > before.len() && !torn.ends_with(b"\n"),
        "a torn tail"
    );
    let (code, _) = verify_json(&env);
    assert_eq!(code, 3);
    // The next change: its record recovers the lost line, which starts on
    // a line of its own and names the torn one.
    assert_code(
        &env.lease()
            .args(["hold", &id, "--reason", "r"])
            .output()
            .unwrap(),
        0,
    );
    let after = fs::read(&log).unwrap();
    assert!(after.starts_with(&torn), "the log is never rewritten");
    assert_eq!(after[torn.len()], b'\n');
    let (code, v) = verify_json(&env);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["recovered"].as_array().unwrap().len(), 1);
    assert!(audit_chain_ok(&env));
    if let Err(e) = audit_matches_record(&env, &id) {
        panic!("{e}");
    }
}

/// A real small filesystem: a 1 MiB tmpfs mounted in a private mount
/// namespace that a `sleep` keeps alive, entered with `nsenter` for each
/// command. As root: `unshare -m`. As an ordinary user: a user namespace
/// that maps only our uid, in the private root of [`PRIVATE_ROOT`] (below
/// the system's root-owned `/` and `/tmp`, which show as uid 65534 there,
/// lease rightly refuses a state root). Where neither works,
/// [`SmallDisk::new`] records the test as skipped.
pub(crate) struct SmallDisk {
    _ns: Bg,
    _new_root: Option<tempfile::TempDir>,
    pid: u32,
    user_ns: bool,
    /// The tmpfs mount point (under the test's temp dir).
    pub(crate) dir: PathBuf,
}

impl SmallDisk {
    pub(crate) fn new(env: &TestEnv) -> Option<SmallDisk> {
        let dir = env.root.join("small");
        fs::create_dir(&dir).unwrap();
        let ready = env.root.join("small-ready");
        let script = format!(
            "mount -t tmpfs -o size=1m,mode=0700 tmpfs '{}' || exit 9; \
             echo $$ > '{r}.tmp' && mv '{r}.tmp' '{r}' && exec sleep 600",
            dir.display(),
            r = ready.display()
        );
        let user_ns = !is_root();
        let mut new_root = None;
        let mut c = env.cmd("unshare");
        if user_ns {
            let nr = tempfile::tempdir().unwrap();
            let bin_dir = Path::new(env!("CARGO_BIN_EXE_lease")).parent().unwrap();
            c.args(ns_as_ourselves())
                .args(["sh", "-c", PRIVATE_ROOT, "sh"])
                .arg(nr.path())
                .arg(&env.root)
                .arg(bin_dir)
                .arg(&script);
            new_root = Some(nr);
        } else {
            c.args(["-m", "--propagation", "private", "sh", "-c", &script]);
        }
        c.stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut ns = Bg(Some(c.spawn().unwrap()));
        let start = Instant::now();
        while !ready.exists() {
            if let Some(s) = ns.0.as_mut().unwrap().try_wait().unwrap() {
                let mut why = String::new();
                let _ = std::io::Read::read_to_string(
                    ns.0.as_mut().unwrap().stderr.as_mut().unwrap(),
                    &mut why,
                );
                skip(&format!(
                    "cannot mount a small tmpfs in a namespace here ({s}): {}",
                    why.trim()
                ));
                return None;
            }
            assert!(start.elapsed() < DEADLINE, "the namespace never got ready");
            std::thread::sleep(Duration::from_millis(10));
        }
        let pid = read_pid(&ready);
        Some(SmallDisk {
            _ns: ns,
            _new_root: new_root,
            pid,
            user_ns,
            dir,
        })
    }

    /// The state root on the small filesystem.
    pub(crate) fn state(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// A command run inside the namespace, in the sandbox's root directory
    /// (`in_dir` for another), with the sandbox's environment and
    /// `LEASE_HOME` on the small filesystem.
    pub(crate) fn cmd(&self, env: &TestEnv, program: impl AsRef<std::ffi::OsStr>) -> Command {
        self.cmd_in(env, &env.root, program)
    }

    /// [`SmallDisk::cmd`] with the working directory `dir`.
    pub(crate) fn cmd_in(
        &self,
        env: &TestEnv,
        dir: &Path,
        program: impl AsRef<std::ffi::OsStr>,
    ) -> Command {
        let mut c = env.cmd("nsenter");
        c.arg("-t").arg(self.pid.to_string());
        if self.user_ns {
            // The private root's: `--wdns` changes directory inside it
            // (`--wd` would change it before the chroot, outside the root).
            c.args(["-U", "--preserve-credentials", "-m", "-r"])
                .arg(format!("--wdns={}", dir.display()));
        } else {
            c.arg("-m").arg(format!("--wd={}", dir.display()));
        }
        c.arg("--").arg(program).env("LEASE_HOME", self.state());
        c
    }

    /// `lease` inside the namespace.
    pub(crate) fn lease(&self, env: &TestEnv) -> Command {
        self.cmd(env, env!("CARGO_BIN_EXE_lease"))
    }

    /// `lease` inside the namespace, run in `dir`.
    pub(crate) fn lease_in(&self, env: &TestEnv, dir: &Path) -> Command {
        self.cmd_in(env, dir, env!("CARGO_BIN_EXE_lease"))
    }

    /// Runs `sh -c script` inside the namespace (`$SMALL` is the mount).
    pub(crate) fn sh(&self, env: &TestEnv, script: &str) -> Output {
        within(
            self.cmd(env, "sh")
                .env("SMALL", &self.dir)
                .args(["-c", script]),
        )
    }

    /// Fills the filesystem to its last byte (a file `fill` on it).
    pub(crate) fn fill(&self, env: &TestEnv) {
        let o = self.sh(
            env,
            "dd if=/dev/zero of=\"$SMALL/fill\" bs=4096 2>/dev/null; df -B1 \"$SMALL\" | tail -1",
        );
        let df = stdout(&o);
        let avail: Vec<&str> = df.split_whitespace().collect();
        assert_eq!(avail.get(3), Some(&"0"), "not full: {}", stdout(&o));
    }

    /// Removes the fill: room again.
    pub(crate) fn unfill(&self, env: &TestEnv) {
        assert!(self.sh(env, "rm -f \"$SMALL/fill\"").status.success());
    }

    /// Copies the state root out of the namespace to `env.state`, so the
    /// support oracles can read it after the namespace is gone.
    pub(crate) fn copy_out(&self, env: &TestEnv) {
        let _ = fs::remove_dir_all(&env.state);
        let o = self.sh(
            env,
            &format!("cp -a \"$SMALL/state\" '{}'", env.state.display()),
        );
        assert!(o.status.success(), "{}", stderr(&o));
    }
}

#[test]
fn a_real_enospc_tears_an_audit_line_and_the_next_line_records_the_recovery() {
    let env = TestEnv::new();
    let Some(disk) = SmallDisk::new(&env) else {
        return;
    };
    let repo = env.repo();
    let o = within(
        disk.lease_in(&env, &repo)
            .args(["exec", "--keep", "--", "true"]),
    );
    assert_code(&o, 0);
    let records = disk.state().join("records");
    let id_of = |o: &Output| stdout(o).trim().to_string();
    let o = disk.sh(&env, &format!("cd '{}' && ls *.json", records.display()));
    let id = id_of(&o).trim_end_matches(".json").to_string();
    assert_eq!(id.len(), 32, "{}", stdout(&o));
    let log = disk.state().join("audit.jsonl");
    let size = |disk: &SmallDisk| -> u64 {
        let o = disk.sh(&env, &format!("stat -c %s '{}'", log.display()));
        stdout(&o).trim().parse().unwrap()
    };
    // Make the last page of the log partly used, so a line longer than its
    // slack tears at the page boundary once no page is left.
    while size(&disk) % 4096 == 0 {
        assert_code(
            &within(disk.lease(&env).args(["hold", &id, "--reason", "pad"])),
            0,
        );
    }
    let slack = 4096 - size(&disk) % 4096;
    let reason = "r".repeat((slack as usize + 200).min(4000));
    // The hold's record is written, then lease dies before its audit line:
    // the line is kept in the record for the next change to append.
    let o = within(
        disk.lease(&env)
            .env("LEASE_FI_CRASH", "record-written")
            .args(["hold", &id, "--reason", &reason]),
    );
    assert_eq!(o.status.code(), None, "killed: {}", stderr(&o));
    let before = size(&disk);
    disk.fill(&env);
    // The next change first appends the lost line: the disk is full after
    // `slack` bytes of it.
    let o = within(disk.lease(&env).args(["release", &id]));
    assert_code(&o, 3);
    assert!(stderr(&o).contains("No space left"), "{}", stderr(&o));
    let torn = size(&disk);
    assert!(
        torn > before && torn < before + reason.len() as u64,
        "{before} -> {torn}"
    );
    let o = within(disk.lease(&env).args(["audit", "verify", "--json"]));
    assert_code(&o, 3);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["break"]["kind"], "torn", "{v:#}");
    // Room again: the recovered line starts on a line of its own.
    disk.unfill(&env);
    let o = within(disk.lease(&env).args(["release", &id]));
    assert_code(&o, 0);
    let o = within(disk.lease(&env).args(["audit", "verify", "--json"]));
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["recovered"].as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(v["recovered"][0]["bytes"], torn - before);
    disk.copy_out(&env);
    assert!(audit_chain_ok(&env));
    if let Err(e) = audit_matches_record(&env, &id) {
        panic!("{e}");
    }
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "terminal");
}

#[test]
fn exec_keeps_the_commands_status_when_the_state_root_fills_up() {
    let env = TestEnv::new();
    let Some(disk) = SmallDisk::new(&env) else {
        return;
    };
    let repo = env.repo();
    // The command fills the state root's filesystem, then exits 7.
    let o = within(disk.lease_in(&env, &repo).env("SMALL", &disk.dir).args([
        "exec",
        "--",
        "sh",
        "-c",
        "dd if=/dev/zero of=\"$SMALL/fill\" bs=4096 2>/dev/null; exit 7",
    ]));
    assert_code(&o, 7);
    assert!(
        stderr(&o).contains("could not record its end"),
        "{}",
        stderr(&o)
    );
    disk.unfill(&env);
    let o = within(disk.lease(&env).args(["reap", "--apply", "--json"]));
    assert_code(&o, 0);
    disk.copy_out(&env);
    let rec = env.record();
    assert_eq!(rec["state"], "removed", "{rec:#}");
    assert!(audit_chain_ok(&env));
}

/// Every path under `dir`, with a manifest entry each (for "nothing else
/// changed").
fn state_manifest(env: &TestEnv) -> Manifest {
    manifest(&env.state)
}

/// A `lease reap --json` report (any exit code).
fn reap_json(env: &TestEnv, args: &[&str]) -> (Output, serde_json::Value) {
    let o = within(env.lease().args(["reap", "--json"]).args(args));
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), stderr(&o)));
    (o, v)
}

fn leftover<'a>(v: &'a serde_json::Value, path: &Path) -> Option<&'a serde_json::Value> {
    v["leftovers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["path"] == path.to_str().unwrap())
}

/// The one new record `f` makes, and `f`'s output.
fn new_record(env: &TestEnv, f: impl FnOnce() -> Output) -> (Output, String) {
    let before: Vec<serde_json::Value> = env.records();
    let o = f();
    let made: Vec<String> = env
        .records()
        .into_iter()
        .filter(|r| !before.iter().any(|b| b["id"] == r["id"]))
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(made.len(), 1, "one new record: {}", stderr(&o));
    (o, made.into_iter().next().unwrap())
}

/// A kept record on branch `branch` with one commit of its own, released,
/// then retired with the fault point `point` armed (`LEASE_FI_CRASH`): the
/// retire must die there (no exit status). Returns the record's id.
fn kept_then_killed_retire(env: &TestEnv, repo: &Path, branch: &str, point: &str) -> String {
    let commit = format!("echo {branch} > {branch} && git add {branch} && git commit -qm {branch}");
    let (_, id) = new_record(env, || {
        env.lease()
            .current_dir(repo)
            .args([
                "exec", "--keep", "--branch", branch, "--", "sh", "-c", &commit,
            ])
            .output()
            .unwrap()
    });
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    let o = env
        .lease()
        .env("LEASE_FI_CRASH", point)
        .args(["retire", &id])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), None, "killed: {}", stderr(&o));
    id
}

#[test]
fn the_reconciler_reports_what_killed_commands_left_and_removes_only_its_own() {
    let env = TestEnv::new();
    let repo = env.repo();
    let before_commits = reachable_commits(&env, &repo);
    // (a) exec killed at its third durable write (the record learning its
    // lease): a lease file the record does not name, and the record's
    // temporary file, left behind.
    let (o, a) = new_record(&env, || {
        env.lease()
            .current_dir(&repo)
            .env("LEASE_FI_CRASH_WRITE", "3")
            .args(["exec", "--", "true"])
            .output()
            .unwrap()
    });
    assert_eq!(o.status.code(), None, "killed: {}", stderr(&o));
    let a_lease = env.state.join("leases").join(format!("{a}.lease"));
    assert!(a_lease.is_file() && env.record_of(&a)["lease"].is_null());
    let a_temp: Vec<PathBuf> = fs::read_dir(env.state.join("records"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".tmp-"))
        .collect();
    assert_eq!(a_temp.len(), 1, "{a_temp:?}");
    // (b) a retire killed while git wrote the bundle: its temporary file
    // and the scratch repository it was built in.
    let b = kept_then_killed_retire(&env, &repo, "b", "archive-bundle-created");
    let b_tmp = env.state.join("archives").join(&b).join(".1.bundle.tmp");
    assert!(b_tmp.is_file());
    let scratch: Vec<PathBuf> = fs::read_dir(env.state.join("scratch"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(scratch.len(), 1, "{scratch:?}");
    // (c) a retire killed after the bundle was written, before the record
    // named it: a complete bundle no record names.
    let c = kept_then_killed_retire(&env, &repo, "c", "archive-written");
    let c_bundle = env.state.join("archives").join(&c).join("1.bundle");
    assert!(c_bundle.is_file() && env.record_of(&c)["archive"].is_null());
    // Things that are not lease's leftovers, or not free: never removed.
    // A lease file of no record that a process holds.
    let held_id = "00000000000000000000000000000042";
    let held = env.state.join("leases").join(format!("{held_id}.lease"));
    fs::write(&held, b"").unwrap();
    fs::set_permissions(&held, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let holder = fs::File::open(&held).unwrap();
    holder.lock_shared().unwrap();
    // A name lease does not make, and a symlink where a lease file would be.
    let notes = env.state.join("leases/notes.txt");
    fs::write(&notes, b"mine").unwrap();
    let link_id = "00000000000000000000000000000043";
    let link = env.state.join("leases").join(format!("{link_id}.lease"));
    std::os::unix::fs::symlink(&notes, &link).unwrap();
    // A bundle no record names whose commit exists nowhere else: a bundle
    // of a commit made in a throwaway clone, put into c's archive.
    let clone = env.root.join("throwaway");
    env.git(
        &env.root,
        &[
            "clone",
            "-q",
            repo.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    env.git(
        &clone,
        &["commit", "-q", "--allow-empty", "-m", "only here"],
    );
    let only = env.state.join("archives").join(&c).join("7.bundle");
    env.git(
        &clone,
        &[
            "bundle",
            "create",
            "-q",
            only.to_str().unwrap(),
            "main",
            "^origin/main",
        ],
    );
    fs::remove_dir_all(&clone).unwrap();
    let keep = [(held.clone(), "held"), (only.clone(), "only copy")];

    // The dry run reports each, with bytes, and changes nothing.
    let state_before = state_manifest(&env);
    let (o, v) = reap_json(&env, &[]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_eq!(
        state_manifest(&env),
        state_before,
        "a dry run changes nothing"
    );
    // a's lease file is still claimed by its `planned` record, which the
    // reap would first finish (`would-finish`); --apply then finds it.
    assert!(leftover(&v, &a_lease).is_none(), "{v:#}");
    for (p, kind) in [
        (&a_temp[0], "temp-file"),
        (&b_tmp, "bundle-temp"),
        (&scratch[0], "scratch"),
    ] {
        let l = leftover(&v, p).unwrap_or_else(|| panic!("{} not reported: {v:#}", p.display()));
        assert_eq!(l["kind"], kind, "{l}");
        assert_eq!(l["kept"], serde_json::Value::Null, "{l}");
        assert_eq!(l["removed"], false);
    }
    let l = leftover(&v, &c_bundle).unwrap();
    assert!(l["bytes"].as_u64().unwrap() > 0, "{l}");
    assert_eq!(
        l["kept"],
        serde_json::Value::Null,
        "its commit is on a branch: {l}"
    );
    let l = leftover(&v, &held).unwrap();
    assert!(l["kept"].as_str().unwrap().contains("held"), "{l}");
    let l = leftover(&v, &only).unwrap();
    assert!(
        l["kept"].as_str().unwrap().contains("not in")
            || l["kept"].as_str().unwrap().contains("only copy"),
        "{l}"
    );
    assert!(leftover(&v, &notes).is_none(), "not a name lease makes");
    let l = leftover(&v, &link).unwrap();
    assert!(
        l["kept"].as_str().unwrap().contains("not a regular file"),
        "{l}"
    );
    assert!(v["leftover_bytes"].as_u64().unwrap() > 0);
    let o = within(env.lease().args(["reap"]));
    assert!(
        stdout(&o).contains("would remove leftover unfinished bundle"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("kept leftover lease file"),
        "{}",
        stdout(&o)
    );

    // --apply removes exactly the free ones, and finishes the records.
    let (o, v) = reap_json(&env, &["--apply"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}\n{v:#}",
        stderr(&o)
    );
    for p in [&a_lease, &a_temp[0], &b_tmp, &scratch[0], &c_bundle] {
        assert!(!p.exists(), "{} still there: {v:#}", p.display());
    }
    // b's retire, run again by the reap, rebuilds `.1.bundle.tmp` under
    // its own name and moves it into place; the rest the sweep removed.
    for p in [&a_lease, &a_temp[0], &scratch[0], &c_bundle] {
        let l = leftover(&v, p).unwrap_or_else(|| panic!("{}: {v:#}", p.display()));
        assert_eq!(l["removed"], true, "{l}");
    }
    for (p, why) in &keep {
        assert!(p.exists(), "{why}: {} was removed", p.display());
    }
    assert!(notes.exists() && fs::symlink_metadata(&link).is_ok());
    assert_eq!(env.record_of(&a)["state"], "removed");
    for id in [&b, &c] {
        let r = env.record_of(id);
        assert_eq!(r["state"], "removed", "{r:#}");
        assert!(
            Path::new(r["archive"]["location"].as_str().unwrap()).is_file(),
            "the named bundle stays"
        );
    }
    assert_eq!(
        lost_commits(&env, &repo, &before_commits),
        Vec::<String>::new()
    );
    assert!(audit_chain_ok(&env));
    // Once the holder is gone, that lease file goes too.
    drop(holder);
    let (_, v) = reap_json(&env, &["--apply"]);
    assert!(!held.exists(), "{v:#}");
    assert!(only.exists(), "the only copy of a commit is never removed");
}

/// True while a process of process group `pgid` runs (zombies, which hold
/// no descriptor and no lock, do not count), by `/proc/<pid>/stat`.
fn group_alive(pgid: u32) -> bool {
    fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        f.len() > 2 && f[0] != "Z" && f[0] != "X" && f[2] == pgid.to_string()
    })
}

/// Runs `c` in its own process group within the deadline, then waits for
/// every process left in that group (a SIGKILLed launcher's command, a git
/// child) to end, so the invariants are judged on a quiet scene.
fn run_to_quiet(c: &mut Command) -> Output {
    let (o, pgid) = within_group(c);
    let start = Instant::now();
    while group_alive(pgid) {
        assert!(
            start.elapsed() < DEADLINE,
            "process group {pgid} never ended"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    o
}

/// A fault injected into one run of lease.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// The n-th durable write fails with ENOSPC.
    Enospc(u64),
    /// lease dies of SIGKILL before its n-th durable write.
    Kill(u64),
    /// lease dies of SIGKILL at the named step.
    Step(&'static str),
}

impl Fault {
    fn env(self) -> (&'static str, String) {
        match self {
            Fault::Enospc(n) => ("LEASE_FI_FAIL_WRITE", n.to_string()),
            Fault::Kill(n) => ("LEASE_FI_CRASH_WRITE", n.to_string()),
            Fault::Step(s) => ("LEASE_FI_CRASH", s.to_string()),
        }
    }
}

/// The operations of the fault matrix.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// `lease exec` creating a worktree, its command committing, and the
    /// retire after exit.
    Create,
    /// `lease retire --all` over a worktree with a unique commit and a held one.
    Retire,
    /// `lease restore` of an archive.
    Restore,
    /// `lease reap --apply` over a crashed exec and a terminal record.
    Reap,
}

/// One scene of the matrix: a sandbox, a repository, a held worktree whose
/// untracked file is work (it must survive everything), the commits that
/// must never be lost, and the command of the operation.
struct Scene {
    env: TestEnv,
    repo: PathBuf,
    precious: PathBuf,
    commits: std::collections::BTreeSet<String>,
    made: PathBuf,
    target: Option<String>,
}

impl Scene {
    fn new(op: Op) -> Scene {
        let env = TestEnv::new();
        let repo = env.repo();
        // Held work: a terminal worktree with an untracked file.
        let (_, wt) = env.kept(&repo, "held", "echo mine > precious.txt");
        let precious = wt.join("precious.txt");
        let made = env.file("made");
        let mut target = None;
        match op {
            Op::Create => {}
            Op::Retire => {
                env.kept(&repo, "r", "echo r > r && git add r && git commit -qm r");
            }
            Op::Restore => {
                let (id, _) = archived(&env, &repo, "a");
                target = Some(id);
            }
            Op::Reap => {
                env.kept(&repo, "p", "echo p > p && git add p && git commit -qm p");
                let o = env
                    .lease()
                    .current_dir(&repo)
                    .env("LEASE_FI_CRASH", "exec-active")
                    .args(["exec", "--", "true"])
                    .output()
                    .unwrap();
                assert_eq!(
                    o.status.code(),
                    None,
                    "killed at exec-active: {}",
                    stderr(&o)
                );
            }
        }
        let commits = lost_set(&env, &repo);
        Scene {
            env,
            repo,
            precious,
            commits,
            made,
            target,
        }
    }

    fn command(&self, op: Op) -> Command {
        let mut c = self.env.lease();
        c.current_dir(&self.repo);
        match op {
            Op::Create => {
                let script = format!(
                    "echo w > w && git add w && git commit -qm w && git rev-parse HEAD > '{}'",
                    self.made.display()
                );
                c.args(["exec", "--branch", "w", "--", "sh", "-c", &script]);
            }
            Op::Retire => {
                c.args(["retire", "--all"]);
            }
            Op::Restore => {
                c.args(["restore", self.target.as_deref().unwrap()]);
            }
            Op::Reap => {
                c.args(["reap", "--apply"]);
            }
        }
        c
    }

    /// After a faulted run: the reconciler finishes, and the invariants
    /// hold. `what` names the case in failures.
    fn check(&self, what: &str) {
        let env = &self.env;
        let (o, v) = reap_json(env, &["--apply"]);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{what}: reap --apply exit {:?}: {}\n{v:#}",
            o.status.code(),
            stderr(&o)
        );
        for r in env.records() {
            let state = r["state"].as_str().unwrap();
            assert!(
                matches!(state, "removed" | "retained" | "terminal"),
                "{what}: the reconciler left {} {state}: {r:#}",
                r["id"]
            );
            if let Err(e) = audit_matches_record(env, r["id"].as_str().unwrap()) {
                panic!("{what}: {e}");
            }
        }
        assert!(self.precious.is_file(), "{what}: held work was deleted");
        let mut must = self.commits.clone();
        if let Ok(made) = fs::read_to_string(&self.made) {
            must.insert(made.trim().to_string());
        }
        assert_eq!(
            lost_commits(env, &self.repo, &must),
            Vec::<String>::new(),
            "{what}: commits lost"
        );
        assert!(audit_chain_ok(env), "{what}: audit chain");
        // A second reap finds nothing left to finish or remove.
        let (o, v) = reap_json(env, &[]);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{what}: {v:#}");
        let unfinished: Vec<&serde_json::Value> = v["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| {
                matches!(
                    i["disposition"].as_str(),
                    Some("would-finish" | "would-remove")
                )
            })
            .collect();
        assert!(
            unfinished.is_empty(),
            "{what}: a second reap would still act: {unfinished:#?}"
        );
        let removable: Vec<&serde_json::Value> = v["leftovers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["kept"].is_null())
            .collect();
        assert!(
            removable.is_empty(),
            "{what}: leftovers not cleaned: {removable:#?}"
        );
        // And by looking, not by lease's own report: no temporary file, no
        // scratch repository, no unfinished bundle, and no lease file but
        // those of records that are not removed.
        let live: Vec<String> = env
            .records()
            .iter()
            .filter(|r| r["state"] != "removed")
            .map(|r| format!("{}.lease", r["id"].as_str().unwrap()))
            .collect();
        let mut stray: Vec<PathBuf> = Vec::new();
        let mut stack = vec![env.state.clone()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if p.starts_with(env.state.join("worktrees")) {
                    continue;
                }
                if d == env.state.join("scratch") {
                    stray.push(p);
                    continue;
                }
                if e.file_type().unwrap().is_dir() {
                    stack.push(p);
                    continue;
                }
                let lease_left = d == env.state.join("leases") && !live.contains(&name);
                if name.contains(".tmp") || lease_left {
                    stray.push(p);
                }
            }
        }
        assert!(stray.is_empty(), "{what}: left on disk: {stray:#?}");
    }
}

/// Commits that must survive: every one reachable in the repository now,
/// and every archived tip.
fn lost_set(env: &TestEnv, repo: &Path) -> std::collections::BTreeSet<String> {
    let mut all = reachable_commits(env, repo);
    for r in env.records() {
        if let Some(tip) = r["archive"]["tip"].as_str() {
            all.insert(tip.to_string());
        }
    }
    all
}

/// How many durable writes a fault-free run of `op` makes.
fn writes_of(op: Op) -> u64 {
    let scene = Scene::new(op);
    let count = scene.env.file("writes");
    let o = run_to_quiet(scene.command(op).env("LEASE_FI_WRITES_TO", &count));
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{op:?} fault-free: {}",
        stderr(&o)
    );
    scene.check(&format!("{op:?} fault-free"));
    fs::read_to_string(&count)
        .unwrap_or_else(|_| panic!("{op:?} made no durable write"))
        .trim()
        .parse()
        .unwrap()
}

/// ENOSPC at every durable write, SIGKILL before every durable write and
/// at every named step of `op`: after each, the reconciler finishes, no
/// commit is lost, held work stays, the audit log chains and has one line
/// per event, and no leftover stays behind.
fn fault_matrix(op: Op, steps: &[&'static str]) {
    let total = writes_of(op);
    let mut faults: Vec<Fault> = (1..=total)
        .flat_map(|n| [Fault::Enospc(n), Fault::Kill(n)])
        .collect();
    faults.extend(steps.iter().map(|s| Fault::Step(s)));
    let mut fired = 0;
    for f in faults {
        let scene = Scene::new(op);
        let (k, v) = f.env();
        let o = run_to_quiet(scene.command(op).env(k, &v));
        if o.status.code() != Some(0) {
            fired += 1;
        }
        scene.check(&format!("{op:?} {f:?}"));
    }
    eprintln!(
        "fault matrix {op:?}: {total} durable writes, {} steps; {fired} faults changed the exit status",
        steps.len()
    );
    assert!(fired > 0, "{op:?}: no fault ever changed the outcome");
}

#[test]
fn every_fault_of_exec_creating_a_worktree_leaves_a_state_the_reconciler_finishes() {
    fault_matrix(
        Op::Create,
        &[
            "exec-planned",
            "exec-leased",
            "exec-added",
            "exec-active",
            "exec-ran",
            "retire-locked",
            "archive-bundle-created",
            "archive-written",
            "retire-before-remove",
        ],
    );
}

#[test]
fn every_fault_of_a_retire_leaves_a_state_the_reconciler_finishes() {
    fault_matrix(
        Op::Retire,
        &[
            "retire-locked",
            "archive-bundle-created",
            "archive-written",
            "retire-before-remove",
        ],
    );
}

#[test]
fn every_fault_of_a_restore_leaves_a_state_the_reconciler_finishes() {
    fault_matrix(
        Op::Restore,
        &["restore-fetched", "exec-added", "restore-created"],
    );
}

#[test]
fn every_fault_of_a_reap_leaves_a_state_the_reconciler_finishes() {
    fault_matrix(
        Op::Reap,
        &[
            "reap-locked",
            "retire-locked",
            "archive-bundle-created",
            "archive-written",
            "retire-before-remove",
        ],
    );
}

#[test]
fn a_record_or_orphans_file_over_its_bound_is_corrupt_not_read_without_end() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = kept_record(&env, &repo, "b");
    // Valid JSON, padded past 4 MiB with whitespace.
    let path = env.state.join("records").join(format!("{id}.json"));
    let mut rec = fs::read(&path).unwrap();
    let keep = rec.clone();
    rec.extend(std::iter::repeat_n(b' ', 4 << 20));
    fs::write(&path, &rec).unwrap();
    let o = within(env.lease().args(["list", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["state"], "unreadable", "{v:#}");
    assert!(
        v[0]["problem"]
            .as_str()
            .unwrap()
            .contains("larger than 4194304 bytes"),
        "{v:#}"
    );
    fs::write(&path, &keep).unwrap();
    let o = within(env.lease().args(["list", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["state"], "retained", "positive control: {v:#}");
    // orphans.json past 16 MiB.
    let orphans = env.state.join("orphans.json");
    let mut text = br#"{"schema": 1, "orphans": {}}"#.to_vec();
    text.extend(std::iter::repeat_n(b' ', 16 << 20));
    fs::write(&orphans, &text).unwrap();
    let (o, v) = reap_json(&env, &["--apply"]);
    assert_code(&o, 3);
    assert!(v["errors"].to_string().contains("larger than"), "{v:#}");
    assert_eq!(
        fs::read(&orphans).unwrap().len(),
        text.len(),
        "left as it is"
    );
}

/// A retire killed after the removal wrote the tombstone and before the
/// record moved out of the live directory (`record-shelving`): the removed
/// record is read where it is (`list`, `show`, a new creation's slot
/// choice skips it), a dry-run reap leaves it there, and `reap --apply`
/// moves it to `records/removed/`, unchanged.
#[test]
fn a_removed_record_a_crash_left_live_is_shelved_by_the_reaper() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (_, id) = new_record(&env, || {
        env.lease()
            .current_dir(&repo)
            .args(["exec", "--keep", "--", "true"])
            .output()
            .unwrap()
    });
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    let o = env
        .lease()
        .env("LEASE_FI_CRASH", "record-shelving")
        .args(["retire", &id])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), None, "killed: {}", stderr(&o));
    let live = env.state.join("records").join(format!("{id}.json"));
    let shelved = env
        .state
        .join("records")
        .join("removed")
        .join(format!("{id}.json"));
    assert!(live.exists() && !shelved.exists());
    let bytes = fs::read(&live).unwrap();
    assert_eq!(env.record_of(&id)["state"], "removed");
    let o = env
        .lease()
        .args(["show", &id[..8], "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["state"],
        "removed"
    );
    let o = env
        .lease()
        .args(["reap", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(fs::read(&live).unwrap(), bytes, "a dry run moves nothing");
    assert!(!shelved.exists());
    let o = env
        .lease()
        .args(["reap", "--apply", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(!live.exists(), "shelved: {}", stderr(&o));
    assert_eq!(fs::read(&shelved).unwrap(), bytes, "moved as it was");
    let o = env.lease().args(["list", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(v[0]["id"], id.as_str());
    assert!(audit_chain_ok(&env));
}
