/** Node's Buffer pool turned off by bin/nfkube for a long-running process
 * (src/startup/buffer-pool.ts): a small value the agent keeps in its models (a rule's cmp data, an
 * element's key) owns its bytes and keeps no shared pool slab alive. The pool's size is per
 * process: the renders are measured in new processes. */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { unpoolBuffers } from '../../src/startup/buffer-pool';

const DIST = join(__dirname, '..', '..');
const BIN = join(DIST, '..', 'bin', 'nfkube');

/** The byte length of the memory behind each kept value the renderers make, as JSON. */
const KEPT_VALUES = `
if (process.argv[1] === 'unpooled') require(${JSON.stringify(join(DIST, 'src', 'startup', 'buffer-pool.js'))}).unpoolBuffers(['agent']);
const { be16, be32, hostU32, concatKey } = require(${JSON.stringify(join(DIST, 'src', 'nft', 'values.js'))});
const { ipv4, ipv6 } = require(${JSON.stringify(join(DIST, 'src', 'net', 'ip-bytes.js'))});
const b = require(${JSON.stringify(join(DIST, 'src', 'nft', 'build.js'))});
const cmpData = b.l4proto('tcp').filter((e) => e.type === 'cmp').map((e) => e.data);
const values = [be16(80), be32(7), hostU32(1), ipv4('198.18.0.1'), ipv6('2001:db8::1'), concatKey([ipv4('198.18.0.2'), be16(443)]), ...cmpData];
process.stdout.write(JSON.stringify(values.map((v) => v.buffer.byteLength)));
`;

const backing = (mode: 'pooled' | 'unpooled'): number[] => JSON.parse(execFileSync(process.execPath, ['-e', KEPT_VALUES, mode], { encoding: 'utf8' })) as number[];

test('with the pool off, each kept small value owns only its own bytes', () => {
  // The old behaviour: every one of them is a view into an 8 KB slab shared with other Buffers.
  assert.ok(backing('pooled').every((n) => n >= 4096), 'pooled values share a slab');
  const unpooled = backing('unpooled');
  assert.ok(unpooled.length >= 7);
  for (const n of unpooled) assert.ok(n <= 16, `a kept value is backed by ${n} bytes`);
});

test('a process that syncs once and exits keeps the pool', () => {
  const size = Buffer.poolSize;
  try {
    assert.equal(unpoolBuffers(['agent', '--once', '--proxy']), false);
    assert.equal(Buffer.poolSize, size);
  } finally {
    Buffer.poolSize = size;
  }
});

test('bin/nfkube turns the pool off before the CLI loads', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-buffer-pool-'));
  try {
    const probe = join(dir, 'pool-size.js');
    writeFileSync(probe, "process.on('exit', () => require('node:fs').writeSync(2, `pool ${Buffer.poolSize}\\n`));\n");
    const r = spawnSync(process.execPath, ['-r', probe, BIN, '--help'], { encoding: 'utf8', env: { ...process.env, NFKUBE_COMPILE_CACHE: 'off' } });
    assert.match(r.stderr, /^pool 0$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
