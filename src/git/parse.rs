//! Pure parsers of git's machine output (`-z` records, porcelain lines),
//! and what they parse into. No process, no file: each takes the bytes a
//! git command printed ([`crate::git::ops`] runs them).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use crate::model::evidence::StatusEntry;
use crate::model::evidence::TrustedFilter;

/// Parses `git version 2.47.3` (and vendor suffixes) into (major, minor).
pub fn parse_version(s: &str) -> Option<(u32, u32)> {
    let v = s.strip_prefix("git version ")?;
    let mut it = v.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// Parses `git config -z --get-regexp '^filter\.'` into driver names
/// (`filter.<name>.<key>`; the name may hold dots or `=`).
pub fn parse_filter_drivers(out: &[u8]) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    for rec in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        // Each record is `key\nvalue`.
        let key = rec.split(|&b| b == b'\n').next().unwrap_or(rec);
        let Some(rest) = key.strip_prefix(b"filter.") else {
            continue;
        };
        let Some(dot) = rest.iter().rposition(|&b| b == b'.') else {
            continue;
        };
        let name = rest[..dot].to_vec();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Parses `git config -z --show-scope --show-origin --get-regexp
/// '^filter\.'` (records `scope\0origin\0key\nvalue\0`) into the
/// definition of `driver`, keeping only `system` and `global` scope (the
/// user's own config); the last value of each key wins, as in git.
pub fn parse_user_filter(out: &[u8], driver: &str) -> Option<TrustedFilter> {
    let mut fields = out.split(|&b| b == 0);
    let mut f = TrustedFilter {
        driver: driver.to_string(),
        clean: None,
        process: None,
        required: None,
        origin: String::new(),
    };
    while let (Some(scope), Some(origin), Some(rec)) = (fields.next(), fields.next(), fields.next())
    {
        if scope != b"system" && scope != b"global" {
            continue;
        }
        let (key, value) = match rec.iter().position(|&b| b == b'\n') {
            Some(i) => (&rec[..i], Some(&rec[i + 1..])),
            None => (rec, None),
        };
        let Some(rest) = key.strip_prefix(b"filter.") else {
            continue;
        };
        let Some(dot) = rest.iter().rposition(|&b| b == b'.') else {
            continue;
        };
        if &rest[..dot] != driver.as_bytes() {
            continue;
        }
        let value = value.map(|v| String::from_utf8_lossy(v).into_owned());
        let slot = match &rest[dot + 1..] {
            b"clean" => &mut f.clean,
            b"process" => &mut f.process,
            b"required" => &mut f.required,
            _ => continue,
        };
        // A key without a value (`[filter "x"] clean`) is boolean true in
        // git, not a command: it defines nothing to run.
        *slot = value.filter(|v| !v.is_empty());
        f.origin = format!(
            "{} {}",
            String::from_utf8_lossy(scope),
            String::from_utf8_lossy(origin)
        );
    }
    (f.clean.is_some() || f.process.is_some()).then_some(f)
}

/// Parses `git check-attr -z filter` (records `path\0filter\0value\0`)
/// into the paths whose `filter` attribute names a driver: `unspecified`,
/// `unset` and `set` (a bare `filter`) name none.
pub fn parse_filter_attrs(out: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v = Vec::new();
    let mut fields = out.split(|&b| b == 0);
    while let (Some(path), Some(_attr), Some(value)) = (fields.next(), fields.next(), fields.next())
    {
        if path.is_empty() || matches!(value, b"unspecified" | b"unset" | b"set" | b"") {
            continue;
        }
        v.push((path.to_vec(), value.to_vec()));
    }
    v
}

/// Returns the drivers of [`parse_filter_drivers`]'s input that set a
/// `process` key.
pub fn parse_process_drivers(out: &[u8]) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    for rec in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let key = rec.split(|&b| b == b'\n').next().unwrap_or(rec);
        if let Some(name) = key
            .strip_prefix(b"filter.")
            .and_then(|k| k.strip_suffix(b".process"))
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_vec());
        }
    }
    names
}

