//! The adversarial matrix (groups a to e: lease and lock lifetime, path
//! safety, git data safety, crash and concurrency, bad input; the rows of
//! docs/QUALIFICATION.md name its cases) and
//! its positive controls P1 to P3, one test per case named after its id.
//!
//! Every fixture carries sentinels: repository config that would run a
//! program (fsmonitor, hooks, clean/smudge filters, `diff.external`, pager,
//! `sshCommand`, credential helper, an included file setting fsmonitor) and
//! a canary tree outside every root. Each refusal asserts the exit class and
//! reason, that the worktree and its admin directory are byte-identical,
//! that the record gained one attempt and the audit log one line, that the
//! canary is unchanged, and that no sentinel ran.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::*;

/// A repository with hostile config, a bare remote, and a canary tree.
pub(crate) struct Fx {
    pub(crate) env: TestEnv,
    pub(crate) repo: PathBuf,
    pub(crate) canary: PathBuf,
    canary_before: Manifest,
    pub(crate) log: PathBuf,
}

impl Fx {
    pub(crate) fn new() -> Fx {
        let env = TestEnv::new();
        let repo = env.repo();
        let root = env.root.clone();
        let log = root.join("sentinel.log");
        let script = |name: &str, tail: &str| {
            let p = root.join(name);
            fs::write(
                &p,
                format!(
                    "#!/bin/sh\necho \"{name} $*\" >> '{}'\n{tail}\n",
                    log.display()
                ),
            )
            .unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
            p.to_str().unwrap().to_string()
        };
        let pass = script("filter", "exec cat");
        let fail = script("fsmonitor", "exit 1");
        let tool = script("tool", "exit 0");
        let hooks = root.join("hooks");
        fs::create_dir(&hooks).unwrap();
        for h in [
            "post-checkout",
            "reference-transaction",
            "post-index-change",
            "pre-auto-gc",
            "post-commit",
        ] {
            let p = hooks.join(h);
            fs::write(
                &p,
                format!(
                    "#!/bin/sh\necho \"hook {h}\" >> '{}'\nexit 0\n",
                    log.display()
                ),
            )
            .unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let include = root.join("included.gitconfig");
        fs::write(&include, format!("[core]\n\tfsmonitor = {fail}\n")).unwrap();
        fs::write(
            repo.join(".gitattributes"),
            // README is the file the content cases edit: a changed path
            // under a neutralized filter holds `filter-unverifiable`, not
            // `dirty` (SPEC "Truthful content probes"; c1 checks that too).
            "* filter=evil diff=evil\nREADME -filter\n*.p filter=evilp\n",
        )
        .unwrap();
        env.git(&repo, &["add", ".gitattributes"]);
        env.git(&repo, &["commit", "-qm", "attributes"]);
        env.git(&repo, &["push", "-q", "origin", "main"]);
        for (k, v) in [
            ("core.fsmonitor", fail.as_str()),
            ("core.hooksPath", hooks.to_str().unwrap()),
            ("filter.evil.clean", pass.as_str()),
            ("filter.evil.smudge", pass.as_str()),
            ("filter.evilp.process", tool.as_str()),
            ("diff.external", tool.as_str()),
            ("diff.evil.textconv", tool.as_str()),
            ("core.pager", tool.as_str()),
            ("core.sshCommand", tool.as_str()),
            ("core.askPass", tool.as_str()),
            ("credential.helper", &format!("!{tool}")),
            ("include.path", include.to_str().unwrap()),
        ] {
            env.git(&repo, &["config", k, v]);
        }
        let canary = root.join("canary");
        fs::create_dir_all(canary.join("dir")).unwrap();
        fs::write(canary.join("file"), "canary\n").unwrap();
        fs::write(canary.join("dir/deep"), "deep canary\n").unwrap();
        let canary_before = manifest(&canary);
        Fx {
            env,
            repo,
            canary,
            canary_before,
            log,
        }
    }

    /// Makes a leased worktree, runs `script` in it, and leaves the record
    /// `terminal` (kept, then one empty adopted session), with the sentinel
    /// log cleared: `git worktree add` runs the user's hooks by design.
    pub(crate) fn worktree(&self, script: &str) -> (String, PathBuf) {
        let o = self
            .env
            .lease()
            .current_dir(&self.repo)
            .args(["exec", "--keep", "--", "sh", "-c", script])
            .output()
            .unwrap();
        assert_code(&o, 0);
        let rec = self
            .env
            .records()
            .into_iter()
            .find(|r| r["state"] == "retained")
            .unwrap();
        let id = rec["id"].as_str().unwrap().to_string();
        let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
        let o = self
            .env
            .lease()
            .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
            .output()
            .unwrap();
        assert_code(&o, 0);
        assert_eq!(self.env.record_of(&id)["state"], "terminal");
        let _ = fs::remove_file(&self.log);
        (id, wt)
    }

    pub(crate) fn retire(&self, id: &str) -> Output {
        self.env
            .lease()
            .args(["retire", "--json", id])
            .output()
            .unwrap()
    }

    /// Asserts that retiring `id` holds with `reason` and changes nothing.
    #[track_caller]
    pub(crate) fn refuse(&self, id: &str, reason: &str) {
        let snap = Snapshot::take(&self.env, &self.repo, id);
        let o = self.retire(id);
        assert_code(&o, 1);
        assert!(
            reasons(&o).contains(&reason.to_string()),
            "want {reason}: {}",
            stdout(&o)
        );
        snap.assert_held_unchanged(&self.env, &self.repo, reason);
        self.assert_clean();
    }

    /// Asserts that retiring `id` removes it.
    #[track_caller]
    pub(crate) fn remove(&self, id: &str) -> serde_json::Value {
        let o = self.retire(id);
        assert_code(&o, 0);
        let rec = self.env.record_of(id);
        assert_eq!(rec["state"], "removed");
        assert!(!Path::new(rec["worktree"]["path"].as_str().unwrap()).exists());
        self.assert_clean();
        rec
    }

    /// The universal oracles: canary intact, no sentinel ran.
    #[track_caller]
    pub(crate) fn assert_clean(&self) {
        assert_eq!(
            manifest(&self.canary),
            self.canary_before,
            "a canary outside the root changed"
        );
        let ran = fs::read_to_string(&self.log).unwrap_or_default();
        assert!(ran.is_empty(), "repository-configured programs ran:\n{ran}");
    }
}

// ---- positive controls ----

#[test]
fn p1_clean_pushed_worktree_retires() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("true");
    let rec = fx.remove(&id);
    assert!(rec["archive"].is_null());
    // lease named the branch and its tip is durable: it went too.
    let branch = rec["branch"].as_str().unwrap();
    assert_eq!(rec["tombstone"]["branch"]["deleted"], true, "{rec:#}");
    assert!(
        fx.env
            .cmd("git")
            .current_dir(&fx.repo)
            .args([
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/{branch}")
            ])
            .output()
            .unwrap()
            .stdout
            .is_empty()
    );
}

#[test]
fn p2_detached_head_with_unique_commits_is_archived_and_retires() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("git checkout -q --detach && for i in 1 2 3; do echo $i > f$i && git add f$i && git commit -qm c$i; done");
    let rec = fx.remove(&id);
    assert_eq!(rec["archive"]["commits"], 3);
    let clone = fx.env.root.join("verify-clone");
    fx.env.git(
        &fx.env.root,
        &[
            "clone",
            "-q",
            fx.env.root.join("remote.git").to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let tip = rec["archive"]["tip"].as_str().unwrap();
    fx.env.git(
        &clone,
        &[
            "fetch",
            "-q",
            rec["archive"]["location"].as_str().unwrap(),
            &format!("refs/lease/{id}/head:refs/heads/back"),
        ],
    );
    assert_eq!(fx.env.git(&clone, &["rev-parse", "back"]), tip);
}

#[test]
fn p3_lease_freed_after_its_holder_exits_retires() {
    let fx = Fx::new();
    let ready = fx.env.file("ready");
    let script = daemon_script(&ready);
    let (id, _) = fx.worktree(&script);
    let holder = read_pid(&ready);
    let guard = KillOnDrop(holder);
    fx.refuse(&id, "consumer-alive");
    signal(holder, "KILL");
    wait_until("the holder to exit", || !alive(holder));
    drop(guard);
    fx.remove(&id);
}

// ---- (a) lease and lock lifetime ----

#[test]
fn a1_supervisor_sigkill_child_alive_and_pid_reuse() {
    let fx = Fx::new();
    let (bg, child) = fx.env.spawn_holder(&["--repo", fx.repo.to_str().unwrap()]);
    let _g = KillOnDrop(child);
    let id = fx.env.record()["id"].as_str().unwrap().to_string();
    signal(bg.pid(), "KILL");
    wait_until("the launcher to die", || !alive(bg.pid()));
    let _ = fs::remove_file(&fx.log);
    fx.refuse(&id, "consumer-alive");
    // The recorded launcher pid reused by an unrelated live process (pid 1
    // with another start time): the lock still decides.
    let path = fx.env.state.join("records").join(format!("{id}.json"));
    let mut rec: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    rec["sessions"][0]["pid"] = serde_json::json!(1);
    fs::write(&path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    fx.refuse(&id, "consumer-alive");
    assert!(alive(child));
}

#[test]
fn a2_grandchild_daemonizes_with_the_inherited_fd() {
    let fx = Fx::new();
    let ready = fx.env.file("ready");
    let (id, _) = fx.worktree(&daemon_script(&ready));
    let _g = KillOnDrop(read_pid(&ready));
    assert_eq!(
        fx.env.record_of(&id)["state"],
        "terminal",
        "the exec finished"
    );
    fx.refuse(&id, "consumer-alive");
}

#[test]
fn a3_descendant_closes_the_lease_but_keeps_using_the_tree() {
    let fx = Fx::new();
    let ready = fx.env.file("ready");
    let (id, _) = fx.worktree(&format!(
        "mkdir -p sub && git add -A && setsid sh -c {} </dev/null >/dev/null 2>&1 &",
        sh_quote(Path::new(&format!(
            "eval \"exec $LEASE_FD>&-\"; cd sub && {}; exec sleep 600",
            ready_sh(&ready)
        )))
    ));
    let _g = KillOnDrop(read_pid(&ready));
    fx.refuse(&id, "in-use");
}

#[test]
fn a3_unmanaged_process_with_an_open_file_or_mapping_inside() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    // An open descriptor inside, cwd elsewhere.
    let holder = spawn_opener(&fx.env, &wt.join("README"));
    fx.refuse(&id, "in-use");
    drop(holder);
    // A mapping whose descriptor was closed.
    let ready = fx.env.file("mapped");
    let py = format!(
        "import mmap,os,time\nf=open({:?},'rb')\nm=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ)\nf.close()\n{}\ntime.sleep(600)\n",
        wt.join("README").to_str().unwrap(),
        ready_py(&ready)
    );
    let mut mapper = fx.env.cmd("python3").args(["-c", &py]).spawn().unwrap();
    let _g2 = KillOnDrop(read_pid(&ready));
    fx.refuse(&id, "in-use");
    let _ = mapper.kill();
    let _ = mapper.wait();
    fx.remove(&id);
}

#[test]
fn a4_nested_exec_on_the_same_worktree_neither_deadlocks_nor_converts() {
    let fx = Fx::new();
    let lease = env!("CARGO_BIN_EXE_lease");
    let o = fx
        .env
        .lease()
        .current_dir(&fx.repo)
        .args([
            "exec",
            "--keep",
            "--",
            "sh",
            "-c",
            &format!("'{lease}' exec --adopt \"$LEASE_WORKTREE\" -- true"),
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = fx.env.record();
    assert_eq!(rec["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(rec["state"], "retained");
}

#[test]
fn a5_lease_file_replaced_renamed_or_hardlinked() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("true");
    let lease = fx.env.lease_of(&id);
    let old = fx.env.state.join("leases/old");
    // (ii) renamed away: missing.
    fs::rename(&lease, &old).unwrap();
    fx.refuse(&id, "lease-missing");
    // (iii) another file renamed over it: a new inode.
    fs::write(&lease, "").unwrap();
    fs::set_permissions(&lease, fs::Permissions::from_mode(0o600)).unwrap();
    fx.refuse(&id, "lease-identity");
    // (iv) the original back, hardlinked: two links.
    fs::rename(&old, &lease).unwrap();
    fs::hard_link(&lease, &old).unwrap();
    fx.refuse(&id, "lease-identity");
    // A new session refuses a lease file with two links.
    let wt = fx.env.record_of(&id)["worktree"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let o = fx
        .env
        .lease()
        .args(["exec", "--adopt", &wt, "--", "touch", "ran"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(
        !Path::new(&wt).join("ran").exists(),
        "the command never ran"
    );
    fs::remove_file(&old).unwrap();
    fx.remove(&id);
}

/// A5 inside the lock window (knock-out K4): the lease file is swapped or
/// hardlinked after retire's identity check by name but while it takes
/// `LOCK_EX`; the re-check through the locked descriptor and by name holds.
#[test]
fn a5_lease_file_swapped_while_the_lock_is_taken() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("true");
    let lease = fx.env.lease_of(&id);
    let old = fx.env.state.join("leases/old");
    // (i) renamed away and recreated: the name is a new inode.
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let o = paused_retire(&fx, &id, "retire-locked", || {
        fs::rename(&lease, &old).unwrap();
        fs::write(&lease, "").unwrap();
        fs::set_permissions(&lease, fs::Permissions::from_mode(0o600)).unwrap();
    });
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["lease-identity"]);
    snap.assert_held_unchanged(&fx.env, &fx.repo, "lease-identity");
    fs::rename(&old, &lease).unwrap();
    // (ii) hardlinked: the locked descriptor sees two links.
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let o = paused_retire(&fx, &id, "retire-locked", || {
        fs::hard_link(&lease, &old).unwrap();
    });
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["lease-identity"]);
    snap.assert_held_unchanged(&fx.env, &fx.repo, "lease-identity");
    fs::remove_file(&old).unwrap();
    fx.assert_clean();
    fx.remove(&id);
}

#[test]
fn a6_lease_file_mode_owner_or_type() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("true");
    let lease = fx.env.lease_of(&id);
    for mode in [0o644, 0o666] {
        fs::set_permissions(&lease, fs::Permissions::from_mode(mode)).unwrap();
        fx.refuse(&id, "lease-insecure");
    }
    fs::set_permissions(&lease, fs::Permissions::from_mode(0o600)).unwrap();
    let keep = fx.env.state.join("leases/keep");
    fs::rename(&lease, &keep).unwrap();
    // (iv) a symlink to a canary: never followed, never truncated.
    std::os::unix::fs::symlink(fx.canary.join("file"), &lease).unwrap();
    fx.refuse(&id, "lease-identity");
    fs::remove_file(&lease).unwrap();
    // (v) a FIFO (never blocks) and a directory.
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &lease,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    fx.refuse(&id, "lease-identity");
    fs::remove_file(&lease).unwrap();
    fs::create_dir(&lease).unwrap();
    fx.refuse(&id, "lease-identity");
    fs::remove_dir(&lease).unwrap();
    fs::rename(&keep, &lease).unwrap();
    fx.remove(&id);
}

/// A6 (iii): a lease file owned by another user.
#[test]
fn a6_lease_file_owned_by_another_user() {
    if !root_or_skip("chowns the lease file to uid 65534") {
        return;
    }
    let fx = Fx::new();
    let (id, _) = fx.worktree("true");
    let lease = fx.env.lease_of(&id);
    std::os::unix::fs::chown(&lease, Some(65534), None).unwrap();
    fx.refuse(&id, "lease-insecure");
    std::os::unix::fs::chown(&lease, Some(0), None).unwrap();
    fx.remove(&id);
}

#[test]
fn a7_unsafe_lease_directory() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let leases = fx.env.state.join("leases");
    fs::set_permissions(&leases, fs::Permissions::from_mode(0o777)).unwrap();
    let before = manifest(&wt);
    let o = fx.retire(&id);
    assert_code(&o, 3);
    assert!(stderr(&o).contains("lease-dir-unsafe"), "{}", stderr(&o));
    assert_eq!(manifest(&wt), before);
    fs::set_permissions(&leases, fs::Permissions::from_mode(0o700)).unwrap();
    // Replaced by a symlink to a look-alike: refused, nothing written through it.
    let real = fx.env.state.join("leases.real");
    fs::rename(&leases, &real).unwrap();
    std::os::unix::fs::symlink(&real, &leases).unwrap();
    let o = fx.retire(&id);
    assert_code(&o, 3);
    fx.assert_clean();
    fs::remove_file(&leases).unwrap();
    fs::rename(&real, &leases).unwrap();
    fx.remove(&id);
}

#[test]
fn a8_lock_error_is_never_free() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("true");
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let o = fx
        .env
        .lease()
        .env("LEASE_FI_LOCK_ERROR", "1")
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["lock-unsupported"]);
    snap.assert_held_unchanged(&fx.env, &fx.repo, "lock-unsupported");
}

