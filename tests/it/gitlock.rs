//! SPEC "A lease every tool can see": git's own lock on every worktree whose
//! record is not `removed`, what other tools and a second state root then
//! do, gate 2 and gate 8 around it, the reconciler's migration, and
//! adoption's refusals (each leaves the state root as it was).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::*;

/// git's lock reason for a worktree, as `locked` in its admin directory
/// holds it (without the trailing newline); `None` when unlocked.
fn lock_of(repo: &Path, wt: &Path) -> Option<String> {
    fs::read_to_string(admin_dir(repo, wt).join("locked"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// Asserts `wt` carries lease's lock for record `id` of `state`.
#[track_caller]
fn assert_leased_lock(repo: &Path, wt: &Path, id: &str, state: &Path) {
    let reason = lock_of(repo, wt).unwrap_or_else(|| panic!("`{}` is not locked", wt.display()));
    assert!(
        reason.starts_with(&format!("lease {id} {} ", state.display())),
        "{reason}"
    );
    assert!(reason.contains(&format!("lease retire {id}")), "{reason}");
}

/// A worktree of a `terminal` record (kept, then released).
fn terminal(env: &TestEnv, repo: &Path, branch: &str) -> (String, PathBuf) {
    env.kept(repo, branch, "true")
}

/// Runs `lease ARGS` with `LEASE_HOME=state`.
fn lease_in(env: &TestEnv, state: &Path, args: &[&str]) -> Output {
    env.lease()
        .env("LEASE_HOME", state)
        .args(args)
        .output()
        .unwrap()
}

/// Replaces lease's lock on `wt` with `reason` (as another tool would).
fn relock(env: &TestEnv, repo: &Path, wt: &Path, reason: &str) {
    let w = wt.to_str().unwrap();
    env.git(repo, &["worktree", "unlock", w]);
    env.git(repo, &["worktree", "lock", "--reason", reason, w]);
}

#[test]
fn every_way_lease_makes_or_adopts_a_worktree_locks_it_with_git() {
    let env = TestEnv::new();
    let repo = env.repo();
    // exec: `git worktree add --lock --reason` (the lock is there while the
    // command runs).
    let (bg, _) = env.spawn_holder(&["--branch", "held", "--repo", repo.to_str().unwrap()]);
    let rec = env
        .records()
        .into_iter()
        .find(|r| r["branch"] == "held")
        .unwrap();
    let id = rec["id"].as_str().unwrap().to_string();
    let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
    assert_leased_lock(&repo, &wt, &id, &env.state);
    let list = env.git(&repo, &["worktree", "list", "--porcelain"]);
    assert!(list.contains(&format!("locked lease {id} ")), "{list}");
    drop(bg);
    // lease adopt: `git worktree lock --reason`.
    let side = env.root.join("side");
    env.add_worktree(&repo, "side", &side);
    let o = env
        .lease()
        .args(["adopt", "--json", side.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_leased_lock(&repo, &side, v["id"].as_str().unwrap(), &env.state);
    // exec --adopt of an unrecorded worktree.
    let other = env.root.join("other");
    env.add_worktree(&repo, "other", &other);
    let o = env
        .lease()
        .args(["exec", "--adopt", other.to_str().unwrap(), "--"])
        .args([
            "sh",
            "-c",
            "cat \"$(git rev-parse --git-dir)/locked\" > ../seen",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env
        .records()
        .into_iter()
        .find(|r| r["worktree"]["path"] == other.to_str().unwrap())
        .unwrap();
    let id = rec["id"].as_str().unwrap();
    assert_leased_lock(&repo, &other, id, &env.state);
    let seen = fs::read_to_string(env.root.join("seen")).unwrap();
    assert!(
        seen.starts_with(&format!("lease {id} ")),
        "locked before the command ran: {seen}"
    );
    // restore: the new worktree is locked for the new record.
    let (from, _) = archived(&env, &repo, "to-restore");
    let o = env
        .lease()
        .args(["restore", "--json", &from])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rid = v["id"].as_str().unwrap();
    let rwt = PathBuf::from(env.record_of(rid)["worktree"]["path"].as_str().unwrap());
    assert_leased_lock(&repo, &rwt, rid, &env.state);
}

#[test]
fn other_tools_and_a_second_state_root_refuse_a_leased_tree() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = terminal(&env, &repo, "leased");
    let w = wt.to_str().unwrap();
    let admin = admin_dir(&repo, &wt);
    let before = (manifest(&wt), manifest(&admin));
    let unchanged = |what: &str| {
        assert_eq!(
            (manifest(&wt), manifest(&admin)),
            before,
            "{what} changed the tree or its admin directory"
        );
    };
    let git = |args: &[&str]| {
        env.cmd("git")
            .current_dir(&repo)
            .args(args)
            .output()
            .unwrap()
    };
    // A person's `git worktree remove`: refused, and told to use lease.
    let o = git(&["worktree", "remove", w]);
    assert_code(&o, 128);
    let msg = stderr(&o);
    assert!(msg.contains("cannot remove a locked working tree"), "{msg}");
    assert!(
        msg.contains(&format!(
            "LEASE_HOME={} lease retire {id}",
            env.state.display()
        )),
        "git's message names the command: {msg}"
    );
    unchanged("git worktree remove");
    // Another tool's single --force.
    let o = git(&["worktree", "remove", "--force", w]);
    assert_code(&o, 128);
    unchanged("git worktree remove --force");
    // A foreign prune while the directory is away (an unmounted disk).
    let away = env.root.join("away");
    fs::rename(&wt, &away).unwrap();
    let o = git(&["worktree", "prune", "--expire", "now"]);
    assert_code(&o, 0);
    assert!(admin.is_dir(), "prune kept the registration");
    fs::rename(&away, &wt).unwrap();
    unchanged("git worktree prune");
    // A second lease state root: neither adopt nor exec --adopt takes it.
    let second = env.root.join("second");
    assert_code(&lease_in(&env, &second, &["reap", "--apply"]), 0);
    let empty = manifest(&second);
    let o = lease_in(&env, &second, &["adopt", "--json", w]);
    assert_code(&o, 1);
    let msg = stderr(&o);
    assert!(msg.contains("leased-elsewhere"), "{msg}");
    assert!(
        msg.contains(&format!(
            "LEASE_HOME={} lease retire {id}",
            env.state.display()
        )),
        "names the root and the command to run there: {msg}"
    );
    let ran = env.root.join("ran");
    let o = lease_in(
        &env,
        &second,
        &["exec", "--adopt", w, "--", "touch", ran.to_str().unwrap()],
    );
    assert_code(&o, 125);
    assert!(stderr(&o).contains("leased-elsewhere"), "{}", stderr(&o));
    assert!(!ran.exists(), "the command did not run");
    assert_eq!(manifest(&second), empty, "no record, no lease file");
    unchanged("the second state root");
    // Positive control: lease itself retires it.
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 0);
    assert!(!wt.exists() && !admin.exists());
}

#[test]
fn gate_2_knows_its_own_lock_from_another_lease_s_and_anyone_else_s() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = terminal(&env, &repo, "judged");
    let ours = lock_of(&repo, &wt).unwrap();
    let elsewhere = "/srv/other/state";
    let cases = [
        (
            "another state root",
            ours.replace(env.state.to_str().unwrap(), elsewhere),
            "leased-elsewhere",
            elsewhere.to_string(),
        ),
        (
            "another record of this root",
            ours.replace(&id, &"0".repeat(32)),
            "leased-elsewhere",
            format!("lease retire {}", "0".repeat(32)),
        ),
        (
            "SPEC's bare form for another root",
            format!("lease {id} {elsewhere}"),
            "leased-elsewhere",
            format!("LEASE_HOME={elsewhere} lease retire {id}"),
        ),
        (
            "any other tool",
            "in use by ci".to_string(),
            "git-locked",
            "in use by ci".to_string(),
        ),
    ];
    for (what, reason, code, detail) in cases {
        relock(&env, &repo, &wt, &reason);
        let snap = Snapshot::take(&env, &repo, &id);
        let o = env
            .lease()
            .args(["retire", "--json", &id])
            .output()
            .unwrap();
        assert_code(&o, 1);
        assert_eq!(reasons(&o), [code], "{what}: {}", stdout(&o));
        assert!(stdout(&o).contains(&detail), "{what}: {}", stdout(&o));
        snap.assert_held_unchanged(&env, &repo, code);
    }
    // The same root by another spelling is this root: lease's own lock.
    let link = env.root.join("state-link");
    std::os::unix::fs::symlink(&env.state, &link).unwrap();
    relock(
        &env,
        &repo,
        &wt,
        &ours.replace(env.state.to_str().unwrap(), link.to_str().unwrap()),
    );
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 0);
    assert!(!wt.exists());
}

#[test]
fn a_refused_removal_puts_lease_s_lock_back_byte_for_byte() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = terminal(&env, &repo, "refused");
    let before = (manifest(&wt), manifest(&admin_dir(&repo, &wt)));
    // git refuses the removal and leaves everything in place.
    let git = env.lying_git("echo 'refused by a test' >&2; exit 1");
    let o = env
        .lease()
        .env("LEASE_GIT", &git)
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["git-failed"], "{}", stdout(&o));
    // Back to terminal (retiring -> terminal), the lock back: the tree and
    // the admin directory byte-identical.
    assert_eq!(env.record_of(&id)["state"], "terminal");
    assert_eq!((manifest(&wt), manifest(&admin_dir(&repo, &wt))), before);
    assert_leased_lock(&repo, &wt, &id, &env.state);
    assert_eq!(audit_matches_record(&env, &id), Ok(()));
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 0);
}

