/** CNI conformance of both nfkube-cni-ipam plugins from one table: the Node plugin and the compiled
 * one (native/cni/) are exec'd as a runtime execs them against one warm agent, and every case must
 * hold for both: ADD idempotent, CHECK, DEL (unknown: ok), GC, STATUS, VERSION, pre-1.0 results,
 * the errors of bad configurations, and the agent down, silent or hanging up. Where the answer
 * does not depend on addresses, the two plugins must print the same bytes. */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createServer, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { IpamService } from '../../src/ipam/service';
import { IpamSocketServer } from '../../src/ipam/server';
import { pool } from './cluster';
import { PLUGINS, PluginAgent, PluginRun, runPlugin, startPluginAgent } from './plugins';

const SUPPORTED = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];

let warm: PluginAgent;
let agent: IpamService;
let socket: IpamSocketServer;
let dir: string;
const extraServers: Server[] = [];

before(async () => {
  warm = await startPluginAgent('conf-node', [pool('conf', ['198.18.80.0/24', '2001:db8:80::/120'], { ipv4: 27, ipv6: 123 })]);
  ({ agent, socket } = warm);
  dir = mkdtempSync(join(tmpdir(), 'nfkube-cni-conf-'));
});

after(async () => {
  for (const s of extraServers) await new Promise<void>((r) => s.close(() => r()));
  await warm.close();
});

/** A unix socket whose "agent" accepts and then does `behave` to each connection. */
async function fakeAgent(name: string, behave: (s: Socket) => void): Promise<string> {
  const path = join(dir, name);
  const s = createServer(behave);
  await new Promise<void>((r) => s.listen(path, () => r()));
  extraServers.push(s);
  return path;
}

interface Ctx {
  /** The network name: one per plugin, so the two runs do not share handles. */
  network: string;
  conf(extra?: Record<string, unknown>, version?: string, ipam?: Record<string, unknown>): string;
  exec(command: string | undefined, containerID: string, stdin: string, env?: Record<string, string>): Promise<PluginRun>;
}

function cniError(r: PluginRun): { cniVersion: string; code: number; msg: string } {
  assert.equal(r.status, 1, `expected a CNI error, got status ${r.status}: ${r.out} ${r.err}`);
  const e = JSON.parse(r.out);
  assert.equal(typeof e.code, 'number');
  assert.equal(typeof e.msg, 'string');
  return e;
}

function ok(r: PluginRun): PluginRun {
  assert.equal(r.status, 0, `status ${r.status}: ${r.out} ${r.err}`);
  assert.equal(r.signal, null);
  return r;
}

const addresses = (r: PluginRun): string[] => (JSON.parse(r.out).ips as Array<{ address: string }>).map((ip) => ip.address).sort();

