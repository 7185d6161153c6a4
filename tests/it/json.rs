//! The `--json` contract per command, for the outcomes tests/it/cli.rs
//! leaves out (docs/record.md "The --json contract"): `adopt`, `repair`
//! and `restore` done; `adopt`, `repair`, `restore` and `audit verify`
//! failed (exit 3) on real parts (a corrupt record, a state root that is a
//! file, an edited audit line); `config`, which has no exit-3 outcome. And
//! the `next` of reap's and repair's reports: a command that runs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::*;

/// Parses stdout as exactly one JSON document (trailing text fails), and
/// checks stderr carries none: no line of it parses as a JSON value with
/// an `error` or `exit` key (prose and logs only).
#[track_caller]
fn one_doc(o: &Output) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    });
    for line in stderr(o).lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line.trim()).is_err()
                || line.trim().is_empty(),
            "stderr carries JSON: {line}"
        );
    }
    v
}

/// The error document of a failed (or refused) command: `exit` as the
/// process's, the error's `kind` and `path`; prose on stderr.
#[track_caller]
fn error_doc(o: &Output, code: i32, kind: &str, path: Option<&Path>) -> serde_json::Value {
    assert_code(o, code);
    let v = one_doc(o);
    assert_eq!(v["exit"], code, "{v}");
    assert_eq!(v["error"]["kind"], kind, "{v}");
    match path {
        Some(p) => assert_eq!(v["error"]["path"], p.to_str().unwrap(), "{v}"),
        None => assert!(v["error"]["path"].is_null(), "{v}"),
    }
    assert!(
        stderr(o).starts_with("error: "),
        "the prose goes to stderr: {}",
        stderr(o)
    );
    v
}

/// Runs `lease ARGS` in `dir`.
fn run_in(env: &TestEnv, dir: &Path, args: &[&str]) -> Output {
    env.lease().current_dir(dir).args(args).output().unwrap()
}

/// A removed record whose one unpushed commit lives in a verified bundle:
/// its id.
fn archived_record(env: &TestEnv, repo: &Path) -> String {
    let o = run_in(
        env,
        repo,
        &[
            "exec",
            "--",
            "sh",
            "-c",
            "git commit -q --allow-empty -m work",
        ],
    );
    assert_code(&o, 0);
    let rec = env
        .records()
        .into_iter()
        .find(|r| r["state"] == "removed" && !r["archive"].is_null())
        .unwrap_or_else(|| panic!("no archived record: {}", stderr(&o)));
    rec["id"].as_str().unwrap().to_string()
}

