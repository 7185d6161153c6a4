//! `lease retire`: removal with archive, refusals that change nothing, and
//! the consumer lifetime deciding.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::support::*;

/// Runs `lease exec` with a shell script in a new worktree (which exec then
/// tries to retire) and returns the new record's id.
fn exec_script(env: &TestEnv, repo: &Path, script: &str) -> String {
    let ids = |env: &TestEnv| -> Vec<String> {
        env.records()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    let before = ids(env);
    let o = env
        .lease()
        .current_dir(repo)
        .args(["exec", "--", "sh", "-c", script])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let new: Vec<String> = ids(env)
        .into_iter()
        .filter(|i| !before.contains(i))
        .collect();
    assert_eq!(new.len(), 1, "one new record");
    new.into_iter().next().unwrap()
}

fn worktree_of(env: &TestEnv, id: &str) -> PathBuf {
    PathBuf::from(env.record_of(id)["worktree"]["path"].as_str().unwrap())
}

#[test]
fn agent_commit_is_archived_restorable_and_the_worktree_removed() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "exec",
            "--",
            "sh",
            "-c",
            "echo work > work.txt && git add work.txt && git commit -qm agent-work",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(stderr(&o).contains("removed"), "{}", stderr(&o));
    let rec = env.record();
    let id = rec["id"].as_str().unwrap();
    assert_eq!(rec["state"], "removed");
    let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
    assert!(!wt.exists(), "worktree directory gone");
    assert!(
        !env.git(&repo, &["worktree", "list", "--porcelain"])
            .contains(wt.to_str().unwrap())
    );
    // The branch lease named itself went once its commit was archived
    // (branch hygiene); the commit is the archive's tip.
    let branch = rec["branch"].as_str().unwrap();
    assert_eq!(rec["tombstone"]["branch"]["deleted"], true, "{rec:#}");
    assert_eq!(rec["tombstone"]["branch"]["name"], branch);
    let tip = rec["archive"]["tip"].as_str().unwrap().to_string();
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", &tip]),
        "agent-work"
    );
    // Tombstone and audit.
    assert_eq!(rec["tombstone"]["id"], id);
    assert!(rec["tombstone"]["bytes_reclaimed"].as_u64().unwrap() > 0);
    let audit = env.audit();
    assert!(
        audit
            .iter()
            .any(|l| l["event"] == "archived" && l["id"] == id)
    );
    assert!(
        audit
            .iter()
            .any(|l| l["to"] == "removed" && l["from"] == "retiring" && l["id"] == id)
    );
    // The bundle restores the exact commit into a fresh clone of the remote.
    let archive = &rec["archive"];
    assert_eq!(archive["tip"], tip.as_str());
    assert_eq!(archive["commits"], 1);
    let clone = env.root.join("fresh");
    env.git(
        &env.root,
        &[
            "clone",
            "-q",
            env.root.join("remote.git").to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let bundle = archive["location"].as_str().unwrap();
    // The recorded sha256 is the bundle file's (restore and drop check it).
    let sha = sha2::Sha256::digest(fs::read(bundle).unwrap());
    let hex: String = sha.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(archive["sha256"], hex.as_str());
    env.git(
        &clone,
        &[
            "fetch",
            "-q",
            bundle,
            &format!("refs/lease/{id}/head:refs/heads/restored"),
        ],
    );
    assert_eq!(env.git(&clone, &["rev-parse", "restored"]), tip);
    // No lease file, no scratch repository left behind.
    assert!(!Path::new(rec["lease"]["path"].as_str().unwrap()).exists());
    assert_eq!(fs::read_dir(env.state.join("scratch")).unwrap().count(), 0);
}

#[test]
fn clean_pushed_worktree_is_removed_without_an_archive() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = exec_script(&env, &repo, "true");
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed");
    assert!(rec["archive"].is_null(), "nothing unique, nothing archived");
}