/** Each case returns what must be byte-identical between the plugins (undefined: nothing). */
const CASES: Array<{ name: string; run(c: Ctx): Promise<string | undefined> }> = [
  {
    name: 'VERSION is answered with the supported versions, without the agent',
    async run(c) {
      const r = ok(await c.exec('VERSION', '', '', {}));
      assert.deepEqual(JSON.parse(r.out), { cniVersion: '1.1.0', supportedVersions: SUPPORTED });
      return r.out;
    },
  },
  {
    name: 'ADD returns v4 and v6 with the pool prefix; a retried ADD gets the same addresses',
    async run(c) {
      const first = ok(await c.exec('ADD', 'idem', c.conf()));
      const result = JSON.parse(first.out);
      assert.equal(result.cniVersion, '1.0.0');
      assert.deepEqual(result.dns, {});
      const ips = addresses(first);
      assert.equal(ips.length, 2);
      assert.ok(ips.some((a) => /^198\.18\.80\.\d+\/24$/.test(a)) && ips.some((a) => /^2001:db8:80::[0-9a-f]+\/120$/.test(a)), ips.join());
      assert.ok(result.ips.every((ip: Record<string, unknown>) => !('version' in ip)), '1.0 results carry no ips[].version');
      assert.deepEqual(addresses(ok(await c.exec('ADD', 'idem', c.conf()))), ips);
      assert.ok(agent.state.allocations.has(`${c.network}/idem/eth0`));
      return undefined;
    },
  },
  {
    name: 'CHECK passes against the addresses held and fails (100) against others',
    async run(c) {
      const a = JSON.parse(ok(await c.exec('ADD', 'chk-a', c.conf())).out);
      const b = JSON.parse(ok(await c.exec('ADD', 'chk-b', c.conf())).out);
      assert.equal(ok(await c.exec('CHECK', 'chk-a', c.conf({ prevResult: a }))).out, '');
      const wrong = cniError(await c.exec('CHECK', 'chk-a', c.conf({ prevResult: b })));
      assert.equal(wrong.code, 100);
      return undefined;
    },
  },
  {
    name: 'DEL frees; DEL of an unknown attachment succeeds',
    async run(c) {
      ok(await c.exec('ADD', 'del-me', c.conf()));
      const del = ok(await c.exec('DEL', 'del-me', c.conf()));
      assert.equal(del.out, '');
      assert.equal(agent.state.allocations.has(`${c.network}/del-me/eth0`), false);
      const unknown = ok(await c.exec('DEL', 'never-added', c.conf()));
      assert.equal(unknown.out, '');
      return del.out + unknown.out;
    },
  },
  {
    name: 'GC (1.1) releases every attachment of the network the runtime does not list; STATUS',
    async run(c) {
      for (const id of ['gc-keep', 'gc-drop1', 'gc-drop2']) ok(await c.exec('ADD', id, c.conf({}, '1.1.0')));
      const gc = ok(await c.exec('GC', '', c.conf({ 'cni.dev/valid-attachments': [{ containerID: 'gc-keep', ifname: 'eth0' }] }, '1.1.0')));
      const mine = [...agent.state.allocations.keys()].filter((k) => k.startsWith(`${c.network}/`));
      assert.deepEqual(mine, [`${c.network}/gc-keep/eth0`]);
      const status = ok(await c.exec('STATUS', '', c.conf({}, '1.1.0')));
      return gc.out + status.out;
    },
  },
  {
    name: 'pre-1.0 configurations get ips[].version',
    async run(c) {
      const r = JSON.parse(ok(await c.exec('ADD', 'legacy', c.conf({}, '0.4.0'))).out);
      assert.equal(r.cniVersion, '0.4.0');
      assert.deepEqual(r.ips.map((ip: { version: string }) => ip.version).sort(), ['4', '6']);
      return undefined;
    },
  },
  {
    name: 'configuration errors: the same CNI error from both plugins',
    async run(c) {
      const outs: string[] = [];
      const expect = async (code: number, msg: RegExp, r: Promise<PluginRun>) => {
        const run = await r;
        const e = cniError(run);
        assert.equal(e.code, code, run.out);
        assert.match(e.msg, msg);
        outs.push(run.out);
      };
      await expect(4, /^CNI_COMMAND is not set$/, c.exec(undefined, 'x', c.conf()));
      await expect(1, /cniVersion 9\.9\.9 is not supported/, c.exec('ADD', 'x', c.conf({}, '9.9.9')));
      await expect(7, /name is required/, c.exec('ADD', 'x', c.conf({ name: undefined })));
      await expect(4, /CNI_CONTAINERID is not set/, c.exec('ADD', '', c.conf()));
      await expect(4, /CNI_COMMAND FOO is not supported/, c.exec('FOO', 'x', c.conf()));
      await expect(1, /CHECK needs cniVersion 0\.4\.0/, c.exec('CHECK', 'x', c.conf({}, '0.3.1')));
      await expect(1, /GC needs cniVersion 1\.1\.0/, c.exec('GC', '', c.conf({}, '1.0.0')));
      await expect(7, /valid-attachments is required/, c.exec('GC', '', c.conf({}, '1.1.0')));
      await expect(7, /ipam\.pool must be a string/, c.exec('ADD', 'x', c.conf({}, '1.0.0', { pool: 3 })));
      await expect(7, /no-such-pool/, c.exec('ADD', 'x', c.conf({}, '1.0.0', { pool: 'no-such-pool' })));
      await expect(6, /not an object/, c.exec('ADD', 'x', '"a string"'));
      assert.equal(JSON.parse(outs[1]).cniVersion, '1.1.0', 'an unsupported version reports errors in 1.1.0');
      // Not JSON: the same code; the message names the parser's complaint, which differs.
      const bad = cniError(await c.exec('ADD', 'x', '{not json'));
      assert.equal(bad.code, 6);
      assert.match(bad.msg, /^network configuration on stdin is not JSON: /);
      return outs.join('');
    },
  },
  {
    name: 'container IDs and interface names outside the CNI spec are refused (4) and allocate nothing; stdin is bounded',
    async run(c) {
      const before = agent.state.allocations.size;
      const outs: string[] = [];
      const refuse = async (containerID: string, ifname: string, msg: RegExp) => {
        const r = await c.exec('ADD', containerID, c.conf(), { CNI_IFNAME: ifname });
        const e = cniError(r);
        assert.equal(e.code, 4, r.out);
        assert.match(e.msg, msg);
        outs.push(r.out);
      };
      await refuse('ok1', '../../../etc/shadow', /CNI_IFNAME "\.\.\/\.\.\/\.\.\/etc\/shadow" is longer than 15 bytes/);
      await refuse('ok1', '../x', /holds "\/", ":" or whitespace/);
      await refuse('ok1', 'x'.repeat(300), /is longer than 15 bytes/);
      await refuse('ok1', 'eth:0', /holds "\/", ":" or whitespace/);
      await refuse('ok1', 'eth 0', /holds "\/", ":" or whitespace/);
      await refuse('ok1', '..', /is not an interface name/);
      await refuse('ok1', '.', /is not an interface name/);
      await refuse('ab\ncd', 'eth0', /CNI_CONTAINERID "ab\\ncd" must start with a letter or digit/);
      await refuse('-ab', 'eth0', /must start with a letter or digit/);
      await refuse('ab/cd', 'eth0', /must start with a letter or digit/);
      assert.equal(agent.state.allocations.size, before, 'nothing was allocated');
      const edge = ok(await c.exec('ADD', 'a_b.c-D9', c.conf(), { CNI_IFNAME: 'abcdefghijklmno' }));
      assert.equal(addresses(edge).length, 2, 'the longest name and every allowed character pass');
      ok(await c.exec('DEL', 'a_b.c-D9', c.conf(), { CNI_IFNAME: 'abcdefghijklmno' }));
      const huge = cniError(await c.exec('ADD', 'big', ' '.repeat(5 * 1024 * 1024)));
      assert.equal(huge.code, 6);
      assert.equal(huge.msg, 'network configuration on stdin is larger than 4194304 bytes');
      return outs.join('');
    },
  },
  {
    name: 'agent down: ADD fails at once with code 11 and allocates nothing',
    async run(c) {
      const before = agent.state.allocations.size;
      const r = await c.exec('ADD', 'orphan', c.conf({}, '1.0.0', { socket: join(dir, 'nobody.sock') }));
      const e = cniError(r);
      assert.equal(e.code, 11);
      assert.equal(e.msg, `nfkube ipam agent is not running (${join(dir, 'nobody.sock')}: ENOENT); nothing was allocated`);
      assert.equal(e.cniVersion, '1.0.0');
      assert.equal(agent.state.allocations.size, before);
      return r.out;
    },
  },
  {
    name: 'an agent that hangs up without answering, or never answers (bounded wait)',
    async run(c) {
      const hangup = await fakeAgent(`hangup-${c.network}`, (s) => s.once('data', () => s.end()));
      const silent = await fakeAgent(`silent-${c.network}`, (s) => s.on('error', () => {}).resume()); // reads, never answers
      const closed = await c.exec('ADD', 'x', c.conf({}, '1.0.0', { socket: hangup }));
      assert.equal(cniError(closed).msg, `nfkube ipam agent at ${hangup} closed the connection without an answer`);
      const t0 = Date.now();
      const slow = await c.exec('ADD', 'x', c.conf({}, '1.0.0', { socket: silent }), { NFKUBE_CNI_IPAM_TIMEOUT_MS: '300' });
      const e = cniError(slow);
      assert.equal(e.code, 11);
      assert.equal(e.msg, `nfkube ipam agent at ${silent} did not answer within 0.3 s`);
      assert.ok(Date.now() - t0 < 10_000, 'the wait is bounded by the timeout');
      return closed.out.replace(hangup, '<sock>') + slow.out.replace(silent, '<sock>');
    },
  },
];

