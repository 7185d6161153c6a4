//! Differential tests of the in-process reader (`lease::git::libgit2`)
//! against the git CLI over awkward repositories: detached, unborn, locked
//! and prunable worktrees, newline and non-UTF-8 paths, packed and many
//! refs, a bare main repository; and the fallback to the CLI for what
//! libgit2 must not read (reftable, sha256, grafts, shallow, extensions).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use lease::git::libgit2::{Reader, common_of_linked, unsupported};
use lease::git::parse::{WorktreeEntry, parse_worktrees};

use crate::support::{TestEnv, root_or_skip, skip};

/// Runs git in `dir` with raw (non-UTF-8) arguments; returns stdout bytes
/// and whether it succeeded.
fn git_raw(env: &TestEnv, dir: &Path, args: &[&OsStr]) -> (bool, Vec<u8>) {
    let o = env.cmd("git").current_dir(dir).args(args).output().unwrap();
    (o.status.success(), o.stdout)
}

fn cli_worktrees(env: &TestEnv, common: &Path) -> Vec<WorktreeEntry> {
    let (ok, out) = git_raw(
        env,
        common,
        &["worktree", "list", "--porcelain", "-z"].map(OsStr::new),
    );
    assert!(ok);
    parse_worktrees(&out)
}

/// Both readers agree on the list, the main worktree first, on every
/// linked worktree's HEAD commit and on its common dir.
fn assert_agree(env: &TestEnv, common: &Path) -> Vec<WorktreeEntry> {
    let reader = Reader::open(common).expect("libgit2 reads this repository");
    let mut mine = reader.worktrees().expect("the reader lists");
    let mut cli = cli_worktrees(env, common);
    assert_eq!(mine.first(), cli.first(), "main worktree");
    mine.sort_by(|a, b| a.path.cmp(&b.path));
    cli.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(mine, cli, "worktree list of {}", common.display());
    for e in cli.iter().filter(|e| !e.bare) {
        let wt = PathBuf::from(OsStr::from_bytes(&e.path));
        if !wt.exists() || wt == common.parent().unwrap() {
            continue;
        }
        let (ok, out) = git_raw(
            env,
            &wt,
            &["rev-parse", "--verify", "-q", "HEAD^{commit}"].map(OsStr::new),
        );
        let cli_head = ok.then(|| String::from_utf8(out).unwrap().trim().to_string());
        let admin = lease::git::admin::linked_admin(common, &wt).expect("linked");
        assert_eq!(
            reader.head_commit(&admin),
            Some(cli_head),
            "HEAD of {}",
            wt.display()
        );
        let (_, out) = git_raw(
            env,
            &wt,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"].map(OsStr::new),
        );
        let cli_common = fs::canonicalize(OsStr::from_bytes(out.trim_ascii_end())).unwrap();
        assert_eq!(common_of_linked(&wt), Some(cli_common), "{}", wt.display());
    }
    cli
}

