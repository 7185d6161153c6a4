#!/usr/bin/env bash
# A self-hosted runner's job-completed hook: `lease reap --apply`.
#
# Install: ACTIONS_RUNNER_HOOK_JOB_COMPLETED=/abs/path/job-completed.sh in
# the runner's `.env` (then restart the runner). The runner runs it with
# `bash -e` after the job's post steps, whether the job passed or failed,
# and before its orphan-process cleanup.
#
# It finishes what crashed jobs left half-done and retires every worktree
# nobody uses and nothing would be lost from. The worktree of the job that
# just ended is normally still held here (its keeper lives until the
# runner's worker exits) and is retired by its recorded when-free intent
# instead; held worktrees are not an error. Exit status: 0 when reap
# finished (something held included), 3 when it could not complete its
# discovery (a `::warning::` names it) - lease's own codes.
#
#   LEASE_BIN   the lease binary (default: lease on PATH)
set -u
lease=${LEASE_BIN:-lease}
if ! command -v "$lease" >/dev/null 2>&1; then
  echo "::warning::lease job-completed hook: \`$lease\` is not on PATH; nothing reaped"
  exit 0
fi
code=0
"$lease" reap --apply || code=$?
case $code in
  0|1) exit 0 ;;
  *) echo "::warning::lease reap --apply exited $code; see the lines above"; exit "$code" ;;
esac