#[test]
fn launcher_sigkilled_while_the_command_runs_holds_until_the_command_exits() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (bg, child) = env.spawn_holder(&["--repo", repo.to_str().unwrap()]);
    let _guard = KillOnDrop(child);
    let id = env.record()["id"].as_str().unwrap().to_string();
    // SIGKILL the launcher only (not its group): the command keeps the lease.
    signal(bg.pid(), "KILL");
    wait_until("the launcher to die", || !alive(bg.pid()));
    assert!(alive(child));
    assert_eq!(env.record_of(&id)["state"], "active");
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["consumer-alive"]);
    snap.assert_held_unchanged(&env, &repo, "consumer-alive");
    // The last holder exits: retire proceeds through `interrupted`.
    signal(child, "KILL");
    wait_until("the command to die", || !alive(child));
    let o = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed");
    assert!(
        env.audit()
            .iter()
            .any(|l| l["id"] == id.as_str() && l["to"] == "interrupted"),
        "the record passes through interrupted"
    );
    drop(bg);
}

#[test]
fn daemonized_grandchild_keeps_the_lease_after_the_command_exits() {
    let env = TestEnv::new();
    let repo = env.repo();
    let ready = env.file("ready");
    let script = daemon_script(&ready);
    let o = env.exec_sh(&repo, &script);
    let daemon = read_pid(&ready);
    let _guard = KillOnDrop(daemon);
    assert_code(&o, 0);
    assert!(
        stderr(&o).contains("still hold the lease"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("consumer-alive"),
        "the after-exit retire held: {}",
        stderr(&o)
    );
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    assert_eq!(rec["state"], "terminal");
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["consumer-alive"]);
    // The hold names who holds the lease.
    assert!(
        stdout(&o).contains(&format!("pid {daemon}")),
        "{}",
        stdout(&o)
    );
    snap.assert_held_unchanged(&env, &repo, "consumer-alive");
    signal(daemon, "KILL");
    wait_until("the daemon to die", || !alive(daemon));
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 0);
    assert_eq!(env.record_of(&id)["state"], "removed");
}

/// Leaves something in the worktree, and checks that exec's own retire and
/// an explicit retire both hold with `reason` and change nothing.
fn assert_leftover_holds(setup: &str, reason: &str) {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = exec_script(&env, &repo, setup);
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "terminal", "exec's retire held");
    assert_eq!(rec["attempts"][0]["reasons"][0], reason, "{rec:#}");
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(reasons(&o).contains(&reason.to_string()), "{}", stdout(&o));
    assert_eq!(disposition(&o), "held");
    snap.assert_held_unchanged(&env, &repo, reason);
    assert!(worktree_of(&env, &id).is_dir());
}

#[test]
fn untracked_file_holds() {
    assert_leftover_holds("echo notes > notes.md", "untracked");
}

#[test]
fn untracked_file_hidden_by_repo_config_still_holds() {
    assert_leftover_holds(
        "git config status.showUntrackedFiles no && echo notes > notes.md",
        "untracked",
    );
}

#[test]
fn ignored_env_file_holds() {
    assert_leftover_holds("echo SECRET=1 > .env", "ignored");
}

#[test]
fn modified_tracked_file_holds() {
    assert_leftover_holds("echo changed >> README", "dirty");
}

#[test]
fn skip_worktree_edit_holds() {
    assert_leftover_holds(
        "git update-index --skip-worktree README && echo hidden >> README",
        "hidden-index",
    );
}

#[test]
fn assume_unchanged_edit_holds() {
    assert_leftover_holds(
        "git update-index --assume-unchanged README && echo hidden >> README",
        "hidden-index",
    );
}

/// A hidden symlink is compared by its link text: unchanged it matches,
/// retargeted it holds.
#[test]
fn a_hidden_symlink_matches_only_while_its_target_text_is_unchanged() {
    let link = "ln -s README link && git add link && git commit -qm link && git update-index --skip-worktree link";
    let env = TestEnv::new();
    let repo = env.repo();
    let id = exec_script(&env, &repo, link);
    assert_eq!(env.record_of(&id)["state"], "removed");
    assert_leftover_holds(&format!("{link} && ln -sfn elsewhere link"), "hidden-index");
}

#[test]
fn skip_worktree_without_edit_does_not_hold() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = exec_script(&env, &repo, "git update-index --skip-worktree README");
    assert_eq!(env.record_of(&id)["state"], "removed");
    // Absent, as a sparse checkout leaves it: nothing to lose either.
    let id = exec_script(
        &env,
        &repo,
        "git update-index --skip-worktree README && rm README",
    );
    assert_eq!(env.record_of(&id)["state"], "removed");
}