#[test]
fn reader_and_cli_agree_on_awkward_worktrees() {
    let env = TestEnv::new();
    let repo = env.repo();
    let common = repo.join(".git");
    let g = |dir: &Path, args: &[&str]| env.git(dir, args);
    let add = |name: &[u8], args: &[&str]| -> PathBuf {
        let p = env.root.join(OsStr::from_bytes(name));
        let mut a: Vec<&OsStr> = ["worktree", "add", "-q"].map(OsStr::new).to_vec();
        a.extend(args.iter().map(OsStr::new));
        a.push(p.as_os_str());
        assert!(git_raw(&env, &repo, &a).0, "worktree add {}", p.display());
        p
    };
    assert_agree(&env, &common);
    // A branch, a detached HEAD with its own commit, an unborn branch.
    let b = add(b"wt-branch", &["-b", "topic"]);
    fs::write(b.join("f"), "x").unwrap();
    g(&b, &["add", "f"]);
    g(&b, &["commit", "-qm", "on topic"]);
    let d = add(b"wt-detached", &["--detach"]);
    g(&d, &["commit", "-q", "--allow-empty", "-m", "detached"]);
    let u = add(b"wt-unborn", &["--detach"]);
    g(&u, &["checkout", "-q", "--orphan", "never-born"]);
    // Newline, space, non-UTF-8 and a trailing-space-free odd name.
    add(b"wt new\nline", &["--detach"]);
    add(b"wt-\xff\xfe", &["-b", "bytes"]);
    // Locks: with a reason holding a newline, with none, with padding.
    let l1 = add(b"wt-locked", &["--detach"]);
    g(
        &repo,
        &[
            "worktree",
            "lock",
            "--reason",
            "lease 42\nsecond line",
            l1.to_str().unwrap(),
        ],
    );
    let l2 = add(b"wt-locked-bare", &["--detach"]);
    g(&repo, &["worktree", "lock", l2.to_str().unwrap()]);
    let l3 = add(b"wt-locked-pad", &["--detach"]);
    g(
        &repo,
        &[
            "worktree",
            "lock",
            "--reason",
            "  padded  ",
            l3.to_str().unwrap(),
        ],
    );
    // Prunable: the directory moved away; locked and moved: not prunable.
    let p = add(b"wt-moved", &["-b", "moved"]);
    fs::rename(&p, env.root.join("moved-away")).unwrap();
    let pl = add(b"wt-moved-locked", &["--detach"]);
    g(&repo, &["worktree", "lock", pl.to_str().unwrap()]);
    fs::rename(&pl, env.root.join("moved-away-locked")).unwrap();
    // Admin entries git skips: no gitdir file, an empty one, a plain file.
    fs::create_dir(common.join("worktrees/junk")).unwrap();
    fs::create_dir(common.join("worktrees/empty")).unwrap();
    fs::write(common.join("worktrees/empty/gitdir"), "").unwrap();
    fs::write(common.join("worktrees/stray-file"), "x").unwrap();
    let listed = assert_agree(&env, &common);
    assert_eq!(listed.len(), 11, "main and ten linked worktrees");
    // Many refs, then every ref packed: branches resolve from packed-refs.
    let head = g(&repo, &["rev-parse", "HEAD"]);
    let stdin: String = (0..500)
        .map(|i| format!("create refs/heads/many/{i:03} {head}\n"))
        .collect();
    let mut c = env.cmd("git");
    c.current_dir(&repo).args(["update-ref", "--stdin"]);
    c.stdin(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), stdin.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    g(&repo, &["pack-refs", "--all"]);
    assert!(!common.join("refs/heads/topic").exists(), "topic is packed");
    assert_agree(&env, &common);
    // A symlinked HEAD (core.preferSymlinkRefs) is left to the CLI.
    let admin = lease::git::admin::linked_admin(&common, &d).unwrap();
    let oid = fs::read_to_string(admin.join("HEAD")).unwrap();
    fs::write(common.join("refs/heads/via-link"), &oid).unwrap();
    fs::remove_file(admin.join("HEAD")).unwrap();
    std::os::unix::fs::symlink(common.join("refs/heads/via-link"), admin.join("HEAD")).unwrap();
    let reader = Reader::open(&common).unwrap();
    assert_eq!(reader.worktrees(), None, "symlinked HEAD: the CLI lists");
    assert_eq!(reader.head_commit(&admin), None);
    fs::remove_file(admin.join("HEAD")).unwrap();
    fs::write(admin.join("HEAD"), &oid).unwrap();
    // Private tips and reflogs in a worktree change nothing listed.
    g(&b, &["update-ref", "refs/worktree/wip", "HEAD"]);
    g(&b, &["commit", "-q", "--allow-empty", "-m", "second"]);
    g(&b, &["reset", "-q", "--hard", "HEAD~1"]);
    assert_agree(&env, &common);
}

