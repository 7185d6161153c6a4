//! The command-line surface (issue 20): the `--json` contract of every
//! command, one target resolver, paste-able `next` commands, and the tips
//! of a mistyped command line.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::*;

/// Parses stdout as exactly one JSON document (trailing text fails).
#[track_caller]
fn one_doc(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

/// Runs `lease ARGS` in `dir` and returns the output.
fn run_in(env: &TestEnv, dir: &Path, args: &[&str]) -> Output {
    env.lease().current_dir(dir).args(args).output().unwrap()
}

/// A repository with two records: `held`, a retained worktree with an
/// untracked file, and `archived`, a removed worktree whose one unpushed
/// commit lives in a verified bundle.
struct Fx {
    env: TestEnv,
    repo: PathBuf,
    held: String,
    held_wt: PathBuf,
    archived: String,
}

impl Fx {
    fn new() -> Fx {
        let env = TestEnv::new();
        let repo = env.repo();
        let o = run_in(
            &env,
            &repo,
            &[
                "exec",
                "--",
                "sh",
                "-c",
                "git commit -q --allow-empty -m work",
            ],
        );
        assert_code(&o, 0);
        let archived = env.record()["id"].as_str().unwrap().to_string();
        assert_eq!(env.record_of(&archived)["state"], "removed");
        let o = run_in(
            &env,
            &repo,
            &["exec", "--keep", "--", "sh", "-c", "echo x > u.txt"],
        );
        assert_code(&o, 0);
        let rec = env
            .records()
            .into_iter()
            .find(|r| r["state"] == "retained")
            .unwrap();
        let held = rec["id"].as_str().unwrap().to_string();
        let held_wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
        Fx {
            env,
            repo,
            held,
            held_wt,
            archived,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        run_in(&self.env, &self.env.root, args)
    }
}

/// Every command under `--json`: stdout is exactly one JSON document whether
/// the command is done (0), held (1), refused as a usage error (2) or failed
/// (3); a hold carries reason codes and a `next` with the real id; an error
/// carries its kind and, where there is one, its path.
#[test]
fn every_command_prints_one_json_document_whatever_the_outcome() {
    let fx = Fx::new();
    let held8 = &fx.held[..8];
    let arch8 = &fx.archived[..8];
    let wt = fx.held_wt.to_str().unwrap();
    // Done.
    for args in [
        vec!["list", "--json"],
        vec!["show", held8, "--json"],
        vec!["show", wt, "--json"],
        vec!["archives", "--json"],
        vec!["archive", "verify", arch8, "--json"],
        vec!["audit", "verify", "--json"],
        vec!["config", "--show", "--json"],
        vec!["metrics", "--json"],
        vec!["hold", held8, "--reason", "review", "--json"],
        vec!["release", wt, "--json"],
        vec!["retire", "--dry-run", "--all", "--json"],
    ] {
        // (after the release, the dry run finds nothing terminal but the
        // held record's untracked file: see below for the hold)
        if args[0] == "retire" {
            continue;
        }
        let o = fx.run(&args);
        assert_code(&o, 0);
        let v = one_doc(&o);
        assert!(v.get("error").is_none(), "{args:?}: {v}");
    }
    // Held: reasons, and a `next` naming the real id.
    let o = fx.run(&["retire", "--dry-run", "--all", "--json"]);
    assert_code(&o, 1);
    one_doc(&o);
    let o = fx.run(&["retire", held8, "--json"]);
    assert_code(&o, 1);
    let t = &one_doc(&o)["targets"][0];
    assert_eq!(t["reasons"], serde_json::json!(["untracked"]));
    let next = t["next"].as_str().unwrap();
    assert!(next.contains(wt) && next.starts_with("git -C "), "{next}");
    let o = fx.run(&["reap", "--json"]);
    assert_code(&o, 1);
    one_doc(&o);
    let o = fx.run(&["archive", "drop", arch8, "--json"]);
    assert_code(&o, 1);
    let v = one_doc(&o);
    assert_eq!(v["error"]["reason"], "archive-unreachable", "{v}");
    assert_eq!(v["exit"], 1);
    assert!(v["error"]["next"].as_str().unwrap().contains(arch8), "{v}");
    // Usage errors on a target: exit 2, kind `usage`.
    for args in [
        vec!["show", "nowhere", "--json"],
        vec!["hold", "nowhere", "--reason", "r", "--json"],
        vec!["release", "deadbeef00", "--json"],
        vec!["retire", "nowhere", "--json"],
        vec!["restore", "nowhere", "--json"],
        vec!["archive", "verify", "nowhere", "--json"],
        vec!["archive", "drop", "deadbeef00", "--json"],
        vec!["adopt", "nowhere", "--json"],
        vec!["repair", "nowhere", "--json"],
        vec!["retire", "--no-such-flag", "--json"],
    ] {
        let o = fx.run(&args);
        assert_code(&o, 2);
        let v = one_doc(&o);
        assert_eq!(v["error"]["kind"], "usage", "{args:?}: {v}");
        assert_eq!(v["exit"], 2);
        assert!(!stderr(&o).is_empty(), "{args:?}: prose goes to stderr");
    }
    // Failures: an unsafe state root is exit 3, kind and path named.
    fs::set_permissions(&fx.env.state, fs::Permissions::from_mode(0o755)).unwrap();
    for args in [
        vec!["list", "--json"],
        vec!["show", held8, "--json"],
        vec!["retire", held8, "--json"],
        vec!["hold", held8, "--reason", "r", "--json"],
        vec!["release", held8, "--json"],
        vec!["reap", "--json"],
        vec!["archives", "--json"],
        vec!["metrics", "--json"],
    ] {
        let o = fx.run(&args);
        assert_code(&o, 3);
        let v = one_doc(&o);
        assert_eq!(v["error"]["kind"], "unsafe-dir", "{args:?}: {v}");
        assert_eq!(v["error"]["reason"], "lease-dir-unsafe", "{args:?}: {v}");
        assert_eq!(
            v["error"]["path"],
            fx.env.state.to_str().unwrap(),
            "{args:?}: {v}"
        );
    }
    fs::set_permissions(&fx.env.state, fs::Permissions::from_mode(0o700)).unwrap();
    let _ = &fx.repo;
}

/// `exec --json` and `join --json` keep stdout for the command: lease's own
/// part is JSON lines on stderr, each with a `lease` key.
#[test]
fn exec_and_join_report_lease_s_part_as_json_lines_on_stderr() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = run_in(
        &env,
        &repo,
        &["exec", "--json", "--", "sh", "-c", "echo out"],
    );
    assert_code(&o, 0);
    assert_eq!(stdout(&o), "out\n");
    let lines: Vec<serde_json::Value> = stderr(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["lease"] == "retire" && l["disposition"] == "removed"),
        "{lines:?}"
    );
    // Failed before the command ran: 125 and one error line.
    let o = run_in(&env, &env.root, &["exec", "--json", "--", "true"]);
    assert_code(&o, 125);
    assert_eq!(stdout(&o), "");
    let v: serde_json::Value = serde_json::from_str(stderr(&o).trim()).unwrap();
    assert_eq!(v["lease"], "error");
    assert_eq!(v["exit"], 125);
    let o = run_in(&env, &env.root, &["join", "--json", "--", "true"]);
    assert_code(&o, 125);
    assert_eq!(stdout(&o), "");
    let v: serde_json::Value = serde_json::from_str(stderr(&o).trim()).unwrap();
    assert_eq!(v["lease"], "error");
}

