# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_lease_global_optspecs
    string join \n v/verbose q/quiet log-format= config= h/help V/version
end

function __fish_lease_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_lease_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_lease_using_subcommand
    set -l cmd (__fish_lease_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c lease -n "__fish_lease_needs_command" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_needs_command" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_needs_command" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_needs_command" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_needs_command" -s V -l version -d 'Print version'
complete -c lease -n "__fish_lease_needs_command" -f -a "exec" -d 'Run a command in a leased worktree (created, or adopted with --adopt)'
complete -c lease -n "__fish_lease_needs_command" -f -a "create" -d 'Create a leased worktree for a process lease does not start, and a keeper that holds the lease until that process exits'
complete -c lease -n "__fish_lease_needs_command" -f -a "keeper" -d 'The keeper `lease create` starts (not for direct use)'
complete -c lease -n "__fish_lease_needs_command" -f -a "retire" -d 'Remove worktrees nobody uses and nothing would be lost from'
complete -c lease -n "__fish_lease_needs_command" -f -a "list" -d 'List records, their states and holders'
complete -c lease -n "__fish_lease_needs_command" -f -a "show" -d 'Show one record'
complete -c lease -n "__fish_lease_needs_command" -f -a "du" -d 'Show the disk each worktree holds, by class, and what a retire would reclaim now'
complete -c lease -n "__fish_lease_needs_command" -f -a "hold" -d 'Keep a worktree for a named owner (the record becomes retained)'
complete -c lease -n "__fish_lease_needs_command" -f -a "release" -d 'Let a retained worktree be retired again (retained -> terminal)'
complete -c lease -n "__fish_lease_needs_command" -f -a "reap" -d 'Reconcile: finish what crashes left half-done, retire candidates, report orphans. A dry run unless --apply'
complete -c lease -n "__fish_lease_needs_command" -f -a "adopt" -d 'Record an unrecorded linked worktree as adopted and terminal, running nothing'
complete -c lease -n "__fish_lease_needs_command" -f -a "repair" -d 'Remove the registration of one worktree whose directory is missing'
complete -c lease -n "__fish_lease_needs_command" -f -a "join" -d 'Take the lease named by LEASE_* again and run a command holding it'
complete -c lease -n "__fish_lease_needs_command" -f -a "restore" -d 'Bring back an archived worktree: a new leased worktree at the archived HEAD, after re-verifying the bundle. One-shot per archive'
complete -c lease -n "__fish_lease_needs_command" -f -a "archives" -d 'List the records that have archives'
complete -c lease -n "__fish_lease_needs_command" -f -a "archive" -d 'Work with one archive'
complete -c lease -n "__fish_lease_needs_command" -f -a "audit" -d 'Work with the audit log'
complete -c lease -n "__fish_lease_needs_command" -f -a "config" -d 'Show the effective policy and where each value came from'
complete -c lease -n "__fish_lease_needs_command" -f -a "doctor" -d 'Check this machine for lease: git, the state root, flock support, the current repository\'s trusted remote, lease and its git shim on PATH'
complete -c lease -n "__fish_lease_needs_command" -f -a "metrics" -d 'Print Prometheus metrics of the state root (for node_exporter\'s textfile collector)'
complete -c lease -n "__fish_lease_needs_command" -f -a "hook" -d 'Speak an agent host\'s hook contract (Claude Code\'s WorktreeCreate and WorktreeRemove)'
complete -c lease -n "__fish_lease_needs_command" -f -a "generate" -d 'Write the man page and shell completions (for packagers and scripts/gen-docs)'
complete -c lease -n "__fish_lease_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lease -n "__fish_lease_using_subcommand exec" -l repo -d 'Repository (default: the one containing the current directory)' -r -F
complete -c lease -n "__fish_lease_using_subcommand exec" -l branch -d 'Branch to check out (created at the base if missing; default lease/ID-PREFIX)' -r
complete -c lease -n "__fish_lease_using_subcommand exec" -l base -d 'Base commit for a new branch (default: the repository\'s HEAD)' -r
complete -c lease -n "__fish_lease_using_subcommand exec" -l adopt -d 'Lease an existing linked worktree instead of creating one' -r -F
complete -c lease -n "__fish_lease_using_subcommand exec" -l resume -d 'Run in the worktree of a retained or terminal record (a new session)' -r
complete -c lease -n "__fish_lease_using_subcommand exec" -l owner -d 'Owner as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER)' -r
complete -c lease -n "__fish_lease_using_subcommand exec" -l min-free -d 'Free-space watermark, bytes with a unit or a percentage (default 1G); joins config and $LEASE_MIN_FREE, the larger wins' -r
complete -c lease -n "__fish_lease_using_subcommand exec" -l rebuildable -d 'Output path (relative to the worktree top) that may be deleted: ignored files there do not hold the after-exit retire (intersected with config)' -r
complete -c lease -n "__fish_lease_using_subcommand exec" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand exec" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand exec" -l keep -d 'Keep the worktree after the command exits (record it `retained`)'
complete -c lease -n "__fish_lease_using_subcommand exec" -l reap-if-low -d 'Below the watermark, run a safe reap (as `lease reap --apply`, not waiting for another reaper), then check again'
complete -c lease -n "__fish_lease_using_subcommand exec" -l allow-temp-root -d 'Allow a worktree root under /tmp, /var/tmp or $TMPDIR (unless a config layer says false)'
complete -c lease -n "__fish_lease_using_subcommand exec" -l json -d 'Report lease\'s own part (errors, notes, the after-exit retire) as JSON lines on stderr; stdout stays the command\'s'
complete -c lease -n "__fish_lease_using_subcommand exec" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand exec" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand exec" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand create" -l repo -d 'Repository (default: the one containing the current directory)' -r -F
complete -c lease -n "__fish_lease_using_subcommand create" -l branch -d 'Branch to check out (created at the base if missing; default lease/ID-PREFIX)' -r
complete -c lease -n "__fish_lease_using_subcommand create" -l base -d 'Base commit for a new branch (default: the repository\'s HEAD)' -r
complete -c lease -n "__fish_lease_using_subcommand create" -l owner -d 'Owner as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER)' -r
complete -c lease -n "__fish_lease_using_subcommand create" -l bind-pid -d 'The process that uses the worktree: the keeper holds the lease until it exits' -r
complete -c lease -n "__fish_lease_using_subcommand create" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand create" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand create" -l json -d 'Print one JSON object: id, path, branch, keeper_pid'
complete -c lease -n "__fish_lease_using_subcommand create" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand create" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand create" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand keeper" -l id -d 'The record id' -r
complete -c lease -n "__fish_lease_using_subcommand keeper" -l bind-pid -d 'The bound process\'s pid' -r
complete -c lease -n "__fish_lease_using_subcommand keeper" -l bind-start -d 'Its start time (clock ticks since boot)' -r
complete -c lease -n "__fish_lease_using_subcommand keeper" -l creator -d 'The pid of `lease create`, whose session the keeper takes over' -r
complete -c lease -n "__fish_lease_using_subcommand keeper" -l ready-fd -d 'The readiness pipe\'s descriptor' -r
complete -c lease -n "__fish_lease_using_subcommand keeper" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand keeper" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand keeper" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand keeper" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand keeper" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand retire" -l rebuildable -d 'Output path (relative to the worktree top, e.g. `target`) declared rebuildable: ignored files there do not hold and are deleted by lease (intersected with config `rebuildable` and `$LEASE_REBUILDABLE`)' -r
complete -c lease -n "__fish_lease_using_subcommand retire" -l archive -d 'Where commits that are not durable are archived: a verified bundle under the state root, archival refs pushed to the trusted remote and read back, or both (default bundle; joined with config `archive` and $LEASE_ARCHIVE to every destination asked for)' -r -f -a "bundle\t'A verified bundle under the state root'
remote\t'Archival refs pushed to the trusted remote and read back'
both\t'Both a bundle and archival refs'"
complete -c lease -n "__fish_lease_using_subcommand retire" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand retire" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand retire" -l all -d 'Every terminal or interrupted record'
complete -c lease -n "__fish_lease_using_subcommand retire" -l dry-run -d 'Say what would happen; change nothing, take no lock'
complete -c lease -n "__fish_lease_using_subcommand retire" -l delete-branch -d 'After a removal, delete the task branch if its tip is durable or archived and it is checked out nowhere (kept otherwise, exit 1)'
complete -c lease -n "__fish_lease_using_subcommand retire" -l fetch -d 'Confirm the trusted remote\'s branches first, by URL: fetch them into its tracking refs (a dry run only lists them with ls-remote); commits on them count as durable in this retire'
complete -c lease -n "__fish_lease_using_subcommand retire" -l when-free -d 'Retire now if the lease is free; if it is held, record the intent (disposition pending, exit 0) for the last consumer to leave or the next reap; a tree that holds work is held now (exit 1)'
complete -c lease -n "__fish_lease_using_subcommand retire" -l json -d 'Print the report as JSON'
complete -c lease -n "__fish_lease_using_subcommand retire" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand retire" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand retire" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand list" -l state -d 'Only records in these states (repeatable, or comma-separated: active,terminal)' -r -f -a "planned\t'`planned`'
active\t'`active`'
terminal\t'`terminal`'
retained\t'`retained`'
interrupted\t'`interrupted`'
retiring\t'`retiring`'
removed\t'`removed`'
unreadable\t'A record file lease cannot read (corrupt, newer schema)'"
complete -c lease -n "__fish_lease_using_subcommand list" -l repo -d 'Only records of this repository (a path inside it, or its directory name)' -r
complete -c lease -n "__fish_lease_using_subcommand list" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand list" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand list" -l all -d 'Include removed records (the table hides them by default; --json lists them unless --state is given)'
complete -c lease -n "__fish_lease_using_subcommand list" -l bytes -d 'Print sizes in bytes instead of K/M/G'
complete -c lease -n "__fish_lease_using_subcommand list" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand list" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand list" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand show" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand show" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand show" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand show" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand show" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand du" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand du" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand du" -l bytes -d 'Print sizes in bytes instead of K/M/G'
complete -c lease -n "__fish_lease_using_subcommand du" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand du" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand du" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand du" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand hold" -l reason -d 'Why it is kept' -r
complete -c lease -n "__fish_lease_using_subcommand hold" -l owner -d 'Who keeps it, as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER)' -r
complete -c lease -n "__fish_lease_using_subcommand hold" -l until -d 'Until when: RFC 3339 or a span such as 7d or 12h (default: no expiry)' -r
complete -c lease -n "__fish_lease_using_subcommand hold" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand hold" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand hold" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand hold" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand hold" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand hold" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand release" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand release" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand release" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand release" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand release" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand release" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand reap" -l archive -d 'Where retires archive commits that are not durable (see `lease retire --archive`)' -r -f -a "bundle\t'A verified bundle under the state root'
remote\t'Archival refs pushed to the trusted remote and read back'
both\t'Both a bundle and archival refs'"
complete -c lease -n "__fish_lease_using_subcommand reap" -l until-free -d 'With --apply: retire candidates largest first only until the filesystem holding them has SIZE free (bytes, or K, M, G, T)' -r
complete -c lease -n "__fish_lease_using_subcommand reap" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand reap" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand reap" -l dry-run -d 'Say what would happen; change nothing (the default)'
complete -c lease -n "__fish_lease_using_subcommand reap" -l apply -d 'Act: finish, retire and persist orphans'
complete -c lease -n "__fish_lease_using_subcommand reap" -l json -d 'Print the report as JSON'
complete -c lease -n "__fish_lease_using_subcommand reap" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand reap" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand reap" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand adopt" -l owner -d 'Owner as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER)' -r
complete -c lease -n "__fish_lease_using_subcommand adopt" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand adopt" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand adopt" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand adopt" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand adopt" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand adopt" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand repair" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand repair" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand repair" -l dry-run -d 'Say what would happen; change nothing'
complete -c lease -n "__fish_lease_using_subcommand repair" -l json -d 'Print the report as JSON'
complete -c lease -n "__fish_lease_using_subcommand repair" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand repair" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand repair" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand join" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand join" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand join" -l json -d 'Report lease\'s own errors as JSON lines on stderr (stdout is the command\'s)'
complete -c lease -n "__fish_lease_using_subcommand join" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand join" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand join" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand restore" -l to -d 'Where to create the worktree (must not exist)' -r -F
complete -c lease -n "__fish_lease_using_subcommand restore" -l branch -d 'Branch name to use (held `branch-moved` if it exists elsewhere)' -r
complete -c lease -n "__fish_lease_using_subcommand restore" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand restore" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand restore" -l again -d 'Restore again although the archive was restored before'
complete -c lease -n "__fish_lease_using_subcommand restore" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand restore" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand restore" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand restore" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand archives" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand archives" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand archives" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand archives" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand archives" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand archives" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand archive; and not __fish_seen_subcommand_from verify drop help" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand archive; and not __fish_seen_subcommand_from verify drop help" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand archive; and not __fish_seen_subcommand_from verify drop help" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand archive; and not __fish_seen_subcommand_from verify drop help" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand archive; and not __fish_seen_subcommand_from verify drop help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand archive; and not __fish_seen_subcommand_from verify drop help" -f -a "verify" -d 'Re-verify an archive (sha256, unbundle with fsck): exit 0 or 1'
complete -c lease -n "__fish_lease_using_subcommand archive; and not __fish_seen_subcommand_from verify drop help" -f -a "drop" -d 'Delete an archive (bundle and archive record) once every commit it holds is reachable from the trusted remote\'s branches, confirmed with `git ls-remote`; held `archive-unreachable` otherwise (exit 1)'
complete -c lease -n "__fish_lease_using_subcommand archive; and not __fish_seen_subcommand_from verify drop help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from verify" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from verify" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from verify" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from verify" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from verify" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from verify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from drop" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from drop" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from drop" -l unreachable-ok -d 'Drop it even though some commits exist nowhere else (written to the audit log)'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from drop" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from drop" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from drop" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from drop" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from help" -f -a "verify" -d 'Re-verify an archive (sha256, unbundle with fsck): exit 0 or 1'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from help" -f -a "drop" -d 'Delete an archive (bundle and archive record) once every commit it holds is reachable from the trusted remote\'s branches, confirmed with `git ls-remote`; held `archive-unreachable` otherwise (exit 1)'
complete -c lease -n "__fish_lease_using_subcommand archive; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lease -n "__fish_lease_using_subcommand audit; and not __fish_seen_subcommand_from verify help" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand audit; and not __fish_seen_subcommand_from verify help" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand audit; and not __fish_seen_subcommand_from verify help" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand audit; and not __fish_seen_subcommand_from verify help" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand audit; and not __fish_seen_subcommand_from verify help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand audit; and not __fish_seen_subcommand_from verify help" -f -a "verify" -d 'Walk the audit log\'s hash chain: exit 0 when intact, 3 at the first break (line and kind: torn, malformed, too-long, edited, reordered, duplicate, truncated)'
complete -c lease -n "__fish_lease_using_subcommand audit; and not __fish_seen_subcommand_from verify help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lease -n "__fish_lease_using_subcommand audit; and __fish_seen_subcommand_from verify" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand audit; and __fish_seen_subcommand_from verify" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand audit; and __fish_seen_subcommand_from verify" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand audit; and __fish_seen_subcommand_from verify" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand audit; and __fish_seen_subcommand_from verify" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand audit; and __fish_seen_subcommand_from verify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "verify" -d 'Walk the audit log\'s hash chain: exit 0 when intact, 3 at the first break (line and kind: torn, malformed, too-long, edited, reordered, duplicate, truncated)'
complete -c lease -n "__fish_lease_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lease -n "__fish_lease_using_subcommand config" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand config" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand config" -l show -d 'Show the effective values (the default and only action)'
complete -c lease -n "__fish_lease_using_subcommand config" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand config" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand config" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand config" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand doctor" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand doctor" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand doctor" -l json -d 'Print JSON'
complete -c lease -n "__fish_lease_using_subcommand doctor" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand doctor" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand metrics" -l out -d 'Write to FILE atomically (a temp file in its directory, then rename) instead of stdout' -r -F
complete -c lease -n "__fish_lease_using_subcommand metrics" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand metrics" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand metrics" -l json -d 'Print the counts as one JSON object instead (with --out: write the text format there and print what was written)'
complete -c lease -n "__fish_lease_using_subcommand metrics" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand metrics" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand metrics" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand hook; and not __fish_seen_subcommand_from claude-code help" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand hook; and not __fish_seen_subcommand_from claude-code help" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand hook; and not __fish_seen_subcommand_from claude-code help" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand hook; and not __fish_seen_subcommand_from claude-code help" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand hook; and not __fish_seen_subcommand_from claude-code help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand hook; and not __fish_seen_subcommand_from claude-code help" -f -a "claude-code" -d 'Claude Code\'s worktree hooks (the plugin in shim/claude-code wires them)'
complete -c lease -n "__fish_lease_using_subcommand hook; and not __fish_seen_subcommand_from claude-code help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lease -n "__fish_lease_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -f -a "worktree-create" -d 'WorktreeCreate: create a leased worktree bound to the Claude Code process that ran the hook; print only its path'
complete -c lease -n "__fish_lease_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -f -a "worktree-remove" -d 'WorktreeRemove: `lease retire --when-free` on `worktree_path`'
complete -c lease -n "__fish_lease_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lease -n "__fish_lease_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "claude-code" -d 'Claude Code\'s worktree hooks (the plugin in shim/claude-code wires them)'
complete -c lease -n "__fish_lease_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lease -n "__fish_lease_using_subcommand generate" -l out -d 'Directory to write `man/lease.1` and `completions/` into' -r -F
complete -c lease -n "__fish_lease_using_subcommand generate" -l log-format -d 'Log line format on stderr (RUST_LOG, when set, chooses what is logged)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for machines'"
complete -c lease -n "__fish_lease_using_subcommand generate" -l config -d 'Config file read after the system and user files (also $LEASE_CONFIG)' -r -F
complete -c lease -n "__fish_lease_using_subcommand generate" -s v -l verbose -d 'Log more to stderr (-v info, -vv debug, -vvv trace; default warn)'
complete -c lease -n "__fish_lease_using_subcommand generate" -s q -l quiet -d 'Quieter stderr: -q silences lease\'s reports there (exec\'s notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced'
complete -c lease -n "__fish_lease_using_subcommand generate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "exec" -d 'Run a command in a leased worktree (created, or adopted with --adopt)'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "create" -d 'Create a leased worktree for a process lease does not start, and a keeper that holds the lease until that process exits'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "keeper" -d 'The keeper `lease create` starts (not for direct use)'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "retire" -d 'Remove worktrees nobody uses and nothing would be lost from'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "list" -d 'List records, their states and holders'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "show" -d 'Show one record'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "du" -d 'Show the disk each worktree holds, by class, and what a retire would reclaim now'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "hold" -d 'Keep a worktree for a named owner (the record becomes retained)'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "release" -d 'Let a retained worktree be retired again (retained -> terminal)'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "reap" -d 'Reconcile: finish what crashes left half-done, retire candidates, report orphans. A dry run unless --apply'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "adopt" -d 'Record an unrecorded linked worktree as adopted and terminal, running nothing'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "repair" -d 'Remove the registration of one worktree whose directory is missing'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "join" -d 'Take the lease named by LEASE_* again and run a command holding it'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "restore" -d 'Bring back an archived worktree: a new leased worktree at the archived HEAD, after re-verifying the bundle. One-shot per archive'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "archives" -d 'List the records that have archives'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "archive" -d 'Work with one archive'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "audit" -d 'Work with the audit log'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "config" -d 'Show the effective policy and where each value came from'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "doctor" -d 'Check this machine for lease: git, the state root, flock support, the current repository\'s trusted remote, lease and its git shim on PATH'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "metrics" -d 'Print Prometheus metrics of the state root (for node_exporter\'s textfile collector)'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "hook" -d 'Speak an agent host\'s hook contract (Claude Code\'s WorktreeCreate and WorktreeRemove)'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "generate" -d 'Write the man page and shell completions (for packagers and scripts/gen-docs)'
complete -c lease -n "__fish_lease_using_subcommand help; and not __fish_seen_subcommand_from exec create keeper retire list show du hold release reap adopt repair join restore archives archive audit config doctor metrics hook generate help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lease -n "__fish_lease_using_subcommand help; and __fish_seen_subcommand_from archive" -f -a "verify" -d 'Re-verify an archive (sha256, unbundle with fsck): exit 0 or 1'
complete -c lease -n "__fish_lease_using_subcommand help; and __fish_seen_subcommand_from archive" -f -a "drop" -d 'Delete an archive (bundle and archive record) once every commit it holds is reachable from the trusted remote\'s branches, confirmed with `git ls-remote`; held `archive-unreachable` otherwise (exit 1)'
complete -c lease -n "__fish_lease_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "verify" -d 'Walk the audit log\'s hash chain: exit 0 when intact, 3 at the first break (line and kind: torn, malformed, too-long, edited, reordered, duplicate, truncated)'
complete -c lease -n "__fish_lease_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "claude-code" -d 'Claude Code\'s worktree hooks (the plugin in shim/claude-code wires them)'
