'use strict';
// Shared by main.js and post.js. Plain Node (no dependencies): inputs from
// INPUT_<NAME> (upper-cased, spaces to `_`, hyphens kept, as the runner
// sets them), file commands appended to $GITHUB_STATE and $GITHUB_OUTPUT in
// the heredoc form the runner parses (`key<<DELIM`, value, `DELIM`), and
// workflow commands (`::error::`) on stdout.
const fs = require('fs');
const os = require('os');
const crypto = require('crypto');
const { spawnSync } = require('child_process');

function input(name) {
  return (process.env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] || '').trim();
}

// Escapes a workflow command's message (%, CR, LF), as @actions/core does.
function escapeData(s) {
  return String(s).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function command(kind, message) {
  process.stdout.write(`::${kind}::${escapeData(message)}${os.EOL}`);
}

// Appends `key` = `value` to the file command file named by $`variable`.
function fileCommand(variable, key, value) {
  const file = process.env[variable];
  if (!file) throw new Error(`$${variable} is not set: not run by a GitHub Actions runner`);
  const delim = `ghadelimiter_${crypto.randomUUID()}`;
  fs.appendFileSync(file, `${key}<<${delim}${os.EOL}${value}${os.EOL}${delim}${os.EOL}`, 'utf8');
}

// The environment for lease: the step's, without RUNNER_TRACKING_ID. The
// runner kills every process left at the job's end whose environment (as
// it was exec'd, /proc/PID/environ) carries the job's tracking id; the
// keeper must outlive the post step until the worker exits.
function leaseEnv() {
  const env = { ...process.env };
  delete env.RUNNER_TRACKING_ID;
  return env;
}

// Runs lease with `args`; stdout captured, stderr passed to the log.
function lease(args) {
  const r = spawnSync(input('lease') || 'lease', args, {
    env: leaseEnv(),
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.error) throw new Error(`cannot run lease (${r.error.message}); put lease on PATH or set the \`lease\` input`);
  return r;
}

// The pid of the nearest ancestor named Runner.Worker (the runner's
// per-job process, which starts each step), from /proc/PID/stat and
// /proc/PID/comm; null if there is none (a job `container:` runs steps
// through docker exec, with no worker in the container).
function runnerWorker(start) {
  let pid = start;
  for (let i = 0; i < 4096 && pid > 1; i++) {
    let comm;
    let stat;
    try {
      comm = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch (e) {
      return null;
    }
    if (comm === 'Runner.Worker') return pid;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    pid = Number(fields[1]);
  }
  return null;
}

module.exports = { input, command, fileCommand, lease, runnerWorker };