#[test]
fn reader_and_cli_agree_on_a_bare_main_repository() {
    let env = TestEnv::new();
    let repo = env.repo();
    let bare = env.root.join("bare.git");
    env.git(
        &env.root,
        &[
            "clone",
            "-q",
            "--bare",
            repo.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let wt = env.root.join("from-bare");
    env.git(
        &bare,
        &["worktree", "add", "-q", wt.to_str().unwrap(), "main"],
    );
    let listed = assert_agree(&env, &bare);
    assert!(listed[0].bare && listed.len() == 2);
}

#[test]
fn reader_falls_back_to_the_cli_where_libgit2_may_differ() {
    let env = TestEnv::new();
    let init = |name: &str, extra: &[&str]| -> PathBuf {
        let p = env.root.join(name);
        let mut a = vec!["init", "-q"];
        a.extend_from_slice(extra);
        a.push(p.to_str().unwrap());
        env.git(&env.root, &a);
        p.join(".git")
    };
    let plain = init("plain", &[]);
    assert_eq!(unsupported(&plain), None);
    assert!(Reader::open(&plain).is_some());
    let cases = [
        (init("reftable", &["--ref-format=reftable"]), "refstorage"),
        (init("sha256", &["--object-format=sha256"]), "objectformat"),
    ];
    for (common, why) in &cases {
        let reason = unsupported(common).unwrap_or_default();
        assert!(reason.contains(why), "{}: {reason}", common.display());
        assert!(Reader::open(common).is_none());
    }
    let grafts = init("grafts", &[]);
    fs::create_dir_all(grafts.join("info")).unwrap();
    fs::write(grafts.join("info/grafts"), "").unwrap();
    assert!(unsupported(&grafts).unwrap().contains("grafts"));
    let shallow = init("shallow", &[]);
    fs::write(shallow.join("shallow"), "").unwrap();
    assert!(unsupported(&shallow).unwrap().contains("shallow"));
    let ext = init("ext", &[]);
    env.git(&ext, &["config", "core.repositoryformatversion", "1"]);
    env.git(&ext, &["config", "extensions.partialClone", "origin"]);
    assert!(unsupported(&ext).unwrap().contains("partialclone"));
    let v2 = init("v2", &[]);
    env.git(&v2, &["config", "core.repositoryformatversion", "2"]);
    assert!(unsupported(&v2).unwrap().contains("version 2"));
    // Still read in process: worktreeConfig is an extension libgit2 knows.
    let wc = init("wtconfig", &[]);
    env.git(&wc, &["config", "core.repositoryformatversion", "1"]);
    env.git(&wc, &["config", "extensions.worktreeConfig", "true"]);
    assert_eq!(unsupported(&wc), None);
}

/// The CLI's durable ref, as the retire engine finds it without the reader.
fn cli_durable(env: &TestEnv, common: &Path) -> Option<(String, String)> {
    for name in ["HEAD", "main", "master"] {
        let r = format!("refs/remotes/origin/{name}");
        let (sym, target) = git_raw(env, common, &["symbolic-ref", "-q", &r].map(OsStr::new));
        if sym && !target.starts_with(b"refs/remotes/origin/") {
            continue;
        }
        let spec = format!("{r}^{{commit}}");
        let (ok, out) = git_raw(
            env,
            common,
            &["rev-parse", "--verify", "-q", &spec].map(OsStr::new),
        );
        if ok {
            return Some((r, String::from_utf8(out).unwrap().trim().to_string()));
        }
    }
    None
}

fn cli_not_reachable(
    env: &TestEnv,
    common: &Path,
    revs: &[String],
    hide: &[String],
    shared: bool,
) -> Vec<String> {
    let mut a: Vec<String> = vec!["--no-replace-objects".into(), "rev-list".into()];
    a.extend(revs.iter().cloned());
    a.push("--not".into());
    a.extend(hide.iter().cloned());
    if shared {
        a.extend(["--branches", "--tags", "--remotes", "--glob=refs/stash"].map(String::from));
    }
    a.push("--".into());
    let (ok, out) = git_raw(env, common, &a.iter().map(OsStr::new).collect::<Vec<_>>());
    assert!(ok, "rev-list {a:?}");
    let mut v: Vec<String> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    v.sort();
    v
}

#[test]
fn reader_and_cli_agree_on_durable_refs_and_reachability() {
    let env = TestEnv::new();
    let repo = env.repo();
    let common = repo.join(".git");
    let g = |args: &[&str]| env.git(&repo, args);
    let durable = |what: &str| {
        let mine = Reader::open(&common)
            .and_then(|r| r.durable_origin())
            .expect("origin is configured: the reader answers");
        assert_eq!(mine, cli_durable(&env, &common), "{what}");
        mine
    };
    assert_eq!(
        durable("origin/HEAD").unwrap().0,
        "refs/remotes/origin/HEAD"
    );
    g(&["pack-refs", "--all"]);
    durable("packed");
    g(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/heads/main",
    ]);
    assert_eq!(
        durable("HEAD leaves origin").unwrap().0,
        "refs/remotes/origin/main"
    );
    g(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/gone",
    ]);
    assert_eq!(
        durable("dangling HEAD").unwrap().0,
        "refs/remotes/origin/main"
    );
    g(&["update-ref", "refs/remotes/origin/master", "HEAD"]);
    g(&["update-ref", "-d", "refs/remotes/origin/main"]);
    g(&["update-ref", "--no-deref", "-d", "refs/remotes/origin/HEAD"]);
    assert_eq!(
        durable("master only").unwrap().0,
        "refs/remotes/origin/master"
    );
    g(&["update-ref", "-d", "refs/remotes/origin/master"]);
    assert_eq!(durable("none"), None);
    g(&["remote", "rename", "origin", "upstream"]);
    assert!(
        Reader::open(&common).unwrap().durable_origin().is_none(),
        "no origin: the CLI answers"
    );

    // Reachability: private commits, a tag, a stash, a branch, a graft.
    let base = g(&["rev-parse", "HEAD"]);
    g(&["checkout", "-q", "--detach"]);
    let mut commits = Vec::new();
    for i in 0..6 {
        g(&["commit", "-q", "--allow-empty", "-m", &format!("c{i}")]);
        commits.push(g(&["rev-parse", "HEAD"]));
    }
    g(&["tag", "t1", &commits[1]]);
    g(&["branch", "b3", &commits[3]]);
    fs::write(repo.join("README"), "stashed\n").unwrap();
    g(&["stash", "-q"]);
    g(&["replace", "--graft", &commits[5], &base]);
    let reader = Reader::open(&common).unwrap();
    let tip = vec![commits[5].clone()];
    for (revs, hide, shared) in [
        (tip.clone(), vec![base.clone()], false),
        (tip.clone(), vec![base.clone()], true),
        (tip.clone(), vec![], true),
        (
            vec![commits[2].clone(), commits[4].clone()],
            vec![commits[0].clone()],
            true,
        ),
        (
            vec![g(&["rev-parse", "refs/stash"])],
            vec![base.clone()],
            true,
        ),
    ] {
        let mut mine = reader.not_reachable(&revs, &hide, shared).expect("revwalk");
        mine.sort();
        assert_eq!(
            mine,
            cli_not_reachable(&env, &common, &revs, &hide, shared),
            "{revs:?} --not {hide:?} shared={shared}"
        );
    }
}

