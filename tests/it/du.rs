//! `lease du` (SPEC "Provisioned files, disk, and hygiene"): bytes per
//! worktree by class from one walk, what a retire would reclaim now and
//! which gates would hold it instead; the record keeps the measured size,
//! which `lease list` and `lease metrics` show. du changes no worktree and
//! never takes the lease.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::*;

/// `.env` as the main worktree has it (provisioned by `.worktreeinclude`).
const ENV: &str = "API_KEY=sekrit\n";
const GITIGNORE: &str = ".env\ntarget/\n*.log\n";
const INCLUDE: &str = ".env\n";

/// A repository whose `.gitignore` ignores `.env`, `target/` and `*.log`,
/// and whose committed `.worktreeinclude` provisions `.env`.
fn repo(env: &TestEnv) -> PathBuf {
    let repo = env.repo();
    fs::write(repo.join(".gitignore"), GITIGNORE).unwrap();
    fs::write(repo.join(".worktreeinclude"), INCLUDE).unwrap();
    env.git(&repo, &["add", "."]);
    env.git(&repo, &["commit", "-qm", "ignore and include"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    fs::write(repo.join(".env"), ENV).unwrap();
    repo
}

/// Bytes git tracks in a fresh worktree of [`repo`]: README, .gitignore,
/// .worktreeinclude.
fn tracked_bytes() -> u64 {
    ("hello\n".len() + GITIGNORE.len() + INCLUDE.len()) as u64
}

fn du_json(env: &TestEnv, args: &[&str]) -> serde_json::Value {
    let o = env
        .lease()
        .env("LEASE_REBUILDABLE", "target")
        .arg("du")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert_code(&o, 0);
    serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
}

/// A file of exactly `n` bytes at `wt/rel`.
fn sized(wt: &Path, rel: &str, n: usize) {
    let p = wt.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, vec![b'x'; n]).unwrap();
}

#[test]
fn du_counts_every_class_exactly_and_changes_nothing() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let (id, wt) = env.kept(&repo, "du-classes", "true");
    assert!(wt.join(".env").exists(), "provisioned");
    sized(&wt, "notes.txt", 1000);
    sized(&wt, "scratch/deep/a", 234);
    sized(&wt, "debug.log", 5000);
    sized(&wt, "target/debug/app", 70_000);
    sized(&wt, "target/debug/dep.d", 123);
    let before = Snapshot::take(&env, &repo, &id);
    let audit = env.audit().len();

    let v = du_json(&env, &[&id]);
    let t = &v["targets"][0];
    assert_eq!(v["targets"].as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(t["id"], id.as_str());
    let b = &t["bytes"];
    assert_eq!(b["tracked"], tracked_bytes(), "{b:#}");
    assert_eq!(b["untracked"], 1234, "{b:#}");
    assert_eq!(b["ignored_work"], 5000, "{b:#}");
    assert_eq!(b["provisioned"], ENV.len() as u64, "{b:#}");
    assert_eq!(b["rebuildable"], 70_123, "{b:#}");
    let admin = b["admin"].as_u64().unwrap();
    let dot_git = fs::symlink_metadata(wt.join(".git")).unwrap().len();
    assert!(admin > dot_git, "the admin directory counts: {b:#}");
    let sum = tracked_bytes() + 1234 + 5000 + ENV.len() as u64 + 70_123 + admin;
    assert_eq!(b["total"], sum);
    // Untracked and ignored work hold a retire: nothing reclaimed now.
    assert_eq!(t["would"], "hold");
    assert_eq!(t["reclaim"], 0);
    let reasons: Vec<&str> = t["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(reasons.contains(&"untracked"), "{t:#}");
    assert!(reasons.contains(&"ignored"), "{t:#}");
    assert!(t["next"].as_str().unwrap().contains(&id[..8]), "{t:#}");
    assert_eq!(v["total"]["total"], sum);

    // Nothing changed but the record's size; no audit line.
    before.assert_tree_and_admin_unchanged(&env, &repo);
    assert_eq!(env.audit().len(), audit, "du writes no audit line");
    let rec = env.record_of(&id);
    assert_eq!(rec["size"]["bytes"], sum, "{rec:#}");
    assert_eq!(rec["size"]["at"], t["measured_at"]);
    assert!(
        rec["attempts"].as_array().is_none_or(Vec::is_empty),
        "du recorded an attempt: {rec:#}"
    );

    // Clean it up to what a retire removes: the whole size is reclaimable.
    for rel in ["notes.txt", "scratch", "debug.log"] {
        let p = wt.join(rel);
        if p.is_dir() {
            fs::remove_dir_all(p).unwrap();
        } else {
            fs::remove_file(p).unwrap();
        }
    }
    let v = du_json(&env, &[wt.to_str().unwrap()]);
    let t = &v["targets"][0];
    assert_eq!(t["would"], "remove", "{t:#}");
    let total = t["bytes"]["total"].as_u64().unwrap();
    assert_eq!(total, tracked_bytes() + ENV.len() as u64 + 70_123 + admin);
    assert_eq!(t["reclaim"], total);
    assert!(t["reasons"].as_array().unwrap().is_empty());

    // The table: one row, human sizes; --bytes gives raw bytes.
    let o = env
        .lease()
        .env("LEASE_REBUILDABLE", "target")
        .args(["du", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let text = stdout(&o);
    assert!(text.starts_with("ID "), "{text}");
    assert!(text.contains("68K"), "rebuildable 70123 B: {text}");
    let o = env
        .lease()
        .env("LEASE_REBUILDABLE", "target")
        .args(["du", "--bytes", &id])
        .output()
        .unwrap();
    assert!(stdout(&o).contains(&format!(" {total} ")), "{}", stdout(&o));
}

#[test]
fn du_of_a_removed_record_or_an_unknown_id_is_a_usage_error() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env.exec_sh(&repo, "true");
    assert_code(&o, 0);
    let rec = env.record();
    assert_eq!(rec["state"], "removed");
    let id = rec["id"].as_str().unwrap();
    for target in [id, "deadbeefdeadbeef"] {
        let o = env.lease().args(["du", target, "--json"]).output().unwrap();
        assert_code(&o, 2);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["exit"], 2, "{v:#}");
        assert_eq!(v["error"]["kind"], "usage", "{v:#}");
    }
    // With no target, every record that is not removed: none here.
    let v = du_json(&env, &[]);
    assert!(v["targets"].as_array().unwrap().is_empty(), "{v:#}");
    assert_eq!(env.record()["state"], "removed");
}

#[test]
fn du_of_a_running_consumer_reports_it_held_and_leaves_it_running() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (_bg, child) = env.spawn_holder(&["--repo", repo.to_str().unwrap()]);
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    let before = Snapshot::take(&env, &repo, &id);
    let v = du_json(&env, &[]);
    let t = &v["targets"][0];
    assert_eq!(t["id"], id.as_str(), "{v:#}");
    assert_eq!(t["would"], "hold");
    assert_eq!(t["reclaim"], 0);
    let reasons: Vec<&str> = t["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(reasons.contains(&"consumer-alive"), "{t:#}");
    assert!(
        t["bytes"]["tracked"].as_u64().unwrap() > 0,
        "measured anyway: {t:#}"
    );
    assert!(alive(child), "du stopped the consumer");
    before.assert_tree_and_admin_unchanged(&env, &repo);
    let after = env.record_of(&id);
    assert_eq!(after["state"], "active");
    assert_eq!(after["attempts"], rec["attempts"], "no attempt recorded");
    // The consumer still holds the lease shared, so nothing holds it exclusively.
    let o = env.lease().args(["show", &id, "--json"]).output().unwrap();
    let shown: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(shown["locked"], "shared", "{shown:#}");
}

#[test]
fn list_shows_the_size_after_du_and_after_a_held_retire() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let (id, wt) = env.kept(&repo, "du-list", "true");
    let list = |env: &TestEnv| -> serde_json::Value {
        let o = env.lease().args(["list", "--json"]).output().unwrap();
        assert_code(&o, 0);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        v.as_array().unwrap()[0].clone()
    };
    assert!(list(&env).get("size").is_none(), "never measured");
    let o = env.lease().arg("list").output().unwrap();
    let row = stdout(&o).lines().nth(1).unwrap().to_string();
    assert!(row.contains(" - "), "no size yet: {row}");

    // A held retire measured the tree on its way: the size is kept.
    sized(&wt, "notes.txt", 3 * 1024 * 1024);
    let before = Snapshot::take(&env, &repo, &id);
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 1);
    before.assert_held_unchanged(&env, &repo, "untracked");
    let size = list(&env)["size"]["bytes"].as_u64().unwrap();
    assert!(size > 3 * 1024 * 1024, "{size}");
    let o = env.lease().arg("list").output().unwrap();
    assert!(stdout(&o).contains("3.0M"), "{}", stdout(&o));

    // du measures the same bytes and writes them too.
    sized(&wt, "more.txt", 1024);
    let v = du_json(&env, &[&id]);
    let total = v["targets"][0]["bytes"]["total"].as_u64().unwrap();
    assert_eq!(total, size + 1024);
    assert_eq!(list(&env)["size"]["bytes"], total);
    let o = env.lease().args(["list", "--bytes"]).output().unwrap();
    assert!(stdout(&o).contains(&format!(" {total} ")), "{}", stdout(&o));
    let o = env.lease().args(["show", &id]).output().unwrap();
    assert!(
        stdout(&o).contains(&format!("size:      3.0M ({total} bytes, measured at ")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn metrics_export_the_measured_bytes_per_state() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let (_, wt_a) = env.kept(&repo, "du-m1", "true");
    let (_, wt_b) = env.kept(&repo, "du-m2", "true");
    sized(&wt_a, "a.bin", 10_000);
    sized(&wt_b, "b.bin", 20_000);
    let v = du_json(&env, &[]);
    let total = v["total"]["total"].as_u64().unwrap();
    assert!(total > 30_000, "{v:#}");
    let o = env.lease().arg("metrics").output().unwrap();
    assert_code(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains(&format!(
            "lease_worktree_bytes{{state=\"terminal\"}} {total}\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("lease_worktree_bytes{state=\"active\"} 0\n"),
        "{text}"
    );
    assert!(!text.contains(wt_a.to_str().unwrap()), "no path labels");
    let o = env.lease().args(["metrics", "--json"]).output().unwrap();
    let m: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(m["worktree_bytes"]["terminal"], total, "{m:#}");
}

#[test]
fn du_measures_a_retained_worktree_and_names_the_retention() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "exec",
            "--keep",
            "--",
            "sh",
            "-c",
            "head -c 4096 /dev/zero > scratch.bin",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    assert_eq!(rec["state"], "retained");
    let id = rec["id"].as_str().unwrap().to_string();
    let before = Snapshot::take(&env, &repo, &id);
    let v = du_json(&env, &[&id[..8]]);
    let t = &v["targets"][0];
    assert_eq!(
        t["bytes"]["untracked"], 4096,
        "measured though retained: {t:#}"
    );
    assert_eq!(t["bytes"]["provisioned"], ENV.len() as u64, "{t:#}");
    let reasons: Vec<&str> = t["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        ["retained", "untracked"],
        "every gate that would hold: {t:#}"
    );
    let id8 = &id[..8];
    assert_eq!(
        t["next"],
        format!("lease release {id8} && lease retire {id8}").as_str()
    );
    before.assert_tree_and_admin_unchanged(&env, &repo);
    let after = env.record_of(&id);
    assert_eq!(after["state"], "retained");
    assert_eq!(after["retention"], rec["retention"]);
    assert_eq!(after["size"]["bytes"], t["bytes"]["total"]);
}
