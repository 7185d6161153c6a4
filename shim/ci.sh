# shellcheck shell=sh
# CI functions of lease. Source this file (`. shim/ci.sh`) in
# each step of a CI job; see docs/ci.md for GitHub Actions and GitLab CI.
#
#   lease_ci_step CMD [ARGS...]  Runs CMD in the job's worktree, holding its
#                                lease, and returns CMD's status. The first
#                                step creates the worktree (`lease exec
#                                --keep`), later steps are new sessions of it
#                                (`lease exec --keep --adopt`). Between steps
#                                the worktree is `retained`, so nothing
#                                retires it.
#   lease_ci_finish              Ends the job's worktree (one last session
#                                without --keep leaves it `terminal`) and
#                                runs `lease retire` on it: 0 removed, 1 held
#                                (the reason is printed; the worktree stays
#                                for `lease retire --all` or the reaper).
#   lease_ci_worktree            Prints the worktree's path (after a step).
#
# Settings (environment):
#   LEASE_BIN        the lease binary (default: lease on PATH)
#   LEASE_CI_STATE   the file that carries the id and path between steps
#                    (default: $RUNNER_TEMP/lease-ci on GitHub Actions, else
#                    $HOME/.cache/lease-ci/<job id>); it must survive from
#                    step to step, like the state root itself
#   LEASE_CI_REPO, LEASE_CI_BRANCH, LEASE_CI_BASE
#                    --repo, --branch and --base of the first step
#   LEASE_CI_OWNER   --owner of the first step (default: $LEASE_OWNER, else
#                    ci:<run or job id>)
#
# Plain POSIX sh (plus `test -O`). Under `set -e`, which GitHub Actions and
# GitLab CI use, a failing step command fails the shell just as running it
# directly would; lease_ci_finish tests every status itself.

lease_ci__state() {
  if [ -n "${LEASE_CI_STATE:-}" ]; then
    printf '%s\n' "$LEASE_CI_STATE"
  elif [ -n "${RUNNER_TEMP:-}" ]; then
    printf '%s\n' "$RUNNER_TEMP/lease-ci"
  else
    printf '%s\n' "${HOME:?HOME is not set}/.cache/lease-ci/${GITHUB_RUN_ID:-${CI_JOB_ID:-default}}"
  fi
}

# Reads the state file into lease_ci_id and lease_ci_wt. Returns 1 when there
# is none yet, 2 when it is not a plain file of ours.
lease_ci__load() {
  lease_ci_file=$(lease_ci__state) || return 2
  [ -e "$lease_ci_file" ] || [ -h "$lease_ci_file" ] || return 1
  if [ -h "$lease_ci_file" ] || [ ! -f "$lease_ci_file" ] || [ ! -O "$lease_ci_file" ]; then
    printf 'lease-ci: `%s` is not a regular file of ours; remove it\n' "$lease_ci_file" >&2
    return 2
  fi
  {
    IFS= read -r lease_ci_id && IFS= read -r lease_ci_wt
  } <"$lease_ci_file" || {
    printf 'lease-ci: `%s` is incomplete; remove it\n' "$lease_ci_file" >&2
    return 2
  }
  return 0
}

lease_ci_step() {
  if [ $# -eq 0 ]; then
    echo 'usage: lease_ci_step CMD [ARGS...]' >&2
    return 2
  fi
  lease_ci_bin=${LEASE_BIN:-lease}
  if lease_ci__load; then
    "$lease_ci_bin" exec --keep --adopt "$lease_ci_wt" -- "$@"
    return
  else
    lease_ci_rc=$?
    [ "$lease_ci_rc" -eq 1 ] || return 125
  fi
  # The first step: create the worktree, and have the command itself write
  # the id and path lease gave it before it runs (so a failing first step
  # still leaves a worktree the next steps and lease_ci_finish can find).
  (umask 077 && mkdir -p "$(dirname -- "$lease_ci_file")") || return 125
  lease_ci_owner=${LEASE_CI_OWNER:-${LEASE_OWNER:-ci:${GITHUB_RUN_ID:-${CI_JOB_ID:-local}}}}
  set -- -- sh -c 'umask 077 && printf "%s\n%s\n" "$LEASE_ID" "$LEASE_WORKTREE" >"$0.tmp" &&
    mv -f "$0.tmp" "$0" && exec "$@"' "$lease_ci_file" "$@"
  [ -z "${LEASE_CI_BASE:-}" ] || set -- --base "$LEASE_CI_BASE" "$@"
  [ -z "${LEASE_CI_BRANCH:-}" ] || set -- --branch "$LEASE_CI_BRANCH" "$@"
  [ -z "${LEASE_CI_REPO:-}" ] || set -- --repo "$LEASE_CI_REPO" "$@"
  "$lease_ci_bin" exec --keep --owner "$lease_ci_owner" "$@"
}

lease_ci_worktree() {
  lease_ci__load || return 1
  printf '%s\n' "$lease_ci_wt"
}

lease_ci_finish() {
  lease_ci_bin=${LEASE_BIN:-lease}
  if lease_ci__load; then :; else
    lease_ci_rc=$?
    [ "$lease_ci_rc" -eq 1 ] && {
      echo 'lease-ci: no worktree to finish' >&2
      return 0
    }
    return 3
  fi
  # A last, empty session without --keep: retained -> active -> terminal.
  if "$lease_ci_bin" exec --adopt "$lease_ci_wt" -- true; then :; else
    lease_ci_rc=$?
    echo "lease-ci: cannot end the session of \`$lease_ci_wt\` (status $lease_ci_rc)" >&2
    return "$lease_ci_rc"
  fi
  if "$lease_ci_bin" retire "$lease_ci_id"; then
    rm -f -- "$lease_ci_file"
    return 0
  else
    # Held (1) or failed (3): the state file stays, so a later
    # lease_ci_finish can try again.
    return $?
  fi
}
