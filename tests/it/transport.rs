//! Transports of the sanitized git (SPEC "Truthful content probes", last
//! rule; "Words: durable"): no program chosen by repository config runs on
//! either side of a push or fetch; `--archive remote` reaches a local, an
//! http (git http-backend served on loopback) and an ssh remote (a real
//! sshd in inetd mode behind the user's `ProxyCommand`, and a fake `ssh`
//! on PATH that checks the arguments lease's git passes);
//! credentials are never asked for, and a dry run promises no removal the
//! real run cannot make; `retire --fetch` makes a branch merged upstream
//! durable.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::*;

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// A worktree with one commit that exists nowhere else (its content names
/// the branch: the sandbox's fixed dates would make equal commits equal),
/// kept and released.
fn unique(env: &TestEnv, repo: &Path, branch: &str) -> (String, PathBuf) {
    env.kept(
        repo,
        branch,
        &format!("echo {branch} > u.txt && git add u.txt && git commit -qm unique"),
    )
}

/// A logging sentinel script; returns its path.
fn sentinel(env: &TestEnv, name: &str, tail: &str) -> String {
    let p = env.root.join(name);
    write_exe(
        &p,
        &format!(
            "#!/bin/sh\necho \"{name} $*\" >> '{}'\n{tail}\n",
            env.root.join("sentinel.log").display()
        ),
    );
    p.to_str().unwrap().to_string()
}

#[track_caller]
fn assert_no_sentinel(env: &TestEnv) {
    let ran = fs::read_to_string(env.root.join("sentinel.log")).unwrap_or_default();
    assert!(
        ran.is_empty(),
        "a repository-configured program ran:\n{ran}"
    );
}

/// Hooks, an alternate-refs command and auto gc in the bare remote's own
/// config: the far side of a local push reads them.
fn arm_far_side(env: &TestEnv, remote: &Path) {
    let hooks = remote.join("hooks");
    fs::create_dir_all(&hooks).unwrap();
    for h in [
        "pre-receive",
        "update",
        "post-receive",
        "post-update",
        "reference-transaction",
        "push-to-checkout",
        "pre-auto-gc",
    ] {
        let tool = sentinel(env, &format!("far-{h}"), "exit 0");
        fs::copy(&tool, hooks.join(h)).unwrap();
    }
    let alt = env.root.join("alt.git");
    env.git(&env.root, &["init", "-q", "--bare", alt.to_str().unwrap()]);
    fs::write(
        remote.join("objects/info/alternates"),
        format!("{}\n", alt.join("objects").display()),
    )
    .unwrap();
    let refs = sentinel(env, "far-alternate-refs", "exit 0");
    for (k, v) in [
        ("core.alternateRefsCommand", refs.as_str()),
        ("gc.auto", "1"),
        ("receive.autogc", "true"),
        ("uploadpack.packObjectsHook", refs.as_str()),
    ] {
        env.git(remote, &["config", k, v]);
    }
}

/// `--archive remote` to a local remote whose config has hooks, an
/// alternate-refs command and auto gc: the far side runs sanitized, the
/// archival ref is read back, and restore fetches it the same way
/// (knock-out K43).
#[test]
fn archive_remote_to_a_local_remote_runs_none_of_its_hooks() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let (id, wt) = unique(&env, &repo, "feat");
    arm_far_side(&env, &remote);
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_no_sentinel(&env);
    assert!(!wt.exists());
    let want = format!("refs/lease/archive/{id}/head");
    let listed = env.git(
        &remote,
        &["for-each-ref", "--format=%(refname)", "refs/lease/"],
    );
    assert_eq!(listed, want);
    let o = env.lease().args(["restore", &id[..8]]).output().unwrap();
    assert_code(&o, 0);
    assert_no_sentinel(&env);
}

