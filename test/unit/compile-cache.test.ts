/** The compile cache (src/startup/compile-cache.ts): its file format never trusts its input, the
 * directory must be ours, and the Node 20 hook gives every module exactly what Node's own
 * compile gives it, run after run: from an empty cache, a full one, a stale one (source
 * changed), a corrupt one, with dynamic import(), ES module syntax and errors. Each run is a new
 * process, as a start is. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { compileCacheDir, decodeCacheFile, encodeCacheFile, unsafeDirReason } from '../../src/startup/compile-cache';

const work = mkdtempSync(join(tmpdir(), 'nfkube-compile-cache-test-'));
after(() => rmSync(work, { recursive: true, force: true }));

const HOOK = join(__dirname, '..', '..', 'src', 'startup', 'compile-cache.js');
const hasBuiltin = typeof (Module as unknown as { enableCompileCache?: unknown }).enableCompileCache === 'function';

describe('cache file', () => {
  const entry = (n: number) => ({ stamp: Buffer.alloc(24, n), data: Buffer.from(`data-${n}`) });

  test('round-trips its entries', () => {
    const entries = new Map([
      ['/a/b.js', entry(1)],
      ['/ü/c.js', entry(2)],
    ]);
    const decoded = decodeCacheFile(encodeCacheFile(entries));
    assert.deepEqual([...decoded.keys()], ['/a/b.js', '/ü/c.js']);
    assert.deepEqual(decoded.get('/ü/c.js'), entry(2));
  });

  test('anything that does not decode whole is no entries at all', () => {
    const buf = encodeCacheFile(new Map([['/a.js', entry(1)]]));
    for (let cut = 0; cut < buf.length; cut++) assert.equal(decodeCacheFile(buf.subarray(0, cut)).size, 0, `cut at ${cut}`);
    assert.equal(decodeCacheFile(Buffer.concat([buf, Buffer.from([0])])).size, 0);
    const huge = Buffer.from(buf);
    huge.writeUInt32LE(0xffffffff, 8);
    assert.equal(decodeCacheFile(huge).size, 0);
    assert.equal(decodeCacheFile(Buffer.from('not a cache file at all')).size, 0);
  });
});

describe('cache directory', () => {
  test('NFKUBE_COMPILE_CACHE, then systemd CacheDirectory=, then NODE_COMPILE_CACHE, then the temporary directory', () => {
    assert.equal(compileCacheDir({ NFKUBE_COMPILE_CACHE: '/x', CACHE_DIRECTORY: '/c', NODE_COMPILE_CACHE: '/n' }), '/x');
    assert.equal(compileCacheDir({ NFKUBE_COMPILE_CACHE: 'off', CACHE_DIRECTORY: '/c' }), undefined);
    assert.equal(compileCacheDir({ CACHE_DIRECTORY: '/var/cache/nfkube:/other', NODE_COMPILE_CACHE: '/n' }), '/var/cache/nfkube/compile-cache');
    assert.equal(compileCacheDir({ NODE_COMPILE_CACHE: '/n' }), '/n');
    assert.ok(compileCacheDir({})!.startsWith(join(tmpdir(), 'nfkube-compile-cache-')));
  });

  test('is made private, and used only when it is ours', () => {
    const fresh = join(work, 'fresh', 'cache');
    assert.equal(unsafeDirReason(fresh), undefined);
    assert.equal(statSync(fresh).mode & 0o777, 0o700);
    const shared = join(work, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    assert.match(unsafeDirReason(shared)!, /writable by group or others/);
    const link = join(work, 'link');
    symlinkSync(fresh, link);
    assert.match(unsafeDirReason(link)!, /not a directory/);
    const file = join(work, 'file');
    writeFileSync(file, '');
    assert.ok(unsafeDirReason(file));
  });
});

/** A package of modules that exercise what a CommonJS module may rely on. */
function writeModules(dir: string, version: number): string {
  mkdirSync(join(dir, 'node_modules', 'dep'), { recursive: true });
  mkdirSync(join(dir, 'esm'), { recursive: true });
  writeFileSync(join(dir, 'node_modules', 'dep', 'index.js'), `exports.v = ${version}; exports.name = __filename.endsWith('dep/index.js');\n`);
  writeFileSync(join(dir, 'esm', 'package.json'), '{"type":"module"}');
  writeFileSync(join(dir, 'esm', 'm.js'), 'export const esm = "esm";\n');
  writeFileSync(join(dir, 'dyn.js'), `exports.load = () => import('data:text/javascript,export default ${version}');\n`);
  writeFileSync(join(dir, 'throws.js'), 'throw new RangeError("module failed at load");\n');
  writeFileSync(join(dir, 'bad.js'), 'module.exports = {;\n');
  writeFileSync(
    join(dir, 'main.js'),
    [
      `'use strict';`,
      `const dep = require('dep');`,
      `function twice(x) { return 2 * x; }`,
      `module.exports = {`,
      `  dep: dep.v, depName: dep.name, twice: twice(${version}),`,
      `  resolved: require.resolve('dep') === require.resolve('./node_modules/dep/index.js'),`,
      `  paths: Array.isArray(require.resolve.paths('dep')), main: require.main === undefined || typeof require.main === 'object',`,
      `  cached: require.cache[__filename] === module, dirname: __dirname === require('path').dirname(__filename),`,
      `  self: this === module.exports, strict: (function () { return this; })() === undefined,`,
      `  esm: require('./esm/m.js').esm,`,
      `  stack: new Error('x').stack.split('\\n')[1].includes('main.js:'),`,
      `};`,
    ].join('\n'),
  );
  return dir;
}

