//! The oracles tested themselves (docs/QUALIFICATION.md, "Oracle self-tests"): damage the
//! fixture, never the code, and each universal oracle must fire. An oracle
//! that never fails hides every other failure.
//!
//! - O1 canaries: `manifest` and `Fx::assert_clean`.
//! - O2 held means untouched: `Snapshot::assert_held_unchanged`.
//! - O3 reachability: `reachable_commits` and `lost_commits`.
//! - O4 audit chain: `audit_chain_ok` (and lease's own `audit::verify`, whose
//!   unit test `audit::tests::chain_detects_edits` edits a line the same way).
//! - O6 no repository-driven execution: the sentinel log of `Fx`.
//!
//! Each test also runs the oracle on the undamaged fixture first, so a test
//! that passes only because the oracle always fires is caught too.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::adversarial::Fx;
use crate::support::*;

/// True if `f` panics (an asserting oracle fired).
fn fires(f: impl FnOnce()) -> bool {
    catch_unwind(AssertUnwindSafe(f)).is_err()
}

#[test]
fn o1_a_damaged_canary_is_seen() {
    let fx = Fx::new();
    assert!(!fires(|| fx.assert_clean()), "an intact canary passes");
    let file = fx.canary.join("file");
    let bytes = fs::read(&file).unwrap();
    // One byte deleted.
    fs::write(&file, &bytes[1..]).unwrap();
    assert!(fires(|| fx.assert_clean()), "a deleted byte");
    // Same length, one byte changed.
    let mut flipped = bytes.clone();
    flipped[0] ^= 1;
    fs::write(&file, &flipped).unwrap();
    assert!(fires(|| fx.assert_clean()), "a flipped byte");
    fs::write(&file, &bytes).unwrap();
    assert!(!fires(|| fx.assert_clean()), "restored");
    // Mode, a new entry, a symlink's target.
    fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
    assert!(fires(|| fx.assert_clean()), "a changed mode");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
    let before = manifest(&fx.canary);
    std::os::unix::fs::symlink("/a", fx.canary.join("dir/link")).unwrap();
    assert_ne!(manifest(&fx.canary), before, "a new symlink");
    fs::remove_file(fx.canary.join("dir/link")).unwrap();
    std::os::unix::fs::symlink("/b", fx.canary.join("dir/link")).unwrap();
    let with_b = manifest(&fx.canary);
    fs::remove_file(fx.canary.join("dir/link")).unwrap();
    std::os::unix::fs::symlink("/c", fx.canary.join("dir/link")).unwrap();
    assert_ne!(manifest(&fx.canary), with_b, "a retargeted symlink");
}

#[test]
fn o2_a_held_retire_that_changed_anything_is_seen() {
    let fx = Fx::new();
    let (id, wt) = fx.worktree("echo x > untracked.txt");
    let held = |snap: &Snapshot| {
        let o = fx.retire(&id);
        assert_code(&o, 1);
        snap.assert_held_unchanged(&fx.env, &fx.repo, "untracked");
    };
    // Positive control: a real held retire passes.
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    held(&snap);
    // The worktree changed.
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    fs::write(wt.join("untracked.txt"), "y\n").unwrap();
    assert!(fires(|| held(&snap)), "a changed file in the worktree");
    // The admin directory changed.
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    let admin = admin_dir(&fx.repo, &wt);
    fs::write(admin.join("locked"), "").unwrap();
    let o = fx.retire(&id);
    assert_code(&o, 1);
    assert!(
        fires(|| snap.assert_held_unchanged(&fx.env, &fx.repo, "git-locked")),
        "a new file in the admin directory"
    );
    fs::remove_file(admin.join("locked")).unwrap();
    // No attempt recorded, no audit line.
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    assert!(
        fires(|| snap.assert_held_unchanged(&fx.env, &fx.repo, "untracked")),
        "a hold that recorded nothing"
    );
    // The wrong reason.
    let snap = Snapshot::take(&fx.env, &fx.repo, &id);
    assert!(
        fires(|| {
            let o = fx.retire(&id);
            assert_code(&o, 1);
            snap.assert_held_unchanged(&fx.env, &fx.repo, "dirty");
        }),
        "an attempt without the expected reason"
    );
}