/// A repository cannot choose a transport program: `url.*.insteadOf` to
/// `ext::` with `protocol.ext.allow=always` (which beats a
/// `-c protocol.allow=never`), and `remote.<url>.vcs` for a URL without a
/// leading `/`. Every remote step holds; nothing runs (knock-out K42).
#[test]
fn a_repository_cannot_pick_a_transport_program() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let (id, wt) = unique(&env, &repo, "feat");
    let tool = sentinel(&env, "ext", "exit 1");
    let evil = env.root.join("bin");
    fs::create_dir(&evil).unwrap();
    fs::copy(&tool, evil.join("git-remote-evil")).unwrap();
    for (k, v) in [
        (
            format!("url.ext::{tool} %S .insteadOf"),
            remote.to_str().unwrap().to_string(),
        ),
        ("protocol.ext.allow".into(), "always".into()),
        ("protocol.evil.allow".into(), "always".into()),
    ] {
        env.git(&repo, &["config", &k, &v]);
    }
    let path = format!("{}:{}", evil.display(), std::env::var("PATH").unwrap());
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .env("PATH", &path)
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(
        json(&o)["targets"][0]["reasons"],
        serde_json::json!(["archive-push-failed"]),
        "{}",
        stdout(&o)
    );
    snap.assert_held_unchanged(&env, &repo, "archive-push-failed");
    assert_no_sentinel(&env);
    // --fetch by the same URL, and a remote helper chosen by a remote
    // named after an scp-like URL.
    let o = env
        .lease()
        .env("PATH", &path)
        .args(["retire", &id, "--fetch", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_no_sentinel(&env);
    env.git(
        &repo,
        &[
            "config",
            "--remove-section",
            &format!("url.ext::{tool} %S "),
        ],
    );
    env.git(&repo, &["remote", "set-url", "origin", "nohost:r.git"]);
    env.git(&repo, &["config", "remote.nohost:r.git.vcs", "evil"]);
    let o = env
        .lease()
        .env("PATH", &path)
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_no_sentinel(&env);
    assert!(wt.exists());
}

/// A dry run of `--archive remote` checks the push (`git push --dry-run`):
/// an unreachable remote holds in the dry run as in the real one, never
/// "would remove" (knock-out K45).
#[test]
fn a_dry_run_never_promises_a_push_the_real_run_cannot_make() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = unique(&env, &repo, "feat");
    env.git(
        &repo,
        &[
            "remote",
            "set-url",
            "origin",
            env.root.join("gone.git").to_str().unwrap(),
        ],
    );
    for dry in [true, false] {
        let mut c = env.lease();
        c.args(["retire", &id, "--archive", "remote", "--json"]);
        if dry {
            c.arg("--dry-run");
        }
        let o = c.output().unwrap();
        assert_code(&o, 1);
        let v = json(&o);
        assert_eq!(v["targets"][0]["disposition"], "held", "dry run {dry}: {v}");
        assert_eq!(
            v["targets"][0]["reasons"],
            serde_json::json!(["archive-push-failed"])
        );
    }
    assert!(wt.exists());
    // A reachable remote: the dry run says it would archive, and does not push.
    env.git(
        &repo,
        &[
            "remote",
            "set-url",
            "origin",
            env.root.join("remote.git").to_str().unwrap(),
        ],
    );
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "remote", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(json(&o)["targets"][0]["disposition"], "would-remove");
    let remote = env.root.join("remote.git");
    assert_eq!(env.git(&remote, &["for-each-ref", "refs/lease/"]), "");
}

