//! Truthful content probes with filter drivers (SPEC "Truthful content
//! probes"): a path that differs only because lease neutralized its filter
//! is `filter-unverifiable`, never `dirty` and never clean; config
//! `trusted_filters` lets the status probe run a driver as the user's own
//! git config defines it, never as the repository's config does. Real
//! git-lfs in a real LFS repository with a bare remote (offline: no LFS
//! object is ever pushed), and a plain shell filter.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;

/// A sandbox whose user git config (`$HOME/.gitconfig`, what `git lfs
/// install` writes) defines filter drivers, and whose repository config
/// defines the same drivers as sentinels that must never run.
struct FilterFx {
    env: TestEnv,
    repo: PathBuf,
    sentinel: PathBuf,
}

impl FilterFx {
    fn new(user_config: &str) -> FilterFx {
        let env = TestEnv::new();
        fs::write(env.root.join("home/.gitconfig"), user_config).unwrap();
        let repo = env.repo();
        let sentinel = env.root.join("sentinel.log");
        FilterFx {
            env,
            repo,
            sentinel,
        }
    }

    /// Defines every driver in the repository's own config as a sentinel
    /// that logs and passes through: lease must never run these.
    fn arm(&self) {
        let tool = self.env.root.join("repo-filter");
        write_exe(
            &tool,
            &format!(
                "#!/bin/sh\necho \"repo filter $*\" >> '{}'\nexec cat\n",
                self.sentinel.display()
            ),
        );
        let tool = tool.to_str().unwrap();
        for d in ["lfs", "x", "y"] {
            for k in ["clean", "smudge"] {
                self.env
                    .git(&self.repo, &["config", &format!("filter.{d}.{k}"), tool]);
            }
        }
        self.env.git(
            &self.repo,
            &["config", "filter.lfs.process", &format!("{tool} p")],
        );
    }

    /// A command with the user's git config in effect (`$HOME/.gitconfig`).
    fn user(&self, program: &str) -> Command {
        let mut c = self.env.cmd(program);
        c.env_remove("GIT_CONFIG_GLOBAL");
        c
    }

    /// git with the user's config, in `dir`.
    fn git(&self, dir: &Path, args: &[&str]) -> String {
        let o = self
            .user("git")
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        assert_code(&o, 0);
        stdout(&o).trim().to_string()
    }

    /// Commits `files` with the user's filters in effect and pushes
    /// without hooks: no LFS object leaves the machine.
    fn commit(&self, attributes: &str, files: &[(&str, &[u8])]) {
        fs::write(self.repo.join(".gitattributes"), attributes).unwrap();
        for (name, bytes) in files {
            fs::write(self.repo.join(name), bytes).unwrap();
        }
        self.git(&self.repo, &["add", "."]);
        self.git(&self.repo, &["commit", "-qm", "filtered files"]);
        self.git(&self.repo, &["push", "-q", "--no-verify", "origin", "main"]);
    }

    /// `lease exec --keep` (its `git worktree add` smudges with the user's
    /// filters), then release: a terminal record. Then arms the
    /// repository's sentinel filters. Returns (id, worktree).
    fn worktree(&self) -> (String, PathBuf) {
        let o = self
            .user(env!("CARGO_BIN_EXE_lease"))
            .current_dir(&self.repo)
            .args(["exec", "--keep", "--", "true"])
            .output()
            .unwrap();
        assert_code(&o, 0);
        let rec = self
            .env
            .records()
            .into_iter()
            .find(|r| r["state"] == "retained")
            .unwrap();
        let id = rec["id"].as_str().unwrap().to_string();
        assert_code(
            &self.env.lease().args(["release", &id]).output().unwrap(),
            0,
        );
        self.arm();
        (id, PathBuf::from(rec["worktree"]["path"].as_str().unwrap()))
    }

    /// `lease retire --json`, with `trusted` as config `trusted_filters`
    /// (in a `--config` file), with the user's git config in effect.
    fn retire(&self, id: &str, trusted: &[&str]) -> Output {
        let mut c = self.user(env!("CARGO_BIN_EXE_lease"));
        if !trusted.is_empty() {
            let file = self.env.root.join("lease.toml");
            let names: Vec<String> = trusted.iter().map(|d| format!("\"{d}\"")).collect();
            fs::write(&file, format!("trusted_filters = [{}]\n", names.join(", "))).unwrap();
            c.arg("--config").arg(file);
        }
        c.args(["retire", "--json", id]).output().unwrap()
    }