// ---- (b) path safety ----

#[test]
fn b1_worktree_replaced_by_a_symlink_to_a_clean_copy() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let real = fx.env.root.join("wt.real");
    fs::rename(&wt, &real).unwrap();
    for target in [
        real.clone(),
        fx.canary.clone(),
        PathBuf::from("/"),
        fx.env.root.join("dangling"),
    ] {
        std::os::unix::fs::symlink(&target, &wt).unwrap();
        let before = manifest(&real);
        let o = fx.retire(&id);
        assert_code(&o, 1);
        assert!(
            reasons(&o)
                .iter()
                .any(|r| r == "path-identity" || r == "root-identity"),
            "{}",
            stdout(&o)
        );
        assert_eq!(manifest(&real), before);
        fx.assert_clean();
        fs::remove_file(&wt).unwrap();
    }
    fs::rename(&real, &wt).unwrap();
    fx.remove(&id);
}

#[test]
fn b2_worktree_swapped_for_a_symlink_at_the_last_moment() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let fi = fx.env.file("fi");
    fs::create_dir(&fi).unwrap();
    let bg = {
        let mut c = fx.env.lease();
        c.env("LEASE_FI_PAUSE", "retire-before-remove")
            .env("LEASE_FI_DIR", &fi)
            .args(["retire", "--json", &id])
            .stdout(std::process::Stdio::piped());
        Bg(Some(c.spawn().unwrap()))
    };
    wait_until("the pause point", || {
        fi.join("paused-retire-before-remove").exists()
    });
    let real = fx.env.root.join("wt.real");
    fs::rename(&wt, &real).unwrap();
    std::os::unix::fs::symlink(&fx.canary, &wt).unwrap();
    fs::write(fi.join("resume-retire-before-remove"), "").unwrap();
    let o = bg.wait();
    assert_code(&o, 1);
    assert!(
        reasons(&o).contains(&"path-identity".to_string()),
        "{}",
        stdout(&o)
    );
    fx.assert_clean();
    assert!(real.join("README").exists());
    assert_eq!(
        fx.env.record_of(&id)["state"],
        "terminal",
        "refused and intact: back to terminal"
    );
}

#[test]
fn b3_root_replaced_by_a_symlink_to_a_look_alike() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let root = wt.parent().unwrap().to_path_buf();
    let real = fx.env.root.join("root.real");
    fs::rename(&root, &real).unwrap();
    // A look-alike root with a same-named, clean-looking directory.
    let alike = fx.env.root.join("alike");
    fs::create_dir_all(alike.join(wt.file_name().unwrap())).unwrap();
    fs::write(alike.join(wt.file_name().unwrap()).join("precious"), "x").unwrap();
    std::os::unix::fs::symlink(&alike, &root).unwrap();
    let before = manifest(&alike);
    let o = fx.retire(&id);
    assert_code(&o, 1);
    assert!(
        reasons(&o)
            .iter()
            .any(|r| r == "root-identity" || r == "path-identity"),
        "{}",
        stdout(&o)
    );
    assert_eq!(manifest(&alike), before);
    fs::remove_file(&root).unwrap();
    fs::rename(&real, &root).unwrap();
    fx.remove(&id);
}

#[test]
fn b4_links_pointing_outside_are_unlinked_not_followed() {
    let fx = Fx::new();
    let canary = fx.canary.display().to_string();
    let (id, _) = fx.worktree(&format!(
        "ln -s '{canary}' abs && ln -s ../../.. up && ln -s / slash && ln -s loop loop && ln -s nowhere dangling \
         && ln '{canary}/file' hard && git add -A && git commit -qm links"
    ));
    let rec = fx.remove(&id);
    assert_eq!(rec["archive"]["commits"], 1);
    assert_eq!(
        fs::read_to_string(fx.canary.join("file")).unwrap(),
        "canary\n"
    );
}

#[test]
fn b5_dot_dot_and_non_normal_paths() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let w = wt.to_str().unwrap();
    for bad in [
        format!("{w}/.."),
        format!("{w}/../../etc"),
        format!("{w}/."),
        ".".into(),
        "..".into(),
        w.replacen('/', "//", 2),
    ] {
        let o = fx.env.lease().args(["retire", &bad]).output().unwrap();
        assert_code(&o, 2);
    }
    // A hand-edited record whose path escapes lexically.
    let path = fx.env.state.join("records").join(format!("{id}.json"));
    let mut rec: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let good = rec["worktree"]["path"].clone();
    rec["worktree"]["path"] = serde_json::json!(format!(
        "{w}/../{}",
        wt.file_name().unwrap().to_str().unwrap()
    ));
    fs::write(&path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    let before = manifest(&wt);
    let o = fx.retire(&id);
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["path-escape"]);
    assert_eq!(manifest(&wt), before);
    let mut rec: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    rec["worktree"]["path"] = good;
    fs::write(&path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    fx.remove(&id);
}

#[test]
fn b6_odd_names_decide_like_their_ascii_twins() {
    let fx = Fx::new();
    let (id, wt) =
        fx.worktree("touch -- 'a b' \"$(printf 'new\\nline')\" -rf --force \"$(printf 'x\\377')\"");
    fx.refuse(&id, "untracked");
    let o = fx.retire(&id);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let detail = v["targets"][0]["detail"][0].as_str().unwrap();
    assert!(
        detail.contains("new\nline") && detail.contains("-rf") && detail.contains("base64:"),
        "{detail}"
    );
    for e in fs::read_dir(&wt).unwrap().flatten() {
        let n = e.file_name();
        let b = std::os::unix::ffi::OsStrExt::as_bytes(n.as_os_str()).to_vec();
        if b != b".git" && b != b"README" && b != b".gitignore" && b != b".gitattributes" {
            fs::remove_file(e.path()).unwrap();
        }
    }
    fx.remove(&id);
    // A worktree whose own path holds a newline is refused (SPEC "Bad input
    // and faults": a usage error), and nothing is recorded; one with spaces
    // and a tab is adopted.
    let odd = fx.env.root.join("odd\nwt name");
    fx.env.add_worktree(&fx.repo, "odd", &odd);
    let o = fx
        .env
        .lease()
        .args(["exec", "--adopt", odd.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("newline"), "{}", stderr(&o));
    assert!(fx.env.records().iter().all(|r| r["origin"] != "adopted"));
    let odd = fx.env.root.join("odd\twt name");
    fx.env.add_worktree(&fx.repo, "odd-tab", &odd);
    assert_code(
        &fx.env
            .lease()
            .args(["exec", "--adopt", odd.to_str().unwrap(), "--", "true"])
            .output()
            .unwrap(),
        0,
    );
    let id = fx
        .env
        .records()
        .into_iter()
        .find(|r| r["origin"] == "adopted")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let _ = fs::remove_file(&fx.log);
    fx.remove(&id);
}

/// Runs `script` as root in a private mount namespace ([`in_mount_ns`]).
fn in_mount_ns(fx: &Fx, script: &str) -> Option<Output> {
    crate::support::in_mount_ns(&fx.env, script)
}

#[test]
fn b7_bind_mount_and_tmpfs_inside_the_worktree() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("mkdir -p target tmp && touch target/.keep tmp/.keep && git add -f target/.keep tmp/.keep && git commit -qm dirs");
    let lease = env!("CARGO_BIN_EXE_lease");
    let w = wt.display();
    let c = fx.canary.display();
    for (what, mount) in [
        ("bind", format!("mount --bind '{c}' '{w}/target'")),
        ("tmpfs", format!("mount -t tmpfs none '{w}/tmp'")),
    ] {
        let snap = Snapshot::take(&fx.env, &fx.repo, &id);
        let Some(o) = in_mount_ns(&fx, &format!("{mount} && '{lease}' retire --json {id}")) else {
            return;
        };
        assert_code(&o, 1);
        assert_eq!(reasons(&o), ["mount-inside"], "{what}");
        snap.assert_held_unchanged(&fx.env, &fx.repo, "mount-inside");
        fx.assert_clean();
    }
    fx.remove(&id);
}

