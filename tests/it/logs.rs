//! Logs: silent by default, `-v`/`-q`, `RUST_LOG` and `--log-format json`
//! on stderr, never on stdout.

use crate::support::*;

#[test]
fn logs_go_to_stderr_only_when_asked() {
    let env = TestEnv::new();
    let repo = env.repo();
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let retire = |extra: &[&str], rust_log: Option<&str>| {
        let mut c = env.lease();
        c.args(extra).args(["retire", "--dry-run", &id]);
        if let Some(v) = rust_log {
            c.env("RUST_LOG", v);
        }
        c.output().unwrap()
    };

    let quiet = retire(&[], None);
    assert!(
        !stderr(&quiet).contains("running git"),
        "{}",
        stderr(&quiet)
    );

    let loud = retire(&["-vv"], None);
    assert_eq!(loud.stdout, quiet.stdout, "logs never reach stdout");
    assert_eq!(loud.status.code(), quiet.status.code());
    let err = stderr(&loud);
    assert!(err.contains("running git"), "{err}");
    assert!(err.contains("held by a gate"), "{err}");

    let filtered = retire(&[], Some("lease::ops::retire=debug"));
    let err = stderr(&filtered);
    assert!(err.contains("held by a gate"), "{err}");
    assert!(!err.contains("running git"), "{err}");

    let json = retire(&["-vv", "--log-format", "json"], None);
    let lines: Vec<serde_json::Value> = stderr(&json)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "running git"),
        "{lines:?}"
    );

    let silent = retire(&["-qq", "-v"], Some(""));
    assert!(!stderr(&silent).contains("running git"));
}

/// `-vvv` (trace) shows each fsync of a real retire, naming the path and
/// what it makes durable (the record's new content, its rename, the audit
/// line); the default level shows none and stdout is the same.
#[test]
fn trace_shows_every_fsync_and_the_default_shows_none() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (quiet_id, _) = env.kept(&repo, "quiet", "true");
    let (id, _) = env.kept(&repo, "loud", "true");
    let o = env.lease().args(["retire", &quiet_id]).output().unwrap();
    assert_code(&o, 0);
    assert!(!stderr(&o).contains("fsync"), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let o = env.lease().args(["-vvv", "retire", &id]).output().unwrap();
    assert_code(&o, 0);
    assert!(!stdout(&o).contains("fsync"), "logs never reach stdout");
    let err = stderr(&o);
    let fsyncs: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("TRACE") && l.contains(" fsync "))
        .collect();
    let record = env.state.join(format!("records/{id}.json"));
    let records = env.state.join("records");
    let audit = env.state.join("audit.jsonl");
    for (path, what) in [
        (
            format!("path={}", records.display()),
            format!("the rename into `{}`", record.display()),
        ),
        (
            format!("path={}", records.display()),
            format!("the new content of `{}`", record.display()),
        ),
        (
            format!("path={}", audit.display()),
            "the appended audit line".to_string(),
        ),
    ] {
        assert!(
            fsyncs
                .iter()
                .any(|l| l.contains(&path) && l.contains(&what)),
            "no fsync of {path} ({what}):\n{err}"
        );
    }
    assert!(fsyncs.iter().all(|l| l.contains("ok=true")), "{err}");
}

/// `-v` logs each decision of a reap (per record, orphan and leftover) and
/// each step of a restore, as a retire logs its gates.
#[test]
fn reap_and_restore_log_each_decision_at_info() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = env.kept(&repo, "feat", "echo x > notes.txt");
    let o = env.lease().args(["-v", "reap"]).output().unwrap();
    assert_code(&o, 1);
    let err = stderr(&o);
    assert!(
        err.lines().any(|l| l.contains("INFO")
            && l.contains("reap: decided")
            && l.contains(&id)
            && l.contains("untracked")),
        "{err}"
    );
    let o = env.lease().args(["reap"]).output().unwrap();
    assert!(!stderr(&o).contains("reap: decided"), "{}", stderr(&o));
    // A restore: archive found, target free, branch, verified, fetched, done.
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "exec",
            "--",
            "sh",
            "-c",
            "git commit -q --allow-empty -m work",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let archived = env
        .records()
        .into_iter()
        .find(|r| !r["archive"].is_null())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let o = env
        .lease()
        .args(["-v", "restore", &archived])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let err = stderr(&o);
    for step in [
        "restore: archive found",
        "restore: target free",
        "restore: branch chosen",
        "restore: archive verified",
        "restore: fetched the archived tip",
        "restore: done",
    ] {
        assert!(err.contains(step), "no {step}:\n{err}");
    }
    // A refusal is logged with its reason code.
    let o = env
        .lease()
        .args(["-v", "restore", &archived])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let err = stderr(&o);
    assert!(
        err.lines()
            .any(|l| l.contains("restore: refused") && l.contains("already-restored")),
        "{err}"
    );
}