#[test]
fn detached_head_with_an_unreferenced_commit_is_archived_then_removed() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = exec_script(
        &env,
        &repo,
        "git checkout -q --detach && echo d > d.txt && git add d.txt && git commit -qm detached-work",
    );
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed", "{rec:#}");
    let tip = rec["archive"]["tip"].as_str().unwrap();
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", tip]),
        "detached-work"
    );
    let heads = env.git(
        &repo,
        &[
            "bundle",
            "list-heads",
            rec["archive"]["location"].as_str().unwrap(),
        ],
    );
    assert!(heads.contains(tip));
}

#[test]
fn commit_only_in_the_head_reflog_is_archived() {
    let env = TestEnv::new();
    let repo = env.repo();
    // Commit on a detached HEAD, then move HEAD away: only the reflog holds it.
    let id = exec_script(
        &env,
        &repo,
        "git checkout -q --detach && echo r > r.txt && git add r.txt && git commit -qm reflog-only && git checkout -q -",
    );
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed", "{rec:#}");
    let refs = rec["archive"]["refs"].as_object().unwrap();
    let lost = refs
        .values()
        .map(|v| v.as_str().unwrap())
        .find(|oid| env.git(&repo, &["log", "-1", "--format=%s", oid]) == "reflog-only");
    assert!(
        lost.is_some(),
        "the reflog-only commit is in the bundle: {refs:?}"
    );
}

#[test]
fn squash_merged_branch_deleted_upstream_is_archived_not_stuck() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "exec",
            "--keep",
            "--branch",
            "feat",
            "--",
            "sh",
            "-c",
            "echo f > f.txt && git add f.txt && git commit -qm feat-work && git push -q origin feat",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    // Upstream: squash-merge feat into main, delete feat; the local repo fetches.
    let up = env.root.join("upstream");
    env.git(
        &env.root,
        &[
            "clone",
            "-q",
            remote.to_str().unwrap(),
            up.to_str().unwrap(),
        ],
    );
    env.git(&up, &["merge", "-q", "--squash", "origin/feat"]);
    env.git(&up, &["commit", "-qm", "squash feat"]);
    env.git(&up, &["push", "-q", "origin", "main", ":feat"]);
    env.git(&repo, &["fetch", "-q", "--prune", "origin"]);
    // Release the --keep: adopt-run a no-op makes it terminal again.
    let wt = worktree_of(&env, &id);
    assert_code(
        &env.lease()
            .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
            .output()
            .unwrap(),
        0,
    );
    assert_eq!(env.record_of(&id)["state"], "terminal");
    let o = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed");
    assert_eq!(
        rec["archive"]["commits"], 1,
        "the squashed original is archived"
    );
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "feat"]),
        "feat-work",
        "branch kept"
    );
}

#[test]
fn retiring_one_worktree_never_unregisters_another_whose_directory_is_missing() {
    let env = TestEnv::new();
    let repo = env.repo();
    let other = env.root.join("other");
    env.add_worktree(&repo, "other", &other);
    let admin = admin_dir(&repo, &other);
    let moved = env.root.join("other-away");
    fs::rename(&other, &moved).unwrap();
    let id = exec_script(&env, &repo, "true");
    assert_eq!(env.record_of(&id)["state"], "removed");
    assert!(
        admin.is_dir(),
        "the other registration survives (no repo-wide prune)"
    );
    fs::rename(&moved, &other).unwrap();
    let list = env.git(&repo, &["worktree", "list", "--porcelain"]);
    assert!(list.contains(other.to_str().unwrap()), "{list}");
}

/// E1 (knock-out K19): another worktree of the same repository has the same
/// directory name. Retire names its worktree to git by absolute path, so
/// exactly the recorded one goes and the twin stays registered and intact.
#[test]
fn a_twin_with_the_same_directory_name_is_never_confused() {
    let env = TestEnv::new();
    let repo = env.repo();
    let twins = env.root.join("twins");
    fs::create_dir(&twins).unwrap();
    let id = exec_script(
        &env,
        &repo,
        &format!(
            "git worktree add -q -b twin \"{}/$(basename \"$PWD\")\"",
            twins.display()
        ),
    );
    let wt = worktree_of(&env, &id);
    assert_eq!(env.record_of(&id)["state"], "removed");
    assert!(!wt.exists());
    let twin = twins.join(wt.file_name().unwrap());
    assert!(twin.join(".git").is_file(), "the twin is intact");
    let list = env.git(&repo, &["worktree", "list", "--porcelain"]);
    assert!(list.contains(twin.to_str().unwrap()), "{list}");
    assert!(!list.contains(&format!("{}\n", wt.display())), "{list}");
}