#[test]
fn b8_protected_candidates() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let path = fx.env.state.join("records").join(format!("{id}.json"));
    let orig: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let root = wt.parent().unwrap();
    let common = fx.repo.join(".git");
    for (target, reason) in [
        (root.to_path_buf(), "protected-path"),
        (fx.env.state.clone(), "protected-path"),
        (common.clone(), "protected-path"),
        (fx.repo.clone(), "protected-path"),
        (PathBuf::from("/"), "protected-path"),
    ] {
        let mut rec = orig.clone();
        rec["worktree"]["path"] = serde_json::json!(target.to_str().unwrap());
        fs::write(&path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
        let before = manifest(&fx.repo);
        let o = fx.retire(&id);
        assert_code(&o, 1);
        assert_eq!(reasons(&o), [reason], "{}", target.display());
        assert_eq!(manifest(&fx.repo), before);
    }
    fs::write(&path, serde_json::to_vec_pretty(&orig).unwrap()).unwrap();
    fx.remove(&id);
}

// ---- (c) git data safety ----

#[test]
fn c1_uncommitted_changes_in_every_form() {
    for script in [
        "echo changed >> README",
        "echo staged >> README && git add README && git checkout -- README 2>/dev/null; git diff --cached --quiet && exit 1 || true",
        "rm README",
        "chmod +x README",
        "echo n > new && git add -N new",
    ] {
        let fx = Fx::new();
        let (id, _) = fx.worktree(script);
        fx.refuse(&id, "dirty");
    }
    // The same edit of a file under the (neutralized) `evil` filter cannot
    // be judged; a staged one is dirty whatever the filter.
    let fx = Fx::new();
    let (id, _) = fx.worktree("echo changed >> .gitignore");
    fx.refuse(&id, "filter-unverifiable");
    let fx = Fx::new();
    let (id, _) = fx.worktree("echo changed >> .gitignore && git add .gitignore");
    fx.refuse(&id, "dirty");
}

#[test]
fn c2_untracked_files_hidden_by_config_or_environment() {
    let fx = Fx::new();
    let (id, _) = fx.worktree(
        "git config extensions.worktreeConfig true && git config --worktree status.showUntrackedFiles no && echo n > notes.md",
    );
    fx.refuse(&id, "untracked");
    // Through the caller's environment too.
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let o = fx
        .env
        .lease()
        .env("GIT_CONFIG_PARAMETERS", "'status.showUntrackedFiles'='no'")
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "core.excludesFile")
        .env(
            "GIT_CONFIG_VALUE_0",
            fx.env.file("exclude-all").to_str().unwrap(),
        )
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["untracked"]);
    snap.assert_held_unchanged(&fx.env, &fx.repo, "untracked");
    // An excludes file ignoring everything turns it into an ignored file: still held.
    let fx = Fx::new();
    fs::write(fx.env.file("exclude-all"), "*\n").unwrap();
    fx.env.git(
        &fx.repo,
        &[
            "config",
            "core.excludesFile",
            fx.env.file("exclude-all").to_str().unwrap(),
        ],
    );
    let (id, _) = fx.worktree("echo n > notes.md");
    fx.refuse(&id, "ignored");
}

#[test]
fn c3_ignored_files_are_work() {
    let fx = Fx::new();
    let (id, _) =
        fx.worktree("echo S=1 > .env && mkdir -p target/debug && echo bin > target/debug/app");
    fx.refuse(&id, "ignored");
}

