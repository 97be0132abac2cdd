/** Hostile input to the compiled nfkube-cni-ipam (native/cni/): random, truncated, mutated and
 * deeply nested configurations on stdin, and random or truncated answers from the "agent". The
 * plugin must never crash or hang: it exits 0 or 1, prints one JSON document, accepts exactly what
 * JSON.parse accepts as a configuration (up to its nesting cap), and forwards that configuration
 * unchanged. Seeded, so a failure replays. */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { COMPILED_PLUGIN, PluginRun, runPlugin } from './plugins';

const skip = COMPILED_PLUGIN ? false : 'the compiled plugin is not built here (npm install without a C compiler)';

let dir: string;
let agentPath: string;
let agent: Server;
/** What the fake agent answers next, and the requests it got. */
let reply: (line: string) => string | Buffer = () => JSON.stringify({ exit: 0, stdout: 'forwarded\n' });
const requests: string[] = [];

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'nfkube-cni-fuzz-'));
  agentPath = join(dir, 'agent.sock');
  agent = createServer((s) => {
    let buf = '';
    s.on('error', () => {});
    s.setEncoding('utf8');
    s.on('data', (c: string) => {
      buf += c;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      requests.push(buf.slice(0, nl));
      s.end(reply(buf.slice(0, nl)));
    });
  });
  await new Promise<void>((r) => agent.listen(agentPath, () => r()));
});

after(async () => {
  if (!skip) await new Promise<void>((r) => agent.close(() => r()));
});

/** xorshift32: the same cases every run. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const ENV = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'fuzz', CNI_IFNAME: 'eth0', CNI_NETNS: '/proc/self/ns/net', NFKUBE_CNI_IPAM_TIMEOUT_MS: '5000' };

function baseConf(): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'fuzz',
    type: 'bridge',
    ipam: { type: 'nfkube-cni-ipam', socket: agentPath, pool: 'p', routes: [{ dst: '0.0.0.0/0' }] },
    prevResult: { ips: [{ address: '198.18.0.2/24' }], dns: {} },
    args: { 'k\u00e9y': ['a', 1, 2.5e-3, true, false, null] },
  });
}

function parses(text: Buffer): { ok: boolean; value?: unknown } {
  try {
    const value = JSON.parse(text.toString('utf8'));
    return { ok: value !== null && typeof value === 'object', value };
  } catch {
    return { ok: false };
  }
}

/** Whether v nests more than n containers deep (recursion bounded by n). */
function deeperThan(v: unknown, n: number): boolean {
  if (v === null || typeof v !== 'object') return false;
  return n <= 0 || Object.values(v as object).some((x) => deeperThan(x, n - 1));
}

/** Runs one input and checks everything that must hold whatever it was. */
async function one(input: Buffer, label: string): Promise<PluginRun> {
  const before = requests.length;
  const r = await runPlugin([COMPILED_PLUGIN!], ENV, input);
  const why = `${label}: ${JSON.stringify(input.toString('latin1').slice(0, 200))} -> status ${r.status} signal ${r.signal} ${r.out}${r.err}`;
  assert.equal(r.signal, null, why);
  assert.ok(r.status === 0 || r.status === 1, why);
  assert.equal(r.err, '', why);
  const printed = r.status === 0 ? undefined : JSON.parse(r.out);
  const expected = parses(input);
  if (r.status === 0) {
    assert.equal(r.out, 'forwarded\n', why);
    assert.ok(expected.ok, `accepted what JSON.parse refuses: ${why}`);
    assert.equal(requests.length, before + 1, why);
    const req = JSON.parse(requests[requests.length - 1]);
    assert.deepEqual(req.config, expected.value, `the configuration arrives unchanged: ${why}`);
    assert.equal(req.env.CNI_CONTAINERID, 'fuzz');
  } else {
    assert.ok([6, 7, 11].includes(printed.code), why);
    if (printed.code === 6) assert.ok(!expected.ok || deeperThan(expected.value, 256), `refused what JSON.parse accepts: ${why}`);
    else assert.ok(expected.ok, why);
  }
  return r;
}

test('configurations: every truncation of a valid one', { skip }, async () => {
  const base = Buffer.from(baseConf());
  for (let n = 0; n <= base.length; n++) await one(base.subarray(0, n), `truncated at ${n}`);
});

