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

/// `lease list`: id, state, repo, branch, age, size, holders; removed
/// records hidden unless `--all`; `--state` and `--repo` filter; oldest
/// first; sizes for people unless `--bytes`.
#[test]
fn list_filters_sorts_and_hides_removed_records() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = run_in(&env, &repo, &["exec", "--", "true"]);
    assert_code(&o, 0);
    let removed = env.record()["id"].as_str().unwrap().to_string();
    let (kept, _) = env.kept(&repo, "feat", "true");
    let table = |args: &[&str]| {
        let o = env.lease().args(args).output().unwrap();
        assert_code(&o, 0);
        stdout(&o)
    };
    let t = table(&["list"]);
    let head = t.lines().next().unwrap();
    for col in ["ID", "STATE", "REPO", "BRANCH", "AGE", "SIZE", "HOLDERS"] {
        assert!(head.contains(col), "{head}");
    }
    assert!(t.contains(&kept[..8]) && !t.contains(&removed[..8]), "{t}");
    let row = t.lines().nth(1).unwrap();
    assert!(row.contains(" repo ") && row.contains(" feat "), "{row}");
    let t = table(&["list", "--all"]);
    let lines: Vec<&str> = t.lines().collect();
    // Oldest first by creation time (seconds), then by id: two records
    // made in the same second sort by id.
    let mut order: Vec<(String, String)> = [&removed, &kept]
        .iter()
        .map(|id| {
            let at = env.record_of(id)["created_at"]
                .as_str()
                .unwrap()
                .to_string();
            (at, id.to_string())
        })
        .collect();
    order.sort();
    assert!(lines[1].starts_with(&order[0].1[..8]), "oldest first: {t}");
    assert!(lines[2].starts_with(&order[1].1[..8]), "{t}");
    let row_of = |t: &str| {
        t.lines()
            .find(|l| l.starts_with(&removed[..8]))
            .unwrap()
            .split_whitespace()
            .nth(5)
            .unwrap()
            .to_string()
    };
    let size = row_of(&t);
    assert!(size.ends_with('B') || size.ends_with('K'), "{t}");
    let t = table(&["list", "--all", "--bytes"]);
    let raw = row_of(&t);
    assert!(raw.parse::<u64>().is_ok(), "{t}");
    let t = table(&["list", "--state", "removed"]);
    assert!(t.contains(&removed[..8]) && !t.contains(&kept[..8]), "{t}");
    let t = table(&["list", "--state", "terminal,retained"]);
    assert!(t.contains(&kept[..8]), "{t}");
    let t = table(&["list", "--repo", repo.to_str().unwrap()]);
    assert!(t.contains(&kept[..8]), "{t}");
    let t = table(&["list", "--repo", "elsewhere"]);
    assert!(t.contains("no records"), "{t}");
    // JSON: the same filters; removed records listed unless --state picks.
    let o = env.lease().args(["list", "--json"]).output().unwrap();
    assert_eq!(one_doc(&o).as_array().unwrap().len(), 2);
    let o = env
        .lease()
        .args(["list", "--json", "--state", "terminal"])
        .output()
        .unwrap();
    let v = one_doc(&o);
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["id"], kept.as_str());
}

/// `lease doctor`: git, state root, locks, the current repository's
/// trusted remote, lease and its shim on PATH, each with what to do; exit
/// 3 when lease cannot work (an unsafe state root), and nothing created.
#[test]
fn doctor_reports_each_check_with_what_to_do() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = run_in(&env, &repo, &["doctor", "--json"]);
    assert_code(&o, 0);
    let v = one_doc(&o);
    let checks = v["checks"].as_array().unwrap();
    let by = |name: &str| {
        checks
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no {name} check: {v}"))
            .clone()
    };
    assert_eq!(by("git")["status"], "ok");
    assert_eq!(by("state root")["status"], "ok");
    assert_eq!(by("locks")["status"], "ok");
    let remote = by("remote");
    assert_eq!(remote["status"], "ok", "{remote}");
    assert!(remote["detail"].as_str().unwrap().contains("`origin`"));
    for name in ["lease on PATH", "git shim"] {
        let c = by(name);
        assert!(c["status"] == "ok" || c["next"].is_string(), "{c}");
    }
    assert!(!env.state.exists(), "doctor created the state root");
    // No remote: a warning with the command to add one.
    let bare = env.root.join("lonely");
    env.git(&env.root, &["init", "-q", bare.to_str().unwrap()]);
    let o = run_in(&env, &bare, &["doctor"]);
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains(&format!(
            "next: git -C {} remote add origin",
            bare.display()
        )),
        "{}",
        stdout(&o)
    );
    // An unsafe state root: FAIL, exit 3, and how to fix it.
    fs::create_dir(&env.state).unwrap();
    fs::set_permissions(&env.state, fs::Permissions::from_mode(0o755)).unwrap();
    let o = run_in(&env, &repo, &["doctor"]);
    assert_code(&o, 3);
    assert!(
        stdout(&o).contains(&format!("next: chmod 0700 {}", env.state.display())),
        "{}",
        stdout(&o)
    );
}

