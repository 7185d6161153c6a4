//! `lease repair`: scoped repair of one stale registration, its refusals,
//! and a recorded registration whose lease it takes and reads back.

use crate::reap::{
    assert_transitions, codes, lease_new, reap, registered, stale, states, worktree_of,
};
use crate::support::*;
use std::fs;
use std::path::Path;

#[test]
fn repair_removes_one_stale_registration_and_records_the_removal() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (_, id) = lease_new(
        &env,
        &repo,
        &[],
        &["exec", "--", "sh", "-c", "echo n > notes"],
    );
    let wt = worktree_of(&env, &id);
    let admin = admin_dir(&repo, &wt);
    let other = stale(&env, &repo, "other");
    let other_admin = repo.join(".git/worktrees/other");
    fs::remove_dir_all(&wt).unwrap();
    // Dry run: says what it would do, changes nothing.
    let state = manifest(&env.state);
    let admins = manifest(&repo.join(".git/worktrees"));
    let o = env
        .lease()
        .args(["repair", "--dry-run", wt.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("would remove the registration"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains(admin.to_str().unwrap()),
        "{}",
        stdout(&o)
    );
    assert_eq!(manifest(&env.state), state);
    assert_eq!(manifest(&repo.join(".git/worktrees")), admins);
    // Apply, from inside the repository with a relative path.
    let rel = format!("../{}", wt.strip_prefix(&env.root).unwrap().display());
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["repair", &rel])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("will:"),
        "prints the plan first: {}",
        stdout(&o)
    );
    assert!(!admin.exists(), "that registration is gone");
    assert!(other_admin.is_dir(), "the other one is untouched: no prune");
    assert!(!registered(&env, &repo, &wt));
    assert!(registered(&env, &repo, &other));
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed");
    assert_eq!(rec["tombstone"]["evidence"]["repaired_by"], "lease repair");
    assert!(!Path::new(rec["lease"]["path"].as_str().unwrap()).exists());
    assert_eq!(
        states(&assert_transitions(&env, &id)),
        ["planned", "active", "terminal", "retiring", "removed"]
    );
    assert!(
        env.audit()
            .iter()
            .any(|l| l["event"] == "repair" && l["id"] == id.as_str())
    );
    // The reaper reports the other stale registration and leaves it.
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    let orphans = v["orphans"].as_array().unwrap();
    assert_eq!(orphans.len(), 1, "{orphans:#?}");
    assert_eq!(orphans[0]["kind"], "missing");
    assert!(other_admin.is_dir());
}