/// One entry of `git worktree list --porcelain -z`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorktreeEntry {
    /// The top directory, raw bytes.
    pub path: Vec<u8>,
    /// HEAD commit.
    pub head: Option<String>,
    /// Full branch ref (`refs/heads/x`), if on a branch.
    pub branch: Option<Vec<u8>>,
    /// True for a bare main repository.
    pub bare: bool,
    /// True for a detached HEAD.
    pub detached: bool,
    /// `Some(reason)` if locked (reason may be empty).
    pub locked: Option<String>,
    /// `Some(reason)` if git considers it prunable.
    pub prunable: Option<String>,
}

impl WorktreeEntry {
    /// The top directory as a path.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(OsString::from_vec(self.path.clone()))
    }
}

/// Parses `git worktree list --porcelain -z`: attribute fields separated by
/// NUL, entries by an empty field. The first entry is the main worktree.
/// Since fields end at NUL, a newline in a path or lock reason cannot forge
/// an attribute (t2402 "locked reason newline escaped").
pub fn parse_worktrees(out: &[u8]) -> Vec<WorktreeEntry> {
    let mut all = Vec::new();
    let mut cur: Option<WorktreeEntry> = None;
    for field in out.split(|&b| b == 0) {
        if field.is_empty() {
            if let Some(e) = cur.take() {
                all.push(e);
            }
            continue;
        }
        let (key, value) = match field.iter().position(|&b| b == b' ') {
            Some(i) => (&field[..i], Some(&field[i + 1..])),
            None => (field, None),
        };
        let text = |v: Option<&[u8]>| v.map(|v| String::from_utf8_lossy(v).into_owned());
        match key {
            b"worktree" => {
                if let Some(e) = cur.take() {
                    all.push(e);
                }
                cur = Some(WorktreeEntry {
                    path: value.unwrap_or_default().to_vec(),
                    ..Default::default()
                });
            }
            _ => {
                let Some(e) = cur.as_mut() else { continue };
                match key {
                    b"HEAD" => e.head = text(value),
                    b"branch" => e.branch = value.map(<[u8]>::to_vec),
                    b"bare" => e.bare = true,
                    b"detached" => e.detached = true,
                    b"locked" => e.locked = Some(text(value).unwrap_or_default()),
                    b"prunable" => e.prunable = Some(text(value).unwrap_or_default()),
                    _ => {}
                }
            }
        }
    }
    if let Some(e) = cur {
        all.push(e);
    }
    all
}

/// Parses `git status --porcelain=v1 -z`: `XY path\0`, and for a rename or
/// copy (`R`/`C` in X or Y) a second field, the original path.
pub fn parse_status(out: &[u8]) -> Vec<StatusEntry> {
    let mut v = Vec::new();
    let mut fields = out.split(|&b| b == 0);
    while let Some(f) = fields.next() {
        if f.len() < 4 {
            continue;
        }
        let xy = [f[0], f[1]];
        v.push(StatusEntry {
            xy,
            path: f[3..].to_vec(),
        });
        if matches!(xy[0], b'R' | b'C') || matches!(xy[1], b'R' | b'C') {
            fields.next();
        }
    }
    v
}

/// An index entry flagged skip-worktree or assume-unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenEntry {
    /// The `ls-files -v` tag (`S` skip-worktree, lowercase assume-unchanged).
    pub tag: u8,
    /// The index mode (`100644`, `120000`, ...).
    pub mode: String,
    /// The blob the index records.
    pub oid: String,
    /// Path relative to the top, raw bytes.
    pub path: Vec<u8>,
}

/// Parses `git ls-files -v -s -z` (`<tag> <mode> <oid> <stage>\t<path>\0`)
/// and keeps entries whose tag marks them skip-worktree (`S`) or
/// assume-unchanged (a lowercase tag); git-ls-files(1) `-v`.
pub fn parse_hidden(out: &[u8]) -> Vec<HiddenEntry> {
    let mut v = Vec::new();
    for rec in out.split(|&b| b == 0).filter(|r| r.len() > 2) {
        let tag = rec[0];
        if !(tag == b'S' || tag.is_ascii_lowercase()) {
            continue;
        }
        // The tag and a space come first: a tab before them is not this format.
        let Some(tab) = rec.iter().position(|&b| b == b'\t').filter(|&t| t >= 2) else {
            continue;
        };
        let meta = String::from_utf8_lossy(&rec[2..tab]).into_owned();
        let mut parts = meta.split(' ');
        let (Some(mode), Some(oid)) = (parts.next(), parts.next()) else {
            continue;
        };
        v.push(HiddenEntry {
            tag,
            mode: mode.to_string(),
            oid: oid.to_string(),
            path: rec[tab + 1..].to_vec(),
        });
    }
    v
}

