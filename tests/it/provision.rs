//! Provisioning at creation (SPEC "Provisioned files, disk, and hygiene"):
//! ignored files listed in a real `.worktreeinclude` copied in, a real
//! `node_modules` tree symlinked, each recorded; an unchanged one is not
//! work at retire, a changed one holds `ignored` and says why; entries that
//! escape the repository or name tracked paths are usage errors that
//! create nothing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::Digest;

use crate::support::*;

fn with_config(env: &TestEnv, text: &str) -> PathBuf {
    let cfg = env.fresh_file("config.toml");
    fs::write(&cfg, text).unwrap();
    cfg
}

fn lease(env: &TestEnv, cfg: Option<&Path>) -> Command {
    let mut c = env.lease();
    if let Some(cfg) = cfg {
        c.env("LEASE_CONFIG", cfg);
    }
    c
}

/// The repository with an ignored `.env`, an untracked (not ignored)
/// `notes.txt`, and a committed `.worktreeinclude` naming both.
fn repo_with_include(env: &TestEnv) -> PathBuf {
    let repo = env.repo();
    fs::write(
        repo.join(".worktreeinclude"),
        "# Claude Code's convention\n.env\nnotes.txt\n",
    )
    .unwrap();
    env.git(&repo, &["add", ".worktreeinclude"]);
    env.git(&repo, &["commit", "-qm", "worktreeinclude"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    fs::write(repo.join(".env"), "API_KEY=sekrit\n").unwrap();
    fs::write(repo.join("notes.txt"), "not ignored\n").unwrap();
    repo
}

#[test]
fn worktreeinclude_copies_only_ignored_files_and_an_unchanged_copy_retires() {
    let env = TestEnv::new();
    let repo = repo_with_include(&env);
    let o = env.exec_sh(&repo, "grep -q API_KEY=sekrit .env && test ! -e notes.txt");
    assert_code(&o, 0);
    let rec = env.record();
    assert_eq!(rec["state"], "removed", "{rec:#}\n{}", stderr(&o));
    let p = &rec["provisioned"];
    assert_eq!(p.as_array().unwrap().len(), 1, "{p:#}");
    assert_eq!(p[0]["path"], ".env");
    assert_eq!(p[0]["kind"], "file");
    let sha = sha2::Sha256::digest(b"API_KEY=sekrit\n");
    let hex: String = sha.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(p[0]["sha256"], hex.as_str());
    let how = p[0]["how"].as_str().unwrap();
    assert!(how == "copy" || how == "reflink", "{how}");
    if how == "copy" {
        println!("provision: the copy path ran (this filesystem cannot FICLONE)");
    }
    // The main worktree's file is untouched.
    assert_eq!(
        fs::read_to_string(repo.join(".env")).unwrap(),
        "API_KEY=sekrit\n"
    );
}

#[test]
fn a_provisioned_file_that_changed_holds_ignored_and_changes_nothing() {
    let env = TestEnv::new();
    let repo = repo_with_include(&env);
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "sh", "-c", "echo MORE=1 >> .env"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["ignored"]);
    assert!(
        stdout(&o).contains(".env (provisioned at creation, changed since)"),
        "{}",
        stdout(&o)
    );
    snap.assert_held_unchanged(&env, &repo, "ignored");
}

/// The repository's `.gitignore` ignores `target/` as a directory; a
/// committed `.worktreeinclude` names it, and the main worktree holds two
/// files there (one in a subdirectory).
fn repo_with_ignored_dir(env: &TestEnv) -> PathBuf {
    let repo = env.repo();
    fs::write(repo.join(".worktreeinclude"), "target/\n").unwrap();
    env.git(&repo, &["add", ".worktreeinclude"]);
    env.git(&repo, &["commit", "-qm", "worktreeinclude"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    fs::create_dir_all(repo.join("target/sub")).unwrap();
    fs::write(repo.join("target/a.bin"), vec![7u8; 4096]).unwrap();
    fs::write(repo.join("target/sub/b.bin"), vec![9u8; 8192]).unwrap();
    repo
}

#[test]
fn a_provisioned_ignored_directory_retires_when_unchanged_and_holds_when_not() {
    // git reports the ignored directory as one entry (`!! target/`): it is
    // judged by the files the walk finds in it.
    let env = TestEnv::new();
    let repo = repo_with_ignored_dir(&env);
    let o = env.exec_sh(&repo, "test -f target/a.bin && test -f target/sub/b.bin");
    assert_code(&o, 0);
    let rec = env.record();
    assert_eq!(rec["state"], "removed", "{rec:#}\n{}", stderr(&o));
    assert_eq!(rec["provisioned"].as_array().unwrap().len(), 2, "{rec:#}");

    // A file provisioned there changed: the tree holds, and says why.
    let o = keep_release_and_retire(&env, &repo, "echo more >> target/sub/b.bin");
    assert!(
        stdout(&o).contains("target/ (provisioned at creation, changed since)"),
        "{}",
        stdout(&o)
    );
    // A file nobody provisioned beside the provisioned ones: ignored work.
    let o = keep_release_and_retire(&env, &repo, "echo mine > target/new.bin");
    assert!(
        !stdout(&o).contains("provisioned at creation"),
        "{}",
        stdout(&o)
    );
}

/// Runs `script` under `lease exec --keep` in a new worktree of `repo`,
/// releases it, and retires it: the retire must hold `ignored` and change
/// nothing. Returns the retire's output.
fn keep_release_and_retire(env: &TestEnv, repo: &Path, script: &str) -> std::process::Output {
    let before: Vec<serde_json::Value> =
        env.records().into_iter().map(|r| r["id"].clone()).collect();
    let o = env
        .lease()
        .current_dir(repo)
        .args(["exec", "--keep", "--", "sh", "-c", script])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env
        .records()
        .into_iter()
        .find(|r| r["state"] == "retained" && !before.contains(&r["id"]))
        .unwrap();
    let id = rec["id"].as_str().unwrap().to_string();
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    let snap = Snapshot::take(env, repo, &id);
    let o = env
        .lease()
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["ignored"]);
    snap.assert_held_unchanged(env, repo, "ignored");
    o
}

#[test]
fn provision_symlink_links_a_real_node_modules_tree_and_retires_without_touching_it() {
    let env = TestEnv::new();
    let repo = env.repo();
    fs::write(repo.join(".gitignore"), ".env\ntarget/\nnode_modules\n").unwrap();
    fs::write(
        repo.join("package.json"),
        "{\"name\": \"t\", \"version\": \"1.0.0\", \"dependencies\": {\"left-pad\": \"1.3.0\"}}\n",
    )
    .unwrap();
    env.git(&repo, &["add", "."]);
    env.git(&repo, &["commit", "-qm", "node"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    let lp = repo.join("node_modules/left-pad");
    fs::create_dir_all(&lp).unwrap();
    fs::write(
        lp.join("package.json"),
        "{\"name\": \"left-pad\", \"version\": \"1.3.0\", \"main\": \"index.js\"}\n",
    )
    .unwrap();
    fs::write(
        lp.join("index.js"),
        "module.exports = (s, n) => String(s).padStart(n);\n",
    )
    .unwrap();
    let before = manifest(&repo.join("node_modules"));
    let cfg = with_config(&env, "provision_symlink = [\"node_modules\"]\n");
    let node = if which_opt("node") {
        "node -e 'process.exit(require(\"left-pad\")(1, 3) === \"  1\" ? 0 : 1)'"
    } else {
        "test -f node_modules/left-pad/index.js"
    };
    let o = lease(&env, Some(&cfg))
        .current_dir(&repo)
        .args([
            "exec",
            "--",
            "sh",
            "-c",
            &format!("test -L node_modules && {node}"),
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    assert_eq!(rec["state"], "removed", "{rec:#}");
    let p = &rec["provisioned"][0];
    assert_eq!(p["kind"], "symlink");
    assert_eq!(p["target"], repo.join("node_modules").to_str().unwrap());
    assert_eq!(
        manifest(&repo.join("node_modules")),
        before,
        "the main copy changed"
    );
}

fn which_opt(name: &str) -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap()).any(|d| d.join(name).is_file())
}

#[test]
fn an_entry_that_names_a_tracked_path_or_escapes_is_refused_and_creates_nothing() {
    let env = TestEnv::new();
    let repo = env.repo();
    let branches = env.git(&repo, &["branch", "--list"]);
    let listed = env.git(&repo, &["worktree", "list", "--porcelain"]);
    for text in [
        "provision = [\"README\"]\n",
        "provision_symlink = [\"README\"]\n",
        "provision = [\"../outside\"]\n",
        "provision_symlink = [\"a/../../x\"]\n",
    ] {
        let cfg = with_config(&env, text);
        let o = lease(&env, Some(&cfg))
            .current_dir(&repo)
            .args(["exec", "--", "true"])
            .output()
            .unwrap();
        assert_code(&o, 125);
        let e = stderr(&o);
        assert!(
            e.contains("tracked") || e.contains("escapes the repository"),
            "{text}: {e}"
        );
        assert!(env.records().is_empty(), "{text}: a record was made");
        assert_eq!(env.git(&repo, &["branch", "--list"]), branches, "{text}");
        assert_eq!(
            env.git(&repo, &["worktree", "list", "--porcelain"]),
            listed,
            "{text}"
        );
    }
}

/// Unmounts the loop-mounted image at `0` when dropped (declared after the
/// `TestEnv` it covers, so it drops first, even when the test panics).
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn reflink_on_a_filesystem_that_can() {
    // A small xfs image with reflink on, loop-mounted over the sandbox
    // before anything is made in it, so the repository, the state root and
    // the worktree all live on a filesystem that can FICLONE.
    let mkfs = ["mkfs.xfs", "/usr/sbin/mkfs.xfs", "/sbin/mkfs.xfs"]
        .into_iter()
        .find(|m| which_opt(m) || Path::new(m).is_file());
    let Some(mkfs) = mkfs else {
        skip(
            "the reflink assertion needs mkfs.xfs (Debian xfsprogs; the copy path ran in the other provision tests)",
        );
        return;
    };
    if !root_or_skip("loop-mounts an xfs image (the copy path ran in the other provision tests)") {
        return;
    }
    let images = tempfile::tempdir().unwrap();
    let img = images.path().join("reflink.xfs");
    fs::File::create(&img).unwrap().set_len(512 << 20).unwrap();
    let made = Command::new(mkfs)
        .args(["-q", "-m", "reflink=1"])
        .arg(&img)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "mkfs.xfs: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let env = TestEnv::new();
    fs::remove_dir(env.root.join("home")).unwrap();
    let mounted = Command::new("mount")
        .args(["-o", "loop"])
        .arg(&img)
        .arg(&env.root)
        .output()
        .unwrap();
    if !mounted.status.success() {
        skip(&format!(
            "cannot loop-mount an xfs image here: {}",
            String::from_utf8_lossy(&mounted.stderr).trim()
        ));
        return;
    }
    let _unmount = Unmount(env.root.clone());
    fs::create_dir(env.root.join("home")).unwrap();
    let repo = repo_with_include(&env);
    let o = env.exec_sh(&repo, "grep -q API_KEY=sekrit .env");
    assert_code(&o, 0);
    let rec = env.record();
    let p = &rec["provisioned"];
    assert_eq!(p[0]["path"], ".env", "{rec:#}");
    assert_eq!(p[0]["how"], "reflink", "{p:#}\n{}", stderr(&o));
    assert_eq!(rec["state"], "removed", "{rec:#}\n{}", stderr(&o));
}
