//! `lease list` and `lease show`: tables, JSON, holders, bad records.

use std::fs;

use crate::support::*;

#[test]
fn list_and_show_report_records_and_holders() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env.lease().args(["list"]).output().unwrap();
    assert_code(&o, 0);
    assert!(stdout(&o).contains("no records"));
    let (bg, child) = env.spawn_holder(&["--repo", repo.to_str().unwrap()]);
    let _guard = KillOnDrop(child);
    let o = env.lease().args(["list", "--json"]).output().unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rec = &v[0];
    assert_eq!(rec["state"], "active");
    assert_eq!(rec["schema"], 1);
    let holders: Vec<u64> = rec["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert!(
        holders.contains(&u64::from(bg.pid())),
        "launcher holds: {holders:?}"
    );
    assert!(
        holders.contains(&u64::from(child)),
        "command holds: {holders:?}"
    );
    // The text form names the launcher, so a hint to signal it can be followed.
    let id = rec["id"].as_str().unwrap();
    let o = env.lease().args(["show", id]).output().unwrap();
    assert_code(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains(&format!("launcher:  pid {} (running)", bg.pid())),
        "{text}"
    );
    assert!(text.contains(&format!("{child}")), "{text}");
    for key in [
        "id",
        "state",
        "repo",
        "worktree",
        "root",
        "origin",
        "branch",
        "base",
        "owner",
        "uid",
        "created_at",
        "lease",
        "sessions",
        "outcome",
        "retention",
        "archive",
        "attempts",
        "tombstone",
    ] {
        assert!(rec.get(key).is_some(), "record key {key} missing");
    }
    let id = rec["id"].as_str().unwrap();
    let o = env.lease().args(["list"]).output().unwrap();
    assert!(
        stdout(&o).contains(&id[..12]) && stdout(&o).contains("active"),
        "{}",
        stdout(&o)
    );
    let o = env
        .lease()
        .args(["show", &id[..8], "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["id"], id);
    let o = env.lease().args(["show", &id[..10]]).output().unwrap();
    assert!(stdout(&o).contains("state:     active"), "{}", stdout(&o));
    assert_code(&env.lease().args(["show", "nothex"]).output().unwrap(), 2);
    // Read-only commands never take the lock: the lease is still shared-held.
    let lease = rec["lease"]["path"].as_str().unwrap();
    let o = env
        .cmd("flock")
        .args(["--nonblock", "--shared", lease, "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
}

/// A test environment with `n` records of `exec --keep -- true` (retained).
fn kept_records(n: usize) -> TestEnv {
    let env = TestEnv::new();
    let repo = env.repo();
    for _ in 0..n {
        let o = env
            .lease()
            .current_dir(&repo)
            .args(["exec", "--keep", "--", "true"])
            .output()
            .unwrap();
        assert_code(&o, 0);
    }
    env
}

/// `list --json` prints each record file's own bytes plus `holders` and
/// `locked`: every entry is its record file's document plus those two,
/// the same document `show --json` prints, and an unreadable
/// file is `{id, state, path, problem}`; the array is one document.
#[test]
fn list_json_is_each_record_file_plus_what_proc_shows() {
    let env = kept_records(3);
    let recs = env.state.join("records");
    let bad = recs.join("cccccccccccccccccccccccccccccccc.json");
    fs::write(&bad, "not json").unwrap();
    let o = env.lease().args(["list", "--json"]).output().unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let entries = v.as_array().unwrap();
    assert_eq!(entries.len(), 4, "{v:#}");
    for e in &entries[..3] {
        let id = e["id"].as_str().unwrap();
        let file: serde_json::Value =
            serde_json::from_slice(&fs::read(recs.join(format!("{id}.json"))).unwrap()).unwrap();
        let mut expected = file.as_object().unwrap().clone();
        expected.insert("holders".into(), serde_json::json!([]));
        expected.insert("locked".into(), serde_json::json!("none"));
        assert_eq!(e, &serde_json::Value::Object(expected), "{id}");
        let o = env.lease().args(["show", id, "--json"]).output().unwrap();
        assert_code(&o, 0);
        let shown: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(e, &shown, "{id}");
    }
    // Oldest first; the unreadable file last.
    let created: Vec<&str> = entries[..3]
        .iter()
        .map(|e| e["created_at"].as_str().unwrap())
        .collect();
    assert!(created.windows(2).all(|w| w[0] <= w[1]), "{created:?}");
    let last = &entries[3];
    assert_eq!(last["id"], "cccccccccccccccccccccccccccccccc");
    assert_eq!(last["state"], "unreadable");
    assert_eq!(last["path"], bad.to_str().unwrap());
    assert!(
        last["problem"].as_str().unwrap().contains("corrupt"),
        "{last}"
    );
    assert_eq!(fs::read(&bad).unwrap(), b"not json");
}

#[test]
fn list_json_never_repeats_holders_or_locked_that_a_record_file_names() {
    // A record file that already has a `locked` key (one the record type
    // does not know, so the record still parses) must not print it beside
    // the real one: the entry is serialized from the record instead of
    // copied from the file.
    let env = kept_records(2);
    let recs = env.state.join("records");
    let mut files: Vec<std::path::PathBuf> = fs::read_dir(&recs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let forged = &files[0];
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(forged).unwrap()).unwrap();
    v["locked"] = serde_json::json!("exclusive");
    v["holders"] = serde_json::json!([1]);
    fs::write(forged, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let before = fs::read(forged).unwrap();
    let o = env.lease().args(["list", "--json"]).output().unwrap();
    assert_code(&o, 0);
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.matches("\"locked\"").count(), 2, "{text}");
    assert_eq!(text.matches("\"holders\"").count(), 2, "{text}");
    let entries: serde_json::Value = serde_json::from_str(&text).unwrap();
    for e in entries.as_array().unwrap() {
        assert_eq!(e["locked"], "none", "{e:#}");
        assert_eq!(e["holders"], serde_json::json!([]), "{e:#}");
    }
    assert_eq!(fs::read(forged).unwrap(), before, "listing changed nothing");
}

#[test]
fn corrupt_and_newer_records_are_listed_not_changed() {
    let env = TestEnv::new();
    let repo = env.repo();
    assert_code(
        &env.lease()
            .current_dir(&repo)
            .args(["exec", "--keep", "--", "true"])
            .output()
            .unwrap(),
        0,
    );
    let recs = env.state.join("records");
    let corrupt = recs.join("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.json");
    let newer = recs.join("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.json");
    fs::write(&corrupt, "{\"schema\": 1, \"id\": ").unwrap();
    fs::write(
        &newer,
        "{\"schema\": 99, \"id\": \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"}",
    )
    .unwrap();
    let o = env.lease().args(["list", "--json"]).output().unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let states: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states.iter().filter(|s| **s == "unreadable").count(),
        2,
        "{states:?}"
    );
    assert!(states.contains(&"retained"));
    let o = env.lease().args(["show", "bbbbbbbb"]).output().unwrap();
    assert_code(&o, 3);
    assert!(stderr(&o).contains("newer"), "{}", stderr(&o));
    let o = env.lease().args(["retire", "aaaaaaaa"]).output().unwrap();
    assert_code(&o, 3);
    assert_eq!(
        fs::read_to_string(&corrupt).unwrap(),
        "{\"schema\": 1, \"id\": "
    );
}

#[test]
fn unsafe_state_root_is_refused() {
    let env = TestEnv::new();
    let repo = env.repo();
    fs::create_dir(&env.state).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&env.state, fs::Permissions::from_mode(0o755)).unwrap();
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 125);
    assert!(stderr(&o).contains("lease-dir-unsafe"), "{}", stderr(&o));
    let o = env.lease().args(["list"]).output().unwrap();
    assert_code(&o, 3);
    assert!(
        !env.state.join("records").exists(),
        "nothing created under an unsafe root"
    );
}

/// The default table reads only `records/`: a removed record (shelved in
/// `records/removed/`) and a bad file there show with `--all`, `--state`
/// and `--json`, never in the table without them.
#[test]
fn the_default_table_reads_only_live_records() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let shelf = env.state.join("records").join("removed");
    assert!(shelf.join(format!("{id}.json")).exists(), "shelved");
    fs::write(shelf.join("dddddddddddddddddddddddddddddddd.json"), "{").unwrap();
    let table = |args: &[&str]| stdout(&env.lease().args(args).output().unwrap());
    let t = table(&["list"]);
    assert!(t.contains("no records"), "{t}");
    let t = table(&["list", "--all"]);
    assert!(t.contains(&id[..8]) && t.contains("dddddddd"), "{t}");
    let t = table(&["list", "--state", "unreadable"]);
    assert!(t.contains("dddddddd") && !t.contains(&id[..8]), "{t}");
    let v: serde_json::Value = serde_json::from_slice(
        &env.lease()
            .args(["list", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2, "{v:#}");
}