#[test]
fn repair_refuses_what_is_not_stale_or_would_lose_commits() {
    let env = TestEnv::new();
    let repo = env.repo();
    let run = |path: &Path| {
        env.lease()
            .current_dir(&repo)
            .args(["repair", "--json", path.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let check = |path: &Path, reason: &str| {
        let admins = manifest(&repo.join(".git/worktrees"));
        let o = run(path);
        assert_code(&o, 1);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(codes(&v), [reason], "{v:#}");
        assert_eq!(manifest(&repo.join(".git/worktrees")), admins, "changed");
    };
    // The directory is there: not stale.
    let live = env.root.join("live");
    env.add_worktree(&repo, "live", &live);
    check(&live, "path-occupied");
    let v: serde_json::Value = serde_json::from_slice(&run(&live).stdout).unwrap();
    assert!(
        v["next"]
            .as_str()
            .unwrap_or_default()
            .contains("lease retire"),
        "an existing worktree is retire's business: {v:#}"
    );
    // Read by a person: the plan is headed "found", not "will".
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["repair", live.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(
        stdout(&o).starts_with("lease repair found:"),
        "{}",
        stdout(&o)
    );
    // A commit that only its HEAD reaches.
    let lost = env.root.join("lost");
    env.git(
        &repo,
        &["worktree", "add", "-q", "--detach", lost.to_str().unwrap()],
    );
    env.git(&lost, &["commit", "-q", "--allow-empty", "-m", "only here"]);
    let tip = env.git(&lost, &["rev-parse", "HEAD"]);
    fs::remove_dir_all(&lost).unwrap();
    check(&lost, "unique-commits-unarchived");
    // Once kept on a branch, it goes.
    env.git(&repo, &["branch", "kept", &tip]);
    assert_code(&run(&lost), 0);
    // A locked registration (perhaps on an unmounted disk).
    let locked = env.root.join("locked");
    env.add_worktree(&repo, "locked", &locked);
    env.git(
        &repo,
        &[
            "worktree",
            "lock",
            "--reason",
            "usb disk",
            locked.to_str().unwrap(),
        ],
    );
    fs::remove_dir_all(&locked).unwrap();
    check(&locked, "git-locked");
    // Nothing registered there: usage.
    assert_code(&run(&env.root.join("nothing")), 2);
}

#[test]
fn repair_clears_a_stale_branch_checkout_for_exec() {
    let env = TestEnv::new();
    let repo = env.repo();
    let wt = stale(&env, &repo, "feat");
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--branch", "feat", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    // The refusal's `next:` is the repair, and it runs as printed.
    let err = stderr(&o);
    let next = err
        .lines()
        .find_map(|l| l.strip_prefix("next: "))
        .unwrap_or_else(|| panic!("no next: line: {err}"));
    assert_eq!(next, format!("lease repair {}", wt.display()));
    assert_code(&crate::json::run_next(&env, &repo, next), 0);
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--branch", "feat", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
}

#[test]
fn repair_by_a_symlinked_spelling_leaves_other_records_alone() {
    // A stale registration no record claims, named through a symlinked
    // parent (git registered the physical path), while another record is
    // live: repair finds it by its other spelling and touches only it.
    let env = TestEnv::new();
    let repo = env.repo();
    let (_, kept) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    let kept_rec = env.record_of(&kept);
    fs::create_dir(env.root.join("real")).unwrap();
    std::os::unix::fs::symlink(env.root.join("real"), env.root.join("link")).unwrap();
    let wt = stale(&env, &repo, "real/gone");
    assert!(registered(&env, &repo, &wt));
    let o = env
        .lease()
        .args([
            "repair",
            "--json",
            env.root.join("link/gone").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["plan"]["path"], wt.to_str().unwrap(), "{v:#}");
    assert!(v["plan"]["record"].is_null(), "no record claims it: {v:#}");
    assert!(!registered(&env, &repo, &wt));
    assert_eq!(
        env.record_of(&kept),
        kept_rec,
        "the live record is untouched"
    );
}

#[test]
fn repair_of_a_recorded_registration_takes_its_lease_and_reads_back() {
    // A recorded worktree whose directory was deleted by hand. Its lease
    // file gone is no reason to refuse (nobody can hold it); a lease that
    // cannot be locked is; and a git that reports failure is believed even
    // when the registration looks gone.
    type Case = (&'static str, Option<&'static str>, i32);
    let cases: [Case; 4] = [
        ("lease file gone", None, 0),
        ("lock error", Some("lock-unsupported"), 1),
        ("git exits 1 after removing", Some("git-failed"), 1),
        // git no longer lists it, but its admin directory is still there.
        (
            "git exits 0 leaving the admin directory",
            Some("git-failed"),
            1,
        ),
    ];
    for (what, code, exit) in cases {
        let env = TestEnv::new();
        let repo = env.repo();
        let (_, id) = lease_new(
            &env,
            &repo,
            &[],
            &["exec", "--", "sh", "-c", "echo n > notes"],
        );
        assert_eq!(env.record_of(&id)["state"], "terminal", "{what}");
        let wt = worktree_of(&env, &id);
        let admin = admin_dir(&repo, &wt);
        fs::remove_dir_all(&wt).unwrap();
        let mut c = env.lease();
        match what {
            "lease file gone" => {
                let lease = env.lease_of(&id);
                fs::remove_file(lease).unwrap();
            }
            "lock error" => {
                c.env("LEASE_FI_LOCK_ERROR", "1");
            }
            "git exits 1 after removing" => {
                c.env("LEASE_GIT", env.lying_git("\"$REAL\" \"$@\"; exit 1"));
            }
            _ => {
                let lie = format!("rm -f '{}/gitdir'; exit 0", admin.display());
                c.env("LEASE_GIT", env.lying_git(&lie));
            }
        }
        let o = c
            .args(["repair", "--json", wt.to_str().unwrap()])
            .output()
            .unwrap();
        assert_code(&o, exit);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let rec = env.record_of(&id);
        match code {
            None => assert_eq!(rec["state"], "removed", "{what}: {v:#}"),
            Some(code) => {
                assert_eq!(codes(&v), [code], "{what}: {v:#}");
                assert_eq!(rec["state"], "terminal", "{what}: not recorded removed");
                assert!(rec["tombstone"].is_null(), "{what}");
                if what == "lock error" {
                    assert!(registered(&env, &repo, &wt), "{what}: nothing changed");
                }
            }
        }
    }
}
