//! Compiled for tests only (`#[cfg(test)] mod tests;` in the parent module).
//!
//! The unit tests of the sanitized git builder, against the real git on
//! PATH (the fixed -c overrides, the environment it clears, probes that fail
//! on a warning).

use super::*;
use crate::git::parse::first_line;

/// A probe that warns proves nothing (reason `git-failed`, knock-out
/// K21): a `.gitignore` symlink makes `git status` warn on stderr, skip
/// the rules and still exit 0.
#[test]
fn probe_fails_on_a_warning_even_when_git_exits_zero() {
    let git = Git::resolve(&crate::policy::defaults()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    git.plain(d).args(["init", "-q"]).run().unwrap();
    std::os::unix::fs::symlink("/nonexistent/rules", d.join(".gitignore")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::fs::write(d.join("sub/f"), "x").unwrap();
    let status = [
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignored=matching",
    ];
    let out = git.plain(d).args(status).output().unwrap();
    assert!(
        out.ok && !out.stderr.is_empty(),
        "git warns, exit 0: {out:?}"
    );
    assert!(git.plain(d).args(status).run().is_ok());
    assert!(git.plain(d).args(status).probe().is_err());
    // A clean probe passes; a failing one fails even without stderr.
    assert!(
        git.plain(d)
            .args(["rev-parse", "--git-dir"])
            .probe()
            .is_ok()
    );
    let quiet_failure = ["rev-parse", "-q", "--verify", "refs/heads/none"];
    let out = git.plain(d).args(quiet_failure).output().unwrap();
    assert!(!out.ok && out.stderr.is_empty(), "{out:?}");
    assert!(git.plain(d).args(quiet_failure).probe().is_err());
}

#[test]
fn git_is_found_on_path_but_never_relative_in_our_own_dir_or_the_shim() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let exe = |dir: &str, text: &str, mode: u32| {
        let d = t.path().join(dir);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("git"), text).unwrap();
        std::fs::set_permissions(d.join("git"), std::fs::Permissions::from_mode(mode)).unwrap();
        d
    };
    let own = exe("own", "#!/bin/sh\n", 0o755);
    let shim = exe("shim", "#!/bin/sh\n# lease-shim\n", 0o755);
    let plain = exe("plain", "#!/bin/sh\n", 0o644);
    let only_owner = exe("owner", "#!/bin/sh\n", 0o700);
    std::fs::create_dir_all(t.path().join("dir/git")).unwrap();
    let real = exe("real", "#!/bin/sh\n", 0o755);
    assert!(is_lease_shim(&shim.join("git")) && !is_lease_shim(&real.join("git")));
    assert!(is_executable(&only_owner.join("git")));
    assert!(!is_executable(&plain.join("git")));
    assert!(!is_executable(&t.path().join("dir/git")), "a directory");
    let path = std::env::join_paths([
        Path::new("relative"),
        &own,
        &shim,
        &plain,
        &t.path().join("dir"),
        &real,
    ])
    .unwrap();
    assert_eq!(find_git_in(&path, Some(&own)), Some(real.join("git")));
    assert_eq!(find_git_in(&path, None), Some(own.join("git")));
    // The same `real` directory spelled relative to the current one.
    let cwd = std::env::current_dir().unwrap();
    let up = "../".repeat(cwd.components().count() - 1);
    let relative = PathBuf::from(up).join(real.strip_prefix("/").unwrap());
    assert!(is_executable(&relative.join("git")));
    let rel = std::env::join_paths([&relative, &own]).unwrap();
    assert_eq!(
        find_git_in(&rel, None),
        Some(own.join("git")),
        "relative entries are skipped"
    );
}

#[test]
fn a_git_error_names_the_command_without_lease_s_overrides() {
    let git = Git::resolve(&crate::policy::defaults()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    git.plain(d).args(["init", "-q"]).run().unwrap();
    let e = git
        .repo(&d.join(".git"))
        .unwrap()
        .cmd(d)
        .args(["rev-parse", "--verify", "-q", "refs/heads/none"])
        .run()
        .unwrap_err();
    let Error::Git { args, .. } = &e else {
        panic!("{e:?}");
    };
    assert_eq!(args, "rev-parse --verify -q refs/heads/none");
}

#[test]
fn transports_are_classified_as_git_does() {
    use Transport::*;
    for (url, want) in [
        ("/srv/r.git", Local),
        ("../r.git", Local),
        ("r.git", Local),
        ("./a:b", Local),
        ("file:///srv/r.git", Local),
        ("FILE:///srv/r.git", Local),
        ("ssh://git@host/r.git", Ssh),
        ("git+ssh://host/r", Ssh),
        ("git@host:r.git", Ssh),
        ("host:r", Ssh),
        ("https://host/r.git", Http),
        ("http://127.0.0.1:9/r", Http),
        ("git://host/r", Other),
        ("ext::sh -c touch% x", Other),
        ("evil::x", Other),
        ("ftp://host/r", Other),
    ] {
        assert_eq!(transport_of(url), want, "{url}");
    }
}

#[test]
fn the_far_side_of_a_local_remote_is_sanitized() {
    let git = Git {
        bin: PathBuf::from("/opt/it's/git"),
        version: Arc::new(OnceLock::new()),
    };
    let far = git.far_side("/srv/r.git", "receive-pack");
    assert!(
        far.starts_with("'/opt/it'\\''s/git' -c 'core.hooksPath=/dev/null'"),
        "{far}"
    );
    assert!(far.ends_with(" receive-pack") && far.contains("'receive.autogc=false'"));
    assert_eq!(git.far_side("git@h:r", "upload-pack"), "git-upload-pack");
    assert_eq!(
        git.far_side("https://h/r", "receive-pack"),
        "git-receive-pack"
    );
    let sh = std::process::Command::new("sh")
        .args(["-c", &format!("printf %s {}", shell_quote("a'b c"))])
        .output()
        .unwrap();
    assert_eq!(sh.stdout, b"a'b c");
}

/// The alternate-refs command lease sets lists what git's default
/// would (`for-each-ref --format=%(objectname)` in the alternate),
/// run as git runs it: with the shell, the alternate's path appended.
#[test]
fn alternate_refs_command_lists_the_alternate_s_refs() {
    let git = Git::resolve(&crate::policy::defaults()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("odd 'dir");
    std::fs::create_dir(&d).unwrap();
    git.plain(&d).args(["init", "-q", "--bare"]).run().unwrap();
    let blob = git
        .plain(&d)
        .args(["hash-object", "-w", "--stdin"])
        .input(b"x".to_vec())
        .run()
        .unwrap();
    let blob = first_line(&blob);
    git.plain(&d)
        .args(["update-ref", "refs/tags/t", &blob])
        .run()
        .unwrap();
    let value = git.alternate_refs_command();
    let cmd = value.strip_prefix("core.alternateRefsCommand=").unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} \"$@\""))
        .arg(cmd)
        .arg(&d)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{blob}\n"));
}