#[test]
fn o3_an_unreachable_commit_is_seen_unless_a_bundle_keeps_it() {
    let env = TestEnv::new();
    let repo = env.repo();
    env.git(&repo, &["checkout", "-q", "-b", "doomed"]);
    fs::write(repo.join("doomed.txt"), "x\n").unwrap();
    env.git(&repo, &["add", "doomed.txt"]);
    env.git(&repo, &["commit", "-qm", "doomed"]);
    let doomed = env.git(&repo, &["rev-parse", "HEAD"]);
    let before = reachable_commits(&env, &repo);
    assert!(before.contains(&doomed));
    assert!(
        lost_commits(&env, &repo, &before).is_empty(),
        "nothing lost yet"
    );
    // Archived first, then made unreachable: the bundle keeps it.
    let archives = env.state.join("archives/t");
    fs::create_dir_all(&archives).unwrap();
    let bundle = archives.join("1.bundle");
    env.git(
        &repo,
        &["bundle", "create", "-q", bundle.to_str().unwrap(), "doomed"],
    );
    env.git(&repo, &["checkout", "-q", "main"]);
    env.git(&repo, &["branch", "-q", "-D", "doomed"]);
    env.git(&repo, &["reflog", "expire", "--expire=now", "--all"]);
    env.git(&repo, &["gc", "-q", "--prune=now"]);
    assert!(!reachable_commits(&env, &repo).contains(&doomed));
    assert!(
        lost_commits(&env, &repo, &before).is_empty(),
        "kept in a bundle"
    );
    // Without the bundle it is lost, and O3 says which.
    fs::remove_file(&bundle).unwrap();
    assert_eq!(lost_commits(&env, &repo, &before), [doomed]);
}

#[test]
fn o3_holds_across_a_retire_that_archives() {
    let fx = Fx::new();
    let (id, _) =
        fx.worktree("git checkout -q --detach && echo a > a && git add a && git commit -qm a");
    let before = reachable_commits(&fx.env, &fx.repo);
    fx.remove(&id);
    fx.env
        .git(&fx.repo, &["reflog", "expire", "--expire=now", "--all"]);
    fx.env.git(&fx.repo, &["gc", "-q", "--prune=now"]);
    assert_eq!(
        lost_commits(&fx.env, &fx.repo, &before),
        Vec::<String>::new()
    );
}

#[test]
fn o4_an_edited_or_torn_audit_log_breaks_the_chain() {
    let fx = Fx::new();
    let (id, _) = fx.worktree("echo x > untracked.txt");
    let o = fx.retire(&id);
    assert_code(&o, 1);
    let path = fx.env.state.join("audit.jsonl");
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.lines().count() >= 3, "{text}");
    assert!(audit_chain_ok(&fx.env), "the untouched log verifies");
    // An old line edited, still valid JSON.
    let first = text.lines().next().unwrap();
    let v: serde_json::Value = serde_json::from_str(first).unwrap();
    let edited = first.replacen(v["id"].as_str().unwrap(), &"0".repeat(32), 1);
    assert_ne!(edited, first);
    serde_json::from_str::<serde_json::Value>(&edited).unwrap();
    fs::write(&path, text.replacen(first, &edited, 1)).unwrap();
    assert!(!audit_chain_ok(&fx.env), "an edited old line");
    // A line dropped from the middle.
    let lines: Vec<&str> = text.lines().collect();
    let dropped: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    fs::write(&path, dropped).unwrap();
    assert!(!audit_chain_ok(&fx.env), "a dropped line");
    // A torn tail.
    fs::write(&path, &text[..text.len() - 10]).unwrap();
    assert!(!audit_chain_ok(&fx.env), "a torn last line");
    fs::write(&path, &text).unwrap();
    assert!(audit_chain_ok(&fx.env), "restored");
}

#[test]
fn o6_a_sentinel_that_ran_is_seen() {
    let fx = Fx::new();
    assert!(!fires(|| fx.assert_clean()), "no sentinel yet");
    // The fixture's sentinels are live: plain git runs them.
    fx.env.git(&fx.repo, &["status"]);
    let ran = fs::read_to_string(&fx.log).unwrap_or_default();
    assert!(
        ran.contains("fsmonitor"),
        "git status ran no sentinel: {ran}"
    );
    assert!(fires(|| fx.assert_clean()), "a sentinel that ran");
    fs::remove_file(&fx.log).unwrap();
    // A planted sentinel line.
    fs::write(&fx.log, "hook post-checkout\n").unwrap();
    assert!(fires(|| fx.assert_clean()), "a planted sentinel");
}