#[test]
fn a_crash_between_unlock_and_removal_is_finished_by_the_reconciler() {
    for dirty in [false, true] {
        let env = TestEnv::new();
        let repo = env.repo();
        let (id, wt) = terminal(&env, &repo, "crashed");
        let o = env
            .lease()
            .env("LEASE_FI_CRASH", "retire-unlocked")
            .args(["retire", &id])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), None, "killed: {}", stderr(&o));
        assert_eq!(env.record_of(&id)["state"], "retiring");
        assert_eq!(lock_of(&repo, &wt), None, "killed after the unlock");
        if dirty {
            fs::write(wt.join("late.txt"), "work after the crash\n").unwrap();
        }
        // A dry run says so and changes nothing.
        let state = manifest(&env.state);
        let admin = manifest(&admin_dir(&repo, &wt));
        let o = env.lease().args(["reap", "--json"]).output().unwrap();
        assert_code(&o, 0);
        assert!(stdout(&o).contains("would-finish"), "{}", stdout(&o));
        assert_eq!(manifest(&env.state), state);
        assert_eq!(manifest(&admin_dir(&repo, &wt)), admin);
        let o = env
            .lease()
            .args(["reap", "--apply", "--json"])
            .output()
            .unwrap();
        let rec = env.record_of(&id);
        if dirty {
            // Locked again under the lease, then held by the gates.
            assert_code(&o, 1);
            assert_eq!(rec["state"], "terminal", "{}", stdout(&o));
            assert_leased_lock(&repo, &wt, &id, &env.state);
            assert!(wt.join("late.txt").is_file());
        } else {
            assert_code(&o, 0);
            assert_eq!(rec["state"], "removed", "{}", stdout(&o));
            assert!(!wt.exists());
        }
        assert_eq!(audit_matches_record(&env, &id), Ok(()));
    }
}

