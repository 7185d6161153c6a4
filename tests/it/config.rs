//! Layered policy (`lease config --show`), free-space admission with
//! `--reap-if-low`, and the refusal of a worktree root under a temp directory.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::{TestEnv, assert_code, stderr, stdout, which};

/// Writes the user config file (`~/.config/lease/config.toml`).
fn user_config(env: &TestEnv, text: &str) -> PathBuf {
    let dir = env.root.join("home/.config/lease");
    fs::create_dir_all(&dir).unwrap();
    let p = dir.join("config.toml");
    fs::write(&p, text).unwrap();
    p
}

/// `lease config --show --json` with extra args and environment.
fn show(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> serde_json::Value {
    let o = env
        .lease()
        .args(args)
        .args(["config", "--show", "--json"])
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    assert_code(&o, 0);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
}

/// The settings named `key` (min_free may have two rows: bytes and percent).
fn settings<'a>(v: &'a serde_json::Value, key: &str) -> Vec<&'a serde_json::Value> {
    v["settings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["key"] == key)
        .collect()
}

fn setting<'a>(v: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    let s = settings(v, key);
    assert_eq!(s.len(), 1, "one {key} in {v:#}");
    s[0]
}

fn file_source(p: &Path) -> serde_json::Value {
    serde_json::json!({"kind": "file", "name": p.to_str().unwrap()})
}