/// Returns the paths of gitlink (submodule, mode 160000) entries in
/// `git ls-files -v -s -z` output.
pub fn parse_gitlinks(out: &[u8]) -> Vec<Vec<u8>> {
    out.split(|&b| b == 0)
        .filter(|r| r.get(2..9) == Some(b"160000 "))
        .filter_map(|r| {
            r.iter()
                .position(|&b| b == b'\t')
                .map(|t| r[t + 1..].to_vec())
        })
        .collect()
}

/// Parses lines of object ids (rev-list, reflog), dropping blanks and duplicates, keeping order.
pub fn parse_oids(out: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for l in String::from_utf8_lossy(out).lines() {
        let l = l.trim();
        if !l.is_empty() && l.bytes().all(|b| b.is_ascii_hexdigit()) && !v.iter().any(|x| x == l) {
            v.push(l.to_string());
        }
    }
    v
}

/// Returns the first line of `out` as text, trimmed.
pub fn first_line(out: &[u8]) -> String {
    String::from_utf8_lossy(out)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Parses `git bundle list-heads` (`<oid> <ref>` lines) into pairs.
pub fn parse_heads(out: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| {
            let (oid, r) = l.split_once(' ')?;
            Some((oid.to_string(), r.to_string()))
        })
        .collect()
}

/// Parses `git ls-remote` output (`<oid>\t<ref>` lines) into `(oid, ref)`
/// pairs, skipping peeled `^{}` entries.
pub fn parse_ls_remote(out: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| {
            let (oid, r) = l.split_once('\t')?;
            (!r.ends_with("^{}")).then(|| (oid.to_string(), r.to_string()))
        })
        .collect()
}