    /// Retiring `id` holds with `reason` and changes nothing.
    #[track_caller]
    fn refuse(&self, id: &str, trusted: &[&str], reason: &str) -> serde_json::Value {
        let snap = Snapshot::take(&self.env, &self.repo, id);
        let o = self.retire(id, trusted);
        assert_code(&o, 1);
        assert_eq!(reasons(&o), [reason], "{}", stdout(&o));
        snap.assert_held_unchanged(&self.env, &self.repo, reason);
        self.assert_no_repo_filter_ran();
        serde_json::from_slice(&o.stdout).unwrap()
    }

    #[track_caller]
    fn assert_no_repo_filter_ran(&self) {
        let ran = fs::read_to_string(&self.sentinel).unwrap_or_default();
        assert!(ran.is_empty(), "a repository-defined filter ran:\n{ran}");
    }
}

/// Gives `path` a new mtime, so git's stat data no longer matches and
/// status must compare the content (as after a checkout in the same
/// second as the index write, or a `touch`).
fn restat(path: &Path) {
    let f = fs::File::options().write(true).open(path).unwrap();
    f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 31))
        .unwrap();
}

const LFS_USER_CONFIG: &str = "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n\tprocess = git-lfs filter-process\n\trequired = true\n";

fn lfs_missing() -> bool {
    let found = Command::new("git-lfs").arg("version").output().is_ok();
    if !found {
        skip("git-lfs is not installed (Debian package git-lfs; .ci/run installs it)");
    }
    !found
}

/// A clean LFS worktree: without `trusted_filters` its LFS file cannot be
/// judged (`filter-unverifiable`, naming the driver and the config line,
/// never `dirty`); with `trusted_filters = ["lfs"]` the probe runs the
/// user's git-lfs and the tree retires, the report naming the driver it
/// ran. An edited LFS file still holds `dirty`. The repository's own
/// `filter.lfs.*` never runs (knock-outs K40, K41).
#[test]
fn lfs_worktree_retires_only_with_trusted_lfs_and_an_edit_stays_dirty() {
    if lfs_missing() {
        return;
    }
    let fx = FilterFx::new(LFS_USER_CONFIG);
    let content: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
    fx.commit(
        "*.bin filter=lfs diff=lfs merge=lfs -text\n",
        &[("a.bin", &content)],
    );
    let blob = fx.git(&fx.repo, &["cat-file", "-p", "HEAD:a.bin"]);
    assert!(
        blob.starts_with("version https://git-lfs.github.com/spec/v1"),
        "{blob}"
    );
    let (id, wt) = fx.worktree();
    assert_eq!(fs::read(wt.join("a.bin")).unwrap(), content, "smudged");
    restat(&wt.join("a.bin"));

    // Untrusted: cannot be judged, never dirty.
    let v = fx.refuse(&id, &[], "filter-unverifiable");
    let detail = v["targets"][0]["detail"][0].as_str().unwrap();
    assert!(
        detail.contains("filter `lfs`") && detail.contains("trusted_filters = [\"lfs\"]"),
        "{detail}"
    );
    assert!(detail.ends_with(": a.bin"), "{detail}");

    // Trusted, but edited: a real change.
    let mut edited = content.clone();
    edited.extend_from_slice(b"more");
    fs::write(wt.join("a.bin"), &edited).unwrap();
    let v = fx.refuse(&id, &["lfs"], "dirty");
    assert_eq!(v["targets"][0]["filters"][0]["driver"], "lfs");

    // Trusted and clean, but the repository's config adds an LFS extension,
    // a program git-lfs would run inside its clean filter: held.
    fs::write(wt.join("a.bin"), &content).unwrap();
    restat(&wt.join("a.bin"));
    let ext = fx.env.root.join("repo-filter");
    let ext = format!("{} %f", ext.display());
    for (k, v) in [
        ("lfs.extension.evil.clean", ext.as_str()),
        ("lfs.extension.evil.smudge", ext.as_str()),
        ("lfs.extension.evil.priority", "0"),
    ] {
        fx.env.git(&fx.repo, &["config", k, v]);
    }
    let v = fx.refuse(&id, &["lfs"], "repo-config-executes");
    let detail = v["targets"][0]["detail"][0].as_str().unwrap();
    assert!(detail.contains("lfs.extension.evil.clean"), "{detail}");
    fx.env.git(
        &fx.repo,
        &["config", "--remove-section", "lfs.extension.evil"],
    );

    // Trusted and clean: retires, and says what it ran.
    let o = fx.retire(&id, &["lfs"]);
    assert_code(&o, 0);
    fx.assert_no_repo_filter_ran();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &v["targets"][0];
    assert_eq!(t["disposition"], "removed", "{v}");
    assert_eq!(t["filters"][0]["process"], "git-lfs filter-process");
    assert_eq!(t["filters"][0]["clean"], "git-lfs clean -- %f");
    assert!(
        t["filters"][0]["origin"]
            .as_str()
            .unwrap()
            .starts_with("global file:"),
        "{t}"
    );
    assert_eq!(
        t["tombstone"]["evidence"]["trusted_filters"][0]["driver"],
        "lfs"
    );
    assert!(!wt.exists());
}