/// `git http-backend` behind a small loopback HTTP server (python3), with
/// optional Basic auth; it stops by itself after `LIFETIME` seconds.
const HTTP_SERVER: &str = r#"
import base64, http.server, os, subprocess, sys, time
root, ready, auth = sys.argv[1], sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        self.cgi()
    def do_POST(self):
        self.cgi()
    def body(self):
        if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':
            out = b''
            while True:
                n = int(self.rfile.readline().strip() or b'0', 16)
                if n == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(n)
                self.rfile.readline()
        n = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(n) if n else b''
    def cgi(self):
        user = ''
        if auth != 'none':
            want = 'Basic ' + base64.b64encode(auth.encode()).decode()
            if self.headers.get('Authorization') != want:
                self.send_response(401)
                self.send_header('WWW-Authenticate', 'Basic realm="lease-test"')
                self.send_header('Content-Length', '0')
                self.end_headers()
                return
            user = auth.split(':')[0]
        path, _, query = self.path.partition('?')
        env = {'PATH': os.environ['PATH'], 'GIT_PROJECT_ROOT': root,
               'GIT_HTTP_EXPORT_ALL': '1', 'PATH_INFO': path, 'QUERY_STRING': query,
               'REQUEST_METHOD': self.command, 'REMOTE_ADDR': '127.0.0.1',
               'CONTENT_TYPE': self.headers.get('Content-Type', ''),
               'GIT_CONFIG_NOSYSTEM': '1', 'GIT_CONFIG_GLOBAL': '/dev/null'}
        if self.headers.get('Content-Encoding'):
            env['HTTP_CONTENT_ENCODING'] = self.headers['Content-Encoding']
        if self.headers.get('Git-Protocol'):
            env['GIT_PROTOCOL'] = self.headers['Git-Protocol']
        if user:
            env['REMOTE_USER'] = user
        out = subprocess.run(['git', 'http-backend'], input=self.body(), env=env,
                             capture_output=True, timeout=60).stdout
        sep = b'\r\n\r\n' if b'\r\n\r\n' in out else b'\n\n'
        head, _, rest = out.partition(sep)
        status, headers = 200, []
        for line in head.replace(b'\r\n', b'\n').split(b'\n'):
            k, _, v = line.decode().partition(':')
            if k.lower() == 'status':
                status = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)
srv = http.server.HTTPServer(('127.0.0.1', 0), H)
srv.timeout = 1
with open(ready + '.tmp', 'w') as f:
    f.write(str(srv.server_address[1]))
os.rename(ready + '.tmp', ready)
end = time.time() + 120
while time.time() < end:
    srv.handle_request()
"#;

/// A loopback `git http-backend` serving `env.root`; killed on drop.
struct HttpRemote {
    _server: Bg,
    port: u16,
}

impl HttpRemote {
    fn start(env: &TestEnv, name: &str, auth: &str) -> Option<HttpRemote> {
        if Command::new("python3").arg("--version").output().is_err() {
            skip("python3 is needed to serve git http-backend");
            return None;
        }
        let script = env.root.join("http-server.py");
        fs::write(&script, HTTP_SERVER).unwrap();
        let ready = env.file(&format!("{name}.port"));
        let mut c = env.cmd("python3");
        c.arg(&script)
            .arg(&env.root)
            .arg(&ready)
            .arg(auth)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        let server = Bg(Some(c.spawn().unwrap()));
        wait_until("the http server to write its port", || ready.exists());
        let port = fs::read_to_string(&ready).unwrap().trim().parse().unwrap();
        Some(HttpRemote {
            _server: server,
            port,
        })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/remote.git", self.port)
    }
}