/// Parses `git cat-file --batch-check='%(objectname) %(objecttype)'`
/// output (`<oid> <type>`, or `<oid> missing`) into the ids of the
/// commits, in order.
pub fn parse_batch_commits(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| l.strip_suffix(" commit"))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn small_parsers() {
        assert_eq!(first_line(b"  abc \nnext\n"), "abc");
        assert_eq!(first_line(b""), "");
        assert_eq!(
            parse_heads(b"1111 refs/heads/a\n2222 HEAD\nnospace\n"),
            [
                ("1111".to_string(), "refs/heads/a".to_string()),
                ("2222".to_string(), "HEAD".to_string())
            ]
        );
        let w = parse_worktrees(b"worktree /r\0HEAD aaa\0branch refs/heads/main\0\0");
        assert_eq!(w[0].path(), Path::new("/r"));
    }

    #[test]
    fn version() {
        assert_eq!(parse_version("git version 2.47.3"), Some((2, 47)));
        assert_eq!(
            parse_version("git version 2.39.5 (Apple Git-154)"),
            Some((2, 39))
        );
        assert_eq!(parse_version("hub 1.0"), None);
    }

    #[test]
    fn worktrees_with_newlines_and_locks() {
        let out = b"worktree /r\0HEAD aaa\0branch refs/heads/main\0\0worktree /w/new\nline\0HEAD bbb\0detached\0locked x\nlocked\0\0worktree /w/b\0bare\0\0";
        let w = parse_worktrees(out);
        assert_eq!(w.len(), 3);
        assert_eq!(w[0].branch.as_deref(), Some(&b"refs/heads/main"[..]));
        assert_eq!(w[1].path, b"/w/new\nline");
        assert!(w[1].detached);
        assert_eq!(w[1].locked.as_deref(), Some("x\nlocked"));
        assert!(w[2].bare && w[2].locked.is_none());
        let bare_lock = parse_worktrees(b"worktree /a\0HEAD c\0locked\0\0");
        assert_eq!(bare_lock[0].locked.as_deref(), Some(""));
    }

    #[test]
    fn status_with_renames_and_odd_bytes() {
        let out = b" M a\0R  new\0old\0?? sp ace\0!! \xff.env\0";
        let s = parse_status(out);
        assert_eq!(s.len(), 4);
        assert_eq!(&s[1].xy, b"R ");
        assert_eq!(s[1].path, b"new");
        assert_eq!(s[2].path, b"sp ace");
        assert_eq!(&s[3].xy, b"!!");
        assert_eq!(s[3].path, b"\xff.env");
    }

    #[test]
    fn hidden_entries() {
        let out = b"S 100644 78981922613b2afb6025042ff6bd878ac1994e85 0\ta\0h 100644 61780798228d17af2d34fce4cfbdf35556832472 0\tb\0H 100644 61780798228d17af2d34fce4cfbdf35556832472 0\tc\tt\0";
        let h = parse_hidden(out);
        assert_eq!(h.len(), 2);
        assert_eq!((h[0].tag, h[0].path.as_slice()), (b'S', &b"a"[..]));
        assert_eq!(h[1].tag, b'h');
        assert_eq!(h[1].mode, "100644");
    }

    #[test]
    fn hidden_entries_with_a_tab_in_the_tag_never_panic() {
        // Found by props::parsers_never_panic_on_arbitrary_bytes: `a\t\x01`
        // sliced meta as rec[2..1].
        assert_eq!(parse_hidden(b"a\t\x01"), vec![]);
        assert_eq!(parse_hidden(b"S\tx\0h\t\t\0"), vec![]);
    }

    #[test]
    fn filter_drivers_keep_odd_names() {
        let out = b"filter.lfs.clean\ngit-lfs clean\0filter.a=b.smudge\nx\0filter.lfs.process\ny\0filter.x.y.required\ntrue\0";
        let names = parse_filter_drivers(out);
        assert_eq!(
            names,
            vec![b"lfs".to_vec(), b"a=b".to_vec(), b"x.y".to_vec()]
        );
        assert_eq!(parse_process_drivers(out), vec![b"lfs".to_vec()]);
    }

    #[test]
    fn user_filter_definitions_come_from_system_and_global_scope_only() {
        let out = b"system\0file:/etc/gitconfig\0filter.lfs.clean\nsys-clean %f\0\
global\0file:/h/.gitconfig\0filter.lfs.clean\ngit-lfs clean -- %f\0\
global\0file:/h/.gitconfig\0filter.lfs.process\ngit-lfs filter-process\0\
local\0file:.git/config\0filter.lfs.process\nevil\0\
worktree\0file:.git/config.worktree\0filter.lfs.clean\nevil\0\
command\0command line:\0filter.lfs.required\nfalse\0\
global\0file:/h/.gitconfig\0filter.lfs.x.clean\nother\0\
global\0file:/h/.gitconfig\0filter.lfs.smudge\ngit-lfs smudge -- %f\0";
        let f = parse_user_filter(out, "lfs").unwrap();
        assert_eq!(f.clean.as_deref(), Some("git-lfs clean -- %f"));
        assert_eq!(f.process.as_deref(), Some("git-lfs filter-process"));
        assert_eq!(f.required, None, "command scope is not the user's config");
        assert_eq!(f.origin, "global file:/h/.gitconfig");
        assert_eq!(
            parse_user_filter(out, "lfs.x").unwrap().clean.as_deref(),
            Some("other")
        );
        // Only repository scopes define it: nothing to trust.
        let repo_only = b"local\0file:.git/config\0filter.x.clean\ntr a-z A-Z\0";
        assert_eq!(parse_user_filter(repo_only, "x"), None);
        // A bare key is boolean true, not a command.
        assert_eq!(parse_user_filter(b"global\0f\0filter.x.clean\0", "x"), None);
    }

    #[test]
    fn filter_attributes_name_drivers() {
        let out = b"a.bin\0filter\0lfs\0b\0filter\0unspecified\0c\nd\0filter\0x=y\0e\0filter\0set\0f\0filter\0unset\0";
        assert_eq!(
            parse_filter_attrs(out),
            vec![
                (b"a.bin".to_vec(), b"lfs".to_vec()),
                (b"c\nd".to_vec(), b"x=y".to_vec())
            ]
        );
    }

    #[test]
    fn gitlinks() {
        let out = b"H 100644 aaa 0\ta\0H 160000 bbb 0\tsub/mod\0";
        assert_eq!(parse_gitlinks(out), vec![b"sub/mod".to_vec()]);
    }

    #[test]
    fn oids_dedupe() {
        assert_eq!(parse_oids(b"ab\ncd\nab\n\n"), vec!["ab", "cd"]);
    }

    #[test]
    fn ls_remote_lines() {
        let out = b"aaa\trefs/heads/main\nbbb\trefs/tags/v1\nccc\trefs/tags/v1^{}\n";
        assert_eq!(
            parse_ls_remote(out),
            vec![
                ("aaa".to_string(), "refs/heads/main".to_string()),
                ("bbb".to_string(), "refs/tags/v1".to_string())
            ]
        );
    }
}