/// Runs a `next` from a report through `sh -c` in `dir`, with `lease` on
/// PATH as the binary under test: a hint that is not a command fails here.
pub(crate) fn run_next(env: &TestEnv, dir: &Path, next: &str) -> Output {
    for bad in ["`", "<", " ID", " PATH", "lease show ID"] {
        assert!(!next.contains(bad), "not a command line: {next}");
    }
    let bin = env.root.join("next-bin");
    if !bin.exists() {
        fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_lease"), bin.join("lease")).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    env.cmd("sh")
        .current_dir(dir)
        .env("PATH", path)
        .args(["-c", next])
        .output()
        .unwrap()
}

/// `adopt`, `repair` and `restore` done: exit 0, one document, no error.
#[test]
fn adopt_repair_and_restore_done_print_one_document() {
    let env = TestEnv::new();
    let repo = env.repo();
    // adopt: a linked worktree lease did not make.
    let wt = env.root.join("by-hand");
    env.add_worktree(&repo, "by-hand", &wt);
    let o = run_in(&env, &repo, &["adopt", wt.to_str().unwrap(), "--json"]);
    assert_code(&o, 0);
    let v = one_doc(&o);
    assert_eq!(v["worktree"], wt.to_str().unwrap(), "{v}");
    assert_eq!(v["origin"], "adopted", "{v}");
    assert!(v.get("error").is_none(), "{v}");
    // repair: a registration whose directory was deleted by hand.
    let gone = env.root.join("gone");
    env.add_worktree(&repo, "gone", &gone);
    fs::remove_dir_all(&gone).unwrap();
    let o = run_in(&env, &repo, &["repair", gone.to_str().unwrap(), "--json"]);
    assert_code(&o, 0);
    let v = one_doc(&o);
    assert_eq!(v["disposition"], "removed", "{v}");
    assert_eq!(v["next"], serde_json::Value::Null, "{v}");
    assert!(!env.git(&repo, &["worktree", "list"]).contains("gone"));
    // restore: the archive of a removed record, into a new worktree.
    let id = archived_record(&env, &repo);
    let o = run_in(&env, &repo, &["restore", &id[..8], "--json"]);
    assert_code(&o, 0);
    let v = one_doc(&o);
    assert_eq!(v["from"], id.as_str(), "{v}");
    let restored = PathBuf::from(v["worktree"].as_str().unwrap());
    assert!(restored.join(".git").exists(), "{v}");
    assert!(v.get("error").is_none(), "{v}");
}

/// `adopt`, `repair`, `restore` and `audit verify` failed: exit 3, one
/// error document with the kind and the path lease could not work with,
/// and nothing changed. `config --show` has no exit-3 outcome (it opens no
/// state root; every config file it cannot use is a usage error, exit 2,
/// naming the file in the message).
#[test]
fn adopt_repair_restore_and_audit_fail_with_exit_3_and_the_path() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = archived_record(&env, &repo);
    // restore of a record whose file is corrupt: kind `record`, its path.
    let file = env.record_file(&id);
    let good = fs::read(&file).unwrap();
    fs::write(&file, b"{corrupt").unwrap();
    let audit = fs::read(env.state.join("audit.jsonl")).unwrap();
    let o = run_in(&env, &repo, &["restore", &id, "--json"]);
    error_doc(&o, 3, "record", Some(&file));
    assert_eq!(fs::read(&file).unwrap(), b"{corrupt", "changed");
    assert_eq!(fs::read(env.state.join("audit.jsonl")).unwrap(), audit);
    // adopt of a worktree that corrupt record may name: kind `record`.
    let wt = env.root.join("by-hand");
    env.add_worktree(&repo, "by-hand", &wt);
    fs::write(
        &file,
        format!("{{\"worktree\": {:?}, corrupt", wt.to_str().unwrap()),
    )
    .unwrap();
    let records = manifest(&env.state.join("records"));
    let admin = manifest(&repo.join(".git/worktrees"));
    let o = run_in(&env, &repo, &["adopt", wt.to_str().unwrap(), "--json"]);
    let v = error_doc(&o, 3, "record", Some(&file));
    assert!(
        v["error"]["message"].as_str().unwrap().contains("may name"),
        "{v}"
    );
    assert_eq!(manifest(&env.state.join("records")), records, "changed");
    assert_eq!(manifest(&repo.join(".git/worktrees")), admin, "changed");
    fs::write(&file, &good).unwrap();
    // audit verify of an edited line: exit 3, its report (the path, where
    // the chain breaks), as docs/record.md documents it.
    let log = env.state.join("audit.jsonl");
    let text = fs::read_to_string(&log).unwrap();
    let edited = text.replacen("\"event\"", "\"event\" ", 1);
    assert_ne!(edited, text);
    fs::write(&log, &edited).unwrap();
    let o = run_in(&env, &repo, &["audit", "verify", "--json"]);
    assert_code(&o, 3);
    let v = one_doc(&o);
    assert_eq!(v["intact"], false, "{v}");
    assert_eq!(v["path"], log.to_str().unwrap(), "{v}");
    assert!(v["break"]["line"].is_u64(), "{v}");
    assert_eq!(
        fs::read_to_string(&log).unwrap(),
        edited,
        "verify writes nothing"
    );
    fs::write(&log, &text).unwrap();
    // A state root that is a file: repair, adopt, restore and audit verify
    // exit 3, kind `unsafe-dir`, the state root's path.
    let home = env.root.join("state-file");
    fs::write(&home, b"not a directory\n").unwrap();
    let gone = env.root.join("gone");
    env.add_worktree(&repo, "gone", &gone);
    fs::remove_dir_all(&gone).unwrap();
    let admin = manifest(&repo.join(".git/worktrees"));
    for args in [
        vec!["repair", gone.to_str().unwrap(), "--json"],
        vec!["adopt", wt.to_str().unwrap(), "--json"],
        vec!["restore", &id, "--json"],
        vec!["audit", "verify", "--json"],
    ] {
        let o = env
            .lease()
            .current_dir(&repo)
            .env("LEASE_HOME", &home)
            .args(&args)
            .output()
            .unwrap();
        let v = error_doc(&o, 3, "unsafe-dir", Some(&home));
        assert_eq!(v["error"]["reason"], "lease-dir-unsafe", "{args:?}: {v}");
        assert!(v["error"]["next"].is_string(), "{args:?}: {v}");
    }
    assert_eq!(manifest(&repo.join(".git/worktrees")), admin, "changed");
    assert_eq!(fs::read(&home).unwrap(), b"not a directory\n");
    // config: a config file it cannot use is a usage error naming it.
    let dir = env.root.join("config-dir");
    fs::create_dir(&dir).unwrap();
    let o = env
        .lease()
        .env("LEASE_CONFIG", &dir)
        .args(["config", "--show", "--json"])
        .output()
        .unwrap();
    let v = error_doc(&o, 2, "usage", None);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains(dir.to_str().unwrap()),
        "{v}"
    );
}