/// A plain shell filter (`tr`) in the user's config: the same rules, and
/// a filtered path whose bytes equal the index even unfiltered stays
/// clean without any trust. Trusting a driver the user's config does not
/// define runs the repository's definition never: it holds, naming what
/// to fix (knock-out K41).
#[test]
fn shell_filter_from_the_user_config_never_the_repository_s() {
    let fx = FilterFx::new("[filter \"x\"]\n\tclean = tr a-z A-Z\n\tsmudge = tr A-Z a-z\n");
    fx.commit(
        "*.x filter=x\n*.y filter=y\n",
        &[("a.x", b"hello\n"), ("same.x", b"123\n"), ("b.y", b"y\n")],
    );
    assert_eq!(fx.git(&fx.repo, &["cat-file", "-p", "HEAD:a.x"]), "HELLO");
    let (id, wt) = fx.worktree();
    assert_eq!(fs::read(wt.join("a.x")).unwrap(), b"hello\n");
    for f in ["a.x", "same.x", "b.y"] {
        restat(&wt.join(f));
    }
    let v = fx.refuse(&id, &[], "filter-unverifiable");
    let detail = v["targets"][0]["detail"][0].as_str().unwrap();
    assert!(
        detail.ends_with(": a.x"),
        "same.x is clean unfiltered: {detail}"
    );
    // `y` is trusted, but only the repository defines it: never run.
    fs::write(wt.join("b.y"), "edited\n").unwrap();
    let v = fx.refuse(&id, &["x", "y"], "filter-unverifiable");
    let detail = v["targets"][0]["detail"][0].as_str().unwrap();
    assert!(
        detail.contains("defines neither filter.y.clean nor filter.y.process")
            && detail.ends_with(": b.y"),
        "{detail}"
    );
    fs::write(wt.join("b.y"), "y\n").unwrap();
    restat(&wt.join("b.y"));
    // An edit the trusted filter cleans to something new is dirty.
    fs::write(wt.join("a.x"), "hello world\n").unwrap();
    fx.refuse(&id, &["x"], "dirty");
    fs::write(wt.join("a.x"), "hello\n").unwrap();
    restat(&wt.join("a.x"));
    // A repository `process` would run instead of the user's `clean`.
    fx.env
        .git(&fx.repo, &["config", "filter.x.process", "false"]);
    let v = fx.refuse(&id, &["x"], "filter-unverifiable");
    let detail = v["targets"][0]["detail"][0].as_str().unwrap();
    assert!(detail.contains("sets filter.x.process"), "{detail}");
    fx.env
        .git(&fx.repo, &["config", "--unset", "filter.x.process"]);
    let o = fx.retire(&id, &["x"]);
    assert_code(&o, 0);
    fx.assert_no_repo_filter_ran();
    assert_eq!(fx.env.record_of(&id)["state"], "removed");
}
