//! `lease metrics`: Prometheus text over a real state root, stdout and an
//! atomic `--out FILE`.

use std::collections::BTreeMap;
use std::fs;

use crate::support::*;

/// Parses exposition text into `name{labels} -> value`, checking that every
/// sample's metric has `# HELP` and `# TYPE` lines before it.
fn samples(text: &str) -> BTreeMap<String, u64> {
    let mut helped = Vec::new();
    let mut typed = Vec::new();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.push(rest.split(' ').next().unwrap().to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            typed.push(it.next().unwrap().to_string());
            assert_eq!(it.next(), Some("gauge"), "{line}");
        } else {
            let (key, value) = line.rsplit_once(' ').unwrap();
            let name = key.split('{').next().unwrap();
            assert!(helped.iter().any(|h| h == name), "no HELP for {name}");
            assert!(typed.iter().any(|t| t == name), "no TYPE for {name}");
            out.insert(key.to_string(), value.parse().unwrap());
        }
    }
    out
}

#[test]
fn metrics_count_records_by_state_and_archives() {
    let env = TestEnv::new();
    // No state root yet: zeros, and nothing created.
    let o = env.lease().arg("metrics").output().unwrap();
    assert_code(&o, 0);
    let m = samples(&stdout(&o));
    assert_eq!(m["lease_records{state=\"active\"}"], 0);
    assert!(!env.state.exists(), "metrics created the state root");

    let repo = env.repo();
    for _ in 0..2 {
        let o = env
            .lease()
            .current_dir(&repo)
            .args(["exec", "--keep", "--", "true"])
            .output()
            .unwrap();
        assert_code(&o, 0);
    }
    // One worktree with a commit only it has: archived, then removed.
    let o = env.exec_sh(
        &repo,
        "echo x > x && git add x && git commit -qm unique-to-the-worktree",
    );
    assert_code(&o, 0);
    fs::write(
        env.state
            .join("records")
            .join(format!("{}.json", "f".repeat(32))),
        "{",
    )
    .unwrap();

    let o = env.lease().arg("metrics").output().unwrap();
    assert_code(&o, 0);
    let text = stdout(&o);
    let m = samples(&text);
    assert_eq!(m["lease_records{state=\"retained\"}"], 2, "{text}");
    assert_eq!(m["lease_records{state=\"removed\"}"], 1, "{text}");
    for s in ["planned", "active", "terminal", "interrupted", "retiring"] {
        assert_eq!(
            m[&format!("lease_records{{state=\"{s}\"}}")],
            0,
            "{s}: {text}"
        );
    }
    assert_eq!(m["lease_records_unreadable"], 1, "{text}");
    assert_eq!(m["lease_archives"], 1, "{text}");
    assert!(m["lease_archive_bytes"] > 0, "{text}");
    assert!(m["lease_reclaimed_bytes"] > 0, "{text}");

    // --out: the same text, replacing the old file by rename.
    let dir = env.root.join("textfile");
    fs::create_dir(&dir).unwrap();
    let file = dir.join("lease.prom");
    fs::write(&file, "stale").unwrap();
    let o = env
        .lease()
        .args(["metrics", "--out", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    assert_eq!(fs::read_to_string(&file).unwrap(), text);
    let names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["lease.prom"], "no temp file left");
}
