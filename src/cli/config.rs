//! The config layers read from their files and the environment, and
//! `lease config --show [--json]`: every effective setting and where it
//! came from.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::exit;
use crate::error::{Error, Result};
use crate::policy::{Layer, LayerFrom, Policy, Source, Sourced, env_layer, parse_file};

/// The system config file.
const SYSTEM_FILE: &str = "/etc/lease/config.toml";

/// The largest config file lease reads (bytes; docs/config.md).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a config file; `Ok(None)` if it does not exist and `required` is
/// false. The file must be a regular file of at most [`MAX_CONFIG_BYTES`],
/// opened without following a symlink or waiting on a FIFO
/// ([`crate::os::fs::read_regular`]); anything else is a usage error naming
/// the file (SPEC "Bad input and faults").
fn read_file(path: &Path, required: bool) -> Result<Option<Layer>> {
    let text = match crate::os::fs::read_regular(path, MAX_CONFIG_BYTES) {
        Ok(b) => String::from_utf8(b).map_err(|_| {
            Error::Usage(format!(
                "config file `{}` is not UTF-8 text; fix it or remove it",
                path.display()
            ))
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(Error::Usage(format!(
                "config file `{}` {e}; name a regular file (for a symlink, the file it points to)",
                path.display()
            )));
        }
        Err(e) => {
            return Err(Error::Usage(format!(
                "cannot read config file `{}`: {e}",
                path.display()
            )));
        }
    };
    parse_file(path, &text).map(Some)
}

/// The user config file: `$XDG_CONFIG_HOME/lease/config.toml`, else
/// `~/.config/lease/config.toml`.
fn user_file(get: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let var = |k: &str| get(k).filter(|v| v.starts_with('/'));
    var("XDG_CONFIG_HOME")
        .map(|x| PathBuf::from(x).join("lease/config.toml"))
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".config/lease/config.toml")))
}