/// Property tests of the `-z` parsers: arbitrary bytes never panic, and
/// output rendered the way git renders it parses back to what was rendered,
/// whatever bytes (newlines, spaces, tabs, non-UTF-8) the paths hold.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod props {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    /// A path as git may print it after `-z`: any bytes but NUL, never empty.
    fn path() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            vec(1u8..=255, 1..24),
            // Mostly ASCII with the separators that would break a line-based parser.
            vec(
                prop_oneof![
                    Just(b'\n'),
                    Just(b' '),
                    Just(b'\t'),
                    Just(0xff),
                    b'a'..=b'z'
                ],
                1..12
            ),
        ]
    }

    fn oid() -> impl Strategy<Value = String> {
        vec(
            prop_oneof![b'0'..=b'9', b'a'..=b'f'].prop_map(char::from),
            40,
        )
        .prop_map(|c| c.into_iter().collect())
    }

    /// A lock or prunable reason: text without NUL (git prints it as given).
    fn reason() -> impl Strategy<Value = String> {
        vec(any::<char>().prop_filter("no NUL", |c| *c != '\0'), 0..10)
            .prop_map(|c| c.into_iter().collect())
    }

    fn worktree() -> impl Strategy<Value = WorktreeEntry> {
        (
            path(),
            any::<bool>(),
            oid(),
            proptest::option::of(path()),
            proptest::option::of(reason()),
            proptest::option::of(reason()),
        )
            .prop_map(|(path, bare, head, branch, locked, prunable)| {
                if bare {
                    return WorktreeEntry {
                        path,
                        bare: true,
                        ..Default::default()
                    };
                }
                let detached = branch.is_none();
                WorktreeEntry {
                    path,
                    head: Some(head),
                    branch: branch.map(|b| [b"refs/heads/".as_slice(), &b].concat()),
                    bare: false,
                    detached,
                    locked,
                    prunable,
                }
            })
    }

    /// Renders entries as `git worktree list --porcelain -z` does.
    fn render_worktrees(all: &[WorktreeEntry]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut field = |parts: &[&[u8]]| {
            out.extend(parts.concat());
            out.push(0);
        };
        for e in all {
            field(&[b"worktree ", &e.path]);
            if e.bare {
                field(&[b"bare"]);
            } else {
                field(&[b"HEAD ", e.head.as_deref().unwrap().as_bytes()]);
                match &e.branch {
                    Some(b) => field(&[b"branch ", b]),
                    None => field(&[b"detached"]),
                }
            }
            for (key, value) in [(&b"locked"[..], &e.locked), (b"prunable", &e.prunable)] {
                match value.as_deref() {
                    Some("") => field(&[key]),
                    Some(r) => field(&[key, b" ", r.as_bytes()]),
                    None => {}
                }
            }
            field(&[]);
        }
        out
    }

    fn status() -> impl Strategy<Value = (StatusEntry, Option<Vec<u8>>)> {
        let xy = prop_oneof![
            Just(*b" M"),
            Just(*b"M "),
            Just(*b"MM"),
            Just(*b"A "),
            Just(*b" D"),
            Just(*b"UU"),
            Just(*b"??"),
            Just(*b"!!"),
            Just(*b"R "),
            Just(*b"RM"),
            Just(*b"C "),
            Just(*b" R"),
        ];
        (xy, path(), path()).prop_map(|(xy, path, orig)| {
            let renamed = matches!(xy[0], b'R' | b'C') || matches!(xy[1], b'R' | b'C');
            (StatusEntry { xy, path }, renamed.then_some(orig))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parsers_never_panic_on_arbitrary_bytes(out in prop_oneof![
            vec(any::<u8>(), 0..256),
            // Near misses: the bytes the formats are made of, in any order.
            vec(proptest::sample::select(b"\0\t \nSHhM1600w.=abc/".to_vec()), 0..64),
        ]) {
            let _ = parse_worktrees(&out);
            let _ = parse_status(&out);
            let _ = parse_hidden(&out);
            let _ = parse_gitlinks(&out);
            let _ = parse_filter_drivers(&out);
            let _ = parse_filter_attrs(&out);
            let _ = parse_process_drivers(&out);
            let _ = parse_user_filter(&out, "lfs");
            let _ = parse_oids(&out);
            let _ = parse_heads(&out);
        }

        #[test]
        fn worktree_list_round_trips(all in vec(worktree(), 0..6)) {
            prop_assert_eq!(parse_worktrees(&render_worktrees(&all)), all);
        }

        #[test]
        fn status_round_trips(entries in vec(status(), 0..8)) {
            let mut out = Vec::new();
            for (e, orig) in &entries {
                out.extend_from_slice(&e.xy);
                out.push(b' ');
                out.extend_from_slice(&e.path);
                out.push(0);
                if let Some(o) = orig {
                    out.extend_from_slice(o);
                    out.push(0);
                }
            }
            let want: Vec<StatusEntry> = entries.into_iter().map(|(e, _)| e).collect();
            prop_assert_eq!(parse_status(&out), want);
        }

        #[test]
        fn ls_files_round_trips(
            entries in vec((prop_oneof![Just(b'H'), Just(b'S'), Just(b'h'), Just(b's'), Just(b'M')],
                            prop_oneof![Just("100644"), Just("100755"), Just("120000"), Just("160000")],
                            oid(), path()), 0..8)
        ) {
            let mut out = Vec::new();
            for (tag, mode, oid, path) in &entries {
                out.extend_from_slice(&[*tag, b' ']);
                out.extend_from_slice(format!("{mode} {oid} 0\t").as_bytes());
                out.extend_from_slice(path);
                out.push(0);
            }
            let hidden: Vec<HiddenEntry> = entries
                .iter()
                .filter(|(tag, ..)| *tag == b'S' || tag.is_ascii_lowercase())
                .map(|(tag, mode, oid, path)| HiddenEntry {
                    tag: *tag,
                    mode: mode.to_string(),
                    oid: oid.clone(),
                    path: path.clone(),
                })
                .collect();
            prop_assert_eq!(parse_hidden(&out), hidden);
            let links: Vec<Vec<u8>> = entries
                .iter()
                .filter(|(_, mode, ..)| *mode == "160000")
                .map(|(.., path)| path.clone())
                .collect();
            prop_assert_eq!(parse_gitlinks(&out), links);
        }

        #[test]
        fn filter_driver_names_round_trip(
            drivers in vec((vec(prop_oneof![1u8..=9, 11u8..=255], 0..10),
                            prop_oneof![Just("clean"), Just("smudge"), Just("process"), Just("required")],
                            vec(1u8..=255, 0..10)), 0..6)
        ) {
            let mut out = Vec::new();
            let mut want: Vec<Vec<u8>> = Vec::new();
            for (name, key, value) in &drivers {
                out.extend_from_slice(b"filter.");
                out.extend_from_slice(name);
                out.extend_from_slice(format!(".{key}\n").as_bytes());
                out.extend_from_slice(value);
                out.push(0);
                if !want.contains(name) {
                    want.push(name.clone());
                }
            }
            prop_assert_eq!(parse_filter_drivers(&out), want);
        }
    }
}
