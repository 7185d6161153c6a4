//! SPEC "The command's world": a `lease exec` started from a git hook or
//! alias works in its own worktree and never in the caller's repository or
//! index; a `git worktree add` that fails after registering the worktree
//! (a user's `post-checkout` hook) leaves an `interrupted` record, runs no
//! command, and never deletes a branch some worktree has checked out.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::*;

/// The script a leased command runs: one new file, committed in its worktree.
const COMMIT_IN_WORKTREE: &str =
    "echo leased > work.txt && git add work.txt && git commit -qm leased-work";

/// `git ls-tree -r --name-only REV` in `dir`, one name per entry.
fn files_at(env: &TestEnv, dir: &Path, rev: &str) -> Vec<String> {
    env.git(dir, &["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The one record whose branch is `branch`.
fn record_on(env: &TestEnv, branch: &str) -> serde_json::Value {
    env.records()
        .into_iter()
        .find(|r| r["branch"] == branch)
        .unwrap_or_else(|| panic!("no record on {branch}: {:#?}", env.records()))
}

/// Asserts the leased worktree of `branch` holds the leased commit (and the
/// caller's repository none of it).
#[track_caller]
fn assert_landed_in_worktree(env: &TestEnv, repo: &Path, branch: &str, main_before: &str) {
    let rec = record_on(env, branch);
    assert_eq!(rec["state"], "retained", "{rec:#}");
    let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
    assert_eq!(env.git(&wt, &["log", "-1", "--format=%s"]), "leased-work");
    assert!(files_at(env, &wt, "HEAD").contains(&"work.txt".to_string()));
    assert_eq!(
        env.git(&wt, &["rev-parse", "HEAD^"]),
        main_before,
        "the leased commit sits on the base, nothing of the caller's"
    );
    assert_eq!(env.git(&wt, &["status", "--porcelain"]), "");
    // The caller's index and work tree never saw it.
    assert!(
        !env.git(repo, &["ls-files"]).contains("work.txt"),
        "the caller's index has the leased file"
    );
    assert!(!repo.join("work.txt").exists());
}

#[test]
fn exec_from_a_pre_commit_hook_commits_in_its_own_worktree_not_the_caller_s_index() {
    let env = TestEnv::new();
    let repo = env.repo();
    let base = env.git(&repo, &["rev-parse", "HEAD"]);
    // `git commit -a` runs pre-commit with GIT_INDEX_FILE naming the
    // caller's `index.lock` (an absolute path).
    write_exe(
        &repo.join(".git/hooks/pre-commit"),
        &format!(
            // The leased command's own commit runs this shared hook too.
            "#!/bin/sh\n[ -n \"$LEASE_ID\" ] && exit 0\nexec '{}' exec --keep --branch hooked -- sh -c '{COMMIT_IN_WORKTREE}'\n",
            env!("CARGO_BIN_EXE_lease")
        ),
    );
    fs::write(repo.join("README"), "changed by the caller\n").unwrap();
    env.git(&repo, &["commit", "-qam", "caller-work"]);
    // The caller's commit holds the caller's change, and only that.
    assert_eq!(env.git(&repo, &["log", "-1", "--format=%s"]), "caller-work");
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD^"]), base);
    assert_eq!(files_at(&env, &repo, "HEAD"), [".gitignore", "README"]);
    assert_eq!(env.git(&repo, &["status", "--porcelain"]), "");
    assert_landed_in_worktree(&env, &repo, "hooked", &base);
}

#[test]
fn exec_from_a_git_alias_with_git_dir_set_never_commits_into_the_caller_s_branch() {
    let env = TestEnv::new();
    let repo = env.repo();
    let base = env.git(&repo, &["rev-parse", "main"]);
    // `git --git-dir=... --work-tree=...` exports GIT_DIR and GIT_WORK_TREE
    // (and `-c` exports GIT_CONFIG_PARAMETERS) to the alias.
    let alias = format!(
        "alias.agent=!'{}' exec --keep --branch aliased -- sh -c '{COMMIT_IN_WORKTREE}'",
        env!("CARGO_BIN_EXE_lease")
    );
    let git_dir = format!("--git-dir={}", repo.join(".git").display());
    let work_tree = format!("--work-tree={}", repo.display());
    env.git(&repo, &[&git_dir, &work_tree, "-c", &alias, "agent"]);
    assert_eq!(
        env.git(&repo, &["rev-parse", "main"]),
        base,
        "the caller's branch did not move"
    );
    assert_eq!(env.git(&repo, &["status", "--porcelain"]), "");
    assert_landed_in_worktree(&env, &repo, "aliased", &base);
}

#[test]
fn every_variable_git_clears_for_another_repository_is_gone_from_the_command() {
    let env = TestEnv::new();
    let repo = env.repo();
    let seen = env.file("seen-env");
    let mut c = env.lease();
    c.current_dir(&repo)
        .args(["exec", "--keep", "--", "sh", "-c"])
        .arg(format!("env > '{}'", seen.display()));
    let names = [
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_OBJECT_DIRECTORY",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_GRAFT_FILE",
        "GIT_INDEX_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
    ];
    for n in names {
        c.env(n, "/caller/value");
    }
    // Not a repository variable: it passes through.
    c.env("GIT_EDITOR", "true");
    assert_code(&c.output().unwrap(), 0);
    let env_seen = fs::read_to_string(&seen).unwrap();
    for n in names {
        assert!(
            !env_seen.lines().any(|l| l.starts_with(&format!("{n}="))),
            "{n} reached the command:\n{env_seen}"
        );
    }
    assert!(env_seen.contains("GIT_EDITOR=true"), "{env_seen}");
    assert!(env_seen.contains("LEASE_ID="), "{env_seen}");
}

/// Points the user's own git config (`~/.gitconfig`, which exec's `git
/// worktree add` honours) at a hooks directory holding `post_checkout`.
fn user_post_checkout(env: &TestEnv, post_checkout: &str) {
    let hooks = env.root.join("user-hooks");
    fs::create_dir_all(&hooks).unwrap();
    write_exe(&hooks.join("post-checkout"), post_checkout);
    fs::write(
        env.root.join("home/.gitconfig"),
        format!("[core]\n\thooksPath = {}\n", hooks.display()),
    )
    .unwrap();
}

#[test]
fn a_failing_post_checkout_hook_leaves_an_interrupted_record_and_runs_nothing() {
    let env = TestEnv::new();
    let repo = env.repo();
    user_post_checkout(
        &env,
        "#!/bin/sh\necho 'post-checkout says no' >&2\nexit 3\n",
    );
    let ran = env.file("command-ran");
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--", "touch", ran.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(!ran.exists(), "the command did not run");
    let msg = stderr(&o);
    assert!(
        msg.contains("post-checkout says no"),
        "git's message: {msg}"
    );
    assert!(msg.contains("interrupted"), "{msg}");
    let rec = env.record();
    let id = rec["id"].as_str().unwrap();
    assert_eq!(rec["state"], "interrupted", "{rec:#}");
    let error = rec["outcome"]["error"].as_str().unwrap();
    assert!(error.contains("post-checkout says no"), "{error}");
    assert!(rec["sessions"][0]["ended_at"].is_string(), "{rec:#}");
    // git kept the worktree, registered and locked, on its branch.
    let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
    assert!(wt.join(".git").is_file());
    let branch = format!("lease/{}", &id[..8]);
    let list = env.git(&repo, &["worktree", "list", "--porcelain"]);
    assert!(
        list.contains(&format!("worktree {}\n", wt.display()))
            && list.contains(&format!("branch refs/heads/{branch}\nlocked lease {id} ")),
        "{list}"
    );
    env.git(
        &repo,
        &["rev-parse", "--verify", &format!("refs/heads/{branch}")],
    );
    assert!(
        env.lease_of(id).is_file(),
        "the lease file stays with the record"
    );
    assert_eq!(audit_matches_record(&env, id), Ok(()));
    // The reconciler takes it from there: a clean interrupted worktree goes.
    fs::remove_file(env.root.join("home/.gitconfig")).unwrap();
    let o = env
        .lease()
        .args(["reap", "--apply", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(env.record_of(id)["state"], "removed", "{}", stdout(&o));
    assert!(!wt.exists());
}

#[test]
fn a_failed_add_never_deletes_a_branch_another_worktree_has_checked_out() {
    let env = TestEnv::new();
    let repo = env.repo();
    // The hook moves the new worktree away before failing: git's
    // registration (and the branch lease made) now live elsewhere.
    let moved = env.root.join("moved");
    user_post_checkout(
        &env,
        &format!(
            "#!/bin/sh\ngit worktree unlock \"$PWD\" && git worktree move \"$PWD\" '{}'\nexit 1\n",
            moved.display()
        ),
    );
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--branch", "made-by-lease", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    env.git(
        &repo,
        &["rev-parse", "--verify", "refs/heads/made-by-lease"],
    );
    assert_eq!(
        env.git(&moved, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "made-by-lease",
        "the moved worktree still has its branch"
    );
    // Nothing of lease's is left at the path it asked for.
    let rec = env.record();
    assert_eq!(rec["state"], "removed", "{rec:#}");
    assert!(!env.lease_of(rec["id"].as_str().unwrap()).exists());
}
