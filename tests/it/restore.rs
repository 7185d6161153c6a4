//! `lease restore`, `lease archives`, `lease archive verify` and
//! `lease exec --resume`: archived work comes back as a new leased worktree,
//! never over newer work.

use std::fs;
use std::path::PathBuf;

use crate::support::*;

fn restore(env: &TestEnv, args: &[&str]) -> std::process::Output {
    env.lease().arg("restore").args(args).output().unwrap()
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn restore_after_squash_merge_brings_back_the_exact_commit_once() {
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
    let wt = PathBuf::from(
        env.record_of(&id)["worktree"]["path"]
            .as_str()
            .unwrap()
            .to_string(),
    );
    assert_code(
        &env.lease()
            .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
            .output()
            .unwrap(),
        0,
    );
    assert_code(&env.lease().args(["retire", &id]).output().unwrap(), 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "removed");
    let tip = rec["archive"]["tip"].as_str().unwrap().to_string();
    // The branch is deleted locally too: only the archive has the commit.
    env.git(&repo, &["branch", "-D", "feat"]);
    env.git(&repo, &["reflog", "expire", "--expire=now", "--all"]);
    env.git(&repo, &["gc", "-q", "--prune=now"]);
    assert!(
        env.cmd("git")
            .current_dir(&repo)
            .args(["cat-file", "-e", &tip])
            .status()
            .unwrap()
            .code()
            != Some(0),
        "the commit is gone from the repository"
    );

    let o = restore(&env, &[&id, "--json"]);
    assert_code(&o, 0);
    let r = json(&o);
    assert_eq!(r["head"], tip.as_str(), "the exact commit");
    assert_eq!(r["branch"], "feat");
    let new_wt = PathBuf::from(r["worktree"].as_str().unwrap());
    assert_eq!(fs::read_to_string(new_wt.join("f.txt")).unwrap(), "f\n");
    assert_eq!(env.git(&new_wt, &["rev-parse", "HEAD"]), tip);
    assert_eq!(
        env.git(&repo, &["rev-parse", &format!("refs/lease/restore/{id}")]),
        tip
    );
    let new_id = r["id"].as_str().unwrap();
    let new_rec = env.record_of(new_id);
    assert_eq!(new_rec["restored_from"], id.as_str());
    assert_eq!(new_rec["state"], "retained");
    assert!(new_rec["lease"].is_object(), "a new lease");
    let receipts = env.record_of(&id)["archive"]["receipts"].clone();
    assert_eq!(receipts.as_array().unwrap().len(), 1);
    assert_eq!(receipts[0]["record"], new_id);
    assert_eq!(receipts[0]["head"], tip.as_str());

    // One-shot: a second restore refuses, --again makes another copy.
    let o = restore(&env, &[&id]);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("already-restored"), "{}", stderr(&o));
    // Into a directory other than lease's working directory (env.root).
    let copies = env.root.join("copies");
    fs::create_dir(&copies).unwrap();
    let to = copies.join("again");
    let o = restore(
        &env,
        &[&id, "--again", "--to", to.to_str().unwrap(), "--json"],
    );
    assert_code(&o, 0);
    let r2 = json(&o);
    assert_eq!(r2["head"], tip.as_str());
    assert_ne!(
        r2["branch"], "feat",
        "feat is checked out in the first copy"
    );
    assert_eq!(env.git(&to, &["rev-parse", "HEAD"]), tip);
    assert_eq!(
        env.record_of(&id)["archive"]["receipts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn moved_branch_gets_a_new_name_and_a_demanded_one_holds() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, tip) = archived(&env, &repo, "topic");
    // Someone moves `topic` on after the archive.
    env.git(&repo, &["branch", "-f", "topic", "main"]);
    let moved_to = env.git(&repo, &["rev-parse", "topic"]);

    let o = restore(&env, &[&id, "--branch", "topic"]);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("branch-moved"), "{}", stderr(&o));
    assert_eq!(env.git(&repo, &["rev-parse", "topic"]), moved_to);

    let o = restore(&env, &[&id, "--json"]);
    assert_code(&o, 0);
    let r = json(&o);
    let want = format!("topic-restored-{}", &id[..8]);
    assert_eq!(r["branch"], want.as_str());
    assert_eq!(env.git(&repo, &["rev-parse", &want]), tip);
    assert_eq!(
        env.git(&repo, &["rev-parse", "topic"]),
        moved_to,
        "the moved branch is untouched"
    );
}

#[test]
fn tampered_bundle_refuses_and_verify_says_so() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = archived(&env, &repo, "t1");
    let o = env
        .lease()
        .args(["archive", "verify", &id])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let o = env.lease().args(["archives", "--json"]).output().unwrap();
    assert_code(&o, 0);
    let list = json(&o);
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["commits"], 1);
    assert!(list[0]["size"].as_u64().unwrap() > 0);

    let bundle = PathBuf::from(
        env.record_of(&id)["archive"]["location"]
            .as_str()
            .unwrap()
            .to_string(),
    );
    let mut bytes = fs::read(&bundle).unwrap();
    let last = bytes.len() - 30;
    bytes[last] ^= 0xff;
    fs::write(&bundle, bytes).unwrap();
    let o = env
        .lease()
        .args(["archive", "verify", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(stderr(&o).contains("archive-unverified"), "{}", stderr(&o));
    let records = env.records().len();
    let o = restore(&env, &[&id]);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("archive-unverified"), "{}", stderr(&o));
    assert_eq!(env.records().len(), records, "no new record");
    assert!(
        env.cmd("git")
            .current_dir(&repo)
            .args([
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/lease/restore/{id}")
            ])
            .status()
            .unwrap()
            .code()
            != Some(0),
        "nothing fetched"
    );
}