test('configurations: random mutations, random bytes, hostile shapes', { skip }, async () => {
  const rand = rng(15);
  const base = Buffer.from(baseConf());
  const pick = (s: string) => s[Math.floor(rand() * s.length)];
  const special = '{}[]",:\\ \n\r\t0123456789-+.eEtrufalsn\u0000\u001f\u00ff';
  const seen = { forwarded: 0, refused: 0 };
  for (let i = 0; i < 500; i++) {
    const b = Buffer.from(base);
    const edits = 1 + Math.floor(rand() * 4);
    const bytes: number[] = [...b];
    for (let k = 0; k < edits; k++) {
      const at = Math.floor(rand() * (bytes.length + 1));
      const op = rand();
      const ch = rand() < 0.7 ? pick(special).charCodeAt(0) & 0xff : Math.floor(rand() * 256);
      if (op < 0.4) bytes[Math.min(at, bytes.length - 1)] = ch;
      else if (op < 0.7) bytes.splice(at, 0, ch);
      else bytes.splice(at, 1);
    }
    const r = await one(Buffer.from(bytes), `mutation ${i}`);
    seen[r.status === 0 ? 'forwarded' : 'refused']++;
  }
  // The mutations exercise both sides of the reader.
  assert.ok(seen.forwarded > 20 && seen.refused > 20, JSON.stringify(seen));
  for (let i = 0; i < 100; i++) {
    const len = Math.floor(rand() * 64);
    await one(Buffer.from(Array.from({ length: len }, () => (rand() < 0.5 ? pick(special).charCodeAt(0) & 0xff : Math.floor(rand() * 256)))), `random ${i}`);
  }
  const hostile: Array<[string, string | Buffer]> = [
    ['nested 200', JSON.stringify({ name: 'n', ipam: { socket: agentPath }, x: JSON.parse('['.repeat(200) + ']'.repeat(200)) })],
    ['nested 100000', '['.repeat(100_000) + ']'.repeat(100_000)],
    ['nested unclosed', '{"a":'.repeat(50_000)],
    ['long string', JSON.stringify({ name: 'n', ipam: { socket: agentPath }, pad: 'x'.repeat(1_000_000) })],
    ['socket with escapes', `{"name":"n","ipam":{"socket":${JSON.stringify(agentPath).replace(/\//g, '\\/').replace(/a/g, '\\u0061')}}}`],
    ['socket NUL', '{"name":"n","ipam":{"socket":"/tmp/a\\u0000b"}}'],
    ['socket lone surrogate', '{"name":"n","ipam":{"socket":"/tmp/\\ud800"}}'],
    ['socket too long', JSON.stringify({ name: 'n', ipam: { socket: '/tmp/' + 'x'.repeat(200) } })],
    ['socket very long', JSON.stringify({ name: 'n', ipam: { socket: '/' + 'y'.repeat(10_000) } })],
    ['socket number', '{"name":"n","ipam":{"socket":7}}'],
    ['socket empty', '{"name":"n","ipam":{"socket":""}}'],
    ['socket repeated, last wins', `{"name":"n","ipam":{"socket":"/nonexistent","socket":${JSON.stringify(agentPath)}}}`],
    ['CRLF everywhere', baseConf().replace(/,/g, ',\r\n').replace(/:/g, ' :\n\t')],
    ['BOM', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(baseConf())])],
    ['invalid UTF-8 in a string', Buffer.concat([Buffer.from(`{"name":"n","ipam":{"socket":${JSON.stringify(agentPath)}},"x":"`), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')])],
    ['raw control character', `{"name":"n\u0001","ipam":{"socket":${JSON.stringify(agentPath)}}}`],
    ['numbers', `{"name":"n","ipam":{"socket":${JSON.stringify(agentPath)}},"n":[-0,0.5e+10,1E-2,-1]}`],
    ['bad numbers', '{"name":"n","n":[01]}'],
    ['two documents', '{}{}'],
    ['top-level array', `[${baseConf()}]`],
  ];
  for (const [label, input] of hostile) await one(Buffer.isBuffer(input) ? input : Buffer.from(input), label);
});

test('answers: truncated, random, oversized or foreign replies become a CNI error, never a crash', { skip }, async () => {
  const rand = rng(151);
  const good = JSON.stringify({ exit: 0, stdout: '{"cniVersion":"1.0.0","ips":[{"address":"198.18.0.9/24"}],"dns":{}}\n' });
  const conf = Buffer.from(baseConf());
  const cases: Array<string | Buffer> = [];
  for (let n = 0; n < good.length; n += 3) cases.push(good.slice(0, n));
  for (let i = 0; i < 60; i++) cases.push(Buffer.from(Array.from({ length: Math.floor(rand() * 80) }, () => Math.floor(rand() * 256))));
  cases.push(
    JSON.stringify({ exit: 999, stdout: 'x' }),
    JSON.stringify({ exit: -1, stdout: 'x' }),
    JSON.stringify({ exit: 0, stdout: 5 }),
    JSON.stringify({ exit: '0', stdout: 'x' }),
    JSON.stringify({ ok: true }),
    JSON.stringify({ ok: false, code: 'x', msg: 'm' }),
    JSON.stringify({ exit: 0, stdout: 'y'.repeat(2_000_000) }),
    '[1,2,3]',
    '"just a string"',
  );
  reply = () => '';
  for (const [i, c] of cases.entries()) {
    reply = () => c;
    const r = await runPlugin([COMPILED_PLUGIN!], ENV, conf);
    const why = `reply ${i} ${JSON.stringify(String(c).slice(0, 120))}: ${r.status} ${r.signal} ${r.out.slice(0, 200)}`;
    assert.equal(r.signal, null, why);
    assert.equal(r.status, 1, why);
    const e = JSON.parse(r.out);
    assert.equal(e.code, 11, why);
    assert.match(e.msg, /closed the connection without an answer|does not understand|answered more than/, why);
  }
  // Well-formed answers pass through exactly: a result, an agent-level refusal, a non-zero exit.
  reply = () => good;
  assert.equal((await runPlugin([COMPILED_PLUGIN!], ENV, conf)).out, JSON.parse(good).stdout);
  reply = () => JSON.stringify({ ok: false, code: 6, msg: 'ipam request too large', details: 'd\u00e9' });
  const refused = await runPlugin([COMPILED_PLUGIN!], ENV, conf);
  assert.equal(refused.status, 1);
  assert.deepEqual(JSON.parse(refused.out), { cniVersion: '1.0.0', code: 6, msg: 'ipam request too large', details: 'd\u00e9' });
  reply = () => JSON.stringify({ exit: 1, stdout: '{"cniVersion":"1.0.0","code":7,"msg":"a \\"quoted\\" \\u00e9 \\\\ msg"}\n' });
  const failed = await runPlugin([COMPILED_PLUGIN!], ENV, conf);
  assert.equal(failed.status, 1);
  assert.equal(failed.out, '{"cniVersion":"1.0.0","code":7,"msg":"a \\"quoted\\" \\u00e9 \\\\ msg"}\n');
  reply = () => JSON.stringify({ exit: 0, stdout: 'forwarded\n' });
});