#[test]
fn locked_worktree_holds() {
    let env = TestEnv::new();
    let repo = env.repo();
    // Another tool's lock in place of lease's own.
    let id = exec_script(
        &env,
        &repo,
        "git worktree unlock \"$PWD\" && git worktree lock --reason 'in use by ci' \"$PWD\"",
    );
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "terminal");
    assert_eq!(rec["attempts"][0]["reasons"][0], "git-locked");
}

#[test]
fn operation_in_progress_holds() {
    let env = TestEnv::new();
    let repo = env.repo();
    // A merge stopped on a conflict leaves MERGE_HEAD (and a dirty tree).
    let script = "git checkout -q -b side && echo a > README && git commit -qam side \
        && git checkout -q - && echo b > README && git commit -qam main-side \
        && (git merge -q side || true)";
    let id = exec_script(&env, &repo, script);
    let rec = env.record_of(&id);
    let reasons: Vec<&str> = rec["attempts"][0]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(reasons.contains(&"op-in-progress"), "{reasons:?}");
}

#[test]
fn dry_run_is_read_only_and_says_what_it_would_do() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "exec",
            "--keep",
            "--",
            "sh",
            "-c",
            "echo w > w && git add w && git commit -qm w",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let wt = worktree_of(&env, &id);
    assert_code(
        &env.lease()
            .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
            .output()
            .unwrap(),
        0,
    );
    let state_before = manifest(&env.state);
    let tree_before = manifest(&wt);
    let o = env
        .lease()
        .args(["retire", "--dry-run", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["targets"][0]["disposition"], "would-remove");
    assert_eq!(v["targets"][0]["unique_commits"], 1);
    assert_eq!(
        manifest(&env.state),
        state_before,
        "the state root is untouched"
    );
    assert_eq!(manifest(&wt), tree_before);
}

#[test]
fn dry_run_sees_holders_without_locking() {
    let env = TestEnv::new();
    let repo = env.repo();
    let ready = env.file("ready");
    let script = daemon_script(&ready);
    let o = env.exec_sh(&repo, &script);
    let daemon = read_pid(&ready);
    let _guard = KillOnDrop(daemon);
    assert_code(&o, 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let o = env
        .lease()
        .args(["retire", "--dry-run", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["consumer-alive"]);
}

#[test]
fn replaced_lease_file_holds_lease_identity() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = exec_script(&env, &repo, "echo keep > keep.txt");
    // Make it clean again but swap the lease file for a new inode.
    let wt = worktree_of(&env, &id);
    fs::remove_file(wt.join("keep.txt")).unwrap();
    let lease = env.lease_of(&id);
    let keep_open = fs::File::open(&lease).unwrap();
    fs::remove_file(&lease).unwrap();
    fs::write(&lease, "").unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&lease, fs::Permissions::from_mode(0o600)).unwrap();
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["lease-identity"]);
    snap.assert_held_unchanged(&env, &repo, "lease-identity");
    fs::remove_file(&lease).unwrap();
    let o = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_eq!(reasons(&o), ["lease-missing"]);
    drop(keep_open);
}

#[test]
fn worktree_replaced_by_a_symlink_holds_and_deletes_nothing() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = exec_script(&env, &repo, "echo keep > keep.txt");
    let wt = worktree_of(&env, &id);
    fs::remove_file(wt.join("keep.txt")).unwrap();
    let real = env.root.join("real");
    fs::rename(&wt, &real).unwrap();
    std::os::unix::fs::symlink(&real, &wt).unwrap();
    let before = manifest(&real);
    let o = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["path-identity"]);
    assert_eq!(manifest(&real), before);
}