#[test]
fn restore_to_an_existing_path_refuses_and_writes_nothing() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = archived(&env, &repo, "t2");
    let to = env.root.join("occupied");
    fs::create_dir(&to).unwrap();
    fs::write(to.join("keep.txt"), "mine\n").unwrap();
    let before = manifest(&to);
    let records = env.records().len();
    let o = restore(&env, &[&id, "--to", to.to_str().unwrap()]);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("path-occupied"), "{}", stderr(&o));
    assert_eq!(manifest(&to), before);
    assert_eq!(env.records().len(), records, "no new record");
    assert!(
        env.record_of(&id)["archive"]["receipts"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn resume_runs_in_a_retained_worktree_and_refuses_a_removed_one() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    assert_eq!(rec["state"], "retained");
    let wt = rec["worktree"]["path"].as_str().unwrap().to_string();
    let o = env
        .lease()
        .args([
            "exec",
            "--resume",
            &id[..8],
            "--",
            "sh",
            "-c",
            "pwd; echo $LEASE_ID",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let out = stdout(&o);
    assert!(out.contains(&wt), "{out}");
    assert!(out.contains(&id), "{out}");
    assert_eq!(env.records().len(), 1, "no new record");
    assert_eq!(env.record_of(&id)["sessions"].as_array().unwrap().len(), 2);

    // The directory swapped for a copy (another inode) is not the recorded
    // one: refused before anything runs, nothing recorded.
    let wt = PathBuf::from(wt);
    let aside = wt.with_extension("aside");
    fs::rename(&wt, &aside).unwrap();
    fs::create_dir(&wt).unwrap();
    let rec = env.record_of(&id);
    let o = env
        .lease()
        .args(["exec", "--resume", &id, "--", "touch", "ran"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("path-identity"), "{}", stderr(&o));
    assert!(!wt.join("ran").exists(), "the command never ran");
    assert_eq!(env.record_of(&id), rec, "nothing recorded");
    fs::remove_dir(&wt).unwrap();
    fs::rename(&aside, &wt).unwrap();

    let (gone, _) = archived(&env, &repo, "t3");
    let o = env
        .lease()
        .args(["exec", "--resume", &gone, "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("lease restore"), "{}", stderr(&o));
}

#[test]
fn a_bundle_whose_recorded_sha256_was_rewritten_too_fails_the_unbundle_check() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = archived(&env, &repo, "t4");
    let rec_path = env.state.join("records").join(format!("{id}.json"));
    let mut rec = env.record_of(&id);
    let bundle = PathBuf::from(rec["archive"]["location"].as_str().unwrap().to_string());
    let mut bytes = fs::read(&bundle).unwrap();
    let at = bytes.len() - 30;
    bytes[at] ^= 0xff;
    fs::write(&bundle, &bytes).unwrap();
    let sha = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(&bytes);
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    rec["archive"]["sha256"] = serde_json::json!(sha);
    fs::write(&rec_path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    let o = env
        .lease()
        .args(["archive", "verify", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(stderr(&o).contains("archive-unverified"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("sha256 is"), "{}", stderr(&o));
    let o = restore(&env, &[&id]);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("archive-unverified"), "{}", stderr(&o));
}

#[test]
fn restore_into_a_temp_worktree_root_refuses_like_exec() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = archived(&env, &repo, "t3");
    let state = manifest(&env.state);
    let o = env
        .lease()
        .env("LEASE_ALLOW_TEMP_ROOT", "0")
        .args(["restore", &id])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(stderr(&o).contains("temp-worktree-root"), "{}", stderr(&o));
    assert_eq!(manifest(&env.state), state, "nothing written");
    // Allowed (as TestEnv does): the same restore goes ahead.
    assert_code(&restore(&env, &[&id]), 0);
}

#[test]
fn restore_below_the_free_space_watermark_refuses_like_exec() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = archived(&env, &repo, "low");
    let state = manifest(&env.state);
    let o = env
        .lease()
        .env("LEASE_MIN_FREE", "100%")
        .args(["restore", &id])
        .output()
        .unwrap();
    // Too little free space is the environment, not the request: exit 3
    // (SPEC "Exit codes"; exec reports its own 125).
    assert_code(&o, 3);
    assert!(stderr(&o).contains("watermark"), "{}", stderr(&o));
    assert_eq!(manifest(&env.state), state, "nothing written");
    assert_code(&restore(&env, &[&id]), 0);
}

/// How restore names the branch, case by case (never moving a ref): the
/// archived name if it still points at the tip and nobody has it checked
/// out; else `<name>-restored-<prefix>` on the same terms; else that name
/// with a random suffix; and a copy name that moved holds `branch-moved`.
#[test]
fn restore_reuses_a_branch_at_the_tip_and_names_each_further_copy_apart() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, tip) = archived(&env, &repo, "same");
    let alt = format!("same-restored-{}", &id[..8]);
    let branch_of = |args: &[&str]| {
        let mut all = vec![id.as_str(), "--json"];
        all.extend_from_slice(args);
        let o = restore(&env, &all);
        assert_code(&o, 0);
        let b = json(&o)["branch"].as_str().unwrap().to_string();
        assert_eq!(env.git(&repo, &["rev-parse", &b]), tip, "{b}");
        b
    };
    // Kept by the retire at the archived tip, checked out nowhere: reused.
    assert_eq!(branch_of(&[]), "same");
    // `same` is checked out in that restore now; a copy at the tip that
    // nobody has checked out is reused.
    env.git(&repo, &["branch", &alt, &tip]);
    assert_eq!(branch_of(&["--again"]), alt);
    // Both checked out: a further copy gets a random suffix.
    let third = branch_of(&["--again"]);
    assert!(
        third.starts_with(&format!("{alt}-")) && third.len() == alt.len() + 9,
        "{third}"
    );

    // Another archive whose name and copy name both moved on: held.
    let (id2, _) = archived(&env, &repo, "gone");
    env.git(&repo, &["branch", "-f", "gone", "main"]);
    let alt2 = format!("gone-restored-{}", &id2[..8]);
    env.git(&repo, &["branch", &alt2, "main"]);
    let state = manifest(&env.state);
    let o = restore(&env, &[&id2]);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("branch-moved"), "{}", stderr(&o));
    assert!(stderr(&o).contains(&alt2), "{}", stderr(&o));
    assert_eq!(manifest(&env.state), state, "nothing written");
}

/// A sha256 repository: libgit2 does not read it, so its object format
/// comes from git (`rev-parse --show-object-format`), and the scratch
/// repositories that build and verify the bundle are sha256 too. The
/// archived commit comes back with its own 64-hex id.
#[test]
fn a_sha256_repository_archives_and_restores_in_its_own_object_format() {
    let env = TestEnv::new();
    let repo = env.repo_with(&["--object-format=sha256"]);
    let (id, tip) = archived(&env, &repo, "feat");
    assert_eq!(tip.len(), 64, "a sha256 id: {tip}");
    let rec = env.record_of(&id);
    let bundle = PathBuf::from(rec["archive"]["location"].as_str().unwrap());
    let head = fs::read(&bundle).unwrap();
    assert!(
        head.starts_with(b"# v3 git bundle\n@object-format=sha256\n"),
        "{}",
        String::from_utf8_lossy(&head[..60.min(head.len())])
    );
    env.git(&repo, &["branch", "-D", "feat"]);
    env.git(&repo, &["reflog", "expire", "--expire=now", "--all"]);
    env.git(&repo, &["gc", "-q", "--prune=now"]);
    let o = restore(&env, &[&id, "--json"]);
    assert_code(&o, 0);
    let r = json(&o);
    assert_eq!(r["head"], tip.as_str(), "the exact commit");
    let new_wt = PathBuf::from(r["worktree"].as_str().unwrap());
    assert_eq!(fs::read_to_string(new_wt.join("work.txt")).unwrap(), "w\n");
}