#[test]
fn a_key_in_the_user_config_is_shown_with_its_file() {
    let env = TestEnv::new();
    let user = user_config(
        &env,
        "trusted_remote = \"upstream\"\norphan_grace = \"30d\"\nrebuildable = [\"target\"]\n",
    );
    let v = show(&env, &[], &[]);
    assert_eq!(v["files"], serde_json::json!([user.to_str().unwrap()]));
    let t = setting(&v, "trusted_remote");
    assert_eq!(t["value"], "upstream");
    assert_eq!(t["source"], file_source(&user));
    assert_eq!(
        setting(&v, "rebuildable")["value"],
        serde_json::json!(["target"])
    );
    assert_eq!(setting(&v, "orphan_grace")["value"], "30days");
    // Not set anywhere: the default, said so.
    assert_eq!(setting(&v, "git")["source"]["kind"], "default");
    // The state root comes from LEASE_HOME.
    let s = setting(&v, "state_root");
    assert_eq!(
        s["source"],
        serde_json::json!({"kind": "env", "name": "LEASE_HOME"})
    );
    // The text form names the source too.
    let o = env.lease().args(["config", "--show"]).output().unwrap();
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains(&format!("(file {})", user.display())),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_unknown_key_is_a_usage_error_naming_the_file_and_writing_nothing() {
    let env = TestEnv::new();
    let repo = env.repo();
    let user = user_config(&env, "min_free = \"1G\"\nmin_fre = \"2G\"\n");
    for args in [
        &["config", "--show"][..],
        &["list"][..],
        &["reap", "--apply"][..],
    ] {
        let o = env.lease().args(args).output().unwrap();
        assert_code(&o, 2);
        let e = stderr(&o);
        assert!(e.contains(user.to_str().unwrap()), "{args:?}: {e}");
        assert!(e.contains("min_fre"), "{args:?}: {e}");
        assert!(e.contains("line 2"), "{args:?}: {e}");
    }
    // exec keeps its own convention (125), and nothing was created.
    let branches = env.git(&repo, &["branch", "--list"]);
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("min_fre"), "{}", stderr(&o));
    assert!(!env.state.exists(), "no state root was created");
    assert_eq!(env.git(&repo, &["branch", "--list"]), branches);
    // A missing --config file is an error too.
    fs::remove_file(&user).unwrap();
    let o = env
        .lease()
        .args(["--config", "/nonexistent/lease.toml", "config", "--show"])
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("/nonexistent/lease.toml"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn safety_settings_join_to_the_stricter_value_whatever_the_order() {
    let env = TestEnv::new();
    let user = user_config(&env, "min_free = \"10%\"\nprocess_audit = \"strict\"\n");
    let later = env.file("later.toml");
    fs::write(
        &later,
        "min_free = \"1%\"\nprocess_audit = \"normal\"\nallow_temp_worktree_root = false\n",
    )
    .unwrap();
    let later_s = later.to_str().unwrap();
    let v = show(
        &env,
        &["--config", later_s],
        &[("LEASE_PROCESS_AUDIT", "normal")],
    );
    assert_eq!(
        v["files"],
        serde_json::json!([user.to_str().unwrap(), later_s])
    );
    let percent: Vec<_> = settings(&v, "min_free")
        .into_iter()
        .filter(|s| s["value"].as_str().unwrap().ends_with('%'))
        .collect();
    assert_eq!(percent.len(), 1);
    assert_eq!(percent[0]["value"], "10%");
    assert_eq!(percent[0]["source"], file_source(&user));
    let audit = setting(&v, "process_audit");
    assert_eq!(audit["value"], "strict");
    assert_eq!(audit["source"], file_source(&user));
    // A later "false" beats the environment's allow (LEASE_ALLOW_TEMP_ROOT=1).
    let allow = setting(&v, "allow_temp_worktree_root");
    assert_eq!(allow["value"], false);
    assert_eq!(allow["source"], file_source(&later));
    // LEASE_CONFIG names the same file when --config is absent.
    let v = show(&env, &[], &[("LEASE_CONFIG", later_s)]);
    assert_eq!(setting(&v, "allow_temp_worktree_root")["value"], false);
}

#[test]
fn the_environment_feeds_config_only_through_the_documented_list() {
    let env = TestEnv::new();
    let v = show(
        &env,
        &[],
        &[
            ("LEASE_PROCESS_AUDIT", "strict"),
            ("LEASE_TRUSTED_REMOTE", "up"),
            ("LEASE_OWNER", "ci:job-7"),
        ],
    );
    let audit = setting(&v, "process_audit");
    assert_eq!(audit["value"], "strict");
    assert_eq!(
        audit["source"],
        serde_json::json!({"kind": "env", "name": "LEASE_PROCESS_AUDIT"})
    );
    assert_eq!(setting(&v, "trusted_remote")["value"], "up");
    assert_eq!(setting(&v, "owner")["value"], "ci:job-7");
    let bytes = settings(&v, "min_free");
    assert_eq!(bytes.len(), 1);
    assert_eq!(
        bytes[0]["source"],
        serde_json::json!({"kind": "env", "name": "LEASE_MIN_FREE"})
    );
    // A bad value in a documented variable names it.
    let o = env
        .lease()
        .env("LEASE_PROCESS_AUDIT", "lax")
        .args(["config", "--show"])
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(stderr(&o).contains("LEASE_PROCESS_AUDIT"), "{}", stderr(&o));
}

#[test]
fn a_leased_command_sees_the_same_policy() {
    let env = TestEnv::new();
    let repo = env.repo();
    let outside = show(&env, &[], &[]);
    // Exec's own variables and unknown LEASE_* are never config.
    let noisy = show(
        &env,
        &[],
        &[
            ("LEASE_ID", "zzz"),
            ("LEASE_FD", "not-a-number"),
            ("LEASE_FILE", "/nowhere"),
            ("LEASE_IDENTITY", "1:2"),
            ("LEASE_WORKTREE", "relative"),
            ("LEASE_SOMETHING_NEW", "x"),
        ],
    );
    assert_eq!(noisy, outside);
    // And inside a real leased command.
    let out = env.file("inside.json");
    let lease = env!("CARGO_BIN_EXE_lease");
    let o = env.exec_sh(
        &repo,
        &format!(
            "test -n \"$LEASE_ID\" && '{lease}' config --show --json > '{}'",
            out.display()
        ),
    );
    assert_code(&o, 0);
    let mut inside: serde_json::Value = serde_json::from_slice(&fs::read(&out).unwrap()).unwrap();
    // Exec exports `LEASE_GIT`, the git it resolved (for the git shim), so
    // inside, `git` comes from the environment: the same git outside
    // resolves (the first on PATH), named by its path.
    let mut outside = outside;
    let git_of = |v: &mut serde_json::Value| {
        let settings = v["settings"].as_array_mut().unwrap();
        let i = settings.iter().position(|s| s["key"] == "git").unwrap();
        settings.remove(i)
    };
    let (git_in, git_out) = (git_of(&mut inside), git_of(&mut outside));
    assert_eq!(git_out["source"]["kind"], "default", "{git_out}");
    assert_eq!(git_in["source"]["name"], "LEASE_GIT", "{git_in}");
    assert_eq!(git_in["value"], which("git").to_str().unwrap(), "{git_in}");
    assert_eq!(inside, outside);
}

/// A clean worktree whose record is `terminal`: a reap would retire it.
fn reapable(env: &TestEnv, repo: &Path) -> (String, PathBuf) {
    let o = env
        .lease()
        .current_dir(repo)
        .args(["exec", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    assert_eq!(env.record_of(&id)["state"], "terminal");
    let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
    assert!(wt.is_dir());
    (id, wt)
}

#[test]
fn reap_if_low_frees_space_by_a_safe_reap_then_admits() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = reapable(&env, &repo);
    // The disk reads full while the reapable worktree exists.
    let full = [("LEASE_FI_FULL_WHILE", wt.to_str().unwrap())];
    let exec = |extra: &[&str]| {
        env.lease()
            .current_dir(&repo)
            .envs(full)
            .arg("exec")
            .args(extra)
            .args(["--", "true"])
            .output()
            .unwrap()
    };
    // Without --reap-if-low: refused, nothing changed.
    let before = env.records();
    let branches = env.git(&repo, &["branch", "--list"]);
    let o = exec(&[]);
    assert_code(&o, 125);
    assert!(stderr(&o).contains("watermark"), "{}", stderr(&o));
    assert_eq!(env.records(), before);
    assert!(wt.is_dir());
    assert_eq!(env.git(&repo, &["branch", "--list"]), branches);
    // With it: the reap retires the terminal worktree, then exec runs.
    let o = exec(&["--reap-if-low"]);
    assert_code(&o, 0);
    assert!(!wt.exists(), "the reap removed it");
    assert_eq!(env.record_of(&id)["state"], "removed");
    assert_eq!(env.records().len(), 2, "the new session's record");
}

#[test]
fn reap_if_low_still_refuses_when_the_reap_frees_too_little() {
    let env = TestEnv::new();
    let repo = env.repo();
    // Full for good: a file that no reap removes.
    let pin = env.file("pin");
    fs::write(&pin, "x").unwrap();
    let (id, wt) = reapable(&env, &repo);
    let o = env
        .lease()
        .current_dir(&repo)
        .env("LEASE_FI_FULL_WHILE", &pin)
        .args(["exec", "--reap-if-low", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("not enough"), "{}", stderr(&o));
    // The reap ran (it is safe), and exec created nothing.
    assert!(!wt.exists());
    assert_eq!(env.record_of(&id)["state"], "removed");
    assert_eq!(env.records().len(), 1);
}

#[test]
fn a_worktree_root_under_a_temp_dir_is_refused_unless_allowed() {
    let env = TestEnv::new();
    let repo = env.repo();
    assert!(
        env.state.starts_with("/tmp")
            || std::env::var_os("TMPDIR").is_some_and(|t| env.state.starts_with(t)),
        "the sandbox is under a temp directory"
    );
    let exec = |vars: &[(&str, &str)], extra: &[&str]| {
        let mut c = env.lease();
        c.env_remove("LEASE_ALLOW_TEMP_ROOT")
            .current_dir(&repo)
            .envs(vars.iter().copied())
            .arg("exec")
            .args(extra)
            .args(["--", "true"]);
        c.output().unwrap()
    };
    let branches = env.git(&repo, &["branch", "--list"]);
    let o = exec(&[], &[]);
    assert_code(&o, 125);
    assert!(
        stderr(&o).contains("[temp-worktree-root]"),
        "{}",
        stderr(&o)
    );
    assert!(
        !env.state.exists(),
        "nothing created, not even the state root"
    );
    assert_eq!(env.git(&repo, &["branch", "--list"]), branches);
    // A configured root is checked the same way (here through a symlink;
    // the unit test `paths::tests::temp_roots` resolves one out of a temp dir).
    let link = env.root.join("elsewhere");
    std::os::unix::fs::symlink(&env.root, &link).unwrap();
    let o = exec(
        &[("LEASE_WORKTREE_ROOT", link.join("wts").to_str().unwrap())],
        &[],
    );
    assert_code(&o, 125);
    assert!(stderr(&o).contains("temp-worktree-root"), "{}", stderr(&o));
    // Allowed by the flag, or by config.
    assert_code(&exec(&[], &["--allow-temp-root"]), 0);
    user_config(&env, "allow_temp_worktree_root = true\n");
    assert_code(&exec(&[], &[]), 0);
    // A "false" in any layer wins over the flag.
    let deny = env.file("deny.toml");
    fs::write(&deny, "allow_temp_worktree_root = false\n").unwrap();
    let o = exec(
        &[("LEASE_CONFIG", deny.to_str().unwrap())],
        &["--allow-temp-root"],
    );
    assert_code(&o, 125);
    assert_eq!(env.records().len(), 2, "only the two allowed runs");
}

#[test]
fn a_configured_worktree_root_and_trusted_remote_are_used() {
    let env = TestEnv::new();
    let repo = env.repo();
    let wts = env.root.join("wts");
    let cfg = env.file("lease.toml");
    fs::write(&cfg, format!("worktree_root = \"{}\"\n", wts.display())).unwrap();
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "exec",
            "--keep",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record();
    let wt = rec["worktree"]["path"].as_str().unwrap();
    assert!(wt.starts_with(wts.to_str().unwrap()), "{wt}");
    assert_eq!(
        rec["root"]["path"].as_str().unwrap(),
        Path::new(wt).parent().unwrap().to_str().unwrap()
    );
    // A trusted remote that does not exist: origin proves nothing, the
    // repository's own default branch plays the durable ref's part
    // (`durable: local`), and a commit only the worktree has is archived.
    let run = |vars: &[(&str, &str)]| {
        let before: Vec<serde_json::Value> =
            env.records().iter().map(|r| r["id"].clone()).collect();
        let o = env
            .lease()
            .current_dir(&repo)
            .envs(vars.iter().copied())
            .args([
                "exec",
                "--",
                "sh",
                "-c",
                "git commit -q --allow-empty -m x && git push -q origin HEAD:refs/heads/pushed",
            ])
            .output()
            .unwrap();
        assert_code(&o, 0);
        let mut recs = env.records();
        recs.retain(|r| !before.contains(&r["id"]));
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0]["state"], "removed");
        recs.pop().unwrap()
    };
    let trusted = run(&[("LEASE_TRUSTED_REMOTE", "origin")]);
    assert_eq!(
        trusted["tombstone"]["evidence"]["durable"]["kind"], "remote",
        "{trusted:#}"
    );
    let untrusted = run(&[("LEASE_TRUSTED_REMOTE", "nosuch")]);
    assert_eq!(
        untrusted["tombstone"]["evidence"]["durable"]["kind"], "local",
        "{untrusted:#}"
    );
    assert_eq!(untrusted["archive"]["commits"], 1, "{untrusted:#}");
}

/// A configured worktree root elsewhere gets its missing parents, and is
/// refused when reached through a symlinked ancestor (its path must be
/// physical, as the state root's is).
#[test]
fn a_configured_worktree_root_gets_its_parents_and_no_symlinked_ancestor() {
    let env = TestEnv::new();
    let repo = env.repo();
    let exec = |wts: &Path| {
        let cfg = env.file("lease.toml");
        fs::write(&cfg, format!("worktree_root = \"{}\"\n", wts.display())).unwrap();
        env.lease()
            .current_dir(&repo)
            .args([
                "--config",
                cfg.to_str().unwrap(),
                "exec",
                "--keep",
                "--",
                "true",
            ])
            .output()
            .unwrap()
    };
    let deep = env.root.join("deep/er/wts");
    assert_code(&exec(&deep), 0);
    assert!(deep.is_dir());
    fs::create_dir(env.root.join("real")).unwrap();
    std::os::unix::fs::symlink(env.root.join("real"), env.root.join("link")).unwrap();
    let records = env.records().len();
    let o = exec(&env.root.join("link/wts"));
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("symlink"), "{}", stderr(&o));
    assert_eq!(env.records().len(), records, "no record made");
}

#[test]
fn adopting_under_a_temp_dir_is_not_refused_as_nothing_is_created_there() {
    // The temp-root check guards what exec creates; `--adopt` creates no
    // worktree, so it needs no allowance.
    let env = TestEnv::new();
    let repo = env.repo();
    let wt = env.root.join("side");
    env.add_worktree(&repo, "side", &wt);
    let o = env
        .lease()
        .env_remove("LEASE_ALLOW_TEMP_ROOT")
        .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(env.record()["origin"], "adopted");
    assert!(wt.is_dir());
}

/// Every key docs/config.md's table documents is one `lease config --show`
/// shows, and the other way round (the state root, which only LEASE_HOME
/// and the XDG variables set, is no key): a key added, renamed or dropped
/// on one side fails here. The human table shows the same keys.
#[test]
fn documented_config_keys_are_the_keys_config_show_shows() {
    let text = include_str!("../../docs/config.md");
    let table = text
        .split("\n## Keys\n")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .unwrap();
    let documented: std::collections::BTreeSet<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    assert!(documented.len() > 10, "the table parsed to {documented:?}");
    let env = TestEnv::new();
    let v = show(&env, &[], &[]);
    let shown: std::collections::BTreeSet<String> = v["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap().to_string())
        .filter(|k| k != "state_root")
        .collect();
    assert_eq!(documented, shown, "docs/config.md vs `lease config --show`");
    let o = env.lease().args(["config", "--show"]).output().unwrap();
    assert_code(&o, 0);
    let human: std::collections::BTreeSet<String> = stdout(&o)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|k| *k != "state_root")
        .map(str::to_string)
        .collect();
    assert_eq!(documented, human, "docs/config.md vs the human table");
}