// Fallback conditions of the reader (found by scripts/mutants): where libgit2
// might misread, the reader must answer None and leave the call to the CLI.

/// Runs git (the test machine's, with no user or system config) in `dir`.
fn run_git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git {args:?}");
}

/// A repository with one commit and a linked worktree `wt`; returns the
/// temp dir, the repository and the worktree.
fn linked_repo() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let repo = root.join("repo");
    fs::create_dir(&repo).unwrap();
    run_git(&repo, &["init", "-q"]);
    run_git(&repo, &["commit", "-q", "--allow-empty", "-m", "c"]);
    run_git(&repo, &["worktree", "add", "-q", "../wt"]);
    (tmp, repo, root.join("wt"))
}

#[test]
fn format_version_missing_is_fine_and_unreadable_is_not() {
    let (tmp, repo, _) = linked_repo();
    let common = repo.join(".git");
    let cfg = common.join("config");
    // Edited as a file: git itself refuses to run in a repository whose
    // format version is not a number.
    let set = |args: &[&str]| {
        let mut a = vec!["config", "--file", cfg.to_str().unwrap()];
        a.extend_from_slice(args);
        run_git(tmp.path(), &a);
    };
    assert_eq!(unsupported(&common), None);
    set(&["--unset", "core.repositoryformatversion"]);
    assert_eq!(unsupported(&common), None, "missing means version 0");
    set(&["core.repositoryformatversion", "abc"]);
    assert!(
        unsupported(&common).is_some(),
        "not a number: the CLI decides"
    );
    set(&["core.repositoryformatversion", "2"]);
    assert!(unsupported(&common).is_some());
}

#[test]
fn a_linked_worktree_is_read_only_when_every_piece_is_ours() {
    let (_tmp, repo, wt) = linked_repo();
    let common = fs::canonicalize(repo.join(".git")).unwrap();
    assert_eq!(common_of_linked(&wt), Some(common));
    if !root_or_skip("gives files to uid 65534") {
        return;
    }
    let admin = fs::canonicalize(repo.join(".git/worktrees/wt")).unwrap();
    let nobody = Some(65534);
    for foreign in [wt.clone(), wt.join(".git"), admin] {
        if let Err(e) = std::os::unix::fs::lchown(&foreign, nobody, None) {
            // A user namespace that maps only uid 0 (scripts/mutants).
            skip(&format!("cannot give a file to uid 65534: {e}"));
            return;
        }
        assert_eq!(
            common_of_linked(&wt),
            None,
            "{} is not ours",
            foreign.display()
        );
        std::os::unix::fs::lchown(&foreign, Some(0), None).unwrap();
    }
}

