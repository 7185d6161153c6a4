#!/usr/bin/env bash
# Greps for patterns the code must not contain (STYLE.md §8; just's bin/forbid).
# They stand in for clippy's disallowed-methods, for which the fixed top level
# has no room. A line may opt out with a trailing `// forbid: allow <pattern>`
# comment that says why nearby.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
check() {
  local pattern=$1 why=$2; shift 2
  local hits
  hits=$(grep -rnE -- "$pattern" "$@" 2>/dev/null | grep -v 'forbid: allow' || true)
  if [ -n "$hits" ]; then
    echo "forbidden: $why"
    echo "$hits"
    status=1
  fi
}

check 'dbg!\(' 'dbg! left in' src tests
check 'todo!\(|unimplemented!\(' 'todo!/unimplemented! left in' src
check 'FIXME' 'FIXME left in' src tests
check 'remove_dir_all' 'remove_dir_all crosses mounts and deletes by path; delete through git or a checked walker' src
check '\.unlock\(' 'never unlock a lease: close the descriptor (LOCK_UN frees every inherited copy)' src
check 'FlockOperation::Unlock|libc::LOCK_UN' 'never LOCK_UN' src
# Test-only files (`#[cfg(test)] mod tests;` beside a module) may start
# processes and make any transition.
src_code() { find src -name '*.rs' ! -name tests.rs ! -name props.rs; }
check 'Command::new' 'run git only through the builder in src/git.rs (launcher.rs, launcher/supervise.rs and launcher/join.rs run the user command, launcher/shim.rs the user'"'"'s own git unchanged)' \
  $(src_code | grep -v -e '^src/git.rs$' -e '^src/ops/launcher.rs$' -e '^src/ops/launcher/join.rs$' -e '^src/ops/launcher/supervise.rs$' -e '^src/ops/launcher/shim.rs$')
# The floors (ARCHITECTURE.md): git commands are built only in git/, one
# typed function per subcommand in git/ops.rs.
check '\.(cmd|plain|user|far_side)\(' 'build git commands only in src/git/ (add a typed function to src/git/ops.rs)' \
  $(find src -name '*.rs' | grep -v -e '^src/git.rs$' -e '^src/git/')
# unsafe: os/process.rs (signals, kcmp) and git/libgit2.rs (git2's global
# config search path, an `unsafe fn` with no safe equivalent) only, and
# src/bin/lease-git-shim.rs: the compiled shim's ELF note (link_section),
# its C entry point (no_mangle) and one set_var in a process that never
# starts a thread.
check '\bunsafe[[:space:]]*(\{|fn|impl)|unsafe_code' 'unsafe only in src/os/process.rs, src/git/libgit2.rs and src/bin/lease-git-shim.rs' \
  $(find src -name '*.rs' | grep -v -e '^src/os/process.rs$' -e '^src/git/libgit2.rs$' -e '^src/bin/lease-git-shim.rs$')
# One way to end a record (issue 16): the tombstone, the move to removed and
# the lease file's unlink happen only in src/ops/removal.rs.
check 'set_state\(State::Removed\)|\br\.tombstone = Some' 'a record becomes removed only through src/ops/removal.rs (remove_record)' \
  $(src_code | grep -v -e '^src/ops/removal.rs$' -e '^src/model/record.rs$')
# Every fsync goes through os/atomic.rs (fsync, sync_dir), which logs it at
# trace level with what it makes durable (docs/record.md "Durability").
check '\.sync_(all|data)\(' 'fsync through crate::os::atomic::fsync or sync_dir (they log each one at trace)' \
  $(find src -name '*.rs' | grep -v -e '^src/os/atomic.rs$')
check 'new\("kill"\)' 'signal processes with rustix, never kill(1): a negative pid argument was seen becoming kill(-1, SIGKILL)' src tests
exit $status
