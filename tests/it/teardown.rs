//! The operator's teardown (SPEC "Provisioned files, disk, and hygiene"):
//! config `teardown` runs once per record after the last consumer is gone
//! and before removal, in the worktree with `LEASE_*` set, bounded in time;
//! a failure holds `teardown-failed` and the tree stays; a crash mid-way is
//! run again and said.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

/// A config file with `teardown = LINE` (and a bound, if given).
fn config(env: &TestEnv, line: &str, timeout: Option<&str>) -> PathBuf {
    let cfg = env.fresh_file("config.toml");
    let mut text = format!("teardown = {}\n", toml_str(line));
    if let Some(t) = timeout {
        text.push_str(&format!("teardown_timeout = \"{t}\"\n"));
    }
    fs::write(&cfg, text).unwrap();
    cfg
}

fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn lease(env: &TestEnv, cfg: &Path) -> Command {
    let mut c = env.lease();
    c.env("LEASE_CONFIG", cfg);
    c
}

/// Records what the teardown saw, one line per run, outside the tree.
fn logging(log: &Path) -> String {
    format!(
        "printf '%s|%s|%s|%s|%s|%s|%s\\n' \"$LEASE_ID\" \"$LEASE_WORKTREE\" \"$LEASE_SLOT\" \"$PWD\" \"$LEASE_TEARDOWN_RUN\" \"${{LEASE_TEARDOWN_INTERRUPTED:-0}}\" \"${{LEASE_FILE:-none}}\" >> {}",
        sh_quote(log)
    )
}

fn runs(log: &Path) -> Vec<Vec<String>> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

/// `lease exec --keep -- sh -c SCRIPT` then release: a terminal record.
fn kept(env: &TestEnv, cfg: &Path, repo: &Path, script: &str) -> (String, PathBuf) {
    let o = lease(env, cfg)
        .current_dir(repo)
        .args(["exec", "--keep", "--", "sh", "-c", script])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.records().into_iter().last().unwrap();
    let id = rec["id"].as_str().unwrap().to_string();
    assert_code(&lease(env, cfg).args(["release", &id]).output().unwrap(), 0);
    (id, PathBuf::from(rec["worktree"]["path"].as_str().unwrap()))
}

#[test]
fn the_teardown_runs_once_in_the_worktree_with_lease_s_variables_then_the_tree_goes() {
    let env = TestEnv::new();
    let repo = env.repo();
    let log = env.root.join("teardown.log");
    let cfg = config(&env, &logging(&log), None);
    let (id, wt) = kept(&env, &cfg, &repo, "echo x > stray");
    // A dry run never runs it.
    let o = lease(&env, &cfg)
        .args(["retire", &id, "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(runs(&log).is_empty(), "a dry run ran the teardown");
    // It runs before the content gates, once: the stray file holds.
    let o = lease(&env, &cfg)
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["untracked"]);
    let seen = runs(&log);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let slot = env.record_of(&id)["slot"].to_string();
    assert_eq!(
        seen[0],
        [
            id.as_str(),
            wt.to_str().unwrap(),
            slot.as_str(),
            wt.to_str().unwrap(),
            "1",
            "0",
            "none"
        ]
    );
    let rec = env.record_of(&id);
    assert_eq!(rec["teardown"]["ok"], true, "{rec:#}");
    assert_eq!(rec["teardown"]["runs"], 1);
    fs::remove_file(wt.join("stray")).unwrap();
    let o = lease(&env, &cfg).args(["retire", &id]).output().unwrap();
    assert_code(&o, 0);
    assert_eq!(runs(&log).len(), 1, "it ran a second time");
    assert_eq!(env.record_of(&id)["state"], "removed");
    assert!(
        env.audit()
            .iter()
            .any(|l| l["event"] == "teardown-done" && l["id"] == id.as_str())
    );
}

#[test]
fn a_failing_teardown_holds_teardown_failed_and_changes_nothing_else() {
    let env = TestEnv::new();
    let repo = env.repo();
    let bad = config(&env, "echo boom >&2; exit 3", None);
    let (id, _) = kept(&env, &bad, &repo, "true");
    let before = Snapshot::take(&env, &repo, &id);
    let o = lease(&env, &bad)
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["teardown-failed"]);
    assert!(stdout(&o).contains("boom"), "{}", stdout(&o));
    // The tree and admin directory are as they were; the record differs by
    // its teardown (the attempt at it) and one more held attempt.
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "terminal");
    assert_eq!(rec["teardown"]["ok"], false);
    assert_eq!(rec["teardown"]["runs"], 1);
    assert!(rec["teardown"]["finished_at"].is_string());
    let last = rec["attempts"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["reasons"], serde_json::json!(["teardown-failed"]));
    before.assert_tree_and_admin_unchanged(&env, &repo);
    // Fixed, it runs again and the tree goes.
    let good = config(&env, "true", None);
    let o = lease(&env, &good).args(["retire", &id]).output().unwrap();
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed");
    assert_eq!(rec["teardown"]["runs"], 2);
    assert_eq!(rec["teardown"]["ok"], true);
}

