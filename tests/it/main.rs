//! Integration tests: one binary (STYLE.md §7). Each test builds real git
//! repositories with a bare remote, runs the real `lease` binary, spawns and
//! signals real processes, and waits on readiness files, never on sleeps.
#![allow(
    clippy::unwrap_used,
    clippy::print_stderr,
    clippy::print_stdout,
    missing_docs
)]

mod support;

mod adopt;
mod adversarial;
mod archive;
mod cli;
mod config;
mod du;
mod durability;
mod exec;
mod faults;
mod filters;
mod gitlock;
mod hold;
mod hosts;
mod hygiene;
mod identity;
mod intent;
mod json;
mod keeper;
mod list;
mod logs;
mod metrics;
mod oracles;
mod progress;
mod provision;
mod reader;
mod reap;
mod repair;
mod restore;
mod retire;
mod shim;
mod slots;
mod snapshots;
mod snapshots2;
mod suite;
mod teardown;
mod transport;
mod until_free;
mod world;

/// Every `.rs` file in tests/it is declared above (jj's runner.rs check).
#[test]
fn every_test_file_is_declared() {
    let main = include_str!("main.rs");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(module) = name.strip_suffix(".rs")
            && module != "main"
        {
            assert!(
                main.contains(&format!("mod {module};")),
                "tests/it/{name} is not declared in main.rs"
            );
        }
    }
}