#[test]
fn c4_hidden_index_state() {
    for script in [
        "git update-index --skip-worktree README && echo x >> README",
        "git update-index --assume-unchanged README && echo x >> README",
    ] {
        let fx = Fx::new();
        let (id, _) = fx.worktree(script);
        fx.refuse(&id, "hidden-index");
    }
    // A stale fsmonitor-valid bit must not hide an edit either.
    let fx = Fx::new();
    let (id, _) = fx.worktree(
        "git -c core.fsmonitor=false update-index --fsmonitor-valid README && echo x >> README",
    );
    let o = fx.retire(&id);
    assert_code(&o, 1);
    assert!(
        reasons(&o)
            .iter()
            .any(|r| r == "dirty" || r == "hidden-index"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn c5_special_files_and_many_untracked() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("mkfifo pipe");
    fx.refuse(&id, "special-file");
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    // Bound through /proc/self/fd: a path under a long TMPDIR can exceed
    // sun_path's 108 bytes (unix(7)); the socket is still `wt/sock`.
    let dir = fs::File::open(&wt).unwrap();
    let short = format!(
        "/proc/self/fd/{}/sock",
        std::os::fd::AsRawFd::as_raw_fd(&dir)
    );
    let sock = std::os::unix::net::UnixListener::bind(short).unwrap();
    drop(dir);
    assert!(fs::symlink_metadata(wt.join("sock")).is_ok());
    fx.refuse(&id, "special-file");
    drop(sock);
    let fx = Fx::new();
    let (id, _) = fx
        .worktree("mkdir -p many && i=0; while [ $i -lt 3000 ]; do : > many/f$i; i=$((i+1)); done");
    fx.refuse(&id, "untracked");
}

#[test]
fn c6_stash_survives_removal() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("echo wip >> README && echo u > u.txt && git stash push -q -u && git checkout -q --detach && echo d > d && git add d && git commit -qm d && echo more >> README && git stash push -q");
    let before = fx.env.git(&fx.repo, &["stash", "list", "--format=%H"]);
    assert_eq!(before.lines().count(), 2);
    fx.remove(&id);
    assert_eq!(
        fx.env.git(&fx.repo, &["stash", "list", "--format=%H"]),
        before
    );
}

#[test]
fn c7_detached_unique_commits_archive_names_the_exact_oid() {
    let fx = Fx::new();
    let (id, _) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let rec = fx.remove(&id);
    let heads = fx.env.git(
        &fx.repo,
        &[
            "bundle",
            "list-heads",
            rec["archive"]["location"].as_str().unwrap(),
        ],
    );
    assert!(
        heads.contains(&format!(
            "{} refs/lease/{id}/head",
            rec["archive"]["tip"].as_str().unwrap()
        )),
        "{heads}"
    );
    let audit = fx.env.audit();
    let archived = audit
        .iter()
        .position(|l| l["event"] == "archived" && l["id"] == id.as_str())
        .unwrap();
    let removed = audit
        .iter()
        .position(|l| l["to"] == "removed" && l["id"] == id.as_str())
        .unwrap();
    assert!(archived < removed, "archived before removal");
}

#[test]
fn c8_per_worktree_refs_are_archived() {
    let fx = Fx::new();
    let (id, _) = fx.worktree(
        "git checkout -q --detach && echo k > k && git add k && git commit -qm keep && git update-ref refs/worktree/keep HEAD && git checkout -q -",
    );
    let rec = fx.remove(&id);
    let refs = rec["archive"]["refs"].as_object().unwrap();
    assert!(
        refs.keys().any(|k| k.ends_with("/private/worktree/keep")),
        "{refs:?}"
    );
}

#[test]
fn c8_bisect_in_progress_holds() {
    let fx = Fx::new();
    let (id, _) = fx.worktree(
        "echo 1 > b && git add b && git commit -qm b1 && git bisect start HEAD HEAD~1 >/dev/null",
    );
    fx.refuse(&id, "op-in-progress");
}

#[test]
fn c8_reftable_backend_private_refs() {
    let env = TestEnv::new();
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
    let repo = env.root.join("repo");
    let out = env
        .cmd("git")
        .args([
            "init",
            "-q",
            "--ref-format=reftable",
            "-b",
            "main",
            repo.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    if !out.status.success() {
        skip(&format!(
            "this git cannot create reftable repositories: {}",
            stderr(&out).trim()
        ));
        return;
    }
    fs::write(repo.join("README"), "r\n").unwrap();
    env.git(&repo, &["add", "."]);
    env.git(&repo, &["commit", "-qm", "init"]);
    env.git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    env.git(&repo, &["push", "-q", "origin", "main"]);
    env.git(&repo, &["fetch", "-q", "origin"]);
    env.git(&repo, &["remote", "set-head", "origin", "main"]);
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "exec",
            "--",
            "sh",
            "-c",
            "git checkout -q --detach && echo k > k && git add k && git commit -qm keep && git update-ref refs/worktree/keep HEAD && git checkout -q -",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    assert_eq!(rec["state"], "removed", "{rec:#}");
    let refs = rec["archive"]["refs"].as_object().unwrap();
    assert!(
        refs.keys().any(|k| k.ends_with("/private/worktree/keep")),
        "{refs:?}"
    );
}

#[test]
fn c9_no_remote_at_all_archives_what_is_unique_above_the_local_default_branch() {
    let env = TestEnv::new();
    let repo = env.root.join("solo");
    env.git(
        &env.root,
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );
    fs::write(repo.join("README"), "solo\n").unwrap();
    env.git(&repo, &["add", "."]);
    env.git(&repo, &["commit", "-qm", "solo"]);
    let main_tip = env.git(&repo, &["rev-parse", "HEAD"]);
    let work = "echo w > w && git add w && git commit -qm w";
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--", "sh", "-c", work])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    assert_eq!(rec["state"], "removed");
    assert_eq!(
        rec["archive"]["commits"], 1,
        "durable: local: main's commit is the prerequisite, only w is archived"
    );
    assert_eq!(
        rec["archive"]["prerequisites"],
        serde_json::json!([main_tip])
    );
    let empty = env.root.join("empty");
    env.git(&env.root, &["init", "-q", empty.to_str().unwrap()]);
    // The bundle needs the prerequisite: borrow solo's objects, as restore does.
    fs::write(
        empty.join(".git/objects/info/alternates"),
        format!("{}\n", repo.join(".git/objects").display()),
    )
    .unwrap();
    env.git(
        &empty,
        &[
            "fetch",
            "-q",
            rec["archive"]["location"].as_str().unwrap(),
            &format!(
                "refs/lease/{}/head:refs/heads/x",
                rec["id"].as_str().unwrap()
            ),
        ],
    );

    // No default branch at all (HEAD detached, no main or master): nothing
    // is durable, and the bundle is self-contained.
    let bare = env.root.join("nodefault");
    env.git(
        &env.root,
        &["init", "-q", "-b", "dev", bare.to_str().unwrap()],
    );
    fs::write(bare.join("README"), "dev\n").unwrap();
    env.git(&bare, &["add", "."]);
    env.git(&bare, &["commit", "-qm", "dev"]);
    env.git(&bare, &["checkout", "-q", "--detach"]);
    env.git(&bare, &["branch", "-q", "-D", "dev"]);
    let o = env
        .lease()
        .current_dir(&bare)
        .args(["exec", "--", "sh", "-c", work])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env
        .records()
        .into_iter()
        .find(|r| r["repo"].as_str().unwrap().contains("nodefault"))
        .unwrap();
    assert_eq!(rec["state"], "removed");
    assert_eq!(rec["archive"]["commits"], 2, "nothing is durable: {rec:#}");
    assert!(
        rec["archive"]["prerequisites"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn c10_initialized_submodule_holds() {
    let fx = Fx::new();
    let sub = fx.env.root.join("subsrc");
    fx.env.git(
        &fx.env.root,
        &["init", "-q", "-b", "main", sub.to_str().unwrap()],
    );
    fs::write(sub.join("s"), "s\n").unwrap();
    fx.env.git(&sub, &["add", "."]);
    fx.env.git(&sub, &["commit", "-qm", "s"]);
    let (id, _) = fx.worktree(&format!(
        "git -c protocol.file.allow=always submodule -q add '{}' mod && git commit -qm sub && cd mod && echo local > l && git add l && git commit -qm local",
        sub.display()
    ));
    fx.refuse(&id, "submodule");
}

#[test]
fn c11_nested_repositories() {
    for script in [
        "git init -q nested && cd nested && echo n > n && git add n && git -c user.name=n -c user.email=n@n commit -qm n",
        "mkdir -p target && git init -q target/inner && cd target/inner && echo n > n && git add n && git -c user.name=n -c user.email=n@n commit -qm n",
        "mkdir -p deps/x && echo 'gitdir: /nonexistent' > deps/x/.git",
    ] {
        let fx = Fx::new();
        let (id, _) = fx.worktree(script);
        fx.refuse(&id, "nested-repo");
    }
}

#[test]
fn c12_git_locks_and_operations_in_progress() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree(
        "git worktree unlock \"$PWD\" && git worktree lock --reason \"$(printf 'x\\nlocked')\" \"$PWD\"",
    );
    fx.refuse(&id, "git-locked");
    // Locked, then moved away: the admin directory is kept.
    let admin = admin_dir(&fx.repo, &wt);
    let away = fx.env.root.join("away");
    fs::rename(&wt, &away).unwrap();
    let o = fx.retire(&id);
    assert_code(&o, 1);
    assert!(admin.join("locked").exists());
    fs::rename(&away, &wt).unwrap();
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let lock = admin_dir(&fx.repo, &wt).join("index.lock");
    fs::write(&lock, "").unwrap();
    fx.refuse(&id, "op-in-progress");
    fs::remove_file(&lock).unwrap();
    fx.remove(&id);
}

/// Runs a retire paused at `step`, lets `tamper` act, resumes, and returns the output.
fn paused_retire(fx: &Fx, id: &str, step: &str, tamper: impl FnOnce()) -> Output {
    paused_retire_with(fx, &[id], step, tamper)
}

/// [`paused_retire`] of `lease retire --json ARGS...`.
fn paused_retire_with(fx: &Fx, args: &[&str], step: &str, tamper: impl FnOnce()) -> Output {
    let fi = fx.env.file(&format!("fi-{step}"));
    // A fresh directory each time: a second pause at the same step must not
    // see the first one's files.
    let _ = fs::remove_dir_all(&fi);
    fs::create_dir_all(&fi).unwrap();
    let mut c = fx.env.lease();
    c.env("LEASE_FI_PAUSE", step)
        .env("LEASE_FI_DIR", &fi)
        .args(["retire", "--json"])
        .args(args)
        .stdout(std::process::Stdio::piped());
    let bg = Bg(Some(c.spawn().unwrap()));
    wait_until(&format!("pause at {step}"), || {
        fi.join(format!("paused-{step}")).exists()
    });
    tamper();
    fs::write(fi.join(format!("resume-{step}")), "").unwrap();
    bg.wait()
}

fn bundles(fx: &Fx, id: &str) -> Vec<PathBuf> {
    fs::read_dir(fx.env.state.join("archives").join(id))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn c13_tampered_bundle_before_verification() {
    type Tamper = fn(&Path);
    let cases: [(&str, Tamper); 4] = [
        ("truncated", |b| {
            let bytes = fs::read(b).unwrap();
            fs::write(b, &bytes[..bytes.len() / 2]).unwrap();
        }),
        ("bit-flipped", |b| {
            let mut bytes = fs::read(b).unwrap();
            let n = bytes.len();
            bytes[n - 30] ^= 0xff;
            fs::write(b, bytes).unwrap();
        }),
        ("zero-length", |b| fs::write(b, "").unwrap()),
        ("header-swapped", |b| {
            let bytes = fs::read(b).unwrap();
            let text = String::from_utf8_lossy(
                &bytes[..bytes.iter().position(|&c| c == b'\n').unwrap() + 42],
            )
            .to_string();
            let line = text.lines().nth(1).unwrap();
            let flipped: String = line[..40]
                .chars()
                .map(|c| {
                    if c == 'a' {
                        'b'
                    } else if c == 'b' {
                        'a'
                    } else {
                        c
                    }
                })
                .collect();
            let mut out = bytes.clone();
            let at = bytes
                .windows(40)
                .position(|w| w == &line.as_bytes()[..40])
                .unwrap();
            out[at..at + 40].copy_from_slice(flipped.as_bytes());
            fs::write(b, out).unwrap();
        }),
    ];
    for (what, tamper) in cases {
        assert_tampered_bundle_refused(what, |_, _, b| tamper(b));
    }
}

/// Retires a detached worktree holding one unique commit, `tamper`
/// changing its bundle (given the fixture, the worktree and the bundle)
/// after it is written and before it is verified; asserts the retire holds
/// as `archive-unverified` and changed nothing: the tree as it was, no
/// bundle kept, no scratch repository left. Returns the retire's output.
fn assert_tampered_bundle_refused(what: &str, tamper: impl FnOnce(&Fx, &Path, &Path)) -> Output {
    let fx = Fx::new();
    let (id, wt) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let before = manifest(&wt);
    let o = paused_retire(&fx, &id, "archive-written", || {
        let b = bundles(&fx, &id);
        assert_eq!(b.len(), 1);
        tamper(&fx, &wt, &b[0]);
    });
    assert_code(&o, 1);
    assert_eq!(
        reasons(&o),
        ["archive-unverified"],
        "{what}: {}",
        stdout(&o)
    );
    assert_eq!(manifest(&wt), before, "{what}");
    assert!(
        bundles(&fx, &id).is_empty(),
        "{what}: the bad bundle is not kept"
    );
    assert_eq!(
        fs::read_dir(fx.env.state.join("scratch")).unwrap().count(),
        0,
        "{what}: no scratch left"
    );
    fx.assert_clean();
    o
}

/// SPEC gate 6: "a forged pack can hide behind alternates". The bundle
/// keeps its header, which names the archived commit, and its pack holds
/// only that commit's tree. Unbundled with fsck into a scratch repository
/// that borrows the source's objects, it passes every check that reads
/// through the alternates (the commit is in the source, where it would be
/// lost with the worktree's refs); only the look for each tip with the
/// alternates removed finds the commit missing, and the retire holds.
#[test]
fn c13_a_pack_without_the_tip_is_refused_though_the_alternates_have_it() {
    let o = assert_tampered_bundle_refused("pack without the tip", |fx, wt, bundle| {
        let bytes = fs::read(bundle).unwrap();
        let end = bytes.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
        let header = String::from_utf8(bytes[..end].to_vec()).unwrap();
        let tip = header
            .lines()
            .skip(1)
            .find(|l| !l.is_empty() && !l.starts_with(['-', '@']))
            .and_then(|l| l.split(' ').next())
            .unwrap()
            .to_string();
        let tree = fx.env.git(wt, &["rev-parse", &format!("{tip}^{{tree}}")]);
        let mut pack = fx
            .env
            .cmd("git")
            .current_dir(wt)
            .args(["pack-objects", "--stdout", "-q"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut stdin = pack.stdin.take().unwrap();
            writeln!(stdin, "{tree}").unwrap();
        }
        let pack = pack.wait_with_output().unwrap();
        assert!(pack.status.success() && !pack.stdout.is_empty());
        let mut forged = bytes[..end].to_vec();
        forged.extend_from_slice(&pack.stdout);
        fs::write(bundle, forged).unwrap();
    });
    assert!(
        stdout(&o).contains("is not in the bundle's pack"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn c13_bundle_changed_after_verification() {
    let fx = Fx::new();
    let (id, wt) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let before = manifest(&wt);
    let o = paused_retire(&fx, &id, "retire-before-remove", || {
        let b = bundles(&fx, &id);
        let mut bytes = fs::read(&b[0]).unwrap();
        bytes.push(b'x');
        fs::write(&b[0], bytes).unwrap();
    });
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["archive-unverified"]);
    assert_eq!(manifest(&wt), before);
    assert_eq!(fx.env.record_of(&id)["state"], "terminal");
}

/// The same bytes under the same name, but another file: the verified
/// bundle was swapped for a copy (which its writer may change later). The
/// name must still be the verified file (same inode), not only the same
/// content.
#[test]
fn c13_bundle_replaced_by_an_identical_copy_after_verification() {
    let fx = Fx::new();
    let (id, wt) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let before = manifest(&wt);
    let o = paused_retire(&fx, &id, "retire-before-remove", || {
        let b = bundles(&fx, &id);
        let copy = b[0].with_extension("copy");
        fs::copy(&b[0], &copy).unwrap();
        fs::rename(&copy, &b[0]).unwrap();
    });
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["archive-unverified"]);
    assert!(stdout(&o).contains("was replaced"), "{}", stdout(&o));
    assert_eq!(manifest(&wt), before);
    assert_eq!(fx.env.record_of(&id)["state"], "terminal");
}

#[test]
fn c14_archive_directory_bind_mounted_inside_the_tree() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("git checkout -q --detach && mkdir -p keep && echo a > keep/a && git add keep && git commit -qm a");
    let lease = env!("CARGO_BIN_EXE_lease");
    let archives = fx.env.state.join("archives");
    let script = format!(
        "mount --bind '{}' '{}' && '{lease}' retire --json {id}",
        wt.join("keep").display(),
        archives.display()
    );
    // Mounted over a 0755 directory, the archive dir is refused as unsafe.
    let Some(o) = in_mount_ns(&fx, &script) else {
        return;
    };
    assert_code(&o, 3);
    assert!(stderr(&o).contains("lease-dir-unsafe"), "{}", stderr(&o));
    // Private, it passes that check and the (dev, ino) ancestry catches it.
    fs::set_permissions(wt.join("keep"), fs::Permissions::from_mode(0o700)).unwrap();
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let Some(o) = in_mount_ns(&fx, &script) else {
        return;
    };
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["archive-inside-tree"], "{}", stdout(&o));
    snap.assert_held_unchanged(&fx.env, &fx.repo, "archive-inside-tree");
}

/// Arms every program-valued key of docs/sanitized-git.md that the fixture
/// does not already set, in the repository and in its local bare remote
/// (the far side of a local push or fetch reads its own config), with an
/// alternate object store on both sides so `core.alternateRefsCommand` is
/// consulted. Clears the sentinel log.
fn arm_everything(fx: &Fx) {
    let tool = fx.env.root.join("tool").to_str().unwrap().to_string();
    let remote = fx.env.root.join("remote.git");
    let alt = fx.env.root.join("alt.git");
    fx.env.git(
        &fx.env.root,
        &["init", "-q", "--bare", alt.to_str().unwrap()],
    );
    for dir in [fx.repo.join(".git"), remote.clone()] {
        fs::write(
            dir.join("objects/info/alternates"),
            format!("{}\n", alt.join("objects").display()),
        )
        .unwrap();
    }
    let url = remote.to_str().unwrap();
    for (k, v) in [
        ("core.alternateRefsCommand", tool.clone()),
        ("core.editor", tool.clone()),
        ("sequence.editor", tool.clone()),
        ("core.gitProxy", tool.clone()),
        ("gpg.program", tool.clone()),
        ("gpg.ssh.program", tool.clone()),
        ("gpg.x509.program", tool.clone()),
        ("diff.evil.command", tool.clone()),
        ("merge.evil.driver", tool.clone()),
        ("gc.recentObjectsHook", tool.clone()),
        ("remote.origin.receivepack", tool.clone()),
        ("remote.origin.uploadpack", tool.clone()),
        (&format!("credential.{url}.helper"), format!("!{tool}")),
        ("hook.sentinel.command", tool.clone()),
        ("hook.sentinel.event", "reference-transaction".into()),
        ("protocol.ext.allow", "always".into()),
        ("submodule.recurse", "true".into()),
    ] {
        fx.env.git(&fx.repo, &["config", k, &v]);
    }
    let hooks = remote.join("hooks");
    fs::create_dir_all(&hooks).unwrap();
    for h in [
        "pre-receive",
        "update",
        "post-receive",
        "post-update",
        "reference-transaction",
        "push-to-checkout",
        "pre-auto-gc",
    ] {
        fs::write(
            hooks.join(h),
            format!(
                "#!/bin/sh\necho \"far hook {h}\" >> '{}'\n",
                fx.log.display()
            ),
        )
        .unwrap();
        fs::set_permissions(hooks.join(h), fs::Permissions::from_mode(0o755)).unwrap();
    }
    for (k, v) in [
        ("core.alternateRefsCommand", tool.as_str()),
        ("core.fsmonitor", tool.as_str()),
        ("uploadpack.packObjectsHook", tool.as_str()),
        ("receive.autogc", "true"),
        ("gc.auto", "1"),
        ("hook.sentinel.command", tool.as_str()),
        ("hook.sentinel.event", "pre-receive"),
    ] {
        fx.env.git(&remote, &["config", k, v]);
    }
    let _ = fs::remove_file(&fx.log);
}

/// Every lease command that runs git, with every program-valued key of
/// docs/sanitized-git.md armed in the repository and in its local bare
/// remote (whose `receive-pack`/`upload-pack` run here): no sentinel may
/// run, on either side of a push or fetch (knock-outs K1, K43, K44).
#[test]
fn c15_no_repository_configured_program_runs_in_any_command() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("echo w > w && git add w && git commit -qm w");
    let (arch, _) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let (fetched, _) = fx.worktree("true");
    let (reaped, _) = fx.worktree("true");
    let ok = |args: &[&str]| {
        let o = fx.env.lease().args(args).output().unwrap();
        assert!(
            o.status.code().is_some_and(|c| c <= 1),
            "{args:?}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        fx.assert_clean();
        o
    };
    for args in [
        vec!["list"],
        vec!["list", "--json"],
        vec!["show", &id[..8]],
        vec!["retire", "--dry-run", &id],
    ] {
        ok(&args);
    }
    fx.remove(&id);
    // An unrecorded worktree for `lease adopt` (the test's own git runs the
    // repository's hooks here; arm_everything clears the log after).
    let loose = fx.env.root.join("loose");
    fx.env.add_worktree(&fx.repo, "loose", &loose);
    arm_everything(&fx);
    let short = &arch[..8];
    let loose = loose.to_str().unwrap();
    for args in [
        vec!["list", "--json"],
        vec!["show", short],
        vec!["retire", "--dry-run", "--archive", "remote", &arch],
        vec!["retire", "--dry-run", "--fetch", &fetched],
        vec!["retire", "--archive", "remote", "--json", &arch],
        vec!["archives"],
        vec!["archive", "verify", short],
        vec!["restore", short],
        vec!["retire", "--fetch", "--json", &fetched],
        vec!["hold", &reaped[..8], "--reason", "r"],
        vec!["release", &reaped[..8]],
        vec!["reap"],
        vec!["reap", "--apply"],
        vec!["archive", "drop", short, "--unreachable-ok"],
        vec!["metrics"],
        vec!["repair", "--dry-run", loose],
        vec!["repair", loose],
        vec!["adopt", loose],
        vec!["exec", "--adopt", loose, "--", "true"],
        vec!["retire", "--json", loose],
    ] {
        ok(&args);
    }
    for id in [&arch, &fetched, &reaped] {
        assert_eq!(fx.env.record_of(id)["state"], "removed", "{id}");
    }
    let remote = fx.env.root.join("remote.git");
    assert_eq!(
        fx.env.git(&remote, &["for-each-ref", "refs/lease/"]),
        "",
        "the archival ref was pushed, read back and dropped"
    );
}

#[test]
fn c15_repository_owned_by_another_user_is_unsafe() {
    if !root_or_skip("chowns the repository to uid 65534") {
        return;
    }
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let git_dir = fx.repo.join(".git");
    std::os::unix::fs::chown(&git_dir, Some(65534), None).unwrap();
    let before = manifest(&wt);
    let o = fx.retire(&id);
    std::os::unix::fs::chown(&git_dir, Some(0), None).unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["unsafe-repo"], "{}", stdout(&o));
    assert_eq!(manifest(&wt), before);
}

// ---- (d) crash and concurrency ----

#[test]
fn d1_crash_before_removal_leaves_a_recoverable_state() {
    let fx = Fx::new();
    let (id, wt) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let o = fx
        .env
        .lease()
        .env("LEASE_FI_CRASH", "retire-before-remove")
        .args(["retire", &id])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), None, "killed by the crash point");
    let rec = fx.env.record_of(&id);
    assert_eq!(rec["state"], "retiring");
    assert!(wt.join("a").exists(), "nothing deleted");
    let bundle = rec["archive"]["location"].as_str().unwrap();
    fx.env.git(&fx.repo, &["bundle", "verify", "-q", bundle]);
    // The kernel released the lock with the crashed process.
    let lease = fx.env.lease_of(&id);
    assert_code(
        &fx.env
            .cmd("flock")
            .args(["--nonblock", "--exclusive", lease.to_str().unwrap(), "true"])
            .output()
            .unwrap(),
        0,
    );
    // A crash right after archiving, before verification: nothing claims more.
    let fx = Fx::new();
    let (id, wt) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let o = fx
        .env
        .lease()
        .env("LEASE_FI_CRASH", "archive-written")
        .args(["retire", &id])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), None);
    let rec = fx.env.record_of(&id);
    assert_eq!(rec["state"], "terminal");
    assert!(
        rec["archive"].is_null(),
        "no archive recorded before verification"
    );
    assert!(wt.join("a").exists());
    fx.remove(&id);
}

#[test]
fn d2_two_retirers_one_proceeds() {
    let fx = Fx::new();
    let (id, _) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let o = paused_retire(&fx, &id, "retire-locked", || {
        let b = fx.retire(&id);
        assert_code(&b, 1);
        assert_eq!(
            reasons(&b),
            ["retire-in-progress"],
            "the second retirer is refused at once"
        );
    });
    assert_code(&o, 0);
    assert_eq!(fx.env.record_of(&id)["state"], "removed");
    assert_eq!(bundles(&fx, &id).len(), 1, "one bundle");
}

#[test]
fn d3_adopt_during_retire_never_runs_in_a_retiring_tree() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let w = wt.to_str().unwrap().to_string();
    let o = paused_retire(&fx, &id, "retire-locked", || {
        let a = fx
            .env
            .lease()
            .args(["exec", "--adopt", &w, "--", "touch", "sentinel"])
            .output()
            .unwrap();
        assert_code(&a, 125);
        assert!(stderr(&a).contains("retire-in-progress"), "{}", stderr(&a));
    });
    assert_code(&o, 0);
    assert!(!wt.exists());
    // An adopt of the removed worktree cannot recreate it.
    let a = fx
        .env
        .lease()
        .args(["exec", "--adopt", &w, "--", "true"])
        .output()
        .unwrap();
    assert_code(&a, 125);
    assert!(!wt.exists());
}

