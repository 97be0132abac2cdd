/** `npm run test:unit` needs no root and no addon: the unit tests are run from a copy of the
 * checkout without build/ (so the native addon cannot load), as uid 65534 with no capabilities;
 * from a checkout under a 0700 directory too. */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openUp, othersCanRead } from '../helpers/readable-checkout';

const ROOT = resolve(__dirname, '../../..');

test('the unit tests pass without the addon and without root', (t) => {
  assert.ok(othersCanRead(process.execPath), `${process.execPath} (node) cannot be run by uid 65534: install node where every user can run it to run this test`);
  const copy = mkdtempSync(join(tmpdir(), 'nfkube-unit-tier-'));
  try {
    for (const entry of readdirSync(ROOT)) {
      if (['build', 'node_modules', '.git'].includes(entry)) continue;
      cpSync(join(ROOT, entry), join(copy, entry), { recursive: true });
    }
    // node_modules is the checkout's own, unless uid 65534 cannot read it there (a checkout
    // under a 0700 directory): then a copy.
    if (othersCanRead(join(ROOT, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
    else {
      t.diagnostic(`${ROOT}/node_modules is not readable by uid 65534: copying it to ${copy}`);
      cpSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), { recursive: true, dereference: true });
    }
    openUp(copy);
    // From the sources, so a stale file left in dist/ by a moved test is not run.
    const units = readdirSync(join(copy, 'test/unit'))
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => join('dist/test/unit', f.replace(/\.ts$/, '.js')));
    assert.ok(units.length > 10, `${units.length} unit test files`);
    // Without the outer runner's NODE_TEST_CONTEXT the inner one reports in TAP, not to it.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all', process.execPath, '--test', '--test-concurrency=1', ...units], {
      cwd: copy,
      env,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    const summary = r.stdout.split('\n').filter((l) => /^# (tests|pass|fail)/.test(l)).join(', ');
    assert.equal(r.status, 0, `${summary}\n${r.stdout.split('\n').filter((l) => /^not ok|error:/.test(l.trim())).join('\n')}`);
    assert.match(r.stdout, /^# fail 0$/m, r.stderr);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
});
