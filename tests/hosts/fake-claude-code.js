'use strict';
// A fake Claude Code for tests/it/hosts.rs: runs command hooks the way
// Claude Code 2.1 does on Linux (its hooks reference, "Exec form and shell
// form"; the spawn in the shipped CLI): `child_process.spawn(command, [],
// {shell: true, detached: true})`, i.e. `/bin/sh -c COMMAND` as the leader
// of a session of its own with no controlling terminal; the payload plus a
// newline written to stdin, which is then closed; the path is the last
// non-empty trimmed stdout line; any non-zero exit is a failure.
// CLAUDE_PID (this process) and CLAUDE_PROJECT_DIR (the cwd) are set as
// Claude Code sets them, unless the config says `"claude_pid": false`.
//
// Usage: node fake-claude-code.js CONFIG.json
//   {"create": CMD, "payload": {...}, "ready": PATH,
//    "remove"?: CMD, "go"?: FIFO, "ready2"?: PATH, "claude_pid"?: bool}
// Writes {"pid", "code", "signal", "path", "stdout", "stderr"} of the
// create hook to `ready` (written, closed, then renamed into place). With
// `remove`, then waits for a line on the FIFO `go`, runs the remove hook
// with {"worktree_path": <path>} and writes its result to `ready2`. Then it
// stays alive until it is killed (a Claude Code session that goes on).
const fs = require('fs');
const { spawn } = require('child_process');

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));

function env() {
  const e = { ...process.env, CLAUDE_PROJECT_DIR: process.cwd() };
  if (cfg.claude_pid !== false) e.CLAUDE_PID = String(process.pid);
  return e;
}

function runHook(command, payload) {
  return new Promise((resolve) => {
    const child = spawn(command, [], {
      shell: true,
      detached: true,
      env: env(),
      cwd: process.cwd(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('close', (code, signal) => {
      const lines = out.split('\n').map((l) => l.trim()).filter(Boolean);
      resolve({ code, signal, path: lines.length ? lines[lines.length - 1] : '', stdout: out, stderr: err });
    });
    child.stdin.write(JSON.stringify(payload) + '\n', 'utf8');
    child.stdin.end();
  });
}

function publish(path, doc) {
  const tmp = path + '.tmp';
  fs.writeFileSync(tmp, JSON.stringify({ pid: process.pid, ...doc }));
  fs.renameSync(tmp, path);
}

(async () => {
  const created = await runHook(cfg.create, cfg.payload);
  publish(cfg.ready, created);
  if (cfg.remove) {
    fs.readFileSync(cfg.go, 'utf8'); // blocks until the test writes a line
    const removed = await runHook(cfg.remove, {
      session_id: cfg.payload.session_id || 'fake-session',
      cwd: process.cwd(),
      hook_event_name: 'WorktreeRemove',
      worktree_path: created.path,
    });
    publish(cfg.ready2, removed);
  }
  setInterval(() => {}, 1 << 30);
})();