#[test]
fn retire_by_path_and_refusals_of_bad_targets() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = exec_script(&env, &repo, "mkdir sub && echo x > sub/x");
    let wt = worktree_of(&env, &id);
    // A subdirectory is a usage error.
    let o = env
        .lease()
        .args(["retire", wt.join("sub").to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 2);
    // An unrecorded worktree is held not-recorded.
    let other = env.root.join("plain");
    env.add_worktree(&repo, "plain", &other);
    let o = env
        .lease()
        .args(["retire", "--json", other.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["not-recorded"]);
    assert!(other.is_dir());
    // Unknown ids and no targets are usage errors.
    assert_code(
        &env.lease()
            .args(["retire", "deadbeefdeadbeef"])
            .output()
            .unwrap(),
        2,
    );
    assert_code(&env.lease().args(["retire"]).output().unwrap(), 2);
    // By path, after cleaning up: removed.
    fs::remove_dir_all(wt.join("sub")).unwrap();
    let o = env
        .lease()
        .args(["retire", wt.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(!wt.exists());
}

#[test]
fn retire_from_inside_the_worktree_holds() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = exec_script(&env, &repo, "echo keep > keep.txt");
    let wt = worktree_of(&env, &id);
    fs::remove_file(wt.join("keep.txt")).unwrap();
    let o = env
        .lease()
        .current_dir(&wt)
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["cwd-inside-target"]);
}

#[test]
fn several_targets_exit_with_the_worst_outcome() {
    let env = TestEnv::new();
    let repo = env.repo();
    let dirty = exec_script(&env, &repo, "echo x > x");
    let clean = exec_script(&env, &repo, "echo y > y");
    fs::remove_file(worktree_of(&env, &clean).join("y")).unwrap();
    let o = env
        .lease()
        .args(["retire", "--all", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(env.record_of(&clean)["state"], "removed");
    assert_eq!(env.record_of(&dirty)["state"], "terminal");
    // A corrupt record makes it 3 and is never changed.
    let bad = env
        .state
        .join("records/0123456789abcdef0123456789abcdef.json");
    fs::write(&bad, "{ not json").unwrap();
    let o = env.lease().args(["retire", "--all"]).output().unwrap();
    assert_code(&o, 3);
    assert_eq!(fs::read_to_string(&bad).unwrap(), "{ not json");
}

#[test]
fn a_clean_worktree_does_not_archive_commits_other_branches_keep() {
    let env = TestEnv::new();
    let repo = env.repo();
    // Another leased worktree commits on its own branch and is kept.
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "exec",
            "--keep",
            "--",
            "sh",
            "-c",
            "echo o > o && git add o && git commit -qm other-work",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    // Its branch's reflog is shared, but the branch survives this removal.
    let id = exec_script(&env, &repo, "true");
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed");
    assert!(
        rec["archive"].is_null(),
        "nothing of this worktree's own was at risk: {rec:#}"
    );
}

#[test]
fn a_target_path_may_start_with_dot_dot() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    let wt = PathBuf::from(env.record()["worktree"]["path"].as_str().unwrap());
    // From the repository: `../state/worktrees/<repo dir>/<id>`.
    let rel = Path::new("..").join(wt.strip_prefix(&env.root).unwrap());
    let o = env
        .lease()
        .current_dir(&repo)
        .arg("retire")
        .arg(&rel)
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(env.record()["state"], "removed");
    // A `..` after a name could hide a symlink: still refused, nothing done.
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["retire", "x/../y"])
        .output()
        .unwrap();
    assert_code(&o, 2);
}

#[test]
fn launcher_alive_names_the_launcher_pid() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (bg, _child) = env.spawn_holder(&["--repo", repo.to_str().unwrap()]);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let before = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", "--json", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &v["targets"][0];
    assert_eq!(t["reasons"], serde_json::json!(["launcher-alive"]), "{t}");
    let pid = format!("pid {}", bg.pid());
    assert!(
        t["detail"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d.as_str().unwrap().contains(&pid)),
        "{t}"
    );
    before.assert_held_unchanged(&env, &repo, "launcher-alive");
}

