'use strict';
// post (runs when the job failed too, `post-if: always()`):
// `lease retire --when-free ID --json`. removed or pending: done (a pending
// worktree is retired when the keeper ends with the job's worker). held:
// a warning naming the reasons, or a failure with `fail-on-held: true`.
const { input, command, lease } = require('./lib.js');

function post() {
  const id = process.env.STATE_id || '';
  const path = process.env.STATE_path || '';
  if (!id) {
    console.log('lease: main created no worktree; nothing to retire');
    return 0;
  }
  const r = lease(['retire', '--when-free', '--json', id]);
  let target = {};
  try {
    target = JSON.parse(r.stdout).targets[0] || {};
  } catch (e) {
    // lease said why on stderr.
  }
  if (r.status === 0) {
    console.log(`lease: ${path}: ${target.disposition || 'done'}`);
    return 0;
  }
  if (r.status === 1) {
    const why = `lease keeps ${path}: held: ${(target.reasons || []).join(', ')} (${(target.detail || []).join('; ')})${target.next ? `; next: ${target.next}` : ''}`;
    if (input('fail-on-held') === 'true') {
      command('error', why);
      return 1;
    }
    command('warning', why);
    return 0;
  }
  command('error', `lease retire --when-free ${id} exited ${r.status === null ? `by signal ${r.signal}` : r.status}`);
  return 1;
}

try {
  process.exitCode = post();
} catch (err) {
  command('error', `lease: ${err.message}`);
  process.exitCode = 1;
}
