//! `lease reap --apply --until-free SIZE` and exec's `--reap-if-low`: real
//! worktrees of different sizes, largest reclaim first, a stop once the
//! target is met, and never a retire a plain reap would not make. Free space
//! is faked only through the fault-injection knobs `LEASE_FI_DISK_BYTES` and
//! `LEASE_FI_DISK_HOLDS` (a disk of that many bytes holding only the
//! worktree root), so removals really free what the fake disk reports.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{Snapshot, TestEnv, assert_code, manifest, stderr};

const MIB: u64 = 1 << 20;

/// Bytes of the files under `dir`, as the fake disk counts them.
fn bytes_under(dir: &Path) -> u64 {
    let mut sum = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else {
                sum += e.metadata().unwrap().len();
            }
        }
    }
    sum
}

/// A terminal worktree holding `mib` MiB of declared rebuildable output
/// (`target/blob`): a reap with `LEASE_REBUILDABLE=target` retires it.
fn sized(env: &TestEnv, repo: &Path, branch: &str, mib: u64) -> (String, PathBuf) {
    env.kept(
        repo,
        branch,
        &format!(
            "mkdir target && head -c {} /dev/zero > target/blob",
            mib * MIB
        ),
    )
}

/// The worktree root every record of `env` uses (the fake disk holds it).
fn worktree_root(env: &TestEnv) -> PathBuf {
    env.state.join("worktrees")
}

/// `lease reap --json ARGS` on a fake disk of `disk` bytes holding the worktree root.
fn reap_on(env: &TestEnv, disk: u64, args: &[&str]) -> (Output, serde_json::Value) {
    let o = env
        .lease()
        .env("LEASE_REBUILDABLE", "target")
        .env("LEASE_FI_DISK_BYTES", disk.to_string())
        .env("LEASE_FI_DISK_HOLDS", worktree_root(env))
        .args(["reap", "--json"])
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", String::from_utf8_lossy(&o.stdout), stderr(&o)));
    (o, v)
}

fn item<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == id)
        .unwrap_or_else(|| panic!("no item {id}: {v:#}"))
}

#[test]
fn until_free_retires_the_largest_first_and_stops_once_the_target_is_met() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (small, small_wt) = sized(&env, &repo, "small", 1);
    let (large, large_wt) = sized(&env, &repo, "large", 3);
    let (middle, middle_wt) = sized(&env, &repo, "middle", 2);
    assert!(worktree_root(&env).is_dir() && large_wt.starts_with(worktree_root(&env)));
    // A disk with 1 MiB free; the target needs 2.5 MiB more: the 3 MiB tree
    // alone reaches it (smallest first would take the 1 and 2 MiB ones).
    let disk = bytes_under(&worktree_root(&env)) + MIB;
    let target = (MIB + 5 * MIB / 2).to_string();
    let (o, v) = reap_on(&env, disk, &["--apply", "--until-free", &target]);
    assert_code(&o, 0);
    assert!(!large_wt.exists(), "the largest went first: {v:#}");
    assert!(
        small_wt.is_dir() && middle_wt.is_dir(),
        "then it stopped: {v:#}"
    );
    assert_eq!(env.record_of(&large)["state"], "removed");
    for id in [&small, &middle] {
        assert_eq!(env.record_of(id)["state"], "terminal");
        assert_eq!(item(&v, id)["disposition"], "not-needed", "{v:#}");
    }
    let u = &v["until_free"];
    assert_eq!(u["met"], true, "{u:#}");
    assert_eq!(u["filesystems"][0]["short_by"], 0);
    assert!(u["kept_by"].as_array().unwrap().is_empty());
    assert!(item(&v, &large)["estimate"].as_u64().unwrap() >= 3 * MIB);
    // A target 2 MiB further: the largest left (2 MiB) goes, the 1 MiB stays.
    let target = (MIB + 9 * MIB / 2).to_string();
    let (o, v) = reap_on(&env, disk, &["--apply", "--until-free", &target]);
    assert_code(&o, 0);
    assert!(!middle_wt.exists(), "{v:#}");
    assert!(small_wt.is_dir(), "{v:#}");
    assert_eq!(env.record_of(&small)["state"], "terminal");
    assert_eq!(v["until_free"]["met"], true);
    // The human report says the target was met.
    let o = env
        .lease()
        .env("LEASE_REBUILDABLE", "target")
        .env("LEASE_FI_DISK_BYTES", disk.to_string())
        .env("LEASE_FI_DISK_HOLDS", worktree_root(&env))
        .args(["reap", "--apply", "--until-free", &target])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("until-free: target of {target} bytes met")),
        "{out}"
    );
    assert!(out.contains("not needed"), "{out}");
    assert!(small_wt.is_dir());
}