/// One resolver: show, hold, release and retire take an id, an 8-hex
/// prefix, or the worktree's path in any spelling (trailing slash,
/// relative, through a symlink); a subdirectory is a usage error.
#[test]
fn every_command_takes_an_id_a_prefix_or_a_path_in_any_spelling() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = env.kept(&repo, "feat", "true");
    let link = env.root.join("link-to-wt");
    std::os::unix::fs::symlink(&wt, &link).unwrap();
    let parent = wt.parent().unwrap();
    let rel = wt.file_name().unwrap().to_str().unwrap();
    let slash = format!("{}/", wt.display());
    let spellings: Vec<(&Path, String)> = vec![
        (env.root.as_path(), id.clone()),
        (env.root.as_path(), id[..8].to_string()),
        (env.root.as_path(), wt.to_str().unwrap().to_string()),
        (env.root.as_path(), slash),
        (env.root.as_path(), link.to_str().unwrap().to_string()),
        (parent, rel.to_string()),
        (parent, format!("./{rel}")),
    ];
    for (dir, t) in &spellings {
        let o = run_in(&env, dir, &["show", t, "--json"]);
        assert_code(&o, 0);
        assert_eq!(one_doc(&o)["id"], id.as_str(), "{t}");
        let o = run_in(&env, dir, &["hold", t, "--reason", "r", "--json"]);
        assert_code(&o, 0);
        let o = run_in(&env, dir, &["release", t, "--json"]);
        assert_code(&o, 0);
        let o = run_in(&env, dir, &["retire", "--dry-run", t, "--json"]);
        assert_code(&o, 0);
        assert_eq!(one_doc(&o)["targets"][0]["id"], id.as_str(), "{t}");
    }
    fs::create_dir(wt.join("sub")).unwrap();
    for verb in ["show", "release", "retire"] {
        let o = env
            .lease()
            .args([verb, wt.join("sub").to_str().unwrap()])
            .output()
            .unwrap();
        assert_code(&o, 2);
        assert!(stderr(&o).contains("is inside worktree"), "{}", stderr(&o));
    }
    fs::remove_dir(wt.join("sub")).unwrap();
    // The human output names the record by 8 hex digits.
    let o = env.lease().args(["list"]).output().unwrap();
    let row = stdout(&o).lines().nth(1).unwrap().to_string();
    assert!(row.starts_with(&format!("{} ", &id[..8])), "{row}");
    // A removed worktree's path still names its record for show.
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 0);
    let o = env
        .lease()
        .args(["show", wt.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(one_doc(&o)["state"], "removed");
}

/// `lease retire .` from inside the worktree holds `cwd-inside-target`,
/// changes nothing, and `next` is the exact command to run from outside.
#[test]
fn retire_dot_from_inside_holds_with_the_command_to_run_from_outside() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = env.kept(&repo, "feat", "true");
    let before = Snapshot::take(&env, &repo, &id);
    let o = run_in(&env, &wt, &["retire", ".", "--json"]);
    assert_code(&o, 1);
    let t = one_doc(&o)["targets"][0].clone();
    assert_eq!(t["reasons"], serde_json::json!(["cwd-inside-target"]));
    let next = t["next"].as_str().unwrap();
    assert_eq!(
        next,
        format!(
            "cd {} && lease retire {}",
            wt.parent().unwrap().display(),
            &id[..8]
        )
    );
    before.assert_held_unchanged(&env, &repo, "cwd-inside-target");
    // Following the hint works.
    let o = env
        .cmd("sh")
        .args([
            "-c",
            &next.replace("lease ", &format!("{} ", env!("CARGO_BIN_EXE_lease"))),
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(env.record_of(&id)["state"], "removed");
}

/// Hints fit the situation: the main worktree is protected (never "adopt");
/// a deleted directory points at `lease repair`; `in-use` names a command
/// that shows the processes; `retained` releases and retires the real id.
#[test]
fn next_is_right_for_the_situation() {
    let env = TestEnv::new();
    let repo = env.repo();
    // The main worktree.
    let o = env
        .lease()
        .args(["retire", repo.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let t = one_doc(&o)["targets"][0].clone();
    assert_eq!(t["reasons"], serde_json::json!(["protected-path"]));
    assert_eq!(
        t["next"],
        format!("git -C {} worktree list", repo.display()).as_str()
    );
    // In use: a process with a descriptor inside.
    let (id, wt) = env.kept(&repo, "feat", "true");
    let opener = spawn_opener(&env, &wt.join("README"));
    let before = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let t = one_doc(&o)["targets"][0].clone();
    assert_eq!(t["reasons"], serde_json::json!(["in-use"]));
    assert!(
        t["next"]
            .as_str()
            .unwrap()
            .starts_with("ps -o pid,user,etime,args -p ")
            && t["next"]
                .as_str()
                .unwrap()
                .contains(&opener.pid().to_string()),
        "{t}"
    );
    before.assert_held_unchanged(&env, &repo, "in-use");
    drop(opener);
    // Retained: the real id, release then retire.
    assert_code(
        &env.lease()
            .args(["hold", &id, "--reason", "r"])
            .output()
            .unwrap(),
        0,
    );
    let o = env
        .lease()
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let id8 = &id[..8];
    assert_eq!(
        one_doc(&o)["targets"][0]["next"],
        format!("lease release {id8} && lease retire {id8}").as_str()
    );
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert!(
        stdout(&o).contains(&format!("next: lease release {id8} && lease retire {id8}")),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains(" ID`"), "{}", stdout(&o));
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    // A directory deleted by hand: `lease repair PATH`.
    fs::remove_dir_all(&wt).unwrap();
    let o = env
        .lease()
        .args(["retire", &id, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(
        one_doc(&o)["targets"][0]["next"],
        format!("lease repair {}", wt.display()).as_str()
    );
}

/// `lease exec make test` says to put `--` before the command, with the
/// exact command line.
#[test]
fn exec_without_dash_dash_says_where_to_put_it() {
    let env = TestEnv::new();
    let o = env
        .lease()
        .args(["exec", "--keep", "make", "test"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(
        stderr(&o).contains("tip: put `--` before the command: `lease exec --keep -- make test`"),
        "{}",
        stderr(&o)
    );
}
