//! Branch hygiene and `durable: local` (SPEC "Provisioned files, disk, and
//! hygiene", "Words: durable"): a branch lease named itself goes at retire
//! once proven, a branch the user named never does; with no trusted remote
//! the repository's own default branch is the bundle's prerequisite; the
//! reconciler drops archives whose commits all became durable.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::*;

/// A repository without any remote: `solo` with one commit on `main`.
fn solo(env: &TestEnv) -> PathBuf {
    let repo = env.root.join("solo");
    env.git(
        &env.root,
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );
    fs::write(repo.join("README"), "solo\n").unwrap();
    env.git(&repo, &["add", "."]);
    env.git(&repo, &["commit", "-qm", "solo"]);
    repo
}

fn branch_exists(env: &TestEnv, repo: &Path, name: &str) -> bool {
    env.cmd("git")
        .current_dir(repo)
        .args(["rev-parse", "--verify", "-q", &format!("refs/heads/{name}")])
        .output()
        .unwrap()
        .status
        .success()
}

const COMMIT: &str = "echo w > w && git add w && git commit -qm w";

#[test]
fn the_branch_lease_named_itself_goes_at_retire_a_user_named_one_stays() {
    let env = TestEnv::new();
    let repo = env.repo();
    // lease names the branch: archived, then deleted.
    assert_code(&env.exec_sh(&repo, COMMIT), 0);
    let rec = env.record();
    assert_eq!(rec["state"], "removed", "{rec:#}");
    let own = format!("lease/{}", &rec["id"].as_str().unwrap()[..8]);
    assert_eq!(rec["branch"], own.as_str());
    let b = &rec["tombstone"]["branch"];
    assert_eq!(b["deleted"], true, "{b:#}");
    assert_eq!(b["automatic"], true, "{b:#}");
    assert!(!branch_exists(&env, &repo, &own), "{own} survived");
    // Its commit is in the verified bundle: nothing was lost.
    let tip = rec["archive"]["tip"].as_str().unwrap();
    assert!(
        lost_commits(&env, &repo, &[tip.to_string()].into_iter().collect()).is_empty(),
        "the archived tip is gone"
    );

    // A branch the user named: kept, commits and all.
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--branch", "feat", "--", "sh", "-c", COMMIT])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env
        .records()
        .into_iter()
        .find(|r| r["branch"] == "feat")
        .unwrap();
    assert_eq!(rec["state"], "removed", "{rec:#}");
    assert!(rec["tombstone"]["branch"].is_null(), "{rec:#}");
    assert!(branch_exists(&env, &repo, "feat"));
}

#[test]
fn an_adopted_worktree_s_branch_is_never_lease_s_even_by_its_name() {
    let env = TestEnv::new();
    let repo = env.repo();
    let wt = env.root.join("adopted");
    env.add_worktree(&repo, "lease/feedbeef", &wt);
    let o = env
        .lease()
        .args(["adopt", wt.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let o = env
        .lease()
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(env.record()["state"], "removed");
    assert!(branch_exists(&env, &repo, "lease/feedbeef"));
}

#[test]
fn the_branch_lease_named_itself_stays_while_another_worktree_has_it_and_the_retire_is_not_held() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "sh", "-c", COMMIT])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    let own = rec["branch"].as_str().unwrap().to_string();
    let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
    // Free the branch in the leased tree, then check it out elsewhere.
    env.git(&wt, &["checkout", "-q", "--detach"]);
    let other = env.root.join("other");
    env.git(
        &repo,
        &["worktree", "add", "-q", other.to_str().unwrap(), &own],
    );
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    let o = env
        .lease()
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed", "{rec:#}");
    let b = &rec["tombstone"]["branch"];
    assert_eq!(b["deleted"], false, "{b:#}");
    assert_eq!(b["reason"], "branch-checked-out", "{b:#}");
    assert!(branch_exists(&env, &repo, &own));
    assert!(other.join("w").exists(), "the other worktree is untouched");
}

#[test]
fn with_no_remote_the_default_branch_is_durable_local_and_the_bundle_is_thin() {
    let env = TestEnv::new();
    let repo = solo(&env);
    let main_tip = env.git(&repo, &["rev-parse", "HEAD"]);
    // A dry run says so first.
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "sh", "-c", COMMIT])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    let o = env
        .lease()
        .args(["retire", &id, "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["targets"][0]["durable"], "local", "{v:#}");
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 0);
    assert!(stdout(&o).contains("durable: local"), "{}", stdout(&o));
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed");
    assert_eq!(rec["archive"]["commits"], 1, "only what is unique: {rec:#}");
    assert_eq!(
        rec["archive"]["prerequisites"],
        serde_json::json!([main_tip]),
        "main is the prerequisite"
    );
    assert_eq!(
        rec["tombstone"]["evidence"]["durable"]["kind"], "local",
        "{rec:#}"
    );
    assert_eq!(rec["tombstone"]["branch"]["deleted"], true, "{rec:#}");
    // The thin bundle restores.
    let o = env
        .lease()
        .args(["restore", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["head"], rec["archive"]["tip"]);
}

#[test]
fn the_reconciler_drops_an_archive_once_its_commits_became_durable() {
    let env = TestEnv::new();
    let repo = solo(&env);
    assert_code(&env.exec_sh(&repo, COMMIT), 0);
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    let bundle = PathBuf::from(rec["archive"]["location"].as_str().unwrap());
    let tip = rec["archive"]["tip"].as_str().unwrap().to_string();
    assert!(bundle.is_file());
    // Not durable yet: an apply keeps it, and says nothing about it.
    let o = env
        .lease()
        .args(["reap", "--apply", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["archives_dropped"].is_null(), "{v:#}");
    assert!(bundle.is_file());
    assert_eq!(env.record_of(&id)["archive"]["tip"], tip.as_str());
    // The commit lands on main: durable (local).
    env.git(&repo, &["merge", "-q", "--ff-only", &tip]);
    let before = manifest(&env.state);
    let o = env.lease().args(["reap", "--json"]).output().unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["archives_dropped"][0]["id"], id.as_str(), "{v:#}");
    assert_eq!(v["archives_dropped"][0]["dropped"], false, "{v:#}");
    assert_eq!(
        manifest(&env.state),
        before,
        "a dry run changed the state root"
    );
    let o = env.lease().args(["reap", "--apply"]).output().unwrap();
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("dropped the bundle archive"),
        "{}",
        stdout(&o)
    );
    assert!(!bundle.exists(), "the bundle is still there");
    assert!(env.record_of(&id)["archive"].is_null());
    assert!(
        env.audit()
            .iter()
            .any(|l| l["event"] == "archive-dropped" && l["id"] == id.as_str())
    );
}

#[test]
fn lease_archives_shows_bytes_human_readable() {
    let env = TestEnv::new();
    let repo = solo(&env);
    assert_code(&env.exec_sh(&repo, COMMIT), 0);
    let o = env.lease().arg("archives").output().unwrap();
    assert_code(&o, 0);
    let out = stdout(&o);
    let row = out.lines().nth(1).unwrap();
    let size = row.split_whitespace().nth(3).unwrap();
    assert!(
        size.ends_with(['B', 'K', 'M', 'G']) && size.len() <= 6,
        "no human-readable size: {out}"
    );
}
