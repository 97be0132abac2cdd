/** Untrusted input to IPAM: requests on the socket are checked field by field (a wrong type is a
 * CNI error naming the field, never a TypeError or a handle like "[object Object]//5"), and a
 * state record with a malformed field stops the start naming its line. */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { IpamService } from '../../src/ipam/service';
import { serveIpamSocket, IpamSocketServer } from '../../src/ipam/server';
import { replay, WalError } from '../../src/ipam/wal';
import { TestApiServer } from '../helpers/apiserver';
import { recordingLogger } from '../helpers/recording-logger';
import { agentFactory, node, pool, startIpamApiServer } from './cluster';
import { askAgent } from './plugins';

let server: TestApiServer;
let agent: IpamService;
let socket: IpamSocketServer;
const log = recordingLogger('debug');

before(async () => {
  server = await startIpamApiServer();
  server.create(pool('in', ['198.18.90.0/24'], { ipv4: 27 }));
  server.create(node('in-node'));
  const f = agentFactory(server);
  agent = f.make('in-node', { logger: log.logger });
  await agent.start();
  socket = await serveIpamSocket(join(f.stateDir, 'ipam.sock'), (req) => agent.handle(req));
});
after(async () => {
  await socket.close();
  await agent.stop();
  await server.close();
});

const ask = (line: string) => askAgent(socket.path, line);

test('socket requests with fields of the wrong type are refused naming the field; nothing is allocated or logged as a TypeError', async () => {
  const cases: Array<[unknown, number, RegExp]> = [
    [{ command: 'ADD', network: 'n', containerID: [], ifname: 5 }, 4, /CNI_CONTAINERID is not set/],
    [{ command: 'ADD', network: 'n', containerID: 'c1', ifname: 5 }, 4, /CNI_IFNAME is not set/],
    [{ command: 'ADD', network: 'n', containerID: 'c1', ifname: '../../x' }, 4, /CNI_IFNAME .* holds "\/"/],
    [{ command: 'ADD', network: 'n', containerID: 'c\n1', ifname: 'eth0' }, 4, /must start with a letter or digit/],
    [{ command: 'ADD', network: { a: 1 }, containerID: 'c1', ifname: 'eth0' }, 7, /network/],
    [{ command: 'ADD', network: 'n', containerID: 'c1', ifname: 'eth0', pool: 3 }, 7, /pool must be a string/],
    [{ command: 'ADD', network: 'n', containerID: 'c1', ifname: 'eth0', args: { K8S_POD_NAME: 1 } }, 4, /args must be an object of strings/],
    [{ command: 'CHECK', network: 'n', containerID: 'c1', ifname: 'eth0', expected: { a: 1 } }, 7, /expected must be a list/],
    [{ command: 'GC', network: 'n', validAttachments: [null, { containerID: 'x', ifname: 'eth0' }] }, 7, /validAttachments\[0\] must be an object/],
    [{ command: 'GC', network: 'n', validAttachments: 'all' }, 7, /validAttachments must be a list/],
    [{ command: 'ADDX', network: 'n' }, 4, /unknown command "ADDX"/],
    [{ command: 7, network: 'n' }, 6, /not a request object/],
  ];
  for (const [req, code, msg] of cases) {
    const reply = await ask(JSON.stringify(req));
    assert.equal(reply.ok, false, JSON.stringify(req));
    assert.equal(reply.code, code, `${JSON.stringify(req)}: ${JSON.stringify(reply)}`);
    assert.match(String(reply.msg), msg);
  }
  assert.equal(agent.state.allocations.size, 0, 'nothing was allocated');
  assert.deepEqual(log.lines.filter((l) => l.level >= 50), [], 'no request ended in a logged error');
  const good = await ask(JSON.stringify({ command: 'ADD', network: 'n', containerID: 'c1', ifname: 'eth0' }));
  assert.equal(good.ok, true, JSON.stringify(good));
  assert.deepEqual([...agent.state.allocations.keys()], ['n/c1/eth0']);
});

test('a state record with a malformed field stops the start naming its line and field', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-wal-bad-'));
  const path = join(dir, 'n.wal');
  const good = { network: 'n', containerID: 'c', ifname: 'eth0', pool: 'p', ips: [{ family: 'v4', address: '198.18.0.1', prefix: 24, block: 'b' }], at: 1 };
  const lines = (bad: unknown) => `${JSON.stringify({ op: 'add', key: 'a', alloc: good })}\n${JSON.stringify(bad)}\n${JSON.stringify({ op: 'del', key: 'a' })}\n`;
  const cases: Array<[unknown, RegExp]> = [
    [{ op: 'add', key: 'b', alloc: null }, /n\.wal:2: damaged allocation record \(alloc is not an object\)/],
    [{ op: 'add', key: 'b', alloc: { ...good, ips: [{ ...good.ips[0], address: 7 }] } }, /n\.wal:2: .*alloc\.ips\[0\]\.address is not a string/],
    [{ op: 'add', key: 'b', alloc: { ...good, ips: 'x' } }, /n\.wal:2: .*alloc\.ips is not a list/],
    [{ op: 'add', key: 'b', alloc: { ...good, pod: 'x' } }, /n\.wal:2: .*alloc\.pod is not a pod reference/],
    [{ op: 'del', key: 5 }, /n\.wal:2: .*key is not a string/],
  ];
  for (const [bad, msg] of cases) {
    writeFileSync(path, lines(bad));
    assert.throws(() => replay(path), (e: unknown) => e instanceof WalError && msg.test((e as Error).message), JSON.stringify(bad));
  }
});
