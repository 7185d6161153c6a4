//! `lease archive drop`, archival refs on the trusted remote
//! (`retire --archive remote|both`) and `retire --delete-branch`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::*;

/// A command that makes one commit no remote has.
const PRIVATE_WORK: &str = "echo w > work.txt && git add work.txt && git commit -qm private-work";

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// The ref names and commits `git ls-remote` lists in `remote` under `prefix`.
fn remote_refs(env: &TestEnv, remote: &Path, prefix: &str) -> Vec<(String, String)> {
    env.git(&env.root, &["ls-remote", remote.to_str().unwrap()])
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .filter(|(_, r)| r.starts_with(prefix))
        .map(|(o, r)| (r.to_string(), o.to_string()))
        .collect()
}

fn branch_tip(env: &TestEnv, repo: &Path, branch: &str) -> Option<String> {
    let o = env
        .cmd("git")
        .current_dir(repo)
        .args([
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}"),
        ])
        .output()
        .unwrap();
    o.status
        .success()
        .then(|| String::from_utf8(o.stdout).unwrap().trim().to_string())
}

#[test]
fn archive_drop_holds_until_the_commit_is_on_the_remote() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, tip) = archived(&env, &repo, "feat");
    let rec = env.record_of(&id);
    let bundle = PathBuf::from(rec["archive"]["location"].as_str().unwrap());
    let bytes = fs::read(&bundle).unwrap();

    // Only the bundle and a local branch hold the commit: held, nothing deleted.
    let o = env
        .lease()
        .args(["archive", "drop", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(stderr(&o).contains("archive-unreachable"), "{}", stderr(&o));
    assert_eq!(fs::read(&bundle).unwrap(), bytes, "the bundle is unchanged");
    // The record changes only by its audit bookkeeping: one held line.
    let bookkeeping = |mut r: serde_json::Value| {
        let o = r.as_object_mut().unwrap();
        o.remove("audit_seq");
        o.remove("unaudited");
        r
    };
    assert_eq!(
        bookkeeping(env.record_of(&id)),
        bookkeeping(rec),
        "the record is unchanged"
    );
    let held: Vec<_> = env
        .audit()
        .into_iter()
        .filter(|l| l["id"] == id.as_str() && l["event"] == "archive-drop-held")
        .collect();
    assert_eq!(held.len(), 1, "one audit line for the held drop");

    // Pushed to the remote's main (not via the tracking ref: ls-remote decides).
    env.git(
        &repo,
        &["push", "-q", "origin", &format!("{tip}:refs/heads/main")],
    );
    let o = env
        .lease()
        .args(["archive", "drop", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let r = json(&o);
    assert_eq!(r["unreachable"], serde_json::json!([]));
    assert_eq!(r["tips"], serde_json::json!([tip]), "each tip once");
    assert!(!bundle.exists(), "the bundle is deleted");
    assert!(
        env.record_of(&id)["archive"].is_null(),
        "the archive record is gone"
    );
    let last = env.audit().pop().unwrap();
    assert_eq!(last["event"], "archive-dropped");
    assert!(audit_chain_ok(&env));
}

#[test]
fn archive_drop_unreachable_ok_deletes_and_says_so_in_the_audit_log() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, tip) = archived(&env, &repo, "feat");
    let bundle = PathBuf::from(env.record_of(&id)["archive"]["location"].as_str().unwrap());
    let o = env
        .lease()
        .args(["archive", "drop", &id, "--unreachable-ok", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let r = json(&o);
    assert!(
        r["unreachable"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == tip.as_str()),
        "{r}"
    );
    assert!(!bundle.exists());
    assert!(env.record_of(&id)["archive"].is_null());
    let last = env.audit().pop().unwrap();
    assert_eq!(last["event"], "archive-dropped");
    assert_eq!(last["reasons"], serde_json::json!(["archive-unreachable"]));
    let detail = last["detail"].to_string();
    assert!(
        detail.contains("unreachable-ok") && detail.contains(&tip),
        "{detail}"
    );
    assert!(audit_chain_ok(&env));
}

#[test]
fn archive_drop_when_the_repository_is_gone_needs_unreachable_ok() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, tip) = archived(&env, &repo, "feat");
    let rec = env.record_of(&id);
    let bundle = PathBuf::from(rec["archive"]["location"].as_str().unwrap());
    let bytes = fs::read(&bundle).unwrap();
    fs::rename(&repo, env.root.join("repo-moved")).unwrap();
    // Nothing can be proven reachable: refused, nothing deleted.
    let o = env
        .lease()
        .args(["archive", "drop", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(stderr(&o).contains("repo-missing"), "{}", stderr(&o));
    assert_eq!(fs::read(&bundle).unwrap(), bytes, "the bundle is unchanged");
    assert_eq!(env.record_of(&id)["archive"], rec["archive"]);
    // Asked for, it drops every tip as unreachable; a bundle already deleted
    // by hand is no error.
    fs::remove_file(&bundle).unwrap();
    let o = env
        .lease()
        .args(["archive", "drop", &id, "--unreachable-ok", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(json(&o)["unreachable"], serde_json::json!([tip]));
    assert!(env.record_of(&id)["archive"].is_null());
    assert!(audit_chain_ok(&env));
}

#[test]
fn archive_remote_pushes_reads_back_and_restores_without_a_bundle() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let (id, wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    let tip = env.git(&wt, &["rev-parse", "HEAD"]);
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(!wt.exists(), "the worktree is removed");
    let head_ref = format!("refs/lease/archive/{id}/head");
    let on_remote = remote_refs(&env, &remote, &format!("refs/lease/archive/{id}/"));
    assert!(
        on_remote.contains(&(head_ref.clone(), tip.clone())),
        "{on_remote:?}"
    );
    let rec = env.record_of(&id);
    assert_eq!(rec["archive"]["kind"], "remote");
    assert_eq!(rec["archive"]["remote"]["refs"][&head_ref], tip.as_str());
    assert!(
        fs::read_dir(env.state.join("archives"))
            .map(|d| d.count() == 0)
            .unwrap_or(true),
        "no bundle is written in remote mode"
    );

    // The commit now exists only on the remote: restore fetches it by URL.
    env.git(&repo, &["branch", "-D", "feat"]);
    env.git(&repo, &["reflog", "expire", "--expire=now", "--all"]);
    env.git(&repo, &["gc", "-q", "--prune=now"]);
    let o = env
        .lease()
        .args(["restore", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(json(&o)["head"], tip.as_str(), "the exact commit");
}

#[test]
fn archive_both_writes_a_bundle_and_the_archival_ref() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let (id, wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    let tip = env.git(&wt, &["rev-parse", "HEAD"]);
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "both"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["archive"]["kind"], "both");
    assert!(Path::new(rec["archive"]["location"].as_str().unwrap()).is_file());
    let on_remote = remote_refs(&env, &remote, &format!("refs/lease/archive/{id}/head"));
    assert_eq!(
        on_remote,
        vec![(format!("refs/lease/archive/{id}/head"), tip)]
    );
    assert_code(
        &env.lease()
            .args(["archive", "verify", &id])
            .output()
            .unwrap(),
        0,
    );
}

#[test]
fn archive_remote_rejected_push_holds_and_changes_nothing() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    // The remote refuses the archival ref: a ref named `refs/lease/archive`
    // leaves no room for `refs/lease/archive/<id>/head`. (A local remote's
    // own hooks never run: its far side is lease's sanitized git.)
    let main = env.git(&remote, &["rev-parse", "refs/heads/main"]);
    env.git(&remote, &["update-ref", "refs/lease/archive", &main]);
    let (id, wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), vec!["archive-push-failed"]);
    assert!(stdout(&o).contains("git push to"), "{}", stdout(&o));
    snap.assert_held_unchanged(&env, &repo, "archive-push-failed");
    assert!(wt.is_dir());
    assert!(env.record_of(&id)["archive"].is_null());
    assert_eq!(
        remote_refs(&env, &remote, "refs/lease/"),
        vec![("refs/lease/archive".to_string(), main)]
    );
}

#[test]
fn delete_branch_deletes_a_pushed_branch_and_records_its_tip() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = env.kept(
        &repo,
        "feat",
        "echo w > work.txt && git add work.txt && git commit -qm work && git push -q origin HEAD:main",
    );
    let tip = env.git(&wt, &["rev-parse", "HEAD"]);
    let o = env
        .lease()
        .args(["retire", &id, "--delete-branch", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(!wt.exists());
    assert_eq!(branch_tip(&env, &repo, "feat"), None, "the branch is gone");
    let tomb = &env.record_of(&id)["tombstone"];
    assert_eq!(tomb["branch"]["old_tip"], tip.as_str());
    assert_eq!(tomb["branch"]["deleted"], true);
    assert!(env.audit().iter().any(|l| l["event"] == "branch-deleted"));
}

#[test]
fn delete_branch_deletes_an_archived_branch() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    let tip = env.git(&wt, &["rev-parse", "HEAD"]);
    let o = env
        .lease()
        .args(["retire", &id, "--delete-branch", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(branch_tip(&env, &repo, "feat"), None);
    let rec = env.record_of(&id);
    assert_eq!(rec["archive"]["tip"], tip.as_str());
    assert_eq!(rec["tombstone"]["branch"]["old_tip"], tip.as_str());
}

#[test]
fn delete_branch_keeps_a_branch_checked_out_elsewhere() {
    let env = TestEnv::new();
    let repo = env.repo();
    // The leased worktree leaves the branch (detached at the durable main),
    // and the main checkout takes it.
    let (id, wt) = env.kept(&repo, "feat", "git checkout -q --detach");
    env.git(&repo, &["checkout", "-q", "feat"]);
    let before = branch_tip(&env, &repo, "feat").unwrap();
    let o = env
        .lease()
        .args(["retire", &id, "--delete-branch", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let r = json(&o);
    assert_eq!(r["targets"][0]["disposition"], "removed");
    assert_eq!(r["targets"][0]["branch"]["reason"], "branch-checked-out");
    assert!(!wt.exists(), "the worktree retire still completes");
    assert_eq!(branch_tip(&env, &repo, "feat"), Some(before.clone()));
    let tomb = &env.record_of(&id)["tombstone"];
    assert_eq!(tomb["branch"]["deleted"], false);
    assert_eq!(tomb["branch"]["old_tip"], before.as_str());
}

#[test]
fn delete_branch_keeps_an_unproven_tip() {
    let env = TestEnv::new();
    let repo = env.repo();
    // The branch gets a private commit, the worktree moves to the durable
    // main and its reflogs expire: nothing in the worktree is unique, so it
    // is removed without an archive, but the branch is the only copy of the
    // commit and proves nothing.
    let (id, wt) = env.kept(
        &repo,
        "feat",
        "echo w > work.txt && git add work.txt && git commit -qm private-work \
         && git checkout -q --detach origin/main && git reflog expire --expire=now --all",
    );
    let before = branch_tip(&env, &repo, "feat").unwrap();
    let o = env
        .lease()
        .args(["retire", &id, "--delete-branch", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let r = json(&o);
    assert_eq!(r["targets"][0]["disposition"], "removed");
    assert_eq!(r["targets"][0]["branch"]["reason"], "branch-unproven");
    assert!(!wt.exists());
    assert!(
        env.record_of(&id)["archive"].is_null(),
        "nothing was archived"
    );
    assert_eq!(
        branch_tip(&env, &repo, "feat"),
        Some(before.clone()),
        "the branch is unchanged"
    );
    assert_eq!(
        env.record_of(&id)["tombstone"]["branch"]["old_tip"],
        before.as_str()
    );
}

/// Writes an executable script that logs its name to `log` and exits 0.
fn sentinel(dir: &Path, name: &str, log: &Path) -> String {
    let p = dir.join(name);
    fs::write(
        &p,
        format!(
            "#!/bin/sh\necho \"{name} $*\" >> '{}'\nexit 0\n",
            log.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn archive_remote_ignores_pushurl_push_config_and_hooks() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let decoy = env.root.join("decoy.git");
    env.git(
        &env.root,
        &["init", "-q", "--bare", decoy.to_str().unwrap()],
    );
    let (id, wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    let tip = env.git(&wt, &["rev-parse", "HEAD"]);
    let log = env.root.join("sentinel.log");
    let hooks = env.root.join("hooks");
    fs::create_dir(&hooks).unwrap();
    sentinel(&hooks, "pre-push", &log);
    sentinel(&hooks, "reference-transaction", &log);
    let tool = sentinel(&env.root, "tool", &log);
    for (k, v) in [
        ("remote.origin.pushurl", decoy.to_str().unwrap()),
        ("remote.origin.push", "refs/heads/*:refs/heads/decoy/*"),
        ("remote.origin.receivepack", tool.as_str()),
        ("remote.origin.uploadpack", tool.as_str()),
        ("remote.pushDefault", "origin"),
        ("push.gpgSign", "true"),
        ("gpg.program", tool.as_str()),
        ("push.recurseSubmodules", "check"),
        ("push.followTags", "true"),
        ("core.hooksPath", hooks.to_str().unwrap()),
    ] {
        env.git(&repo, &["config", k, v]);
    }
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "remote"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(
        remote_refs(&env, &remote, "refs/lease/"),
        vec![(format!("refs/lease/archive/{id}/head"), tip)]
    );
    assert!(
        remote_refs(&env, &decoy, "").is_empty(),
        "nothing went to pushurl"
    );
    assert!(
        !log.exists(),
        "a sentinel ran: {}",
        fs::read_to_string(&log).unwrap()
    );
}

#[test]
fn archive_remote_refuses_push_insteadof() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let decoy = env.root.join("decoy.git");
    env.git(
        &env.root,
        &["init", "-q", "--bare", decoy.to_str().unwrap()],
    );
    let (id, _wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    env.git(
        &repo,
        &[
            "config",
            &format!("url.{}.pushInsteadOf", decoy.display()),
            remote.to_str().unwrap(),
        ],
    );
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), vec!["archive-push-failed"]);
    snap.assert_held_unchanged(&env, &repo, "archive-push-failed");
    assert!(remote_refs(&env, &decoy, "").is_empty());
    assert!(remote_refs(&env, &remote, "refs/lease/").is_empty());
}

#[test]
fn archive_drop_of_a_remote_archive_deletes_the_archival_ref() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let (id, wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    let tip = env.git(&wt, &["rev-parse", "HEAD"]);
    assert_code(
        &env.lease()
            .args(["retire", &id, "--archive", "remote"])
            .output()
            .unwrap(),
        0,
    );
    // The archival ref alone does not make the archive droppable.
    let o = env.lease().args(["archive", "drop", &id]).output().unwrap();
    assert_code(&o, 1);
    assert_eq!(remote_refs(&env, &remote, "refs/lease/").len(), 1);
    env.git(
        &repo,
        &["push", "-q", "origin", &format!("{tip}:refs/heads/main")],
    );
    // An archival ref that someone moved on the remote is not ours to
    // delete: refused, naming both commits, nothing deleted.
    let archival = format!("refs/lease/archive/{id}/head");
    let base = env.git(&repo, &["rev-parse", &format!("{tip}^")]);
    env.git(&remote, &["update-ref", &archival, &base]);
    let rec = env.record_of(&id);
    let o = env.lease().args(["archive", "drop", &id]).output().unwrap();
    assert_code(&o, 1);
    assert!(
        stderr(&o).contains(&format!("is at {base}, not the archived {tip}")),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        remote_refs(&env, &remote, "refs/lease/"),
        [(archival.clone(), base)]
    );
    assert_eq!(env.record_of(&id)["archive"], rec["archive"]);
    env.git(&remote, &["update-ref", &archival, &tip]);
    let o = env
        .lease()
        .args(["archive", "drop", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(
        json(&o)["remote_refs_deleted"],
        serde_json::json!([format!("refs/lease/archive/{id}/head")])
    );
    assert!(remote_refs(&env, &remote, "refs/lease/").is_empty());
    assert!(env.record_of(&id)["archive"].is_null());
}

#[test]
fn archive_remote_readback_of_another_commit_holds() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let (id, wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    let snap = Snapshot::take(&env, &repo, &id);
    // The remote takes the push; before the readback, its archival ref
    // moves to another commit (a retire paused right after the push).
    let fi = env.file("fi-archive-pushed");
    fs::create_dir_all(&fi).unwrap();
    let mut c = env.lease();
    c.env("LEASE_FI_PAUSE", "archive-pushed")
        .env("LEASE_FI_DIR", &fi)
        .args(["retire", &id, "--archive", "remote", "--json"])
        .stdout(std::process::Stdio::piped());
    let bg = Bg(Some(c.spawn().unwrap()));
    wait_until("pause at archive-pushed", || {
        fi.join("paused-archive-pushed").exists()
    });
    let archival = format!("refs/lease/archive/{id}/head");
    env.git(&remote, &["update-ref", &archival, "refs/heads/main"]);
    fs::write(fi.join("resume-archive-pushed"), "").unwrap();
    let o = bg.wait();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), vec!["archive-push-failed"]);
    assert!(stdout(&o).contains("readback"), "{}", stdout(&o));
    snap.assert_held_unchanged(&env, &repo, "archive-push-failed");
    assert!(wt.is_dir());
}

#[test]
fn archive_remote_without_a_trusted_remote_holds() {
    let env = TestEnv::new();
    let repo = env.repo();
    env.git(&repo, &["remote", "remove", "origin"]);
    let (id, wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), vec!["archive-push-failed"]);
    snap.assert_held_unchanged(&env, &repo, "archive-push-failed");
    assert!(wt.is_dir());
}

#[test]
fn config_archive_remote_joins_a_bundle_flag_to_both() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let cfg = env.root.join("lease.toml");
    fs::write(&cfg, "archive = \"remote\"\n").unwrap();
    let (id, wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    let tip = env.git(&wt, &["rev-parse", "HEAD"]);
    // The flag asks for a bundle, the config file for archival refs: the
    // stricter join writes both.
    let o = env
        .lease()
        .env("LEASE_CONFIG", &cfg)
        .args(["retire", &id, "--archive", "bundle"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["archive"]["kind"], "both", "{}", stderr(&o));
    assert!(Path::new(rec["archive"]["location"].as_str().unwrap()).is_file());
    assert_eq!(
        remote_refs(&env, &remote, &format!("refs/lease/archive/{id}/head")),
        vec![(format!("refs/lease/archive/{id}/head"), tip)]
    );
}

#[test]
fn reap_archives_where_the_config_says() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let cfg = env.root.join("lease.toml");
    fs::write(&cfg, "archive = \"remote\"\n").unwrap();
    let (id, wt) = env.kept(&repo, "feat", PRIVATE_WORK);
    let tip = env.git(&wt, &["rev-parse", "HEAD"]);
    let o = env
        .lease()
        .env("LEASE_CONFIG", &cfg)
        .args(["reap", "--apply"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed", "{}", stderr(&o));
    assert_eq!(rec["archive"]["kind"], "remote");
    assert_eq!(
        remote_refs(&env, &remote, &format!("refs/lease/archive/{id}/head")),
        vec![(format!("refs/lease/archive/{id}/head"), tip)]
    );
}

#[test]
fn a_bundle_archive_pushes_nothing_to_the_remote() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let before = remote_refs(&env, &remote, "refs/");
    let (id, _) = env.kept(&repo, "feat", PRIVATE_WORK);
    let o = env
        .lease()
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["archive"]["kind"], "bundle", "{rec:#}");
    assert_eq!(
        remote_refs(&env, &remote, "refs/"),
        before,
        "the default archive (a bundle) leaves the remote as it was"
    );
}