/// The `next` of each reap item and orphan is a command with the real id
/// or path, and it runs: the holders of a lease (`ps`), a hold to release
/// and retire, a deleted directory to repair, an orphan to adopt and
/// retire, one to look at, an unreadable record file to look at. The human
/// report shows the same command as `next:`.
#[test]
fn reap_next_is_a_command_that_runs() {
    let env = TestEnv::new();
    let repo = env.repo();
    // consumer-alive: a daemon kept the lease after its command exited.
    let ready = env.file("daemon-ready");
    let o = run_in(
        &env,
        &repo,
        &["exec", "--", "sh", "-c", &daemon_script(&ready)],
    );
    assert_code(&o, 0);
    let daemon = read_pid(&ready);
    let _g = KillOnDrop(daemon);
    let held = env.record()["id"].as_str().unwrap().to_string();
    // retained: a kept worktree with a hold.
    let (kept, _) = env.kept(&repo, "kept", "true");
    assert_code(
        &run_in(&env, &repo, &["hold", &kept, "--reason", "review"]),
        0,
    );
    // path-identity: a terminal record whose directory was deleted by hand.
    let (lost, lost_wt) = env.kept(&repo, "lost", "true");
    fs::remove_dir_all(&lost_wt).unwrap();
    // Orphans: a registration no record claims, one whose directory is
    // gone, and a directory in the worktree root git does not know.
    let stray = env.root.join("stray");
    env.add_worktree(&repo, "stray", &stray);
    let vanished = env.root.join("vanished");
    env.add_worktree(&repo, "vanished", &vanished);
    fs::remove_dir_all(&vanished).unwrap();
    let roots: Vec<PathBuf> = fs::read_dir(env.state.join("worktrees"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let unknown = roots[0].join("unknown");
    fs::create_dir(&unknown).unwrap();
    // An unreadable record.
    let bad = env.state.join(format!("records/{}.json", "ab".repeat(16)));
    fs::write(&bad, b"{not json").unwrap();

    let o = run_in(&env, &repo, &["reap", "--json"]);
    assert_code(&o, 3); // the unreadable record: discovery incomplete
    let v = one_doc(&o);
    let item = |id: &str| {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == id)
            .unwrap_or_else(|| panic!("no item {id}: {v:#}"))
            .clone()
    };
    let orphan = |p: &Path| {
        v["orphans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["path"] == p.to_str().unwrap())
            .unwrap_or_else(|| panic!("no orphan {}: {v:#}", p.display()))
            .clone()
    };
    let next_of = |x: &serde_json::Value| x["next"].as_str().unwrap().to_string();
    let h = item(&held);
    assert_eq!(h["reasons"], serde_json::json!(["consumer-alive"]), "{h}");
    let ps = next_of(&h);
    assert_eq!(ps, format!("ps -o pid,user,etime,args -p {daemon}"), "{h}");
    let k = next_of(&item(&kept));
    let k8 = &kept[..8];
    assert_eq!(k, format!("lease release {k8} && lease retire {k8}"));
    let l = next_of(&item(&lost));
    assert_eq!(l, format!("lease repair {}", lost_wt.display()));
    let s = next_of(&orphan(&stray));
    assert_eq!(
        s,
        format!("lease adopt {0} && lease retire {0}", stray.display())
    );
    let g = next_of(&orphan(&vanished));
    assert_eq!(g, format!("lease repair {}", vanished.display()));
    let u = next_of(&orphan(&unknown));
    assert_eq!(u, format!("ls -la {}", unknown.display()));
    let b = next_of(&item(&"ab".repeat(16)));
    assert_eq!(b, format!("ls -l {}", bad.display()));

    // The human report says the same commands.
    let human = stdout(&run_in(&env, &repo, &["reap"]));
    for n in [&ps, &k, &l, &s, &g, &u, &b] {
        assert!(human.contains(&format!("  next: {n}\n")), "{n}:\n{human}");
    }
    // Each runs. The reads first, then what changes things.
    for n in [&ps, &u, &b] {
        let o = run_next(&env, &repo, n);
        assert_code(&o, 0);
    }
    assert!(stdout(&run_next(&env, &repo, &ps)).contains(&daemon.to_string()));
    fs::remove_file(&bad).unwrap();
    for n in [&k, &l, &s, &g] {
        let o = run_next(&env, &repo, n);
        assert_code(&o, 0);
    }
    assert_eq!(env.record_of(&kept)["state"], "removed");
    assert_eq!(env.record_of(&lost)["state"], "removed");
    assert!(!stray.exists(), "adopted and retired");
    let list = env.git(&repo, &["worktree", "list"]);
    assert!(
        !list.contains("vanished") && !list.contains("stray"),
        "{list}"
    );
}

/// The `next` of a held repair is a command that runs and gets it done:
/// commits only the registration reaches go on branches of their own,
/// then the repair; a worktree that still exists is retired.
#[test]
fn repair_next_is_a_command_that_runs() {
    let env = TestEnv::new();
    let repo = env.repo();
    // unique-commits-unarchived: a commit only the lost registration has.
    let gone = env.root.join("gone");
    env.add_worktree(&repo, "gone", &gone);
    env.git(&gone, &["commit", "-q", "--allow-empty", "-m", "only here"]);
    let tip = env.git(&gone, &["rev-parse", "HEAD"]);
    env.git(&gone, &["checkout", "-q", "--detach"]);
    env.git(&repo, &["branch", "-D", "gone"]);
    fs::remove_dir_all(&gone).unwrap();
    let o = run_in(&env, &repo, &["repair", gone.to_str().unwrap(), "--json"]);
    assert_code(&o, 1);
    let v = one_doc(&o);
    assert_eq!(
        v["reasons"],
        serde_json::json!(["unique-commits-unarchived"]),
        "{v}"
    );
    let next = v["next"].as_str().unwrap().to_string();
    let common = repo.join(".git");
    assert_eq!(
        next,
        format!(
            "git -C {} branch rescued-{} {tip} && lease repair {}",
            common.display(),
            &tip[..12],
            gone.display()
        )
    );
    let o = run_in(&env, &repo, &["repair", gone.to_str().unwrap()]);
    assert_code(&o, 1);
    assert!(
        stdout(&o).contains(&format!("  next: {next}\n")),
        "{}",
        stdout(&o)
    );
    let o = run_next(&env, &repo, &next);
    assert_code(&o, 0);
    assert!(!env.git(&repo, &["worktree", "list"]).contains("gone"));
    assert_eq!(
        env.git(&repo, &["rev-parse", &format!("rescued-{}", &tip[..12])]),
        tip,
        "the commit is kept"
    );
    // path-occupied: the worktree is there; a record names it.
    let (id, wt) = env.kept(&repo, "here", "true");
    let o = run_in(&env, &repo, &["repair", wt.to_str().unwrap(), "--json"]);
    assert_code(&o, 1);
    let v = one_doc(&o);
    assert_eq!(v["reasons"], serde_json::json!(["path-occupied"]), "{v}");
    let next = v["next"].as_str().unwrap().to_string();
    assert_eq!(next, format!("lease retire {}", &id[..8]));
    let o = run_next(&env, &repo, &next);
    assert_code(&o, 0);
    assert_eq!(env.record_of(&id)["state"], "removed");
}

/// A usage error whose fix is a command carries it as `next` (exit 2,
/// nothing changed), and the command runs: `show` of a worktree with no
/// record points at `lease adopt`, and `adopt` of the worktree then
/// recorded points at `lease show`. A refusal after the target resolved
/// names that record in its `next`: `archive verify` of a changed bundle.
#[test]
fn usage_errors_on_a_target_carry_a_next_that_runs() {
    let env = TestEnv::new();
    let repo = env.repo();
    let wt = env.root.join("side");
    env.add_worktree(&repo, "side", &wt);
    let w = wt.to_str().unwrap();
    let o = run_in(&env, &env.root, &["show", w, "--json"]);
    let v = error_doc(&o, 2, "usage", None);
    let next = v["error"]["next"].as_str().unwrap().to_string();
    assert_eq!(next, format!("lease adopt {w}"), "{v}");
    assert!(
        stderr(&o).contains(&format!("next: {next}")),
        "{}",
        stderr(&o)
    );
    assert!(env.records().is_empty(), "a usage error records nothing");
    assert_code(&run_next(&env, &env.root, &next), 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let o = run_in(&env, &env.root, &["adopt", w, "--json"]);
    let v = error_doc(&o, 2, "usage", None);
    let next = v["error"]["next"].as_str().unwrap().to_string();
    assert_eq!(next, format!("lease show {}", &id[..8]), "{v}");
    assert_eq!(env.records().len(), 1, "the refused adopt recorded nothing");
    let o = run_next(&env, &env.root, &next);
    assert_code(&o, 0);
    assert!(stdout(&o).contains(w), "{}", stdout(&o));

    let id = archived_record(&env, &repo);
    let bundle = env.record_of(&id)["archive"]["location"]
        .as_str()
        .unwrap()
        .to_string();
    let mut bytes = fs::read(&bundle).unwrap();
    bytes.extend_from_slice(b"tampered\n");
    fs::write(&bundle, &bytes).unwrap();
    let o = run_in(&env, &env.root, &["archive", "verify", &id[..8], "--json"]);
    let v = one_doc(&o);
    assert_ne!(v["exit"], 0, "{v}");
    assert!(v["error"]["reason"].is_string(), "{v}");
    let next = v["error"]["next"].as_str().unwrap();
    assert!(next.contains(&id[..8]), "the next names the record: {v}");
}
