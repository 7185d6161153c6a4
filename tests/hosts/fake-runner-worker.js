'use strict';
// A fake GitHub Actions Runner.Worker for tests/it/hosts.rs. The test copies
// this file to a file named `Runner.Worker` with a `#!<node>` line first, so
// the process's comm is `Runner.Worker`, as the real worker's is.
//
// It runs one action's main and post scripts with node as the runner does
// (its NodeScriptActionHandler): INPUT_<NAME> from the inputs (upper-cased,
// spaces to `_`, hyphens kept), GITHUB_STATE and GITHUB_OUTPUT files, cwd
// $GITHUB_WORKSPACE, RUNNER_TRACKING_ID in the environment; between them it
// parses the state file as the runner's file-command parser does
// (`key=value` and `key<<DELIM ... DELIM`) and hands it to post as STATE_*.
// post runs whatever main's exit status (`post-if: always()`).
//
// Usage: Runner.Worker CONFIG.json
//   {"action": DIR, "inputs": {...}, "env": {...}, "workspace": DIR,
//    "files": DIR, "ready": PATH, "end": FIFO}
// Writes {"pid", "main": {code, stdout}, "post": {code, stdout},
// "outputs": {...}} to `ready` (written, then renamed), then waits for a
// line on the FIFO `end` and exits 0: the end of the job.
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));

function parseFileCommands(file) {
  const out = {};
  if (!fs.existsSync(file)) return out;
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line === '') continue;
    const eq = line.indexOf('=');
    const heredoc = line.indexOf('<<');
    if (heredoc > 0 && (eq < 0 || heredoc < eq)) {
      const key = line.slice(0, heredoc);
      const delim = line.slice(heredoc + 2);
      const value = [];
      i++;
      while (i < lines.length && lines[i] !== delim) value.push(lines[i++]);
      if (i >= lines.length) throw new Error(`Matching delimiter not found '${delim}'`);
      out[key] = value.join('\n');
    } else if (eq > 0) {
      out[line.slice(0, eq)] = line.slice(eq + 1);
    } else {
      throw new Error(`Invalid format '${line}'`);
    }
  }
  return out;
}

const state = path.join(cfg.files, 'state');
const output = path.join(cfg.files, 'output');
const base = { ...process.env, ...cfg.env, GITHUB_WORKSPACE: cfg.workspace,
  RUNNER_TRACKING_ID: 'github_00000000-0000-4000-8000-000000000001' };
for (const [k, v] of Object.entries(cfg.inputs)) base[`INPUT_${k.replace(/ /g, '_').toUpperCase()}`] = v;

function step(script, extra) {
  const r = spawnSync(process.execPath, [path.join(cfg.action, script)], {
    cwd: cfg.workspace,
    env: { ...base, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const main = step('main.js', { GITHUB_STATE: state, GITHUB_OUTPUT: output });
const stateEnv = {};
for (const [k, v] of Object.entries(parseFileCommands(state))) stateEnv[`STATE_${k}`] = v;
const post = step('post.js', { ...stateEnv, GITHUB_STATE: path.join(cfg.files, 'state-post'),
  GITHUB_OUTPUT: path.join(cfg.files, 'output-post') });
const doc = { pid: process.pid, main, post, outputs: parseFileCommands(output) };
fs.writeFileSync(cfg.ready + '.tmp', JSON.stringify(doc));
fs.renameSync(cfg.ready + '.tmp', cfg.ready);
fs.readFileSync(cfg.end, 'utf8'); // blocks until the test ends the job
process.exit(0);