/// Loads the file and environment layers, in order: system file, user
/// file, `--config` (else `$LEASE_CONFIG`), environment.
pub(super) fn load_layers(config: Option<&Path>) -> Result<Vec<(LayerFrom, Layer)>> {
    let get = |k: &str| std::env::var(k).ok();
    let mut layers = Vec::new();
    let system = PathBuf::from(SYSTEM_FILE);
    if let Some(l) = read_file(&system, false)? {
        layers.push((LayerFrom::File(system), l));
    }
    if let Some(user) = user_file(&get)
        && let Some(l) = read_file(&user, false)?
    {
        layers.push((LayerFrom::File(user), l));
    }
    let explicit = config.map(Path::to_path_buf).or_else(|| {
        get("LEASE_CONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    if let Some(path) = explicit
        && let Some(l) = read_file(&path, true)?
    {
        layers.push((LayerFrom::File(path), l));
    }
    layers.push((LayerFrom::Env, env_layer(&get)?));
    Ok(layers)
}

/// The arguments of `lease config`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Show the effective values (the default and only action).
    #[arg(long)]
    pub(super) show: bool,
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease config` (`--show` is the only action).
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    show(ctx, a.json)
}

/// One row: key, value, source.
type Row = (&'static str, Value, Source);

fn row<T: serde::Serialize>(key: &'static str, s: &Sourced<T>) -> Row {
    (key, json!(s.value), s.source.clone())
}

fn opt<T: serde::Serialize>(key: &'static str, s: Option<&Sourced<T>>, default: Value) -> Row {
    match s {
        Some(s) => row(key, s),
        None => (key, default, Source::Default),
    }
}

/// The rows of `p`, in a stable order, with the state root located by `state`.
/// A byte count as a config value people read and can paste back: the
/// largest binary unit (`K`, `M`, `G`, `T`; powers of 1024, as
/// `policy::parse_size` reads them) that divides it exactly, else bytes
/// (`1048576` is `1M`, `1500` stays `1500`).
fn size_value(b: u64) -> String {
    for (unit, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] {
        if b != 0 && b.is_multiple_of(1u64 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

fn rows(p: &Policy, state: std::result::Result<(String, Source), String>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    let (state_value, state_source) = match &state {
        Ok((path, src)) => (json!(path), src.clone()),
        Err(e) => (json!(format!("unset: {e}")), Source::Default),
    };
    out.push(("state_root", state_value, state_source));
    let default_root = match &state {
        Ok((path, _)) => json!(format!("{path}/worktrees")),
        Err(_) => json!("<state root>/worktrees"),
    };
    out.push(opt("worktree_root", p.worktree_root.as_ref(), default_root));
    out.push(opt(
        "trusted_remote",
        p.trusted_remote.as_ref(),
        json!("origin, else the branch's upstream remote"),
    ));
    out.push(opt("git", p.git.as_ref(), json!("the first git on PATH")));
    out.push(match &p.owner {
        Some(o) => (
            "owner",
            json!(format!("{}:{}", o.value.kind, o.value.name)),
            o.source.clone(),
        ),
        None => {
            let o = p.default_owner(crate::ops::caller_name);
            (
                "owner",
                json!(format!("{}:{}", o.kind, o.name)),
                Source::Default,
            )
        }
    });
    if let Some(b) = &p.min_free.bytes {
        out.push(("min_free", json!(size_value(b.value)), b.source.clone()));
    }
    if let Some(pc) = &p.min_free.percent {
        out.push((
            "min_free",
            json!(format!("{}%", pc.value)),
            pc.source.clone(),
        ));
    }
    out.push((
        "orphan_grace",
        json!(
            humantime::format_duration(std::time::Duration::from_secs(p.orphan_grace.value))
                .to_string()
        ),
        p.orphan_grace.source.clone(),
    ));
    out.push(row("rebuildable", &p.rebuildable));
    out.push(row("process_audit", &p.process_audit));
    out.push(row("allow_temp_worktree_root", &p.allow_temp_worktree_root));
    out.push(row("archive", &p.archive));
    out.push(row("trusted_filters", &p.trusted_filters));
    out.push(row("teardown", &p.teardown));
    out.push(row("teardown_timeout", &p.teardown_timeout));
    out.push(row("provision", &p.provision));
    out.push(row("provision_symlink", &p.provision_symlink));
    out
}

/// Where the state root comes from (SPEC/Words "state root").
fn state_root() -> std::result::Result<(String, Source), String> {
    let path = crate::store::root::StateRoot::locate().map_err(|e| e.to_string())?;
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    let source = if set("LEASE_HOME") {
        Source::Env("LEASE_HOME".into())
    } else if set("XDG_STATE_HOME") {
        Source::Env("XDG_STATE_HOME".into())
    } else {
        Source::Default
    };
    Ok((path.to_string_lossy().into_owned(), source))
}

pub(super) fn show(ctx: &crate::ops::Ctx, json: bool) -> Result<u8> {
    let p = &*ctx.policy;
    let rows = rows(p, state_root());
    if json {
        let settings: Vec<Value> = rows
            .iter()
            .map(|(k, v, s)| json!({"key": k, "value": v, "source": s}))
            .collect();
        let v = json!({"files": p.files, "settings": settings});
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&v).expect("json serializes")
        );
        return Ok(exit::OK);
    }
    if p.files.is_empty() {
        out!("# no config file read");
    } else {
        out!("# config files read: {}", p.files.join(", "));
    }
    for (k, v, s) in &rows {
        let v = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out!("{k:<26} {v:<40} ({s})");
    }
    Ok(exit::OK)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sizes_show_in_the_largest_exact_unit_and_parse_back() {
        for (b, shown) in [
            (1 << 20, "1M"),
            (1 << 30, "1G"),
            (3 << 10, "3K"),
            (1500, "1500"),
            (0, "0"),
        ] {
            assert_eq!(size_value(b), shown);
            assert_eq!(crate::policy::parse_size(shown), Some(b));
        }
    }

    #[test]
    fn user_file_prefers_xdg() {
        let both = |k: &str| match k {
            "XDG_CONFIG_HOME" => Some("/x".to_string()),
            "HOME" => Some("/h".to_string()),
            _ => None,
        };
        assert_eq!(
            user_file(&both),
            Some(PathBuf::from("/x/lease/config.toml"))
        );
        let home = |k: &str| (k == "HOME").then(|| "/h".to_string());
        assert_eq!(
            user_file(&home),
            Some(PathBuf::from("/h/.config/lease/config.toml"))
        );
    }

    #[test]
    fn every_key_has_a_row() {
        let p = crate::policy::resolve(&[]).unwrap();
        let r = rows(&p, Ok(("/s".into(), Source::Env("LEASE_HOME".into()))));
        let keys: Vec<&str> = r.iter().map(|(k, _, _)| *k).collect();
        for k in [
            "state_root",
            "worktree_root",
            "trusted_remote",
            "git",
            "owner",
            "min_free",
            "orphan_grace",
            "rebuildable",
            "process_audit",
            "allow_temp_worktree_root",
            "archive",
            "trusted_filters",
            "teardown",
            "teardown_timeout",
            "provision",
            "provision_symlink",
        ] {
            assert!(keys.contains(&k), "{k}");
        }
        assert_eq!(r[1].1, json!("/s/worktrees"));
    }
}