/// `--archive remote` over http: the push and the readback reach
/// `git http-backend`; a server that asks for credentials holds (dry run
/// included) with a detail that says lease asks for none and what to run,
/// and the repository's credential helper never runs.
#[test]
fn archive_remote_over_http_and_a_remote_that_needs_credentials() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    env.git(&remote, &["config", "http.receivepack", "true"]);
    let Some(open) = HttpRemote::start(&env, "open", "none") else {
        return;
    };
    let Some(locked) = HttpRemote::start(&env, "locked", "u:p") else {
        return;
    };
    let helper = sentinel(
        &env,
        "credential-helper",
        "echo username=u; echo password=p",
    );
    env.git(
        &repo,
        &["config", "credential.helper", &format!("!{helper}")],
    );
    env.git(
        &repo,
        &[
            "config",
            &format!("credential.{}.helper", locked.url()),
            &format!("!{helper}"),
        ],
    );
    let (id, wt) = unique(&env, &repo, "feat");
    env.git(&repo, &["remote", "set-url", "origin", &locked.url()]);
    let snap = Snapshot::take(&env, &repo, &id);
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let v = json(&o);
    assert_eq!(
        v["targets"][0]["reasons"],
        serde_json::json!(["archive-push-failed"]),
        "{v}"
    );
    let detail = v["targets"][0]["detail"][0].as_str().unwrap();
    assert!(
        detail.contains("needs credentials")
            && detail.contains("no credential helper")
            && detail.contains(&format!("lease retire --archive bundle {}", &id[..8])),
        "{detail}"
    );
    snap.assert_held_unchanged(&env, &repo, "archive-push-failed");
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "remote", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(json(&o)["targets"][0]["disposition"], "held");
    assert_no_sentinel(&env);
    // The open server takes the push; the archival ref is read back.
    env.git(&repo, &["remote", "set-url", "origin", &open.url()]);
    let o = env
        .lease()
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v = json(&o);
    assert_eq!(
        v["targets"][0]["archive"]["remote"]["url"],
        open.url(),
        "{v}"
    );
    assert!(!wt.exists());
    assert_eq!(
        env.git(
            &remote,
            &["for-each-ref", "--format=%(refname)", "refs/lease/"]
        ),
        format!("refs/lease/archive/{id}/head")
    );
    assert_no_sentinel(&env);
}

/// A fake `ssh` first on PATH stands in for the user's ssh (no sshd is
/// started here): it logs its arguments, requires `-o BatchMode=yes`, and
/// runs the remote command locally; with `deny` present it answers like a
/// server that refuses the key.
fn fake_ssh(env: &TestEnv) -> (String, PathBuf) {
    let bin = env.root.join("ssh-bin");
    fs::create_dir(&bin).unwrap();
    let log = env.root.join("ssh.log");
    write_exe(
        &bin.join("ssh"),
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{log}'\n\
             case \" $* \" in *' -o BatchMode=yes '*) ;; *) echo 'fake ssh: no BatchMode' >&2; exit 255;; esac\n\
             if [ -e '{deny}' ]; then echo 'git@fakehost: Permission denied (publickey).' >&2; exit 255; fi\n\
             for last; do :; done\nexec sh -c \"$last\"\n",
            log = log.display(),
            deny = env.root.join("deny").display()
        ),
    );
    (
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        log,
    )
}

/// `--archive remote` over ssh runs the user's ssh (the first on PATH)
/// with `BatchMode=yes`, never the repository's `core.sshCommand`; a
/// refused key holds with an ssh hint (knock-out K46).
#[test]
fn archive_remote_over_ssh_uses_the_user_s_ssh_in_batch_mode() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let (path, log) = fake_ssh(&env);
    let repo_ssh = sentinel(&env, "repo-ssh", "exit 255");
    env.git(&repo, &["config", "core.sshCommand", &repo_ssh]);
    let (id, wt) = unique(&env, &repo, "feat");
    let url = format!("fakehost:{}", remote.display());
    env.git(&repo, &["remote", "set-url", "origin", &url]);
    fs::write(env.root.join("deny"), "").unwrap();
    let o = env
        .lease()
        .env("PATH", &path)
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let detail = json(&o)["targets"][0]["detail"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.contains("BatchMode=yes") && detail.contains("ssh-add"),
        "{detail}"
    );
    assert_no_sentinel(&env);
    fs::remove_file(env.root.join("deny")).unwrap();
    let o = env
        .lease()
        .env("PATH", &path)
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_no_sentinel(&env);
    assert!(!wt.exists());
    let ran = fs::read_to_string(&log).unwrap();
    assert!(
        ran.lines()
            .all(|l| l.contains("-o BatchMode=yes") && l.contains("fakehost")),
        "{ran}"
    );
    assert!(
        ran.contains("git-receive-pack") && ran.contains("git-upload-pack"),
        "{ran}"
    );
    assert_eq!(
        env.git(
            &remote,
            &["for-each-ref", "--format=%(refname)", "refs/lease/"]
        ),
        format!("refs/lease/archive/{id}/head")
    );
}