const outputs = new Map<string, Map<string, string | undefined>>();

for (const plugin of PLUGINS) {
  describe(`nfkube-cni-ipam (${plugin.name})`, { skip: plugin.argv ? false : 'not built here (npm install without a C compiler)' }, () => {
    const network = `conf-${plugin.name}`;
    const ctx: Ctx = {
      network,
      conf(extra = {}, version = '1.0.0', ipam = {}) {
        return JSON.stringify({ cniVersion: version, name: network, ipam: { type: 'nfkube-cni-ipam', socket: socket.path, pool: 'conf', ...ipam }, ...extra });
      },
      exec(command, containerID, stdin, env = {}) {
        const vars: Record<string, string> = { CNI_NETNS: '/proc/self/ns/net', CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin', CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${containerID || 'none'}`, ...env };
        if (command !== undefined) vars.CNI_COMMAND = command;
        if (containerID) vars.CNI_CONTAINERID = containerID;
        return runPlugin(plugin.argv!, vars, stdin);
      },
    };
    for (const c of CASES) {
      test(c.name, async () => {
        const same = await c.run(ctx);
        if (!outputs.has(c.name)) outputs.set(c.name, new Map());
        outputs.get(c.name)!.set(plugin.name, same);
      });
    }
  });
}

test('both plugins print the same bytes wherever the answer does not depend on addresses', { skip: PLUGINS.every((p) => p.argv) ? false : 'the compiled plugin is not built here' }, () => {
  for (const c of CASES) {
    const byPlugin = outputs.get(c.name) ?? new Map<string, string | undefined>();
    assert.ok(byPlugin.has('node') && byPlugin.has('compiled'), `${c.name}: ran for both`);
    assert.equal(byPlugin.get('compiled')?.replaceAll('conf-compiled', 'conf-X'), byPlugin.get('node')?.replaceAll('conf-node', 'conf-X'), c.name);
  }
});