#[test]
fn a_record_without_the_lock_is_migrated_by_reap_and_never_removed_for_lacking_it() {
    let env = TestEnv::new();
    let repo = env.repo();
    // Records an older lease made: no git lock.
    let (clean, clean_wt) = terminal(&env, &repo, "old-clean");
    let (dirty, dirty_wt) = env.kept(&repo, "old-dirty", "echo w > notes.txt");
    for wt in [&clean_wt, &dirty_wt] {
        env.git(&repo, &["worktree", "unlock", wt.to_str().unwrap()]);
    }
    // Gate 2 never holds for a missing lock: a retire takes the clean one.
    let o = env.lease().args(["retire", &clean]).output().unwrap();
    assert_code(&o, 0);
    assert!(!clean_wt.exists());
    // A dry reap says it would put the lock back and changes nothing.
    let state = manifest(&env.state);
    let o = env.lease().args(["reap", "--json"]).output().unwrap();
    assert!(stdout(&o).contains("would put it back"), "{}", stdout(&o));
    assert_eq!(manifest(&env.state), state);
    assert_eq!(lock_of(&repo, &dirty_wt), None);
    // The apply puts it back (one audit line), and the gates still hold.
    let o = env
        .lease()
        .args(["reap", "--apply", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_leased_lock(&repo, &dirty_wt, &dirty, &env.state);
    assert!(dirty_wt.join("notes.txt").is_file());
    let restored: Vec<_> = env
        .audit()
        .into_iter()
        .filter(|l| l["event"] == "lock-restored" && l["id"] == dirty.as_str())
        .collect();
    assert_eq!(restored.len(), 1, "{restored:#?}");
    assert_eq!(audit_matches_record(&env, &dirty), Ok(()));
    // A second reap has nothing to migrate.
    let o = env
        .lease()
        .args(["reap", "--apply", "--json"])
        .output()
        .unwrap();
    assert!(
        !stdout(&o).contains("put back git's lock"),
        "{}",
        stdout(&o)
    );
}

/// Everything that must not change when an adoption is refused: the state
/// root (no record, no lease file, no audit line), the worktree, and every
/// admin directory of the repository (`locked` included).
struct Before {
    state: Manifest,
    tree: Manifest,
    admins: Manifest,
}

impl Before {
    fn take(env: &TestEnv, repo: &Path, wt: &Path) -> Before {
        Before {
            state: manifest(&env.state),
            tree: manifest(wt),
            admins: manifest(&repo.join(".git/worktrees")),
        }
    }

    #[track_caller]
    fn assert_unchanged(&self, env: &TestEnv, repo: &Path, wt: &Path, what: &str) {
        assert_eq!(
            manifest(&env.state),
            self.state,
            "{what}: the state root changed"
        );
        assert_eq!(manifest(wt), self.tree, "{what}: the worktree changed");
        assert_eq!(
            manifest(&repo.join(".git/worktrees")),
            self.admins,
            "{what}: an admin directory changed"
        );
    }
}

/// Runs `lease adopt PATH` and `lease exec --adopt PATH -- touch RAN`,
/// asserting each exits as given, says `needle`, runs nothing and changes
/// nothing.
fn refuse_both(env: &TestEnv, repo: &Path, wt: &Path, codes: (i32, i32), needle: &str) {
    let ran = env.root.join("adopted-command-ran");
    let w = wt.to_str().unwrap();
    let before = Before::take(env, repo, wt);
    let o = env.lease().args(["adopt", w]).output().unwrap();
    assert_code(&o, codes.0);
    assert!(stderr(&o).contains(needle), "adopt: {}", stderr(&o));
    before.assert_unchanged(env, repo, wt, "lease adopt");
    let o = env
        .lease()
        .args(["exec", "--adopt", w, "--", "touch", ran.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, codes.1);
    assert!(stderr(&o).contains(needle), "exec --adopt: {}", stderr(&o));
    assert!(!ran.exists(), "exec --adopt ran its command");
    before.assert_unchanged(env, repo, wt, "lease exec --adopt");
}

#[test]
fn every_refused_adoption_leaves_no_record_and_no_lease_file() {
    let env = TestEnv::new();
    let repo = env.repo();
    // One live record, so the state root exists and reap knows the repository.
    let (_, kept) = terminal(&env, &repo, "kept");
    // Not listed by git.
    let plain = env.root.join("plain");
    fs::create_dir(&plain).unwrap();
    fs::write(plain.join(".git"), "gitdir: /nowhere\n").unwrap();
    let before = manifest(&env.state);
    for args in [
        vec!["adopt", plain.to_str().unwrap()],
        vec!["exec", "--adopt", plain.to_str().unwrap(), "--", "true"],
    ] {
        let o = env.lease().args(&args).output().unwrap();
        assert!(!o.status.success(), "{args:?}");
        assert_eq!(manifest(&env.state), before, "{args:?}");
    }
    // The main worktree.
    refuse_both(&env, &repo, &repo, (1, 125), "main worktree");
    // Already recorded here: `lease adopt` names the record (exec --adopt
    // would join it, which is no refusal).
    let before = Before::take(&env, &repo, &kept);
    let o = env
        .lease()
        .args(["adopt", kept.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(stderr(&o).contains("already recorded"), "{}", stderr(&o));
    before.assert_unchanged(&env, &repo, &kept, "a second adopt");
    // Locked by another tool.
    let foreign = env.root.join("foreign");
    env.add_worktree(&repo, "foreign", &foreign);
    env.git(
        &repo,
        &[
            "worktree",
            "lock",
            "--reason",
            "usb disk",
            foreign.to_str().unwrap(),
        ],
    );
    refuse_both(&env, &repo, &foreign, (1, 125), "git-locked");
    // Locked by another state root's lease.
    let elsewhere = env.root.join("elsewhere");
    env.add_worktree(&repo, "elsewhere", &elsewhere);
    let o = lease_in(
        &env,
        &env.root.join("state2"),
        &["adopt", elsewhere.to_str().unwrap()],
    );
    assert_code(&o, 0);
    refuse_both(&env, &repo, &elsewhere, (1, 125), "leased-elsewhere");
    // Too little free space.
    let side = env.root.join("side");
    env.add_worktree(&repo, "side", &side);
    let before = Before::take(&env, &repo, &side);
    let o = env
        .lease()
        .env("LEASE_MIN_FREE", "100%")
        .args(["adopt", side.to_str().unwrap()])
        .output()
        .unwrap();
    // The environment, not the request: exit 3 (SPEC "Exit codes").
    assert_code(&o, 3);
    before.assert_unchanged(&env, &repo, &side, "adopt below the watermark");
    let o = env
        .lease()
        .env("LEASE_MIN_FREE", "100%")
        .args(["exec", "--adopt", side.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    before.assert_unchanged(&env, &repo, &side, "exec --adopt below the watermark");
    // Positive control: with room, it is adopted and locked.
    let o = env
        .lease()
        .args(["adopt", side.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(lock_of(&repo, &side).is_some());
}

#[test]
fn a_worktree_a_corrupt_or_newer_record_names_is_never_adopted_or_hinted() {
    type Spoil = fn(&str) -> String;
    let cases: [(&str, Spoil); 3] = [
        ("corrupt", |json| format!("{{garbage {json}")),
        ("newer-schema", |json| {
            json.replacen("\"schema\": 1", "\"schema\": 99", 1)
        }),
        ("truncated", |json| json[..json.len() / 2].to_string()),
    ];
    for (what, spoil) in cases {
        let env = TestEnv::new();
        let repo = env.repo();
        let (_, other) = terminal(&env, &repo, "other");
        let (id, wt) = terminal(&env, &repo, "spoiled");
        let file = env.state.join("records").join(format!("{id}.json"));
        let json = fs::read_to_string(&file).unwrap();
        fs::write(&file, spoil(&json)).unwrap();
        for locked in [true, false] {
            if !locked {
                // Even without lease's lock, the record names it.
                env.git(&repo, &["worktree", "unlock", wt.to_str().unwrap()]);
            }
            let before = Before::take(&env, &repo, &wt);
            let o = env
                .lease()
                .args(["adopt", wt.to_str().unwrap()])
                .output()
                .unwrap();
            assert_code(&o, 3);
            assert!(
                stderr(&o).contains(file.to_str().unwrap()),
                "{what}: {}",
                stderr(&o)
            );
            before.assert_unchanged(&env, &repo, &wt, what);
            let o = env
                .lease()
                .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
                .output()
                .unwrap();
            assert_code(&o, 125);
            before.assert_unchanged(&env, &repo, &wt, what);
            // The reconciler reports it, and never says "adopt".
            let o = env.lease().args(["reap", "--json"]).output().unwrap();
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            for orphan in v["orphans"].as_array().unwrap() {
                assert!(
                    !orphan["next"].as_str().unwrap().contains("lease adopt"),
                    "{what} (locked: {locked}): {orphan}"
                );
            }
        }
        assert!(other.is_dir());
    }
}

#[test]
fn reap_in_another_state_root_never_hints_adopting_a_leased_tree() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = terminal(&env, &repo, "first");
    // A second root with a record in the same repository scans its
    // registrations and finds the first root's worktree unclaimed.
    let second = env.root.join("second");
    let o = env
        .lease()
        .env("LEASE_HOME", &second)
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let o = lease_in(&env, &second, &["reap", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let orphan = v["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"] == wt.to_str().unwrap())
        .unwrap_or_else(|| panic!("reported: {v:#}"))
        .clone();
    let next = orphan["next"].as_str().unwrap();
    assert!(!next.contains("lease adopt"), "{next}");
    assert!(
        next.contains(&format!(
            "LEASE_HOME={} lease show {id}",
            env.state.display()
        )),
        "{next}"
    );
}

#[test]
fn repair_takes_lease_s_own_lock_off_and_puts_it_back_when_git_refuses() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = terminal(&env, &repo, "gone");
    let admin = admin_dir(&repo, &wt);
    let reason = lock_of(&repo, &wt).unwrap();
    fs::remove_dir_all(&wt).unwrap();
    let before = manifest(&admin);
    // git refuses the removal and changes nothing: the lock goes back.
    let git = env.lying_git("echo 'refused by a test' >&2; exit 1");
    let o = env
        .lease()
        .env("LEASE_GIT", &git)
        .args(["repair", "--json", wt.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(stdout(&o).contains("git-failed"), "{}", stdout(&o));
    assert_eq!(
        manifest(&admin),
        before,
        "the admin directory, `locked` included"
    );
    assert_eq!(env.record_of(&id)["state"], "terminal");
    // Another lease's lock on it: refused as that lease's.
    let other = reason.replace(&id, &"0".repeat(32));
    fs::write(admin.join("locked"), format!("{other}\n")).unwrap();
    let o = env
        .lease()
        .args(["repair", "--json", wt.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(stdout(&o).contains("leased-elsewhere"), "{}", stdout(&o));
    assert!(admin.is_dir());
    // Its own lock back, repair goes through.
    fs::write(admin.join("locked"), format!("{reason}\n")).unwrap();
    let o = env
        .lease()
        .args(["repair", wt.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(!admin.exists());
    assert_eq!(env.record_of(&id)["state"], "removed");
}
