/** Spoofed sources with real packets (issue 23 item 9): a pod whose egress is denied sends UDP
 * with a neighbour's source address (a raw socket in its namespace) to a pod that admits only
 * that neighbour. Routed topology, the agent enforcing in the node's namespace with --log-drops.
 * Delivery is read by a listener in the destination pod: the neighbour's own datagram, sent after
 * the forged one on the same path, marks the end of what could arrive. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Registry } from 'prom-client';
import { Agent } from '../../src/pipeline/agent';
import { PolicyComponent } from '../../src/agent/policy-component';
import { PolicyModes } from '../../src/deny/modes';
import { DropLogOptions } from '../../src/deny/tail';
import { NetlinkSocket } from '../../src/netlink/socket';
import { startDropLogging } from '../../src/nflog';
import { Cluster, namespace, pod, policy } from '../agent/fixtures';
import { recordingLogger } from '../helpers/recording-logger';
import { createTopology, PodEndpoint } from '../helpers/topology';

const execFileAsync = promisify(execFile);
const SCRIPT = resolve(__dirname, '..', '..', '..', 'test', 'helpers', 'spoof.py');
const NODE = 'node-1';
const LOG: DropLogOptions = { group: 9, rate: 10, burst: 5 };
const PORT = 9999;
const settle = () => new Promise((r) => setTimeout(r, 400));

/** Starts the listener in `pod`; resolves with a function that awaits the payloads it got. */
async function listen(pod: PodEndpoint, marker: string): Promise<() => Promise<string[]>> {
  const child = spawn('nsenter', [`--net=${pod.netnsPath}`, 'python3', SCRIPT, 'listen', String(PORT), marker, '20'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  const done = new Promise<string[]>((res, rej) => {
    child.on('error', rej);
    child.on('exit', () => res(out.split('\n').filter((l) => l && l !== 'ready')));
  });
  await new Promise<void>((res, rej) => {
    child.stdout.on('data', (d: string) => {
      out += d;
      if (out.startsWith('ready\n')) res();
    });
    child.on('exit', () => rej(new Error(`listener in ${pod.id} exited before it was ready: ${out}`)));
  });
  return () => done;
}

async function send(from: PodEndpoint, family: 4 | 6, src: string, dst: string, payload: string): Promise<void> {
  await execFileAsync('nsenter', [`--net=${from.netnsPath}`, 'python3', SCRIPT, 'send', String(family), src, dst, '5000', String(PORT), payload], { timeout: 30_000 });
}

test('a pod sending with a neighbour\'s source address reaches nothing, is logged as a spoofed source, with rp_filter off and on; the neighbour itself still gets through', { timeout: 180_000 }, async () => {
  const topo = createTopology('routed', [
    { namespace: 'x', name: 'a' },
    { namespace: 'x', name: 'b' },
    { namespace: 'y', name: 'c' },
  ]);
  const [a, b, c] = topo.pods;
  const { logger, lines } = recordingLogger('info');
  const socket = NetlinkSocket.open({ netns: topo.nodeNetnsPath });
  const modes = new PolicyModes('enforce');
  const cluster = new Cluster();
  cluster.apply(namespace('x'));
  cluster.apply(namespace('y'));
  cluster.apply(pod('x', 'a', a.ipv4, { app: 'a' }, { ip6: a.ipv6 }));
  cluster.apply(pod('x', 'b', b.ipv4, { app: 'b' }, { ip6: b.ipv6 }));
  cluster.apply(pod('y', 'c', c.ipv4, { app: 'c' }, { ip6: c.ipv6 }));
  cluster.apply(policy('x', 'a-deny-egress', { podSelector: { matchLabels: { app: 'a' } }, policyTypes: ['Egress'] }));
  cluster.apply(policy('y', 'c-from-b', { podSelector: { matchLabels: { app: 'c' } }, policyTypes: ['Ingress'], ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchLabels: { app: 'b' } } }] }] }));
  const drops = await startDropLogging({ log: LOG, nodeName: NODE, modes, denyAction: 'drop', logger, registry: new Registry(), netns: topo.nodeNetnsPath });
  const agent = new Agent({ socket, logger, components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', log: LOG, modes, logger })] });
  const snapshot = cluster.snapshot();
  drops.load(snapshot);
  try {
    await agent.start(snapshot);
    // `7: nfk0@if2: <...>`: the index of a's host-side interface, by the ip oracle.
    const hostIfOfA = Number(/^(\d+):/.exec(execFileSync('nsenter', [`--net=${topo.nodeNetnsPath}`, 'ip', '-o', 'link', 'show', 'dev', 'nfk0'], { encoding: 'utf8' }))![1]);
    for (const rpFilter of ['0', '1']) {
      execFileSync('nsenter', [`--net=${topo.nodeNetnsPath}`, 'sysctl', '-q', '-w', `net.ipv4.conf.all.rp_filter=${rpFilter}`, `net.ipv4.conf.nfk0.rp_filter=${rpFilter}`]);
      for (const family of [4, 6] as const) {
        const what = `IPv${family}, rp_filter=${rpFilter}`;
        const addr = (p: PodEndpoint) => (family === 4 ? p.ipv4 : p.ipv6);
        lines.length = 0;
        const marker = `from-b-${family}-${rpFilter}`;
        const received = await listen(c, marker);
        await send(a, family, addr(b), addr(c), `forged-${family}-${rpFilter}`);
        // The neighbour's own datagram, then the other family's marker so the listener ends.
        await send(b, family, addr(b), addr(c), marker);
        await send(b, family === 4 ? 6 : 4, family === 4 ? b.ipv6 : b.ipv4, family === 4 ? c.ipv6 : c.ipv4, marker);
        const got = await received();
        assert.deepEqual(got, [marker, marker], `${what}: only b's own datagrams reach c (got ${JSON.stringify(got)})`);
        await settle();
        const logged = lines.filter((l) => l.drop).map((l) => l.drop);
        assert.equal(logged.length, 1, `${what}: ${JSON.stringify(lines)}`);
        assert.deepEqual(
          { reason: logged[0].reason, verdict: logged[0].verdict, pod: logged[0].pod, src: logged[0].src, dst: logged[0].dst, protocol: logged[0].protocol, dport: logged[0].dport, inIfindex: logged[0].inIfindex },
          { reason: 'spoofed source', verdict: 'drop', pod: 'x/b', src: 'x/b', dst: 'y/c', protocol: 'udp', dport: PORT, inIfindex: hostIfOfA },
          what,
        );
        assert.match(lines.find((l) => l.drop)!.msg, /spoofed source: x\/b's address came in on interface #\d+/);
      }
    }
  } finally {
    await drops.close();
    await agent.stop();
    await socket.close();
    topo.close();
  }
});
