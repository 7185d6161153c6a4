'use strict';
// main: `lease create --bind-pid <Runner.Worker> --json`, then the path and
// id as outputs and as state for post.js.
const { input, command, fileCommand, lease, runnerWorker } = require('./lib.js');

function main() {
  const worker = runnerWorker(process.pid);
  if (worker === null) {
    command('error', 'lease: no Runner.Worker process among this step\'s ancestors (a job `container:` has none); run lease on the runner host, or `lease create --bind-pid PID` yourself');
    return 1;
  }
  const e = process.env;
  const owner = input('owner')
    || `github-actions:${e.GITHUB_REPOSITORY || 'repo'}/${e.GITHUB_RUN_ID || 'run'}/${e.GITHUB_JOB || 'job'}`;
  const args = ['create', '--repo', input('repo') || e.GITHUB_WORKSPACE || process.cwd(),
    '--owner', owner, '--bind-pid', String(worker), '--json'];
  if (input('branch')) args.push('--branch', input('branch'));
  if (input('base')) args.push('--base', input('base'));
  const r = lease(args);
  if (r.status !== 0) {
    command('error', `lease create exited ${r.status === null ? `by signal ${r.signal}` : r.status}; nothing to retire`);
    return 1;
  }
  const made = JSON.parse(r.stdout);
  fileCommand('GITHUB_STATE', 'id', made.id);
  fileCommand('GITHUB_STATE', 'path', made.path);
  fileCommand('GITHUB_OUTPUT', 'id', made.id);
  fileCommand('GITHUB_OUTPUT', 'path', made.path);
  console.log(`lease: worktree ${made.path} (record ${made.id}) bound to Runner.Worker ${worker} (keeper pid ${made.keeper_pid})`);
  return 0;
}

try {
  process.exitCode = main();
} catch (err) {
  command('error', `lease: ${err.message}`);
  process.exitCode = 1;
}
