#!/bin/sh
# worktrunk `pre-remove` hook: lease's verdict aborts `wt remove`.
#
#   # .config/wt.toml (project) or ~/.config/worktrunk/config.toml (user)
#   pre-remove = "exec /path/to/lease/shim/worktrunk/pre-remove.sh {{ worktree_path }}"
#
# worktrunk runs the hook with `sh -c` inside the worktree being removed
# and aborts the removal when it exits non-zero. This script:
#
# - leaves the tree first (`cd /`; `exec` in the hook line makes the shell
#   itself this script): a process whose cwd is in the tree is a process
#   reference that holds it;
# - for a worktree lease has recorded, lets lease do the removal through
#   its gates (`lease retire PATH`: archive of unique commits, tombstone,
#   the one `git worktree remove`), and exits 1 either way so that
#   worktrunk deletes nothing itself: "retired by lease" when lease removed
#   it, else lease's hold (`consumer-alive`, `dirty`, ...) with what to do;
# - for a worktree lease has no record of, exits 0: lease has no say, and
#   worktrunk's own checks decide.
#
# Exit: 0 not lease's; 1 lease retired it or holds it; lease's 2 or 3 when
# it could not judge (the removal is aborted: fail closed).
#   LEASE_BIN   the lease binary (default: lease on PATH)
path=${1:?usage: pre-remove.sh WORKTREE_PATH}
lease=${LEASE_BIN:-lease}
cd / || exit 1
if ! command -v "$lease" >/dev/null 2>&1; then
  echo "lease pre-remove: \`$lease\` is not on PATH; not removing \`$path\`" >&2
  exit 1
fi
out=$("$lease" retire --json -- "$path")
code=$?
flat=$(printf '%s' "$out" | tr -d ' \n')
case $code in
  0)
    echo "lease pre-remove: retired by lease: \`$path\` is removed (see \`lease show\` for its tombstone); worktrunk has nothing left to remove" >&2
    exit 1
    ;;
  1)
    case $flat in
      *'"reasons":["not-recorded"]'*)
        echo "lease pre-remove: \`$path\` has no lease record; worktrunk decides" >&2
        exit 0
        ;;
    esac
    reasons=$(printf '%s' "$flat" | sed -n 's/.*"reasons":\[\([^]]*\)\].*/\1/p' | tr -d '"')
    next=$(printf '%s\n' "$out" | sed -n 's/^ *"next": "\(.*\)",\{0,1\}$/\1/p' | head -n 1)
    echo "lease pre-remove: lease keeps \`$path\`: held: ${reasons:-?}${next:+; next: $next}" >&2
    exit 1
    ;;
  *)
    echo "lease pre-remove: \`lease retire\` exited $code; not removing \`$path\`" >&2
    exit "$code"
    ;;
esac