#[test]
fn unreadable_admin_files_leave_the_listing_to_the_cli() {
    let (_tmp, repo, _) = linked_repo();
    let common = fs::canonicalize(repo.join(".git")).unwrap();
    let list = || Reader::open(&common).and_then(|r| r.worktrees());
    assert_eq!(list().map(|v| v.len()), Some(2));
    // `locked` that cannot be read (a directory): not "unlocked".
    let locked = common.join("worktrees/wt/locked");
    fs::create_dir(&locked).unwrap();
    assert!(list().is_none(), "an unreadable lock is not an absent one");
    fs::remove_dir(&locked).unwrap();
    // `worktrees` that cannot be listed (a file): not "no worktrees".
    let admin = common.join("worktrees");
    let away = common.join("worktrees.away");
    fs::rename(&admin, &away).unwrap();
    fs::write(&admin, "").unwrap();
    assert!(
        list().is_none(),
        "an unlistable admin dir is not an empty one"
    );
    fs::remove_file(&admin).unwrap();
    fs::rename(&away, &admin).unwrap();
    assert_eq!(list().map(|v| v.len()), Some(2));
}

#[test]
fn a_worktree_head_libgit2_might_misread_leaves_the_listing_to_the_cli() {
    let (_tmp, repo, _) = linked_repo();
    let common = fs::canonicalize(repo.join(".git")).unwrap();
    let head = common.join("worktrees/wt/HEAD");
    let list = || Reader::open(&common).and_then(|r| r.worktrees());
    assert!(list().is_some());
    fs::write(common.join("refs/heads/broken"), "not an oid\n").unwrap();
    for text in [
        "ref: FETCH_HEAD\n",                          // not under refs/
        "ref: refs/heads/broken\n",                   // a ref libgit2 cannot read
        "abcdef\n",                                   // hex, but not a whole object name
        "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\n", // 40 characters, not hex
    ] {
        fs::write(&head, text).unwrap();
        assert!(list().is_none(), "HEAD {text:?}");
    }
}

#[test]
fn a_durable_ref_libgit2_might_misread_is_left_to_the_cli() {
    let (_tmp, repo, _) = linked_repo();
    run_git(&repo, &["remote", "add", "origin", "/nonexistent"]);
    let common = fs::canonicalize(repo.join(".git")).unwrap();
    let durable = || Reader::open(&common).and_then(|r| r.durable_origin());
    assert_eq!(durable(), Some(None), "origin, no tracking ref");
    let refs = common.join("refs/remotes/origin");
    fs::create_dir_all(&refs).unwrap();
    // A tracking ref that cannot be read, directly or through HEAD.
    fs::write(refs.join("HEAD"), "not an oid\n").unwrap();
    assert_eq!(durable(), None, "unreadable origin/HEAD");
    // HEAD names an unreadable ref while `main` is fine: still the CLI's
    // call, never a silent step past HEAD to `main`.
    fs::write(refs.join("HEAD"), "ref: refs/remotes/origin/bad\n").unwrap();
    fs::write(refs.join("bad"), "not an oid\n").unwrap();
    let tip = fs::read_to_string(common.join("refs/heads/wt")).unwrap();
    fs::write(refs.join("main"), &tip).unwrap();
    assert_eq!(durable(), None, "origin/HEAD to an unreadable ref");
    fs::remove_file(refs.join("HEAD")).unwrap();
    fs::remove_file(refs.join("bad")).unwrap();
    assert_eq!(
        durable(),
        Some(Some(("refs/remotes/origin/main".into(), tip.trim().into())))
    );
    fs::remove_file(refs.join("main")).unwrap();
    assert_eq!(durable(), Some(None));
    // Remotes defined in legacy files, or a legacy path git cannot list.
    fs::create_dir_all(common.join("remotes")).unwrap();
    fs::write(common.join("remotes/origin"), "URL: /x\n").unwrap();
    assert_eq!(durable(), None, "a remotes/ file");
    fs::remove_dir_all(common.join("remotes")).unwrap();
    let _ = fs::remove_dir_all(common.join("branches")); // git init's template makes it
    assert_eq!(durable(), Some(None));
    fs::write(common.join("branches"), "").unwrap();
    assert_eq!(durable(), None, "branches is not a directory");
}
