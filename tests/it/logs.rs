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