/// A depth-1 clone (what CI checkouts make): the bundle's prerequisite is the
/// shallow tip, whose parents are not there. Verification must stop at the
/// prerequisites (`rev-list ... --not <prerequisites>`), or every retire in
/// a shallow clone would hold `archive-unverified`.
#[test]
fn a_unique_commit_in_a_shallow_clone_is_archived_and_removed() {
    let env = TestEnv::new();
    let repo = env.repo();
    for i in 1..=2 {
        fs::write(repo.join("README"), format!("v{i}\n")).unwrap();
        env.git(&repo, &["commit", "-qam", &format!("history {i}")]);
    }
    env.git(&repo, &["push", "-q", "origin", "main"]);
    let remote = env.root.join("remote.git");
    let shallow = env.root.join("shallow");
    env.git(
        &env.root,
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            &format!("file://{}", remote.display()),
            shallow.to_str().unwrap(),
        ],
    );
    assert!(shallow.join(".git/shallow").exists());
    let id = exec_script(
        &env,
        &shallow,
        "echo x > unique.txt && git add unique.txt && git commit -qm unique",
    );
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed", "{rec:#}");
    let tip = env.git(&shallow, &["rev-parse", "origin/main"]);
    assert_eq!(
        rec["archive"]["prerequisites"],
        serde_json::json!([tip.trim()])
    );
    assert_eq!(rec["archive"]["commits"], 1);
}

/// Lease refuses a git older than 2.36 (it relies on `worktree list -z`,
/// among others) and records the version of the git it used.
#[test]
fn an_old_git_is_refused_and_the_version_used_is_recorded() {
    let env = TestEnv::new();
    let repo = env.repo();
    let real = which("git");
    let old = env.file("old-git");
    write_exe(
        &old,
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'git version 2.20.1'; exit 0; fi\nexec '{}' \"$@\"\n",
            real.display()
        ),
    );
    let id = exec_script(&env, &repo, "true");
    let rec = env.record_of(&id);
    let version = env.git(&repo, &["--version"]);
    assert_eq!(
        rec["tombstone"]["evidence"]["git"]["version"],
        version.trim(),
        "{rec:#}"
    );
    let o = env
        .lease()
        .current_dir(&repo)
        .env("LEASE_GIT", &old)
        .args(["exec", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("git 2.36 or newer"), "{}", stderr(&o));
    assert!(stderr(&o).contains("2.20.1"), "{}", stderr(&o));
}

/// Without `origin`, the trusted remote is the branch's upstream remote, and
/// only if that remote exists: a stale `branch.<b>.remote` naming a removed
/// remote whose tracking refs were left behind makes nothing durable. (git
/// itself resolves no upstream for a remote that does not exist, measured on
/// 2.47; lease checks the remote list as well.)
#[test]
fn the_upstream_remote_is_trusted_only_while_it_exists() {
    let env = TestEnv::new();
    let repo = env.repo();
    env.git(&repo, &["remote", "rename", "origin", "other"]);
    let (id, _) = env.kept(
        &repo,
        "feat",
        "echo w > w.txt && git add w.txt && git commit -qm work",
    );
    let tip = env.git(&repo, &["rev-parse", "feat"]);
    let dry_unique = || {
        let rec = env.record_of(&id);
        let o = env
            .lease()
            .args(["retire", "--dry-run", "--json", &id])
            .output()
            .unwrap();
        assert_code(&o, 0);
        assert_eq!(env.record_of(&id), rec, "a dry run changes nothing");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["targets"][0]["unique_commits"].as_u64().unwrap()
    };
    let unique = |remote: &str| {
        env.git(&repo, &["config", "branch.feat.remote", remote]);
        env.git(&repo, &["config", "branch.feat.merge", "refs/heads/feat"]);
        env.git(
            &repo,
            &["update-ref", &format!("refs/remotes/{remote}/main"), &tip],
        );
        dry_unique()
    };
    assert!(
        unique("gone") > 0,
        "a remote that does not exist is not trusted"
    );
    assert_eq!(
        unique("other"),
        0,
        "the upstream remote's main has the commit"
    );
    // A symbolic HEAD into the remote's own tracking refs names its default
    // branch: here `develop`, which has the commit while `main` does not.
    let base = env.git(&repo, &["rev-parse", &format!("{tip}^")]);
    env.git(&repo, &["update-ref", "refs/remotes/other/main", &base]);
    env.git(&repo, &["update-ref", "refs/remotes/other/develop", &tip]);
    assert!(dry_unique() > 0, "main alone lacks the commit");
    env.git(
        &repo,
        &[
            "symbolic-ref",
            "refs/remotes/other/HEAD",
            "refs/remotes/other/develop",
        ],
    );
    assert_eq!(dry_unique(), 0, "HEAD -> develop has it");
}