/// D3 (iv) (knock-out K16): retire died after recording `retiring`, so the
/// lease is free again. An adopt takes `LOCK_SH` at once, then re-checks the
/// record's state under its lock and refuses: the command never runs in a
/// tree that is being retired.
#[test]
fn d3_adopt_of_a_retiring_record_whose_retirer_crashed_is_refused() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let o = fx
        .env
        .lease()
        .env("LEASE_FI_CRASH", "retire-before-remove")
        .args(["retire", &id])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), None, "killed: {}", stderr(&o));
    assert_eq!(fx.env.record_of(&id)["state"], "retiring");
    let before = fx.env.record_of(&id);
    let a = fx
        .env
        .lease()
        .args([
            "exec",
            "--adopt",
            wt.to_str().unwrap(),
            "--",
            "touch",
            "sentinel",
        ])
        .output()
        .unwrap();
    assert_code(&a, 125);
    assert!(stderr(&a).contains("retire-in-progress"), "{}", stderr(&a));
    assert!(!wt.join("sentinel").exists(), "the command never ran");
    assert_eq!(fx.env.record_of(&id), before, "the record is unchanged");
    fx.assert_clean();
}

#[test]
fn d4_truncated_records_are_reported_never_changed() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("true");
    let path = fx.env.state.join("records").join(format!("{id}.json"));
    let full = fs::read(&path).unwrap();
    for cut in (0..full.len()).step_by(37) {
        fs::write(&path, &full[..cut]).unwrap();
        let o = fx.env.lease().args(["list", "--json"]).output().unwrap();
        assert_code(&o, 0);
        assert!(stdout(&o).contains("unreadable"), "cut at {cut}");
        let o = fx.retire(&id);
        assert_code(&o, 3);
        assert_eq!(
            fs::read(&path).unwrap(),
            &full[..cut],
            "cut at {cut}: never rewritten"
        );
    }
    fs::write(&path, &full).unwrap();
    fx.remove(&id);
}

#[test]
fn d6_durability_order_of_a_retire() {
    if fx_strace_missing() {
        return;
    }
    let fx = Fx::new();
    let (id, _) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let trace = fx.env.file("trace");
    let o = fx
        .env
        .cmd("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=fsync,rename,renameat,renameat2,unlink,unlinkat",
            "-o",
            trace.to_str().unwrap(),
        ])
        .arg(env!("CARGO_BIN_EXE_lease"))
        .args(["retire", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let t = fs::read_to_string(&trace).unwrap();
    let pos = |needle: &str| {
        t.find(needle)
            .unwrap_or_else(|| panic!("{needle} not in trace:\n{t}"))
    };
    let bundle_rename = pos(".1.bundle.tmp");
    let retiring_write = t[bundle_rename..]
        .find(&format!("{id}.json"))
        .map(|p| p + bundle_rename)
        .unwrap();
    let lease_unlink = pos(&format!("{id}.lease"));
    assert!(
        bundle_rename < retiring_write && retiring_write < lease_unlink,
        "bundle, then retiring, then the lease:\n{t}"
    );
}

/// D6, directory durability (knock-out K12): every rename of a record into
/// place is followed, in the same process and before its next rename, by an
/// fsync of the records directory; otherwise a crash can lose the rename.
#[test]
fn d6_every_record_rename_is_followed_by_a_directory_fsync() {
    if fx_strace_missing() {
        return;
    }
    let fx = Fx::new();
    let (id, _) = fx.worktree("true");
    let trace = fx.env.file("trace");
    let o = fx
        .env
        .cmd("strace")
        .args([
            "-f",
            "-qq",
            "-y",
            "-e",
            "trace=fsync,rename,renameat,renameat2",
            "-o",
            trace.to_str().unwrap(),
        ])
        .arg(env!("CARGO_BIN_EXE_lease"))
        .args(["retire", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let t = fs::read_to_string(&trace).unwrap();
    let records = fx.env.state.join("records");
    let dir_fsync = format!("<{}>", records.display());
    // A rename that puts the record file in place: its destination (the
    // second path) is `records/<id>.json`. The removal's last step moves
    // that file to `records/removed/` (a rename whose loss leaves the
    // fsynced tombstone where it was), which needs no fsync.
    let target = format!(", \"{}\"", records.join(format!("{id}.json")).display());
    let shelved = format!(
        "\"{}\", \"{}\"",
        records.join(format!("{id}.json")).display(),
        records.join("removed").join(format!("{id}.json")).display()
    );
    assert!(t.contains(&shelved), "the removed record is shelved:\n{t}");
    let lines: Vec<&str> = t.lines().collect();
    let mut renames = 0;
    for (i, line) in lines.iter().enumerate() {
        if !(line.contains("rename") && line.contains(&target)) {
            continue;
        }
        renames += 1;
        let pid = line.split_whitespace().next().unwrap();
        let synced = lines[i + 1..]
            .iter()
            .filter(|l| l.split_whitespace().next() == Some(pid))
            .take_while(|l| !l.contains("rename"))
            .any(|l| l.contains("fsync(") && l.contains(&dir_fsync));
        assert!(synced, "no directory fsync after `{line}`:\n{t}");
    }
    assert!(
        renames >= 2,
        "a retire writes its record at least twice:\n{t}"
    );
}

fn fx_strace_missing() -> bool {
    let ok = std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success()); // forbid: allow (probe)
    if !ok {
        skip("strace is not installed");
    }
    !ok
}

#[test]
fn d7_age_and_dead_pids_prove_nothing() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("echo keep > keep.txt");
    // Years-old mtimes and a dead recorded launcher do not make it eligible.
    fx.env
        .cmd("touch")
        .args(["-d", "2001-01-01", wt.join("keep.txt").to_str().unwrap()])
        .output()
        .unwrap();
    fx.refuse(&id, "untracked");
    let state_before = manifest(&fx.env.state);
    let o = fx
        .env
        .lease()
        .args(["retire", "--dry-run", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(
        manifest(&fx.env.state),
        state_before,
        "a dry run writes nothing"
    );
    fx.assert_clean();
}

// ---- (e) bad input ----

#[test]
fn e1_unknown_ambiguous_and_malformed_ids() {
    let fx = Fx::new();
    let recs = fx.env.state.join("records");
    std::os::unix::fs::DirBuilderExt::mode(fs::DirBuilder::new().recursive(true), 0o700)
        .create(&recs)
        .unwrap();
    fs::write(recs.join("abcdef0011111111111111111111111a.json"), "{}").unwrap();
    fs::write(recs.join("abcdef0022222222222222222222222b.json"), "{}").unwrap();
    for bad in [
        "nope",
        "abcdef00",
        "abcdef0011111111 ",
        "",
        &"a".repeat(5000),
    ] {
        let o = fx.env.lease().args(["retire", bad]).output().unwrap();
        assert_code(&o, 2);
    }
    let o = fx
        .env
        .lease()
        .args(["retire", "abcdef00"])
        .output()
        .unwrap();
    assert!(stderr(&o).contains("ambiguous"), "{}", stderr(&o));
}

#[test]
fn e2_relative_paths_resolve_physically_and_cwd_inside_holds() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let link = fx.env.root.join("via-link");
    std::os::unix::fs::symlink(wt.parent().unwrap(), &link).unwrap();
    // From a cwd reached through a symlink, a relative name still finds it.
    let o = fx
        .env
        .lease()
        .current_dir(&link)
        .args([
            "retire",
            "--dry-run",
            "--json",
            wt.file_name().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let o = fx
        .env
        .lease()
        .current_dir(wt.join("."))
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["cwd-inside-target"]);
    fx.remove(&id);
}

#[test]
fn e3_repository_moved_away() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let moved = fx.env.root.join("repo-moved");
    fs::rename(&fx.repo, &moved).unwrap();
    let before = manifest(&wt);
    let o = fx.retire(&id);
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["repo-missing"]);
    assert_eq!(manifest(&wt), before);
    fs::rename(&moved, &fx.repo).unwrap();
}

#[test]
fn e4_not_a_linked_worktree_any_more() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let dotgit = wt.join(".git");
    let link = fs::read(&dotgit).unwrap();
    fs::write(&dotgit, "gitdir: /nonexistent\n").unwrap();
    let o = fx.retire(&id);
    assert_code(&o, 1);
    assert!(
        reasons(&o)
            .iter()
            .any(|r| r == "path-identity" || r == "git-failed"),
        "{}",
        stdout(&o)
    );
    fs::remove_file(&dotgit).unwrap();
    fs::create_dir(&dotgit).unwrap();
    let o = fx.retire(&id);
    assert_code(&o, 1);
    fs::remove_dir(&dotgit).unwrap();
    fs::write(&dotgit, link).unwrap();
    fx.remove(&id);
}

