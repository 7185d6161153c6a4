//! Compiled for tests only (`#[cfg(test)] mod tests;` in the parent module).
//!
//! The unit tests of the policy: each key's sources, the stricter-joins-win
//! rules (docs/config.md), parsing of sizes and provision entries.

use super::*;

#[test]
fn provision_entries_stay_inside_the_repository() {
    for ok in [".env", "/.env", "config/*.local", "node_modules"] {
        assert!(check_provision_entry(ok).is_ok(), "{ok}");
    }
    for bad in ["", "/", "../x", "a/../../x", "//etc/passwd", "a\nb"] {
        assert!(check_provision_entry(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn sizes_parse_with_binary_units() {
    assert_eq!(parse_size("4096"), Some(4096));
    assert_eq!(parse_size("64K"), Some(64 << 10));
    assert_eq!(parse_size("500m"), Some(500 << 20));
    assert_eq!(parse_size("10GiB"), Some(10 << 30));
    assert_eq!(parse_size("1TB"), Some(1 << 40));
    assert_eq!(parse_size(" 2G "), Some(2 << 30));
}

#[test]
fn bad_and_overflowing_sizes_are_refused() {
    for s in [
        "",
        "K",
        "-1",
        "+1",
        "1.5G",
        "1Q",
        "G1",
        "16777216T",
        "18446744073709551616",
    ] {
        assert_eq!(parse_size(s), None, "{s}");
    }
    assert_eq!(parse_size("16777215T"), Some(16_777_215 << 40));
}

#[test]
fn sizes() {
    assert_eq!(MinFree::parse("500M").unwrap(), MinFree::Bytes(500 << 20));
    assert_eq!(MinFree::parse("10G").unwrap(), MinFree::Bytes(10 << 30));
    assert_eq!(MinFree::parse("4096").unwrap(), MinFree::Bytes(4096));
    assert_eq!(MinFree::parse("64K").unwrap(), MinFree::Bytes(64 << 10));
    assert_eq!(MinFree::parse("1T").unwrap(), MinFree::Bytes(1 << 40));
    // SPEC/Commands: admission's default watermark is 1 GiB free.
    assert_eq!(DEFAULT_MIN_FREE, MinFree::parse("1G").unwrap());
}

fn file(name: &str, l: Layer) -> (LayerFrom, Layer) {
    (LayerFrom::File(PathBuf::from(name)), l)
}

#[test]
fn defaults() {
    let p = resolve(&[]).unwrap();
    assert_eq!(p.min_free.bounds(), vec![DEFAULT_MIN_FREE]);
    assert_eq!(p.min_free.bytes.unwrap().source, Source::Default);
    assert_eq!(p.process_audit.value, ProcessAudit::Normal);
    assert!(!p.allow_temp_worktree_root.value);
    assert!(p.rebuildable.value.is_empty());
    assert_eq!(p.orphan_grace.value, DEFAULT_ORPHAN_GRACE.as_secs());
    assert!(p.git.is_none() && p.worktree_root.is_none() && p.trusted_remote.is_none());
}

#[test]
fn larger_watermark_wins_whatever_the_order() {
    let user = file(
        "/u.toml",
        Layer {
            min_free: Some("10%".into()),
            ..Layer::default()
        },
    );
    let explicit = file(
        "/c.toml",
        Layer {
            min_free: Some("1%".into()),
            ..Layer::default()
        },
    );
    for layers in [
        vec![user.clone(), explicit.clone()],
        vec![explicit.clone(), user.clone()],
    ] {
        let p = resolve(&layers).unwrap();
        let pc = p.min_free.percent.unwrap();
        assert_eq!(pc.value, 10);
        assert_eq!(pc.source, Source::File("/u.toml".into()));
        assert!(p.min_free.bytes.is_none(), "a set bound drops the default");
    }
    // Bytes and percent are both kept and both required.
    let p = resolve(&[
        user,
        (
            LayerFrom::Flags,
            Layer {
                min_free: Some("2G".into()),
                ..Layer::default()
            },
        ),
        (
            LayerFrom::Env,
            Layer {
                min_free: Some("1M".into()),
                ..Layer::default()
            },
        ),
    ])
    .unwrap();
    assert_eq!(
        p.min_free.bounds(),
        vec![MinFree::Bytes(2 << 30), MinFree::Percent(10)]
    );
    assert_eq!(
        p.min_free.bytes.unwrap().source,
        Source::Flag("--min-free".into())
    );
}

#[test]
fn trusted_filters_are_the_intersection_of_the_layers_that_set_them() {
    let set = |from: LayerFrom, v: &[&str]| {
        (
            from,
            Layer {
                trusted_filters: Some(v.iter().map(|s| (*s).to_string()).collect()),
                ..Layer::default()
            },
        )
    };
    assert!(resolve(&[]).unwrap().trusted_filters.value.is_empty());
    let one = resolve(&[set(LayerFrom::File("/u.toml".into()), &["lfs", "x", "lfs"])]).unwrap();
    assert_eq!(one.trusted_filters.value, ["lfs", "x"]);
    assert_eq!(one.trusted_filters.source, Source::File("/u.toml".into()));
    for layers in [
        vec![
            set(LayerFrom::File("/u.toml".into()), &["lfs", "x"]),
            set(LayerFrom::Env, &["x"]),
        ],
        vec![
            set(LayerFrom::Env, &["x"]),
            set(LayerFrom::File("/u.toml".into()), &["lfs", "x"]),
        ],
    ] {
        let p = resolve(&layers).unwrap();
        assert_eq!(
            p.trusted_filters.value,
            ["x"],
            "a later layer never adds trust"
        );
        assert!(matches!(p.trusted_filters.source, Source::Joined(_)));
    }
    let bad = resolve(&[set(LayerFrom::File("/u.toml".into()), &["a b"])]).unwrap_err();
    assert!(bad.to_string().contains("trusted_filters"), "{bad}");
    let env = env_layer(&|k| (k == "LEASE_TRUSTED_FILTERS").then(|| "lfs,,x".to_string())).unwrap();
    assert_eq!(
        env.trusted_filters,
        Some(vec!["lfs".to_string(), "x".to_string()])
    );
}

#[test]
fn strict_audit_survives_a_later_normal() {
    let strict = file(
        "/etc.toml",
        Layer {
            process_audit: Some(ProcessAudit::Strict),
            ..Layer::default()
        },
    );
    let normal = (
        LayerFrom::Env,
        Layer {
            process_audit: Some(ProcessAudit::Normal),
            ..Layer::default()
        },
    );
    let p = resolve(&[strict.clone(), normal.clone()]).unwrap();
    assert!(p.strict_audit());
    assert_eq!(p.process_audit.source, Source::File("/etc.toml".into()));
    let p = resolve(&[normal.clone(), strict]).unwrap();
    assert!(p.strict_audit());
    let p = resolve(&[normal]).unwrap();
    assert!(!p.strict_audit());
    assert_eq!(
        p.process_audit.source,
        Source::Env("LEASE_PROCESS_AUDIT".into())
    );
}

#[test]
fn archive_destinations_join_to_their_union() {
    let l = |a| Layer {
        archive: Some(a),
        ..Layer::default()
    };
    let f = |n: &str| LayerFrom::File(n.into());
    let p = resolve(&[]).unwrap();
    assert_eq!(p.archive.value, ArchiveMode::Bundle);
    assert_eq!(p.archive.source, Source::Default);
    let p = resolve(&[(f("/a"), l(ArchiveMode::Remote))]).unwrap();
    assert_eq!(p.archive.value, ArchiveMode::Remote);
    for (x, y) in [
        (ArchiveMode::Bundle, ArchiveMode::Remote),
        (ArchiveMode::Remote, ArchiveMode::Bundle),
    ] {
        let p = resolve(&[(f("/a"), l(x)), (LayerFrom::Flags, l(y))]).unwrap();
        assert_eq!(p.archive.value, ArchiveMode::Both, "{x:?} then {y:?}");
        assert!(matches!(p.archive.source, Source::Joined(_)));
    }
    let p = resolve(&[
        (f("/a"), l(ArchiveMode::Both)),
        (LayerFrom::Flags, l(ArchiveMode::Bundle)),
    ])
    .unwrap();
    assert_eq!(p.archive.value, ArchiveMode::Both, "a later narrower layer");
    assert_eq!(p.archive.source, Source::File("/a".into()));
    let p = resolve(&[
        (f("/a"), l(ArchiveMode::Bundle)),
        (LayerFrom::Flags, l(ArchiveMode::Both)),
    ])
    .unwrap();
    assert_eq!(p.archive.value, ArchiveMode::Both);
    assert_eq!(p.archive.source, Source::Flag("--archive".into()));
}

#[test]
fn longest_grace_wins() {
    let g = |s: &str| Layer {
        orphan_grace: Some(s.into()),
        ..Layer::default()
    };
    let p = resolve(&[file("/a", g("30d")), (LayerFrom::Env, g("1h"))]).unwrap();
    assert_eq!(p.orphan_grace.value, 30 * 86400);
    // A layer may lower the default, but only to the longest it sets.
    let p = resolve(&[(LayerFrom::Env, g("1h"))]).unwrap();
    assert_eq!(p.orphan_grace.value, 3600);
    assert!(resolve(&[file("/a", g("soon"))]).is_err());
}

#[test]
fn the_stricter_value_wins_in_either_order_and_a_tie_keeps_the_first_source() {
    let bytes = |v: &str| Layer {
        min_free: Some(v.into()),
        ..Layer::default()
    };
    let grace = |v: &str| Layer {
        orphan_grace: Some(v.into()),
        ..Layer::default()
    };
    let strict = Layer {
        process_audit: Some(ProcessAudit::Strict),
        ..Layer::default()
    };
    for (a, b) in [("1G", "10G"), ("10G", "1G")] {
        let p = resolve(&[file("/a", bytes(a)), file("/b", bytes(b))]).unwrap();
        let w = p.min_free.bytes.unwrap();
        assert_eq!(w.value, 10 << 30, "{a} then {b}");
        let from = if a == "10G" { "/a" } else { "/b" };
        assert_eq!(w.source, Source::File(from.into()));
    }
    for (a, b) in [("1h", "30d"), ("30d", "1h")] {
        let p = resolve(&[file("/a", grace(a)), file("/b", grace(b))]).unwrap();
        assert_eq!(p.orphan_grace.value, 30 * 86400, "{a} then {b}");
    }
    // Ties: the first layer that set the value stays its source.
    let p = resolve(&[file("/a", bytes("5G")), file("/b", bytes("5G"))]).unwrap();
    assert_eq!(p.min_free.bytes.unwrap().source, Source::File("/a".into()));
    let p = resolve(&[file("/a", bytes("5%")), file("/b", bytes("5%"))]).unwrap();
    assert_eq!(
        p.min_free.percent.unwrap().source,
        Source::File("/a".into())
    );
    let p = resolve(&[file("/a", grace("2d")), file("/b", grace("2d"))]).unwrap();
    assert_eq!(p.orphan_grace.source, Source::File("/a".into()));
    let p = resolve(&[file("/a", strict.clone()), file("/b", strict)]).unwrap();
    assert_eq!(p.process_audit.source, Source::File("/a".into()));
}

#[test]
fn files_and_rebuildable_sources_are_reported_as_read() {
    let p = resolve(&[
        file("/etc.toml", Layer::default()),
        (LayerFrom::Env, Layer::default()),
        file("/user.toml", Layer::default()),
    ])
    .unwrap();
    assert_eq!(p.files, ["/etc.toml", "/user.toml"]);
    assert_eq!(p.rebuildable.source, Source::Default);
    let p = resolve(&[file(
        "/a",
        Layer {
            rebuildable: Some(vec!["target".into()]),
            ..Layer::default()
        },
    )])
    .unwrap();
    assert_eq!(p.rebuildable.source, Source::File("/a".into()));
}

#[test]
fn rebuildable_is_the_intersection_of_the_layers_that_set_it() {
    let r = |v: &[&str]| Layer {
        rebuildable: Some(v.iter().map(|s| (*s).to_string()).collect()),
        ..Layer::default()
    };
    let p = resolve(&[
        file("/a", r(&["target", "node_modules/"])),
        (LayerFrom::Env, Layer::default()),
        (LayerFrom::Flags, r(&["target/", "dist"])),
    ])
    .unwrap();
    assert_eq!(p.rebuildable.value, vec!["target".to_string()]);
    assert_eq!(
        p.rebuildable.source,
        Source::Joined(vec![
            Source::File("/a".into()),
            Source::Flag("--rebuildable".into())
        ])
    );
    let p = resolve(&[(LayerFrom::Flags, r(&["dist"]))]).unwrap();
    assert_eq!(p.rebuildable.value, vec!["dist".to_string()]);
    for bad in ["/abs", "..", "a/../b", "a//b", "."] {
        assert!(resolve(&[file("/a", r(&[bad]))]).is_err(), "{bad}");
    }
}

#[test]
fn allow_temp_root_needs_a_yes_and_no_no() {
    let a = |b: bool| Layer {
        allow_temp_worktree_root: Some(b),
        ..Layer::default()
    };
    assert!(
        resolve(&[(LayerFrom::Env, a(true))])
            .unwrap()
            .allow_temp_worktree_root
            .value
    );
    assert!(
        !resolve(&[file("/a", a(false)), (LayerFrom::Flags, a(true))])
            .unwrap()
            .allow_temp_worktree_root
            .value
    );
    assert!(
        !resolve(&[file("/a", a(true)), (LayerFrom::Flags, a(false))])
            .unwrap()
            .allow_temp_worktree_root
            .value
    );
}

#[test]
fn plain_settings_last_layer_wins() {
    let g = |s: &str| Layer {
        git: Some(s.into()),
        trusted_remote: Some("up".into()),
        ..Layer::default()
    };
    let p = resolve(&[
        file("/a", g("/usr/bin/git")),
        (LayerFrom::Env, g("/opt/git")),
    ])
    .unwrap();
    let git = p.git.unwrap();
    assert_eq!(git.value, PathBuf::from("/opt/git"));
    assert_eq!(git.source, Source::Env("LEASE_GIT".into()));
    assert!(resolve(&[file("/a", g("git"))]).is_err(), "relative git");
    let root = |p: &str| Layer {
        worktree_root: Some(p.into()),
        ..Layer::default()
    };
    let p = resolve(&[file("/a", root("/w//t/./r/"))]).unwrap();
    assert_eq!(p.worktree_root.unwrap().value.as_os_str(), "/w/t/r");
    assert!(
        resolve(&[file("/a", root("/w/a\nb"))]).is_err(),
        "a newline"
    );
    let bad_remote = Layer {
        trusted_remote: Some("a/b".into()),
        ..Layer::default()
    };
    assert!(resolve(&[file("/a", bad_remote)]).is_err());
}

#[test]
fn unknown_keys_name_the_file_and_the_key() {
    let e = parse_file(
        Path::new("/x/config.toml"),
        "min_free = \"1G\"\nmin_fre = 3\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("/x/config.toml"), "{e}");
    assert!(e.contains("min_fre"), "{e}");
    assert!(e.contains("line 2"), "{e}");
    let l = parse_file(
        Path::new("/x"),
        "process_audit = \"strict\"\nrebuildable = [\"target\"]\nallow_temp_worktree_root = true\n",
    )
    .unwrap();
    assert_eq!(l.process_audit, Some(ProcessAudit::Strict));
    assert!(parse_file(Path::new("/x"), "process_audit = \"lax\"\n").is_err());
}

#[test]
fn env_layer_reads_only_the_documented_list() {
    let env = |k: &str| match k {
        "LEASE_MIN_FREE" => Some("5%".to_string()),
        "LEASE_ID" | "LEASE_FD" | "LEASE_FILE" | "LEASE_IDENTITY" | "LEASE_WORKTREE"
        | "LEASE_SLOT" => Some("garbage".to_string()),
        "LEASE_REBUILDABLE" => Some("target::dist".to_string()),
        "LEASE_ALLOW_TEMP_ROOT" => Some("1".to_string()),
        _ => None,
    };
    let l = env_layer(&env).unwrap();
    assert_eq!(
        l,
        Layer {
            min_free: Some("5%".into()),
            rebuildable: Some(vec!["target".into(), "dist".into()]),
            allow_temp_worktree_root: Some(true),
            ..Layer::default()
        }
    );
    assert!(env_layer(&|k| (k == "LEASE_PROCESS_AUDIT").then(|| "lax".into())).is_err());
    assert!(env_layer(&|k| (k == "LEASE_ALLOW_TEMP_ROOT").then(|| "maybe".into())).is_err());
}