#[test]
fn a_teardown_that_outlives_its_bound_is_killed_with_its_group_and_holds() {
    let env = TestEnv::new();
    let repo = env.repo();
    let pidfile = env.root.join("child.pid");
    // A child in the same group, and the command itself, both outlive 1s.
    let cfg = config(
        &env,
        &format!("sleep 20 & echo $! > {}; wait", sh_quote(&pidfile)),
        Some("1s"),
    );
    let (id, wt) = kept(&env, &cfg, &repo, "true");
    let o = lease(&env, &cfg)
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["teardown-failed"]);
    assert!(
        stdout(&o).contains("outlived teardown_timeout"),
        "{}",
        stdout(&o)
    );
    let child: u32 = fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(child), "the teardown's child outlived the bound");
    assert!(wt.is_dir(), "the tree stays");
}

#[test]
fn a_crash_mid_teardown_runs_it_again_and_says_so() {
    let env = TestEnv::new();
    let repo = env.repo();
    let log = env.root.join("teardown.log");
    let cfg = config(&env, &logging(&log), None);
    let (id, _) = kept(&env, &cfg, &repo, "true");
    // Killed after the command ran, before its end was recorded.
    let o = lease(&env, &cfg)
        .env("LEASE_FI_CRASH", "teardown-ran")
        .args(["retire", &id])
        .output()
        .unwrap();
    assert!(o.status.code().is_none(), "not killed: {}", stderr(&o));
    let rec = env.record_of(&id);
    assert!(rec["teardown"]["finished_at"].is_null(), "{rec:#}");
    assert_eq!(runs(&log).len(), 1);
    let o = lease(&env, &cfg)
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let seen = runs(&log);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1][4], "2", "the second run says which it is");
    assert_eq!(seen[1][5], "1", "and that the first was interrupted");
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed");
    assert_eq!(rec["teardown"]["interrupted"], 1, "{rec:#}");
    assert!(stdout(&o).contains("interrupted"), "{}", stdout(&o));
    assert!(env.audit().iter().any(|l| {
        l["event"] == "teardown-started"
            && l["detail"][0]
                .as_str()
                .unwrap_or("")
                .contains("interrupted")
    }));
}

#[test]
fn teardown_comes_from_operator_config_files_only() {
    let env = TestEnv::new();
    let repo = env.repo();
    let log = env.root.join("teardown.log");
    // Not an environment variable: LEASE_TEARDOWN is no config.
    let o = env
        .lease()
        .current_dir(&repo)
        .env("LEASE_TEARDOWN", logging(&log))
        .args(["exec", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(runs(&log).is_empty());
    let o = env
        .lease()
        .args(["config", "--show", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(stdout(&o).contains("teardown"), "{}", stdout(&o));
}