#[test]
fn e5_argv_edge_cases() {
    let fx = Fx::new();
    let run = |args: &[&str]| {
        fx.env
            .lease()
            .current_dir(&fx.repo)
            .args(args)
            .output()
            .unwrap()
    };
    // Not executable in format (ENOEXEC) and not executable at all: 126.
    let junk = fx.env.file("junk");
    fs::write(&junk, [0u8, 1, 2, 3]).unwrap();
    fs::set_permissions(&junk, fs::Permissions::from_mode(0o755)).unwrap();
    assert_code(&run(&["exec", "--", junk.to_str().unwrap()]), 126);
    // E2BIG (126) cannot be reached from outside: the command's argv is
    // lease's own argv, so the caller's execve of lease fails first.
    assert_code(&run(&["exec", "--"]), 125);
    let out = fx.env.file("argv");
    let o = run(&[
        "exec",
        "--",
        "sh",
        "-c",
        &format!("printf '%s|' \"$@\" > {}", out.display()),
        "sh",
        "--force",
        "-rf",
        "--",
    ]);
    assert_code(&o, 0);
    assert_eq!(fs::read_to_string(&out).unwrap(), "--force|-rf|--|");
    for r in fx.env.records() {
        assert_ne!(r["state"], "active", "no record claims a running command");
    }
}

#[test]
fn e6_non_utf8_arguments_and_names() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fx::new();
    let out = fx.env.file("bytes");
    let arg = std::ffi::OsStr::from_bytes(b"\xff\xfe-raw");
    let o = fx
        .env
        .lease()
        .current_dir(&fx.repo)
        .args([
            "exec",
            "--",
            "sh",
            "-c",
            &format!("printf '%s' \"$1\" > {}", out.display()),
            "sh",
        ])
        .arg(arg)
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(fs::read(&out).unwrap(), b"\xff\xfe-raw");
    // A worktree path that is not UTF-8 is refused at registration.
    let odd = fx.env.root.join(std::ffi::OsStr::from_bytes(b"wt-\xff"));
    let o = fx
        .env
        .cmd("git")
        .current_dir(&fx.repo)
        .args(["worktree", "add", "-q", "-b", "odd"])
        .arg(&odd)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let o = fx
        .env
        .lease()
        .arg("exec")
        .arg("--adopt")
        .arg(&odd)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("not UTF-8"), "{}", stderr(&o));
}

#[test]
fn e7_hostile_environment_changes_nothing() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("echo n > notes.md");
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let fake = fx.env.file("fakebin");
    fs::create_dir(&fake).unwrap();
    let o = fx
        .env
        .lease()
        .env("GIT_DIR", "/nonexistent")
        .env("GIT_WORK_TREE", "/")
        .env("GIT_INDEX_FILE", "/nonexistent/index")
        .env("GIT_CONFIG_PARAMETERS", "'status.showUntrackedFiles'='no'")
        .env("GIT_CEILING_DIRECTORIES", "/")
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["untracked"]);
    snap.assert_held_unchanged(&fx.env, &fx.repo, "untracked");
    // A fake git first on PATH that prints nothing and exits 0 is not trusted.
    let fake_git = fake.join("git");
    fs::write(&fake_git, "#!/bin/sh\nexit 0\n").unwrap();
    fs::set_permissions(&fake_git, fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
    let o = fx
        .env
        .lease()
        .env("PATH", &path)
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert!(
        o.status.code().is_some_and(|c| c == 1 || c == 3),
        "never OK: {}",
        stderr(&o)
    );
    assert!(fx.env.record_of(&id)["state"] == "terminal");
    // No git at all.
    let o = fx
        .env
        .lease()
        .env("PATH", fake.to_str().unwrap())
        .env("LEASE_GIT", "/nonexistent/git")
        .args(["retire", &id])
        .output()
        .unwrap();
    assert!(o.status.code().is_some_and(|c| c != 0));
    // umask 000 still yields a 0600 lease file.
    let lease = env!("CARGO_BIN_EXE_lease");
    let o = fx
        .env
        .cmd("sh")
        .current_dir(&fx.repo)
        .args(["-c", &format!("umask 000; '{lease}' exec --keep -- true")])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let newest = fx
        .env
        .records()
        .into_iter()
        .rfind(|r| r["state"] == "retained")
        .unwrap();
    let mode = fs::metadata(newest["lease"]["path"].as_str().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // A closed stdout never turns a hold into success.
    let o = fx
        .env
        .cmd("sh")
        .args(["-c", &format!("'{lease}' retire {id} >&-")])
        .output()
        .unwrap();
    assert_code(&o, 1);
}

// ---- regressions from review: repo-local config that hid work ----

#[test]
fn c2_core_worktree_in_config_worktree_cannot_point_probes_at_a_decoy() {
    let fx = Fx::new();
    let (id, _) = fx.worktree(
        "mkdir build && echo precious > build/results.db && git config extensions.worktreeConfig true \
         && git worktree add -q --detach ../../decoy HEAD && git config --worktree core.worktree \"$(cd ../../decoy && pwd)\"",
    );
    fx.refuse(&id, "untracked");
}

#[test]
fn c1_same_size_edit_with_restored_mtime_under_trustctime_false() {
    let fx = Fx::new();
    let (id, _) = fx.worktree(
        "git config core.trustctime false && git config core.checkStat minimal && touch -d 2020-01-01 README \
         && git update-index --refresh -q && sleep 1.1 && printf 'HELLO\\n' > README && touch -d 2020-01-01 README",
    );
    // The one sleep in the suite ages a ctime (git compares it to the
    // second); it waits for no process.
    fx.refuse(&id, "dirty");
}

#[test]
fn c11_case_variants_of_dot_git_under_ignore_case() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("git config core.ignoreCase true && echo precious > .GIT && mkdir -p docs/.Git && echo x > docs/.Git/notes");
    let o = fx.retire(&id);
    assert_code(&o, 1);
    let r = reasons(&o);
    assert!(
        r.contains(&"untracked".to_string()) || r.contains(&"nested-repo".to_string()),
        "{r:?}"
    );
    fx.assert_clean();
}

#[test]
fn c9_symbolic_origin_head_to_a_private_ref_proves_nothing() {
    let fx = Fx::new();
    let (id, _) = fx.worktree(
        "git checkout -q --detach && echo d > d.txt && git add d.txt && git commit -qm precious \
         && git update-ref refs/worktree/wip HEAD && git symbolic-ref refs/remotes/origin/HEAD refs/worktree/wip",
    );
    let rec = fx.remove(&id);
    assert!(
        rec["archive"]["commits"].as_u64().unwrap() >= 1,
        "the commit is archived: {rec:#}"
    );
    let tip = rec["archive"]["tip"].as_str().unwrap();
    assert_eq!(
        fx.env.git(&fx.repo, &["log", "-1", "--format=%s", tip]),
        "precious"
    );
}

#[test]
fn c8_commit_kept_only_by_orig_head_is_archived() {
    let fx = Fx::new();
    let (id, _) = fx.worktree(
        "git checkout -q --detach && echo d > d.txt && git add d.txt && git commit -qm precious \
         && git reflog expire --expire=now --all && git reset -q --hard HEAD~1",
    );
    let rec = fx.remove(&id);
    let refs = rec["archive"]["refs"].as_object().unwrap();
    assert!(refs.keys().any(|k| k.ends_with("/orig-head")), "{refs:?}");
}

