//! Host adapters (SPEC "Hosts that lease does not start"): `lease hook
//! claude-code` driven by a fake Claude Code that runs hooks as the real
//! one does (tests/hosts/fake-claude-code.js, under real node), the
//! plugin's hooks.json, the worktrunk pre-remove hook, the GitHub Actions
//! action's scripts under node as the runner runs them, and the runner's
//! job-completed hook.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::support::*;

/// The checked-in `shim/` directory.
fn shim_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("shim")
}

/// The fake hosts (tests/hosts).
fn hosts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hosts")
}

/// The directory of the lease binary under test, to put first on PATH.
fn lease_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_lease"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// PATH with the lease binary's directory first.
fn path_with_lease() -> String {
    format!(
        "{}:{}",
        lease_dir().display(),
        std::env::var("PATH").unwrap()
    )
}

/// node, or `None` after saying SKIPPED (.ci/run installs it).
fn node() -> Option<PathBuf> {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("node"))
        .find(|p| p.is_file());
    if found.is_none() {
        skip("needs node (apt-get install nodejs; .ci/run installs it)");
    }
    found
}

/// The plugin's hooks.json, parsed.
fn hooks_json() -> serde_json::Value {
    let text = fs::read_to_string(shim_dir().join("claude-code/hooks/hooks.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The shell command hooks.json wires to `event`.
fn hook_command(event: &str) -> String {
    let h = hooks_json();
    h["hooks"][event][0]["hooks"][0]["command"]
        .as_str()
        .unwrap_or_else(|| panic!("no command for {event}: {h:#}"))
        .to_string()
}

/// A running fake Claude Code ([`FakeClaude::start`]); killed on drop.
struct FakeClaude {
    bg: Bg,
    ready: PathBuf,
    go: PathBuf,
    ready2: PathBuf,
}

/// What a fake host does: in `cwd`, with `vars` added to the hermetic
/// environment, it runs `create` with `payload` through `sh -c`, then, if
/// `remove` is given, waits for [`FakeClaude::remove`]. `claude_pid` false
/// leaves CLAUDE_PID unset (Claude Code before 2.1.214).
struct Plan<'a> {
    cwd: &'a Path,
    vars: &'a [(&'a str, &'a str)],
    create: &'a str,
    payload: serde_json::Value,
    remove: Option<&'a str>,
    claude_pid: bool,
}

/// What one hook run ended with, as the fake host saw it.
#[derive(Debug)]
struct HookRun {
    host_pid: u32,
    code: Option<i64>,
    path: String,
    stdout: String,
    stderr: String,
}

impl FakeClaude {
    /// Starts the fake host as `plan` says ([`Plan`]).
    fn start(env: &TestEnv, node: &Path, plan: Plan<'_>) -> FakeClaude {
        let Plan {
            cwd,
            vars,
            create,
            payload,
            remove,
            claude_pid,
        } = plan;
        let ready = env.fresh_file("fake-claude-ready");
        let go = env.fresh_file("fake-claude-go");
        let ready2 = env.fresh_file("fake-claude-ready2");
        if remove.is_some() {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                &go,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            )
            .unwrap();
        }
        let cfg = env.fresh_file("fake-claude.json");
        let doc = serde_json::json!({
            "create": create,
            "payload": payload,
            "ready": ready,
            "remove": remove,
            "go": go,
            "ready2": ready2,
            "claude_pid": claude_pid,
        });
        fs::write(&cfg, doc.to_string()).unwrap();
        let mut c = env.cmd(node);
        c.arg(hosts_dir().join("fake-claude-code.js"))
            .arg(&cfg)
            .current_dir(cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        for (k, v) in vars {
            c.env(k, v);
        }
        FakeClaude {
            bg: Bg(Some(c.spawn().unwrap())),
            ready,
            go,
            ready2,
        }
    }

    /// Waits for the create hook's result.
    fn created(&self) -> HookRun {
        read_run(&self.ready)
    }

    /// Lets the host run its remove hook, and waits for its result.
    fn remove(&self) -> HookRun {
        fs::write(&self.go, "go\n").unwrap();
        read_run(&self.ready2)
    }

    fn pid(&self) -> u32 {
        self.bg.pid()
    }
}

/// Waits for a result file the fake host renamed into place, and reads it.
fn read_run(path: &Path) -> HookRun {
    wait_until(&format!("the fake host's {}", path.display()), || {
        path.exists()
    });
    let v: serde_json::Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    HookRun {
        host_pid: v["pid"].as_u64().unwrap() as u32,
        code: v["code"].as_i64(),
        path: v["path"].as_str().unwrap_or("").to_string(),
        stdout: v["stdout"].as_str().unwrap_or("").to_string(),
        stderr: v["stderr"].as_str().unwrap_or("").to_string(),
    }
}

/// A WorktreeCreate payload as Claude Code 2.1.332 sends it.
fn create_payload(repo: &Path, name: &str) -> serde_json::Value {
    serde_json::json!({
        "session_id": "8312d046-0000-4000-8000-000000000001",
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": repo,
        "hook_event_name": "WorktreeCreate",
        "name": name,
    })
}

/// `git worktree list --porcelain` of `repo`.
fn worktrees(env: &TestEnv, repo: &Path) -> String {
    env.git(repo, &["worktree", "list", "--porcelain"])
}

/// Runs `lease hook claude-code EVENT` directly (not through a host) with
/// `payload` on stdin and `vars` added.
fn hook_by_hand(env: &TestEnv, event: &str, payload: &[u8], vars: &[(&str, &str)]) -> Output {
    use std::io::Write;
    let mut c = env.lease();
    c.args(["hook", "claude-code", event])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in vars {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn claude_code_malformed_payload_exits_2_with_one_line_and_creates_nothing() {
    let Some(node) = node() else { return };
    let env = TestEnv::new();
    let repo = env.repo();
    let before = worktrees(&env, &repo);
    let path = path_with_lease();
    for payload in [
        serde_json::json!("not an object"),
        serde_json::json!({"cwd": repo, "session_id": "s"}),
        serde_json::json!({"name": 42, "cwd": repo}),
        serde_json::json!({"name": "x", "cwd": "relative/dir"}),
        serde_json::json!({"name": "x", "cwd": repo, "base_commit": "--upload-pack=touch /tmp/x"}),
    ] {
        let create = hook_command("WorktreeCreate");
        let host = FakeClaude::start(
            &env,
            &node,
            Plan {
                cwd: &repo,
                vars: &[("PATH", &path)],
                create: &create,
                payload: payload.clone(),
                remove: None,
                claude_pid: true,
            },
        );
        let run = host.created();
        assert_eq!(run.code, Some(2), "{payload}: {run:?}");
        assert_eq!(run.stdout, "", "{payload}: no path printed");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{payload}: one line: {run:?}");
        assert!(lines[0].contains("malformed payload"), "{payload}: {run:?}");
    }
    assert_eq!(worktrees(&env, &repo), before, "no worktree was added");
    assert!(env.records().is_empty(), "no record was written");
    assert!(!env.state.join("audit.jsonl").exists(), "no audit line");
}

#[test]
fn claude_code_remove_hook_with_a_malformed_payload_removes_nothing() {
    let env = TestEnv::new();
    let repo = env.repo();
    let before = worktrees(&env, &repo);
    for payload in [&b"{}"[..], b"{\"worktree_path\":\"wt\"}", b"garbage"] {
        let o = hook_by_hand(
            &env,
            "worktree-remove",
            payload,
            &[("CLAUDE_PROJECT_DIR", repo.to_str().unwrap())],
        );
        assert_code(&o, 2);
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
        assert!(stderr(&o).contains("malformed payload"), "{}", stderr(&o));
    }
    assert_eq!(worktrees(&env, &repo), before);
    assert!(env.records().is_empty());
}

#[test]
fn claude_code_hook_run_by_hand_binds_nothing_and_says_how() {
    let env = TestEnv::new();
    let repo = env.repo();
    let before = worktrees(&env, &repo);
    let payload = create_payload(&repo, "by-hand").to_string();
    // Outside Claude Code: no CLAUDE_PID, no CLAUDE_PROJECT_DIR.
    let o = hook_by_hand(&env, "worktree-create", payload.as_bytes(), &[]);
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("not run by Claude Code"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("lease create --bind-pid PID"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "");
    // A CLAUDE_PID left over from another session: a live process that is
    // not an ancestor of the hook.
    let mut other = env.cmd("sleep").arg("600").spawn().unwrap();
    let pid = other.id().to_string();
    let o = hook_by_hand(
        &env,
        "worktree-create",
        payload.as_bytes(),
        &[("CLAUDE_PID", &pid)],
    );
    other.kill().unwrap();
    other.wait().unwrap();
    assert_code(&o, 2);
    assert!(stderr(&o).contains("not an ancestor"), "{}", stderr(&o));
    assert_eq!(worktrees(&env, &repo), before);
    assert!(env.records().is_empty());
}

#[test]
fn hooks_json_wires_both_worktree_events_and_fails_closed_without_lease() {
    let h = hooks_json();
    let events: Vec<&String> = h["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events, ["WorktreeCreate", "WorktreeRemove"]);
    for event in ["WorktreeCreate", "WorktreeRemove"] {
        let groups = h["hooks"][event].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{event}");
        assert!(
            groups[0].get("matcher").is_none(),
            "{event} takes no matcher"
        );
        let handler = &groups[0]["hooks"][0];
        assert_eq!(handler["type"], "command", "{event}");
        assert!(
            handler["timeout"].as_u64().is_some_and(|t| t > 0),
            "{event}"
        );
        assert!(
            handler.get("args").is_none(),
            "{event}: shell form (exec form needs Claude Code 2.1.139)"
        );
    }
    let manifest: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(shim_dir().join("claude-code/.claude-plugin/plugin.json")).unwrap(),
    )
    .unwrap();
    let name = manifest["name"].as_str().unwrap();
    assert!(
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
        "kebab-case plugin name: {name}"
    );
    assert!(manifest["keywords"].is_array(), "keywords must be an array");
    // shim/ is the plugin's marketplace: its one entry is this plugin.
    let market: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(shim_dir().join(".claude-plugin/marketplace.json")).unwrap(),
    )
    .unwrap();
    assert!(market["owner"]["name"].is_string());
    assert_eq!(market["plugins"][0]["name"], name);
    let source = market["plugins"][0]["source"].as_str().unwrap();
    assert!(
        shim_dir()
            .join(source)
            .join(".claude-plugin/plugin.json")
            .is_file(),
        "the marketplace's source is the plugin: {source}"
    );
    // Without lease on PATH each command fails (non-zero: Claude Code
    // aborts the creation, keeps the tree) and says why.
    let env = TestEnv::new();
    let repo = env.repo();
    let bare_path = "/usr/bin:/bin";
    for event in ["WorktreeCreate", "WorktreeRemove"] {
        let o = env
            .cmd("sh")
            .args(["-c", &hook_command(event)])
            .env("PATH", bare_path)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert_code(&o, 127);
        assert!(
            stderr(&o).contains("`lease` is not on PATH"),
            "{}",
            stderr(&o)
        );
        assert_eq!(stdout(&o), "");
    }
}

/// Runs the worktrunk hook as `wt remove` does: `sh -c` of the configured
/// line (README's, `{{ worktree_path }}` expanded and shell-escaped) in
/// the worktree being removed, the template variables as JSON on stdin.
fn wt_pre_remove(env: &TestEnv, wt: &Path) -> Output {
    use std::io::Write;
    let script = shim_dir().join("worktrunk/pre-remove.sh");
    let line = format!("exec {} {}", sh_quote(&script), sh_quote(wt));
    let mut child = env
        .cmd("sh")
        .args(["-c", &line])
        .env("PATH", path_with_lease())
        .current_dir(wt)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ctx = serde_json::json!({"hook_type": "pre-remove", "worktree_path": wt, "branch": "b"});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(ctx.to_string().as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn worktrunk_pre_remove_aborts_while_a_consumer_holds_the_tree() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (_launcher, _pid) = env.spawn_holder(&["--repo", repo.to_str().unwrap()]);
    let rec = env.record();
    let id = rec["id"].as_str().unwrap().to_string();
    let wt = PathBuf::from(rec["worktree"]["path"].as_str().unwrap());
    let snap = Snapshot::take(&env, &repo, &id);
    let o = wt_pre_remove(&env, &wt);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("lease keeps"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("launcher-alive") || stderr(&o).contains("consumer-alive"),
        "{}",
        stderr(&o)
    );
    let reason = if stderr(&o).contains("launcher-alive") {
        "launcher-alive"
    } else {
        "consumer-alive"
    };
    snap.assert_held_unchanged(&env, &repo, reason);
}

#[test]
fn worktrunk_pre_remove_lets_lease_retire_a_free_tree_and_still_aborts_wt() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = env.kept(&repo, "wt-free", "true");
    let o = wt_pre_remove(&env, &wt);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("retired by lease"), "{}", stderr(&o));
    assert!(!wt.exists(), "lease removed it");
    assert_eq!(env.record_of(&id)["state"], "removed");
}

#[test]
fn worktrunk_pre_remove_leaves_unrecorded_trees_to_worktrunk() {
    let env = TestEnv::new();
    let repo = env.repo();
    let wt = env.root.join("wt-by-worktrunk");
    env.add_worktree(&repo, "by-wt", &wt);
    let before = manifest(&wt);
    let o = wt_pre_remove(&env, &wt);
    assert_code(&o, 0);
    assert!(stderr(&o).contains("no lease record"), "{}", stderr(&o));
    assert_eq!(manifest(&wt), before, "untouched");
}

#[test]
fn worktrunk_pre_remove_fails_closed_without_lease() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (_, wt) = env.kept(&repo, "wt-no-lease", "true");
    let script = shim_dir().join("worktrunk/pre-remove.sh");
    let o = env
        .cmd("sh")
        .args([
            "-c",
            &format!("exec {} {}", sh_quote(&script), sh_quote(&wt)),
        ])
        .env("PATH", "/usr/bin:/bin")
        .current_dir(&wt)
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(stderr(&o).contains("not on PATH"), "{}", stderr(&o));
    assert!(wt.exists());
}

#[test]
fn runner_job_completed_hook_reaps_and_treats_held_as_done() {
    let env = TestEnv::new();
    let repo = env.repo();
    // A finished job's worktree (terminal, clean) and a running one.
    let (done, done_wt) = env.kept(&repo, "job-done", "true");
    let (_running, _pid) = env.spawn_holder(&["--repo", repo.to_str().unwrap()]);
    let hook = shim_dir().join("github-action/job-completed.sh");
    // The runner runs a `.sh` hook as `bash -e FILE`.
    let o = env
        .cmd("bash")
        .arg("-e")
        .arg(&hook)
        .env("PATH", path_with_lease())
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(!done_wt.exists(), "the finished job's worktree was reaped");
    assert_eq!(env.record_of(&done)["state"], "removed");
    let running: Vec<_> = env
        .records()
        .into_iter()
        .filter(|r| r["state"] == "active")
        .collect();
    assert_eq!(running.len(), 1, "the running job's worktree stays");
    assert!(
        Path::new(running[0]["worktree"]["path"].as_str().unwrap()).exists(),
        "still there"
    );
}

/// Starts a fake Claude Code that runs the plugin's WorktreeCreate command
/// (and, with `remove`, its WorktreeRemove command later) in `repo`.
fn plugin_host(
    env: &TestEnv,
    node: &Path,
    repo: &Path,
    name: &str,
    remove: bool,
    claude_pid: bool,
) -> FakeClaude {
    let path = path_with_lease();
    let create = hook_command("WorktreeCreate");
    let remove_cmd = hook_command("WorktreeRemove");
    FakeClaude::start(
        env,
        node,
        Plan {
            cwd: repo,
            vars: &[("PATH", &path)],
            create: &create,
            payload: create_payload(repo, name),
            remove: remove.then_some(remove_cmd.as_str()),
            claude_pid,
        },
    )
}

/// The record whose worktree is `path`.
fn record_at(env: &TestEnv, path: &str) -> serde_json::Value {
    env.records()
        .into_iter()
        .find(|r| r["worktree"]["path"] == path)
        .unwrap_or_else(|| panic!("no record for {path}: {:#?}", env.records()))
}

#[test]
fn claude_code_tree_outlives_the_hook_and_the_keeper_releases_it_when_claude_code_is_killed() {
    let Some(node) = node() else { return };
    let env = TestEnv::new();
    let repo = env.repo();
    // Claude Code 2.1.214+ (CLAUDE_PID) and older (the session leader's parent).
    for (claude_pid, name) in [(true, "bold-oak-a3f2"), (false, "agent-a1b2c3")] {
        let host = plugin_host(&env, &node, &repo, name, false, claude_pid);
        let run = host.created();
        assert_eq!(run.code, Some(0), "{run:?}");
        assert_eq!(
            run.stdout,
            format!("{}\n", run.path),
            "stdout carries only the path"
        );
        let wt = PathBuf::from(&run.path);
        assert!(wt.is_absolute() && wt.join(".git").is_file(), "{run:?}");
        assert_eq!(fs::canonicalize(&wt).unwrap(), wt, "a physical path");
        let rec = record_at(&env, &run.path);
        let id = rec["id"].as_str().unwrap().to_string();
        assert_eq!(rec["owner"]["kind"], "claude-code");
        assert_eq!(rec["owner"]["name"], name);
        // Bound to the host process itself, not to the hook or its shell.
        assert_eq!(
            rec["sessions"][0]["bound"]["pid"].as_u64(),
            Some(u64::from(host.pid())),
            "{rec:#}"
        );
        // The hook has exited; the tree is still held, for the host.
        let snap = Snapshot::take(&env, &repo, &id);
        let o = env
            .lease()
            .args(["retire", "--json", &id])
            .output()
            .unwrap();
        assert_code(&o, 1);
        let why = reasons(&o);
        snap.assert_held_unchanged(&env, &repo, &why[0]);
        // Claude Code dies by SIGKILL: the keeper ends the session.
        assert_eq!(run.host_pid, host.pid());
        signal(host.pid(), "KILL");
        wait_until("the keeper to end the record", || {
            env.record_of(&id)["state"] == "terminal"
        });
        let o = env
            .lease()
            .args(["retire", "--json", &id])
            .output()
            .unwrap();
        assert_code(&o, 0);
        assert_eq!(disposition(&o), "removed");
        assert!(!wt.exists());
    }
}

#[test]
fn claude_code_remove_while_the_session_runs_is_pending_and_done_when_it_ends() {
    let Some(node) = node() else { return };
    let env = TestEnv::new();
    let repo = env.repo();
    let host = plugin_host(&env, &node, &repo, "pending-one", true, true);
    let run = host.created();
    assert_eq!(run.code, Some(0), "{run:?}");
    let wt = PathBuf::from(&run.path);
    let id = record_at(&env, &run.path)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let removed = host.remove();
    assert_eq!(removed.code, Some(0), "{removed:?}");
    assert!(removed.stderr.contains("pending"), "{removed:?}");
    assert_eq!(removed.stdout, "");
    assert!(wt.exists(), "the session still holds it");
    signal(host.pid(), "KILL");
    wait_until("the keeper to retire the tree", || {
        env.record_of(&id)["state"] == "removed"
    });
    assert!(!wt.exists());
}

#[test]
fn claude_code_remove_keeps_a_tree_that_holds_work_and_says_why_first() {
    let Some(node) = node() else { return };
    let env = TestEnv::new();
    let repo = env.repo();
    let host = plugin_host(&env, &node, &repo, "has-work", true, true);
    let run = host.created();
    assert_eq!(run.code, Some(0), "{run:?}");
    let wt = PathBuf::from(&run.path);
    fs::write(wt.join("notes.txt"), "unsaved work\n").unwrap();
    let before = manifest(&wt);
    let removed = host.remove();
    assert_eq!(removed.code, Some(1), "{removed:?}");
    let first = removed.stderr.lines().next().unwrap_or("");
    assert!(
        first.contains("kept") && first.contains("untracked"),
        "the reason is the first stderr line: {removed:?}"
    );
    assert_eq!(manifest(&wt), before, "nothing changed");
    let id = record_at(&env, &run.path)["id"]
        .as_str()
        .unwrap()
        .to_string();
    signal(host.pid(), "KILL");
    wait_until("the keeper to end the record", || {
        env.record_of(&id)["state"] == "terminal"
    });
    assert_eq!(manifest(&wt), before, "no intent ran: the work stays");
}

#[test]
fn claude_code_remove_hook_run_inside_the_tree_is_no_process_reference() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = env.kept(&repo, "free-tree", "true");
    // Claude Code runs the hook in the session's directory, which may be
    // the tree itself; nothing holds it, so it is removed now.
    let payload = serde_json::json!({"session_id": "s", "cwd": wt, "worktree_path": wt});
    let mut c = env.lease();
    c.args(["hook", "claude-code", "worktree-remove"])
        .current_dir(&wt)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 0);
    assert!(stderr(&o).contains("removed"), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert_eq!(env.record_of(&id)["state"], "removed");
    assert!(!wt.exists());
}

/// A fake `Runner.Worker` ([`tests/hosts/fake-runner-worker.js`]) that ran
/// the action's main and post; waits for [`Worker::end`].
struct Worker {
    bg: Bg,
    end: PathBuf,
    result: serde_json::Value,
}

impl Worker {
    fn run(env: &TestEnv, node: &Path, repo: &Path, inputs: serde_json::Value) -> Worker {
        let dir = env.fresh_file("runner");
        fs::create_dir(&dir).unwrap();
        let exe = dir.join("Runner.Worker");
        let body = fs::read_to_string(hosts_dir().join("fake-runner-worker.js")).unwrap();
        write_exe(&exe, &format!("#!{}\n{body}", node.display()));
        let files = dir.join("files");
        fs::create_dir(&files).unwrap();
        let end = dir.join("end");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &end,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let ready = dir.join("ready");
        let cfg = dir.join("cfg.json");
        let doc = serde_json::json!({
            "action": shim_dir().join("github-action"),
            "inputs": inputs,
            "env": {"GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "77", "GITHUB_JOB": "test"},
            "workspace": repo,
            "files": files,
            "ready": ready,
            "end": end,
        });
        fs::write(&cfg, doc.to_string()).unwrap();
        let bg = Bg(Some(
            env.cmd(&exe)
                .arg(&cfg)
                .env("PATH", path_with_lease())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .unwrap(),
        ));
        wait_until("the fake runner's steps", || ready.exists());
        let result = serde_json::from_slice(&fs::read(&ready).unwrap()).unwrap();
        Worker { bg, end, result }
    }

    /// Ends the job: the worker exits 0.
    fn end(mut self) {
        fs::write(&self.end, "end\n").unwrap();
        let status = self.bg.0.take().unwrap().wait().unwrap();
        assert!(status.success());
    }
}

#[test]
fn github_action_binds_the_job_worker_and_post_retires_when_the_job_ends() {
    let Some(node) = node() else { return };
    let env = TestEnv::new();
    let repo = env.repo();
    let w = Worker::run(&env, &node, &repo, serde_json::json!({"branch": "ci/77"}));
    let r = &w.result;
    assert_eq!(r["main"]["code"], 0, "{r:#}");
    let path = r["outputs"]["path"].as_str().unwrap().to_string();
    let id = r["outputs"]["id"].as_str().unwrap().to_string();
    let rec = env.record_of(&id);
    assert_eq!(rec["worktree"]["path"], path.as_str());
    assert_eq!(rec["branch"], "ci/77");
    assert_eq!(rec["owner"]["name"], "o/r/77/test");
    // The keeper runs without the job's tracking id, so the runner's orphan
    // cleanup does not kill it at the job's end.
    let main_out = r["main"]["stdout"].as_str().unwrap();
    let keeper: u32 = main_out
        .split("keeper pid ")
        .nth(1)
        .and_then(|s| s.trim_end_matches([')', '\n']).parse().ok())
        .unwrap_or_else(|| panic!("{main_out}"));
    let environ = fs::read(format!("/proc/{keeper}/environ")).unwrap();
    assert!(
        !environ
            .split(|&b| b == 0)
            .any(|v| v.starts_with(b"RUNNER_TRACKING_ID=")),
        "the keeper must not carry RUNNER_TRACKING_ID"
    );
    // post ran while the worker lives: pending.
    assert_eq!(r["post"]["code"], 0, "{r:#}");
    assert!(
        r["post"]["stdout"].as_str().unwrap().contains("pending"),
        "{r:#}"
    );
    assert!(Path::new(&path).exists());
    w.end();
    wait_until("the keeper to retire the job's worktree", || {
        env.record_of(&id)["state"] == "removed"
    });
    assert!(!Path::new(&path).exists());
}

#[test]
fn github_action_without_a_runner_worker_creates_nothing_and_post_has_nothing_to_do() {
    let Some(node) = node() else { return };
    let env = TestEnv::new();
    let repo = env.repo();
    let state = env.file("state");
    let o = env
        .cmd(&node)
        .arg(shim_dir().join("github-action/main.js"))
        .env("PATH", path_with_lease())
        .env("GITHUB_WORKSPACE", &repo)
        .env("GITHUB_STATE", &state)
        .current_dir(&repo)
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(stdout(&o).starts_with("::error::"), "{}", stdout(&o));
    assert!(stdout(&o).contains("Runner.Worker"), "{}", stdout(&o));
    assert!(env.records().is_empty());
    assert!(!state.exists(), "no state saved");
    // post runs even though main failed, and finds nothing to retire.
    let o = env
        .cmd(&node)
        .arg(shim_dir().join("github-action/post.js"))
        .env("PATH", path_with_lease())
        .current_dir(&repo)
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(stdout(&o).contains("nothing to retire"), "{}", stdout(&o));
    let yml = fs::read_to_string(shim_dir().join("github-action/action.yml")).unwrap();
    for line in [
        "using: node20",
        "main: main.js",
        "post: post.js",
        "post-if: always()",
    ] {
        assert!(yml.lines().any(|l| l.trim() == line), "action.yml: {line}");
    }
}