#[test]
fn until_free_never_retires_what_a_plain_reap_keeps_and_names_what_kept_it_short() {
    let env = TestEnv::new();
    let repo = env.repo();
    // The largest tree holds 4 MiB of ignored work that is not declared
    // rebuildable: a plain reap keeps it (`ignored`).
    let (work, work_wt) = env.kept(
        &repo,
        "work",
        &format!("head -c {} /dev/zero > .env", 4 * MIB),
    );
    let (small, small_wt) = sized(&env, &repo, "small", 1);
    let disk = bytes_under(&worktree_root(&env)) + MIB;
    // A plain dry run says the worktree with work is held.
    let (o, v) = reap_on(&env, disk, &[]);
    assert_code(&o, 1);
    assert_eq!(item(&v, &work)["disposition"], "held", "{v:#}");
    let tree = manifest(&work_wt);
    // A target only the held tree could reach: the largest is tried first
    // and held; the eligible one is retired, though it cannot reach it.
    let target = (MIB + 5 * MIB).to_string();
    let (o, v) = reap_on(&env, disk, &["--apply", "--until-free", &target]);
    assert_code(&o, 1);
    assert_eq!(item(&v, &work)["disposition"], "held", "{v:#}");
    assert_eq!(manifest(&work_wt), tree, "the held worktree changed");
    assert_eq!(env.record_of(&work)["state"], "terminal");
    assert!(!small_wt.exists(), "{v:#}");
    assert_eq!(env.record_of(&small)["state"], "removed");
    // Alone, the held candidate is kept again with nothing changed but one
    // attempt and one audit line.
    let snap = Snapshot::take(&env, &repo, &work);
    let (o, v) = reap_on(&env, disk, &["--apply", "--until-free", &target]);
    assert_code(&o, 1);
    snap.assert_held_unchanged(&env, &repo, "ignored");
    assert_eq!(item(&v, &work)["disposition"], "held", "{v:#}");
    let u = &v["until_free"];
    assert_eq!(u["met"], false, "{u:#}");
    let short = u["filesystems"][0]["short_by"].as_u64().unwrap();
    assert!(short > 3 * MIB && short <= 4 * MIB, "{u:#}");
    let kept = u["kept_by"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{u:#}");
    assert_eq!(kept[0]["id"], work.as_str());
    assert_eq!(kept[0]["reasons"][0], "ignored");
    assert!(kept[0]["bytes"].as_u64().unwrap() >= 4 * MIB);
    // The human report names the shortfall and the hold.
    let o = env
        .lease()
        .env("LEASE_FI_DISK_BYTES", disk.to_string())
        .env("LEASE_FI_DISK_HOLDS", worktree_root(&env))
        .args(["reap", "--apply", "--until-free", &target])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("MISSED"), "{out}");
    assert!(
        out.contains(&format!("kept by `{}`", work_wt.display())),
        "{out}"
    );
    assert!(work_wt.is_dir());
}

#[test]
fn until_free_sizes_that_do_not_parse_or_overflow_are_usage_errors() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = sized(&env, &repo, "b", 1);
    let before = env.records();
    for args in [
        &["--apply", "--until-free", "16777216T"][..],
        &["--apply", "--until-free", "18446744073709551616"],
        &["--apply", "--until-free", "1Q"],
        &["--apply", "--until-free", "-1"],
        &["--until-free", "1G"],
    ] {
        let o = env
            .lease()
            .env("LEASE_REBUILDABLE", "target")
            .arg("reap")
            .args(args)
            .output()
            .unwrap();
        assert_code(&o, 2);
        assert_eq!(env.records(), before, "{args:?}");
    }
    assert!(wt.is_dir());
    assert_eq!(env.record_of(&id)["state"], "terminal");
}

#[test]
fn reap_if_low_takes_the_largest_first_and_stops_at_the_watermark() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (small, small_wt) = sized(&env, &repo, "small", 1);
    let (large, large_wt) = sized(&env, &repo, "large", 3);
    let disk = bytes_under(&worktree_root(&env)) + MIB;
    // The watermark needs 2 MiB more than is free: the 3 MiB tree is enough.
    let watermark = (3 * MIB).to_string();
    let o = env
        .lease()
        .current_dir(&repo)
        .env("LEASE_REBUILDABLE", "target")
        .env("LEASE_MIN_FREE", &watermark)
        .env("LEASE_FI_DISK_BYTES", disk.to_string())
        .env("LEASE_FI_DISK_HOLDS", worktree_root(&env))
        .args(["exec", "--reap-if-low", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(!large_wt.exists());
    assert_eq!(env.record_of(&large)["state"], "removed");
    assert!(small_wt.is_dir(), "the reap stopped at the watermark");
    assert_eq!(env.record_of(&small)["state"], "terminal");
}