#[test]
fn c15_show_signature_cannot_run_gpg_program() {
    let fx = Fx::new();
    let tool = fx.env.root.join("tool");
    let (id, _) = fx.worktree(&format!(
        "tree=$(git rev-parse 'HEAD^{{tree}}') && parent=$(git rev-parse HEAD) \
         && c=$(printf 'tree %s\\nparent %s\\nauthor A <a@a> 1 +0000\\ncommitter A <a@a> 1 +0000\\ngpgsig -----BEGIN PGP SIGNATURE-----\\n \\n -----END PGP SIGNATURE-----\\n\\nsigned\\n' $tree $parent | git hash-object -w -t commit --stdin) \
         && git reset -q --hard $c && git config log.showSignature true && git config gpg.program '{}'",
        tool.display()
    ));
    let o = fx
        .env
        .lease()
        .args(["retire", "--dry-run", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    fx.assert_clean();
    fx.remove(&id);
}

// ---- cases that only mean something for an ordinary user ----

/// A whole scenario run as uid 65534 (`setpriv`) in a directory it owns,
/// when we are root; as an ordinary user, run as ourselves.
struct AsUser {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    drop: bool,
}

impl AsUser {
    fn new() -> AsUser {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let drop = rustix::process::geteuid().is_root();
        if drop {
            std::os::unix::fs::chown(&base, Some(65534), Some(65534)).unwrap();
        }
        AsUser {
            _tmp: tmp,
            base,
            drop,
        }
    }

    /// Runs a shell script as the user, with a hermetic git and lease setup.
    fn sh(&self, script: &str) -> Output {
        let lease = env!("CARGO_BIN_EXE_lease");
        let b = self.base.display();
        let prelude = format!(
            "export HOME='{b}' LEASE_HOME='{b}/state' LEASE_MIN_FREE=1M LEASE_ALLOW_TEMP_ROOT=1 GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 \
             GIT_AUTHOR_NAME=T GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=T GIT_COMMITTER_EMAIL=t@t L='{lease}'; cd '{b}'; "
        );
        let mut c = if self.drop {
            let mut c = std::process::Command::new("setpriv"); // forbid: allow (drops privileges, runs no git itself)
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                "sh",
                "-c",
            ]);
            c
        } else {
            let mut c = std::process::Command::new("sh"); // forbid: allow (test shell)
            c.arg("-c");
            c
        };
        c.arg(format!("{prelude}{script}"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap())
            .output()
            .unwrap()
    }

    /// A repository with a bare remote and one leased, terminal worktree in
    /// which `script` ran; returns the worktree path and id.
    fn worktree(&self, script: &str) -> (String, String) {
        let o = self.sh(&format!(
            "git init -q --bare -b main remote.git && git init -q -b main repo && cd repo && echo hi > README \
             && git add . && git commit -qm i && git remote add origin ../remote.git && git push -q origin main \
             && git fetch -q origin && git remote set-head origin main \
             && \"$L\" exec --keep -- sh -c '{script}' && W=$(\"$L\" list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0][\"worktree\"][\"path\"])') \
             && \"$L\" exec --adopt \"$W\" -- true && echo \"$W\" && \"$L\" list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0][\"id\"])'"
        ));
        assert_code(&o, 0);
        let text = stdout(&o);
        let mut lines = text.lines().rev();
        let id = lines.next().unwrap().to_string();
        let wt = lines.next().unwrap().to_string();
        (wt, id)
    }
}

#[test]
fn c5_unreadable_directory_is_uninventoriable_for_an_ordinary_user() {
    let u = AsUser::new();
    let (wt, id) = u.worktree("mkdir -p secret && echo s > secret/s && chmod 000 secret");
    let before = u.sh(&format!("ls -laR '{wt}' 2>&1"));
    let o = u.sh(&format!("\"$L\" retire --json {id}"));
    assert_code(&o, 1);
    assert!(
        reasons(&o).contains(&"uninventoriable".to_string()),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    assert_eq!(
        stdout(&u.sh(&format!("ls -laR '{wt}' 2>&1"))),
        stdout(&before),
        "nothing changed"
    );
    u.sh(&format!("chmod 755 '{wt}/secret' && rm -r '{wt}/secret'"));
    assert_code(&u.sh(&format!("\"$L\" retire {id}")), 0);
}

#[test]
fn c5_directory_lease_cannot_delete_from_is_not_writable() {
    let u = AsUser::new();
    let (wt, id) = u.worktree(
        "mkdir -p ro && echo r > ro/r && git add ro && git commit -qm ro && chmod 555 ro",
    );
    let o = u.sh(&format!("\"$L\" retire --json {id}"));
    assert_code(&o, 1);
    assert_eq!(
        reasons(&o),
        ["not-writable"],
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    assert!(
        Path::new(&wt).join("ro/r").exists(),
        "git was not allowed to half-delete it"
    );
    u.sh(&format!("chmod 755 '{wt}/ro'"));
    assert_code(&u.sh(&format!("\"$L\" retire {id}")), 0);
    assert!(!Path::new(&wt).exists());
}

#[test]
fn c3_declared_rebuildable_output_is_deleted_by_lease_and_nothing_else() {
    let fx = Fx::new();
    let canary = fx.canary.display().to_string();
    let (id, wt) = fx.worktree(&format!(
        "mkdir -p target/debug && echo bin > target/debug/app && ln -s '{canary}' target/escape && echo S=1 > .env"
    ));
    // Declared output no longer holds, but other ignored files still do.
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let o = fx
        .env
        .lease()
        .args(["retire", "--json", "--rebuildable", "target", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["ignored"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let detail = v["targets"][0]["detail"][0].as_str().unwrap();
    assert!(
        detail.contains(".env") && !detail.contains("target"),
        "{detail}"
    );
    snap.assert_held_unchanged(&fx.env, &fx.repo, "ignored");
    fs::remove_file(wt.join(".env")).unwrap();
    for bad in ["/abs", "../up", "target/../x"] {
        assert_code(
            &fx.env
                .lease()
                .args(["retire", "--rebuildable", bad, &id])
                .output()
                .unwrap(),
            2,
        );
    }
    let o = fx
        .env
        .lease()
        .args([
            "retire",
            "--dry-run",
            "--json",
            "--rebuildable",
            "target/",
            &id,
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("would delete rebuildable output: target"),
        "{}",
        stdout(&o)
    );
    let o = fx
        .env
        .lease()
        .env("LEASE_REBUILDABLE", "target")
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = fx.env.record_of(&id);
    assert_eq!(
        rec["tombstone"]["evidence"]["rebuildable_deleted"],
        serde_json::json!(["target"])
    );
    fx.assert_clean();
}

#[test]
fn d5_enospc_at_the_nth_write_never_costs_an_invariant() {
    // The SQLite loop: fail the n-th durable write of a retire, for n = 1, 2,
    // ... until a run completes without reaching the fault.
    let mut reached_ok = false;
    let mut refused = 0;
    for n in 1..=16 {
        let fx = Fx::new();
        let (id, wt) =
            fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
        let before = manifest(&wt);
        let o = fx
            .env
            .lease()
            .env("LEASE_FI_FAIL_WRITE", n.to_string())
            .args(["retire", "--json", &id])
            .output()
            .unwrap();
        let rec = fx.env.record_of(&id);
        let state = rec["state"].as_str().unwrap().to_string();
        let leftovers: Vec<_> = fs::read_dir(fx.env.state.join("records"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(
            leftovers.is_empty(),
            "n={n}: temp files left: {leftovers:?}"
        );
        assert_code(
            &fx.env.lease().args(["list", "--json"]).output().unwrap(),
            0,
        );
        assert!(
            crate::support::audit_chain_ok(&fx.env),
            "n={n}: audit chain"
        );
        if matches!(o.status.code(), Some(1 | 3)) {
            refused += 1;
        }
        match o.status.code() {
            Some(0) => {
                assert_eq!(state, "removed", "n={n}");
                reached_ok = true;
            }
            Some(1 | 3) => match state.as_str() {
                // Refused before removal: the tree is intact.
                "terminal" | "interrupted" => assert_eq!(manifest(&wt), before, "n={n}"),
                // After removal began: the archive is verified and recorded.
                "retiring" => assert!(rec["archive"]["sha256"].is_string(), "n={n}: {rec:#}"),
                // The record was written, a later audit line was not: true.
                "removed" => assert!(!wt.exists(), "n={n}: removed but present"),
                other => panic!("n={n}: illegal state {other} after a failed write"),
            },
            other => panic!("n={n}: exit {other:?}: {}", stderr(&o)),
        }
        // A failed audit write loses no line: the next change of the record,
        // or the next reap for a removed one, appends it.
        let o = fx
            .env
            .lease()
            .args(["reap", "--apply", "--json"])
            .output()
            .unwrap();
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "n={n}: {}",
            stderr(&o)
        );
        if let Err(e) = crate::support::audit_matches_record(&fx.env, &id) {
            panic!("n={n}: {e}");
        }
        fx.assert_clean();
        if reached_ok {
            break;
        }
    }
    assert!(reached_ok, "some n past the last write must succeed");
    // A fault that never bites proves nothing (knock-out K13): the first
    // durable writes of a retire must fail it.
    assert!(refused > 0, "no injected write failure was ever reported");
}

#[test]
fn a7_state_root_under_a_group_writable_parent() {
    let fx = Fx::new();
    let parent = fx.env.root.join("shared");
    fs::create_dir(&parent).unwrap();
    fs::set_permissions(&parent, fs::Permissions::from_mode(0o775)).unwrap();
    let o = fx
        .env
        .lease()
        .current_dir(&fx.repo)
        .env("LEASE_HOME", parent.join("state"))
        .args(["exec", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("lease-dir-unsafe"), "{}", stderr(&o));
    assert!(
        !parent.join("state/records").exists(),
        "nothing created below it"
    );
}

#[test]
fn c15_restore_runs_no_repository_configured_program() {
    let fx = Fx::new();
    let (id, _) = fx.worktree(
        "git checkout -q --detach && echo r > r.txt && git add r.txt && git commit -qm restorable",
    );
    fx.remove(&id);
    let o = fx.env.lease().args(["restore", &id[..8]]).output().unwrap();
    assert_code(&o, 0);
    fx.assert_clean();
    let restored = fx
        .env
        .records()
        .into_iter()
        .find(|r| r["restored_from"].is_string())
        .unwrap();
    let wt = PathBuf::from(restored["worktree"]["path"].as_str().unwrap());
    assert_eq!(fs::read_to_string(wt.join("r.txt")).unwrap(), "r\n");
}

#[test]
fn c8_commit_only_on_the_old_side_of_the_head_reflog_is_archived() {
    let fx = Fx::new();
    // checkout sets no ORIG_HEAD; after the expire, the only trace of
    // `precious` is the old value of the single reflog entry.
    let (id, _) = fx.worktree(
        "git checkout -q --detach && echo p > p.txt && git add p.txt && git commit -qm precious \
         && git rev-parse HEAD > ../precious.oid && git reflog expire --expire=now --all && git checkout -q HEAD~1",
    );
    let wt_parent = PathBuf::from(fx.env.record_of(&id)["worktree"]["path"].as_str().unwrap())
        .parent()
        .unwrap()
        .to_path_buf();
    let precious = fs::read_to_string(wt_parent.join("precious.oid"))
        .unwrap()
        .trim()
        .to_string();
    let rec = fx.remove(&id);
    let refs = rec["archive"]["refs"].as_object().unwrap();
    assert!(
        refs.values().any(|v| v == precious.as_str()),
        "{precious} archived: {refs:?}"
    );
}

#[test]
fn a5_b1_reused_inode_numbers_are_told_apart_by_birth_time() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("true");
    let path = fx.env.state.join("records").join(format!("{id}.json"));
    let orig: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    if orig["lease"]["btime"].is_null() {
        skip("this filesystem records no birth times");
        return;
    }
    // Same device and inode, another birth: what a deleted-and-recreated
    // file that reused the inode number looks like.
    for (key, reason) in [("lease", "lease-identity"), ("worktree", "path-identity")] {
        let mut rec = orig.clone();
        rec[key]["btime"] = serde_json::json!(rec[key]["btime"].as_u64().unwrap() + 1);
        fs::write(&path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
        fx.refuse(&id, reason);
        let mut back: serde_json::Value =
            serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        back[key] = orig[key].clone();
        fs::write(&path, serde_json::to_vec_pretty(&back).unwrap()).unwrap();
    }
    fx.remove(&id);
}

#[test]
fn b8_worktree_git_no_longer_lists_is_not_registered() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let admin = admin_dir(&fx.repo, &wt);
    let away = fx.env.root.join("admin-away");
    fs::rename(&admin, &away).unwrap();
    let (tree, moved) = (manifest(&wt), manifest(&away));
    let o = fx.retire(&id);
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["not-registered"], "{}", stdout(&o));
    assert_eq!(
        (manifest(&wt), manifest(&away)),
        (tree, moved),
        "nothing changed"
    );
    fs::rename(&away, &admin).unwrap();
    fx.remove(&id);
}

#[test]
fn gate7_anything_that_moved_while_archiving_holds() {
    // An untracked file appears while the bundle is written: refreshed
    // content holds; HEAD moves: unprovable. Neither tree is removed.
    // Also a tracked file rewritten with the same size and its mtime set
    // back (only its ctime shows it), a file an exclude already hid, and
    // the index alone changed: the second walk or git's files differ, so
    // git's status is read again rather than gate 5's kept
    // (plan::tree_unchanged).
    type Change = fn(&Fx, &Path);
    let cases: [(&str, Change); 6] = [
        ("untracked", |_, wt| {
            fs::write(wt.join("late.txt"), "late").unwrap()
        }),
        // Fx's `* filter=evil` is neutralized: an edit under it cannot be
        // judged, and holds as `filter-unverifiable`.
        ("filter-unverifiable", |fx, wt| {
            let a = wt.join("a");
            let mtime = fs::metadata(&a).unwrap().modified().unwrap();
            fs::write(&a, "b\n").unwrap();
            fs::File::options()
                .write(true)
                .open(&a)
                .unwrap()
                .set_modified(mtime)
                .unwrap();
            let _ = fx;
        }),
        ("ignored", |_, wt| {
            fs::write(wt.join("late.log"), "late").unwrap()
        }),
        // Only git's index changes (the tree does not): `a` is no longer
        // tracked.
        ("dirty,untracked", |fx, wt| {
            fx.env.git(wt, &["rm", "-q", "--cached", "a"]);
        }),
        // An operation begins and changes neither the tree, the index nor
        // HEAD: only its files in the admin directory show it.
        ("op-in-progress", |fx, wt| {
            fx.env.git(wt, &["bisect", "start"]);
        }),
        ("unprovable", |fx, wt| {
            fx.env.git(
                wt,
                &[
                    "-c",
                    "core.hooksPath=/dev/null",
                    "commit",
                    "-q",
                    "--allow-empty",
                    "-m",
                    "late",
                ],
            );
        }),
    ];
    for (reason, change) in cases {
        let fx = Fx::new();
        let (id, wt) = fx.worktree(
            "git checkout -q --detach && echo a > a && git add a && git commit -qm a \
             && echo '*.log' >> \"$(git rev-parse --git-common-dir)/info/exclude\"",
        );
        // Settled first, and without Fx's `include.path` (which always
        // sends gate 7 to git's status), so only the comparison of the two
        // walks (and of git's files) can tell that something moved.
        fx.env.git(&fx.repo, &["config", "--unset", "include.path"]);
        settle(&fx, &wt);
        let o = paused_retire(&fx, &id, "archive-written", || change(&fx, &wt));
        assert_code(&o, 1);
        assert_eq!(reasons(&o).join(","), reason, "{}", stdout(&o));
        assert!(wt.join("a").exists(), "{reason}: the worktree is intact");
        assert_eq!(fx.env.record_of(&id)["state"], "terminal", "{reason}");
    }
}

/// The other half of gate 7 after archiving: a tree and git files that
/// last changed well before the retire began (more than the racy margin,
/// `plan::RACY_NS`), left alone while the bundle is made, keep gate 5's
/// status: the retire runs `git status` once and removes the tree, its
/// commit in the verified bundle. While the repository's config includes
/// another file (Fx sets `include.path`), whose changes no check sees, the
/// status runs again.
#[test]
fn gate7_a_settled_tree_that_did_not_move_keeps_gate_5_s_status() {
    let fx = Fx::new();
    // Only where gate 7 trusts file times (plan::STAT_COMPARE_FS).
    let magic = rustix::fs::statfs(&fx.env.root)
        .map(|s| s.f_type as u64)
        .unwrap_or(0);
    if ![0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0xF2F5_2010].contains(&magic) {
        skip(&format!(
            "the test directory's filesystem (statfs magic {magic:#x}) is not one gate 7 compares times on"
        ));
        return;
    }
    let script = "git checkout -q --detach && echo a > a && git add a && git commit -qm a";
    let (included, included_wt) = fx.worktree(script);
    let (plain, plain_wt) = fx.worktree(script);
    let statuses_of = |id: &str, wt: &Path| {
        settle(&fx, wt);
        let o = fx
            .env
            .lease()
            .args(["-vv", "retire", "--json", id])
            .output()
            .unwrap();
        assert_code(&o, 0);
        let rec = fx.env.record_of(id);
        assert_eq!(rec["state"], "removed");
        assert!(rec["archive"]["location"].is_string(), "{rec:#}");
        assert!(!wt.exists());
        let log = stderr(&o);
        let n = log
            .lines()
            .filter(|l| l.contains("git exited") && l.contains("args=status "))
            .count();
        (n, log)
    };
    let (n, log) = statuses_of(&included, &included_wt);
    assert_eq!(n, 2, "include.path: status again:\n{log}");
    fx.env.git(&fx.repo, &["config", "--unset", "include.path"]);
    let (n, log) = statuses_of(&plain, &plain_wt);
    assert_eq!(n, 1, "one git status in the retire:\n{log}");
    assert!(log.contains("its status stands"), "{log}");
}

/// Gate 7 compares the files git reads outside the repository too: the
/// user's default excludes file (`~/.config/git/ignore`, read when
/// `core.excludesFile` is unset) loses its rule while the bundle is made,
/// so declared rebuildable output is no longer ignored but untracked: the
/// status runs again and the retire holds instead of deleting it.
#[test]
fn gate7_a_user_excludes_file_that_changed_runs_the_status_again() {
    let fx = Fx::new();
    fx.env.git(&fx.repo, &["config", "--unset", "include.path"]);
    let ignore = fx
        .env
        .root
        .join("home")
        .join(".config")
        .join("git")
        .join("ignore");
    fs::create_dir_all(ignore.parent().unwrap()).unwrap();
    fs::write(&ignore, "out/\n").unwrap();
    let (id, wt) = fx.worktree(
        "git checkout -q --detach && echo a > a && git add a && git commit -qm a \
         && mkdir out && echo x > out/x",
    );
    settle(&fx, &wt);
    let o = paused_retire_with(
        &fx,
        &["--rebuildable", "out", &id],
        "archive-written",
        || fs::write(&ignore, "").unwrap(),
    );
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["untracked"], "{}", stdout(&o));
    assert!(wt.join("out").join("x").exists(), "not deleted");
    assert_eq!(fx.env.record_of(&id)["state"], "terminal");
}

/// Waits until everything in worktree `wt`, its admin files and the
/// repository's config last changed more than 200 ms ago (4x
/// `plan::RACY_NS`). Not a sleep against another process: the margin is
/// about time itself, and the condition is checked, not assumed.
fn settle(fx: &Fx, wt: &Path) {
    let admin = fs::read_to_string(wt.join(".git")).unwrap();
    let admin = PathBuf::from(admin.trim().strip_prefix("gitdir: ").unwrap());
    let mut paths: Vec<PathBuf> = walk_paths(wt);
    paths.extend(["index", "HEAD"].map(|f| admin.join(f)));
    paths.push(fx.repo.join(".git").join("config"));
    let mut newest = std::time::UNIX_EPOCH;
    for p in paths {
        let m = fs::symlink_metadata(&p).unwrap();
        let c = std::time::UNIX_EPOCH
            + std::time::Duration::new(m.ctime() as u64, m.ctime_nsec() as u32);
        newest = newest.max(c).max(m.modified().unwrap());
    }
    while std::time::SystemTime::now()
        .duration_since(newest)
        .unwrap_or_default()
        < std::time::Duration::from_millis(200)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Every path under `dir` (not following symlinks), `dir` included.
fn walk_paths(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let p = out[i].clone();
        if fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            for e in fs::read_dir(&p).unwrap().flatten() {
                out.push(e.path());
            }
        }
        i += 1;
    }
    out
}

#[test]
fn d2_worktree_gone_mid_retire_is_a_hold_not_an_error() {
    // Found by scripts/soak: a concurrent retire removed the worktree after
    // this retire's gate 2 and before a git probe that runs inside it; the
    // spawn failed (ENOENT for the working directory) and the retire reported
    // "cannot run git" with exit 3. A git probe that cannot run holds.
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let before = manifest(&wt);
    let moved = wt.with_extension("moved");
    let o = paused_retire(&fx, &id, "retire-locked", || {
        fs::rename(&wt, &moved).unwrap();
    });
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["git-failed"], "{}", stdout(&o));
    assert_eq!(manifest(&moved), before, "nothing changed in the tree");
    assert_eq!(fx.env.record_of(&id)["state"], "terminal");
}

/// A filter driver that appears during the session (here only in the
/// worktree's own config, `extensions.worktreeConfig`) must be neutralized
/// by the retire that ends the session: lease reads the filter drivers
/// again after the command, and per directory, so neither a read from
/// before the command nor the repository's own config stands in for the
/// worktree's.
#[test]
fn c15_a_filter_driver_configured_during_the_session_never_runs() {
    let env = TestEnv::new();
    let repo = env.repo();
    let log = env.root.join("sentinel.log");
    let filter = env.file("filter");
    write_exe(
        &filter,
        &format!("#!/bin/sh\necho ran >> '{}'\nexec cat\n", log.display()),
    );
    let script = format!(
        "git config extensions.worktreeConfig true && \
         git config --worktree filter.evil.clean '{f}' && \
         echo '* filter=evil' >> \"$(git rev-parse --git-common-dir)/info/attributes\" && \
         touch -d '2001-01-01' README",
        f = filter.display()
    );
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(
        !log.exists(),
        "the filter ran: {}",
        fs::read_to_string(&log).unwrap_or_default()
    );
    assert_eq!(env.record()["state"], "removed", "{}", stderr(&o));
    // The driver is live: plain git runs it on the same kind of change.
    let wt = env.root.join("plain");
    env.git(
        &repo,
        &["worktree", "add", "-q", "--detach", wt.to_str().unwrap()],
    );
    env.git(
        &wt,
        &[
            "config",
            "--worktree",
            "filter.evil.clean",
            filter.to_str().unwrap(),
        ],
    );
    let readme = wt.join("README");
    let _ = std::process::Command::new("touch") // forbid: allow (a test's own setup, not git)
        .args(["-d", "2001-01-01"])
        .arg(&readme)
        .status();
    env.git(&wt, &["status", "--porcelain"]);
    assert!(log.exists(), "control: the filter is live for plain git");
}

#[test]
fn a_second_archive_of_one_record_never_replaces_the_first() {
    // A retire that archived and then held (a file appeared while the bundle
    // was written) keeps its verified bundle; a retire after a new commit
    // archives again under a new name. No bundle is ever written over one
    // that exists, even once an older bundle of several is gone.
    let fx = Fx::new();
    let (id, wt) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let late = wt.join("late.txt");
    let commit = |msg: &str| {
        fx.env.git(
            &wt,
            &[
                "-c",
                "core.hooksPath=/dev/null",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                msg,
            ],
        );
    };
    let held_after_archiving = || {
        let o = paused_retire(&fx, &id, "archive-written", || {
            fs::write(&late, "late").unwrap()
        });
        assert_code(&o, 1);
        assert_eq!(reasons(&o), ["untracked"], "{}", stdout(&o));
        fs::remove_file(&late).unwrap();
    };
    held_after_archiving();
    let first = bundles(&fx, &id);
    assert_eq!(first.len(), 1, "{first:?}");
    let first_bytes = fs::read(&first[0]).unwrap();
    commit("b");
    held_after_archiving();
    let dir = fx.env.state.join("archives").join(&id);
    let second = dir.join("2.bundle");
    let second_bytes = fs::read(&second).unwrap();
    assert_eq!(
        fs::read(&first[0]).unwrap(),
        first_bytes,
        "1.bundle untouched"
    );
    // The older, unreferenced bundle is deleted by hand; the next archive
    // must still not reuse a name.
    fs::remove_file(&first[0]).unwrap();
    commit("c");
    let o = fx.retire(&id);
    assert_code(&o, 0);
    let rec = fx.env.record_of(&id);
    assert_eq!(rec["state"], "removed");
    assert_eq!(
        rec["archive"]["location"].as_str().unwrap(),
        dir.join("3.bundle").to_str().unwrap(),
        "{rec:#}"
    );
    assert_eq!(
        fs::read(&second).unwrap(),
        second_bytes,
        "2.bundle never replaced"
    );
}

#[test]
fn d2_a_git_probe_that_fails_holds_and_only_a_real_retire_records_it() {
    // A corrupt index: `git ls-files` fails, the evidence cannot be
    // gathered, and the retire holds `git-failed`. A dry run changes nothing,
    // the record included; a retire records the attempt.
    let fx = Fx::new();
    let (id, wt) = fx.worktree("true");
    let admin = admin_dir(&fx.repo, &wt);
    fs::write(admin.join("index"), b"garbage index").unwrap();
    let rec = fx.env.record_of(&id);
    let o = fx
        .env
        .lease()
        .args(["retire", "--json", "--dry-run", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["git-failed"], "{}", stdout(&o));
    assert_eq!(fx.env.record_of(&id), rec, "a dry run records nothing");
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let o = fx.retire(&id);
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["git-failed"], "{}", stdout(&o));
    snap.assert_held_unchanged(&fx.env, &fx.repo, "git-failed");
}

#[test]
fn gate8_a_git_that_misreports_worktree_remove_is_caught_by_the_read_back() {
    // Gate 8 reads back after `git worktree remove`: the directory must be
    // gone and the registration too, whatever git's exit status says. Two
    // lying gits (via LEASE_GIT): one exits 0 and does nothing (the tree is
    // intact: back to terminal), one removes it and then recreates the
    // directory (registration gone, directory back: stays retiring for reap).
    let cases: [(&str, &str, &str); 2] = [
        ("does nothing", "exit 0", "terminal"),
        (
            "recreates the directory",
            "\"$REAL\" \"$@\" && mkdir \"$last\"; exit $?",
            "retiring",
        ),
    ];
    for (what, lie, state) in cases {
        let fx = Fx::new();
        let (id, wt) = fx.worktree("true");
        let git = fx.env.lying_git(lie);
        let tree = manifest(&wt);
        let o = fx
            .env
            .lease()
            .env("LEASE_GIT", &git)
            .args(["retire", "--json", &id])
            .output()
            .unwrap();
        assert_code(&o, 1);
        assert_eq!(reasons(&o), ["git-failed"], "{what}: {}", stdout(&o));
        let rec = fx.env.record_of(&id);
        assert_eq!(rec["state"], state, "{what}: {rec:#}");
        assert!(rec["tombstone"].is_null(), "{what}: no tombstone");
        if state == "terminal" {
            assert_eq!(manifest(&wt), tree, "{what}: the tree is intact");
        }
        assert!(wt.is_dir(), "{what}");
    }
}

#[test]
fn c5_strict_process_audit_holds_what_an_ordinary_user_cannot_see() {
    // As an ordinary user, other users' processes cannot be audited (their
    // /proc entries are closed to us). Where others can reach the worktree
    // (an adopted one under 0755 directories; lease's own roots are 0700),
    // strict audit (config or LEASE_PROCESS_AUDIT) holds on that; the
    // default does not.
    let u = AsUser::new();
    let o = u.sh(
        "chmod 755 . && git init -q --bare -b main remote.git && git init -q -b main repo && cd repo \
         && echo hi > README && git add . && git commit -qm i && git remote add origin ../remote.git \
         && git push -q origin main && git fetch -q origin && git remote set-head origin main \
         && git worktree add -q --detach ../side && \"$L\" adopt --json ../side",
    );
    assert_code(&o, 0);
    let id = serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let wt = u.base.join("side");
    let before = manifest(&wt);
    let o = u.sh(&format!(
        "LEASE_PROCESS_AUDIT=strict \"$L\" retire --json {id}"
    ));
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["unprovable"], "{}{}", stdout(&o), stderr(&o));
    assert_eq!(manifest(&wt), before, "nothing changed");
    assert_code(&u.sh(&format!("\"$L\" retire {id}")), 0);
    assert!(!wt.exists());
}