const CHILD = `
const { enableCompileCache, compileCacheStats } = require(${JSON.stringify(HOOK)});
const state = enableCompileCache();
const dir = process.argv[1];
const out = { mode: state.mode, main: require(dir + '/main.js') };
for (const m of ['throws.js', 'bad.js']) { try { require(dir + '/' + m); } catch (e) { out[m] = e.constructor.name + ': ' + e.message.split('\\n')[0]; } }
require(dir + '/dyn.js').load().then((m) => {
  out.dyn = m.default;
  out.stats = compileCacheStats();
  process.stdout.write(JSON.stringify(out));
});
`;

function run(dir: string, cache: string, nodeOptions = ''): { mode: string; main: Record<string, unknown>; dyn: number; stats?: { hits: number; misses: number; rejected: number; passed: number }; [k: string]: unknown } {
  const out = execFileSync(process.execPath, ['-e', CHILD, dir], { env: { ...process.env, NFKUBE_COMPILE_CACHE: cache, NODE_OPTIONS: nodeOptions }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return JSON.parse(out);
}

describe('the hook', { skip: hasBuiltin ? 'this Node has module.enableCompileCache, which nfkube uses instead' : false }, () => {
  const expected = (v: number) => ({ dep: v, depName: true, twice: 2 * v, resolved: true, paths: true, main: true, cached: true, dirname: true, self: true, strict: true, esm: 'esm', stack: true });

  test('modules see what Node gives them, from an empty cache, a full one and a stale one', () => {
    const dir = writeModules(join(work, 'pkg'), 1);
    const cache = join(work, 'cache-1');
    const first = run(dir, cache);
    assert.equal(first.mode, 'hook');
    assert.deepEqual(first.main, expected(1));
    assert.equal(first.dyn, 1);
    assert.equal(first['throws.js'], 'RangeError: module failed at load');
    assert.match(String(first['bad.js']), /^SyntaxError/);
    assert.equal(first.stats!.hits, 0);
    assert.ok(first.stats!.misses >= 3);
    assert.equal(readdirSync(cache).filter((f) => f.endsWith('.v8cache')).length, 1);

    const second = run(dir, cache);
    assert.deepEqual(second.main, expected(1));
    assert.equal(second.dyn, 1);
    assert.equal(second.stats!.misses, 0);
    assert.equal(second.stats!.hits, first.stats!.misses);

    // Same length, other content, the old modification time put back (as package managers set
    // fixed ones): the change time, not V8's length check nor the modification time, refuses it.
    const files = [join(dir, 'main.js'), join(dir, 'node_modules', 'dep', 'index.js')];
    const mtimes = files.map((f) => statSync(f).mtime);
    writeModules(dir, 7);
    files.forEach((f, i) => utimesSync(f, mtimes[i], mtimes[i]));
    const third = run(dir, cache);
    assert.deepEqual(third.main, expected(7));
    assert.equal(third.dyn, 7);
    assert.ok(third.stats!.misses >= 2);
  });

  test('a corrupt cache file is ignored and replaced; a damaged entry is refused by V8', () => {
    const dir = writeModules(join(work, 'pkg-2'), 2);
    const cache = join(work, 'cache-2');
    run(dir, cache);
    const file = join(cache, readdirSync(cache).find((f) => f.endsWith('.v8cache'))!);
    const good = readFileSync(file);
    writeFileSync(file, good.subarray(0, good.length - 5));
    const truncated = run(dir, cache);
    assert.deepEqual(truncated.main, expected(2));
    assert.equal(truncated.stats!.hits, 0);
    // Flip bytes inside every entry's data, keeping the framing.
    const entries = decodeCacheFile(readFileSync(file));
    for (const e of entries.values()) for (let i = 8; i < e.data.length; i += 16) e.data[i] ^= 0xff;
    writeFileSync(file, encodeCacheFile(entries));
    const damaged = run(dir, cache);
    assert.deepEqual(damaged.main, expected(2));
    assert.equal(damaged.dyn, 2);
  });

  test('a cache directory that is not ours is not used, and the start goes on', () => {
    const dir = writeModules(join(work, 'pkg-3'), 3);
    const shared = join(work, 'shared-cache');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    const r = run(dir, shared);
    assert.equal(r.mode, 'off');
    assert.deepEqual(r.main, expected(3));
    assert.deepEqual(readdirSync(shared), []);
    assert.equal(run(dir, 'off').mode, 'off');
    // Source maps are registered by Node's own compile: with them on, the hook stays off.
    const mapped = run(dir, join(work, 'cache-3'), '--enable-source-maps');
    assert.equal(mapped.mode, 'off');
    assert.deepEqual(mapped.main, expected(3));
  });
});