/// Every flag that README.md and docs/guide.md show on a `lease VERB ...`
/// command line is one `lease VERB --help` lists (a renamed or removed flag
/// fails here); the man pages are generated from the same definitions
/// (scripts/gen-docs, checked by scripts/test).
#[test]
fn documented_flags_are_accepted_by_the_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = TestEnv::new();
    let mut help: std::collections::BTreeMap<String, String> = Default::default();
    let mut checked = 0;
    for doc in ["README.md", "docs/guide.md"] {
        let text = fs::read_to_string(root.join(doc)).unwrap();
        // Command lines: code spans and lines of code blocks.
        let mut lines: Vec<String> = Vec::new();
        let mut fenced = false;
        for line in text.lines() {
            if line.starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if fenced {
                lines.push(line.to_string());
                continue;
            }
            for (i, span) in line.split('`').enumerate() {
                if i % 2 == 1 {
                    lines.push(span.to_string());
                }
            }
        }
        for line in lines {
            let Some(at) = line.find("lease ") else {
                continue;
            };
            let words: Vec<&str> = line[at + 6..].split_whitespace().collect();
            let Some(&verb) = words.first() else { continue };
            if !verb.chars().all(|c| c.is_ascii_lowercase()) {
                continue;
            }
            let mut cmd = vec![verb.to_string()];
            if matches!(verb, "archive" | "audit" | "hook")
                && let Some(sub) = words.get(1)
            {
                cmd.push(sub.to_string());
            }
            let key = cmd.join(" ");
            let h = help.entry(key.clone()).or_insert_with(|| {
                let o = env.lease().args(&cmd).arg("--help").output().unwrap();
                if o.status.success() {
                    stdout(&o)
                } else {
                    String::new()
                }
            });
            if h.is_empty() {
                continue; // not a lease verb (prose such as "lease has")
            }
            for w in words.iter().skip(1) {
                if *w == "--" || w.starts_with('#') || *w == "&&" || *w == "|" {
                    break;
                }
                let flag: String = w
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                if flag.starts_with("--") && flag.len() > 2 {
                    assert!(
                        h.contains(&flag),
                        "{doc}: `lease {key}` is shown with {flag}, which its --help does not list: {line}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} flags checked: the parser found no command lines"
    );
}

/// `-q` silences exec's report, `-qq` everything lease prints on stderr;
/// `-v` logs each step and gate decision, `-vv` each git command with its
/// duration.
#[test]
fn quiet_and_verbose_do_what_the_guide_says() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = run_in(&env, &repo, &["exec", "--", "true"]);
    assert_code(&o, 0);
    assert!(stderr(&o).contains("lease: removed"), "{}", stderr(&o));
    let o = run_in(&env, &repo, &["-q", "exec", "--", "true"]);
    assert_code(&o, 0);
    assert_eq!(stderr(&o), "");
    let o = run_in(&env, &env.root, &["-qq", "exec", "--", "true"]);
    assert_code(&o, 125);
    assert_eq!(stderr(&o), "");
    let o = run_in(&env, &env.root, &["exec", "--", "true"]);
    assert_code(&o, 125);
    assert!(stderr(&o).contains("error:"), "{}", stderr(&o));
    let o = run_in(&env, &repo, &["-v", "exec", "--", "true"]);
    assert_code(&o, 0);
    for step in [
        "exec-planned",
        "exec-leased",
        "exec-added",
        "exec-active",
        "exec-ran",
        "retire-locked",
    ] {
        assert!(stderr(&o).contains(step), "no {step}: {}", stderr(&o));
    }
    assert!(stderr(&o).contains("every gate passed"), "{}", stderr(&o));
    let o = run_in(&env, &repo, &["-vv", "exec", "--", "true"]);
    assert!(
        stderr(&o)
            .lines()
            .any(|l| l.contains("git exited") && l.contains("ms=")),
        "{}",
        stderr(&o)
    );
}