/// `retire --fetch` (SPEC "durable"): a branch merged upstream, which the
/// local tracking refs do not know, is durable once fetched; without
/// `--fetch` it is archived. A tracking ref whose branch is gone upstream
/// proves nothing even with `--fetch` (knock-out K47).
#[test]
fn retire_fetch_makes_a_branch_merged_upstream_durable() {
    let env = TestEnv::new();
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let (id, wt) = unique(&env, &repo, "feat");
    // Upstream takes the branch (pushed by URL: no tracking ref is made).
    env.git(
        &repo,
        &[
            "push",
            "-q",
            remote.to_str().unwrap(),
            "feat:refs/heads/merged",
        ],
    );
    let o = env
        .lease()
        .args(["retire", &id, "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        json(&o)["targets"][0]["unique_commits"],
        1,
        "{}",
        stdout(&o)
    );
    let o = env
        .lease()
        .args(["retire", &id, "--fetch", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    // A dry run fetches nothing, so the commit is not here as a tracking
    // ref yet, but the repository has it: confirmed on the remote now.
    assert_eq!(
        json(&o)["targets"][0]["unique_commits"],
        0,
        "{}",
        stdout(&o)
    );
    assert!(
        env.git(&repo, &["for-each-ref", "refs/remotes/origin/merged"])
            .is_empty()
    );
    let o = env
        .lease()
        .args(["retire", &id, "--fetch", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v = json(&o);
    assert_eq!(v["targets"][0]["unique_commits"], 0, "{v}");
    assert!(
        v["targets"][0]["archive"].is_null(),
        "nothing archived: {v}"
    );
    assert!(!wt.exists());
    assert!(
        !env.git(&repo, &["for-each-ref", "refs/remotes/origin/merged"])
            .is_empty(),
        "the tracking ref was fetched"
    );

    // A stale tracking ref: deleted upstream, still here. Not durable.
    let (id, _) = unique(&env, &repo, "feat2");
    let tip = env.git(&repo, &["rev-parse", "feat2"]);
    env.git(&repo, &["update-ref", "refs/remotes/origin/gone", &tip]);
    let o = env
        .lease()
        .args(["retire", &id, "--fetch", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        json(&o)["targets"][0]["unique_commits"],
        1,
        "{}",
        stdout(&o)
    );
}

/// A real OpenSSH server for one test, reached without a port: an ssh
/// config names `Host lease-test` with a `ProxyCommand` that runs `sshd -i`
/// (inetd mode: one connection on stdin/stdout), with a host key and an
/// authorized key made here. OpenSSH reads `~/.ssh/config` from the passwd
/// entry's home, not `$HOME`, so the user's `ssh` first on PATH is a
/// wrapper that runs the real one with `-F` that config. As root, sshd
/// needs its privilege-separation directory, so it runs in a private mount
/// namespace with a tmpfs on `/run` (`unshare -m`). Returns (host, PATH);
/// `None` (the test recorded as skipped) where sshd or ssh is missing, or
/// when not root.
fn real_sshd(env: &TestEnv) -> Option<(String, String)> {
    let sshd = Path::new("/usr/sbin/sshd");
    let ssh = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("ssh"))
        .find(|p| p.is_file());
    if !is_root() {
        // sshd (without PAM) refuses a locked account even with a key, and
        // the ordinary users tests run as have no password ("!" in shadow).
        skip("needs root: sshd refuses the locked account of an ordinary test user");
        return None;
    }
    let Some(ssh) = ssh.filter(|_| sshd.exists()) else {
        skip("no OpenSSH server or client (Debian openssh-server; .ci/run installs it)");
        return None;
    };
    if Command::new("ssh-keygen").arg("-?").output().is_err() {
        skip("no OpenSSH server (Debian openssh-server; .ci/run installs it)");
        return None;
    }
    let dir = env.root.join("sshd");
    fs::create_dir(&dir).unwrap();
    for key in ["host", "user"] {
        let o = env
            .cmd("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(dir.join(key))
            .output()
            .unwrap();
        assert_code(&o, 0);
    }
    fs::copy(dir.join("user.pub"), dir.join("authorized_keys")).unwrap();
    let cfg = dir.join("sshd_config");
    fs::write(
        &cfg,
        format!(
            "HostKey {d}/host\nAuthorizedKeysFile {d}/authorized_keys\nPidFile none\n\
             UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             SetEnv PATH={path}\nLogLevel ERROR\n",
            d = dir.display(),
            path = std::env::var("PATH").unwrap()
        ),
    )
    .unwrap();
    let inetd = format!("{} -i -f {}", sshd.display(), cfg.display());
    let proxy =
        format!("unshare -m sh -c 'mount -t tmpfs tmpfs /run && mkdir /run/sshd && exec {inetd}'");
    let ssh_dir = env.root.join("home/.ssh");
    fs::create_dir_all(&ssh_dir).unwrap();
    fs::write(
        ssh_dir.join("known_hosts"),
        format!(
            "lease-test {}",
            fs::read_to_string(dir.join("host.pub")).unwrap()
        ),
    )
    .unwrap();
    fs::write(
        ssh_dir.join("config"),
        format!(
            "Host lease-test\n  ProxyCommand {proxy}\n  IdentityFile {}\n  IdentitiesOnly yes\n  \
             UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n",
            dir.join("user").display(),
            ssh_dir.join("known_hosts").display()
        ),
    )
    .unwrap();
    fs::set_permissions(ssh_dir.join("config"), fs::Permissions::from_mode(0o600)).unwrap();
    let bin = env.root.join("ssh-wrapper");
    fs::create_dir(&bin).unwrap();
    write_exe(
        &bin.join("ssh"),
        &format!(
            "#!/bin/sh\nexec '{}' -F '{}' \"$@\"\n",
            ssh.display(),
            ssh_dir.join("config").display()
        ),
    );
    Some((
        "lease-test".to_string(),
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
    ))
}

/// `--archive remote` to an ssh remote served by a real sshd: lease's git
/// runs the user's own ssh (their `~/.ssh/config`, `BatchMode=yes`), the
/// repository's `core.sshCommand` never; a key the server does not accept
/// holds with the ssh hint; the archival ref is pushed and read back.
#[test]
fn archive_remote_over_a_real_sshd() {
    let env = TestEnv::new();
    let Some((host, path)) = real_sshd(&env) else {
        return;
    };
    let repo = env.repo();
    let remote = env.root.join("remote.git");
    let repo_ssh = sentinel(&env, "repo-ssh", "exit 255");
    env.git(&repo, &["config", "core.sshCommand", &repo_ssh]);
    let (id, wt) = unique(&env, &repo, "feat");
    env.git(
        &repo,
        &[
            "remote",
            "set-url",
            "origin",
            &format!("{host}:{}", remote.display()),
        ],
    );
    // The server refuses the key first: held, with what to run.
    let keys = env.root.join("sshd/authorized_keys");
    let authorized = fs::read(&keys).unwrap();
    fs::write(&keys, "").unwrap();
    let o = env
        .lease()
        .env("PATH", &path)
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    let detail = json(&o)["targets"][0]["detail"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.contains("ssh-add") && detail.contains("ssh -T lease-test"),
        "{detail}"
    );
    assert_no_sentinel(&env);
    fs::write(&keys, authorized).unwrap();
    let o = env
        .lease()
        .env("PATH", &path)
        .args(["retire", &id, "--archive", "remote", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(!wt.exists(), "{}", stdout(&o));
    assert_no_sentinel(&env);
    assert_eq!(
        env.git(
            &remote,
            &["for-each-ref", "--format=%(refname)", "refs/lease/"]
        ),
        format!("refs/lease/archive/{id}/head")
    );
}
