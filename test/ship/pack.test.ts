/** `npm pack` makes a package whose install builds the addon, and whose library works: another
 * project installs the tarball and uses it to sandbox, commit and read back a ruleset. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..', '..', '..');

test('npm pack, then install in another project: the addon builds and the library works', { timeout: 600_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-pack-'));
  try {
    execFileSync('npm', ['pack', '--pack-destination', dir, '--ignore-scripts'], { cwd: root, stdio: 'pipe' });
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote a tarball');
    const listing = execFileSync('tar', ['tzf', join(dir, tarball)], { encoding: 'utf8' });
    assert.match(listing, /package\/dist\/src\/index\.js/);
    assert.match(listing, /package\/native\/netlink_io\.cc/);
    assert.match(listing, /package\/binding\.gyp/);
    assert.doesNotMatch(listing, /package\/(test|bench|build)\//);

    const app = join(dir, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', join(dir, tarball)], { cwd: app, stdio: 'pipe' });
    const script = `
      const { Netns, NetlinkSocket, Transaction, commit, listTable } = require('nfkube');
      (async () => {
        const ns = Netns.create();
        const socket = NetlinkSocket.open({ netns: ns });
        await commit(socket, new Transaction().addTable({ family: 'inet', name: 'consumer' }));
        const t = await listTable(socket, 'inet', 'consumer');
        await socket.close();
        ns.close();
        console.log(t.table.name);
      })().catch((e) => { console.error(e); process.exit(1); });`;
    assert.equal(execFileSync(process.execPath, ['-e', script], { cwd: app, encoding: 'utf8' }).trim(), 'consumer');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
