/** Spoofed sources with real packets (issue 23 item 9): a pod whose egress is denied sends UDP
 * with a neighbour's source address (a raw socket in its namespace) to a pod that admits only
 * that neighbour. Routed and bridged topologies, the agent enforcing in the node's namespace with
 * --log-drops. Delivery is read by a listener in the destination pod: the neighbour's own
 * datagram, sent after the forged one on the same path, marks the end of what could arrive. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Registry } from 'prom-client';
import { Agent } from '../../src/pipeline/agent';
import { PolicyComponent } from '../../src/policy/component';
import { PolicyModes } from '../../src/policy/modes';
import { DropLogOptions } from '../../src/policy/render/tail';
import { NetlinkSocket } from '../../src/netlink/socket';
import { startDropLogging } from '../../src/policy/droplog';
import { Cluster, namespace, pod, policy } from '../agent/fixtures';
import { recordingLogger } from '../helpers/recording-logger';
import { bindNeighbours } from '../../src/policy/neighbour-watch';
import { bridgeNetfilterUnavailable, createTopology, PodEndpoint, Topology, TopologyKind } from '../helpers/topology';

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

/** The cluster of every test here: a (egress denied), b, c (admits only b). */
function cluster(topo: Topology): Cluster {
  const [a, b, c] = topo.pods;
  const cl = new Cluster();
  cl.apply(namespace('x'));
  cl.apply(namespace('y'));
  cl.apply(pod('x', 'a', a.ipv4, { app: 'a' }, { ip6: a.ipv6 }));
  cl.apply(pod('x', 'b', b.ipv4, { app: 'b' }, { ip6: b.ipv6 }));
  cl.apply(pod('y', 'c', c.ipv4, { app: 'c' }, { ip6: c.ipv6 }));
  cl.apply(policy('x', 'a-deny-egress', { podSelector: { matchLabels: { app: 'a' } }, policyTypes: ['Egress'] }));
  cl.apply(policy('y', 'c-from-b', { podSelector: { matchLabels: { app: 'c' } }, policyTypes: ['Ingress'], ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchLabels: { app: 'b' } } }] }] }));
  return cl;
}

/** The topology with the agent enforcing and logging drops in its node namespace. */
async function enforced(kind: TopologyKind) {
  const topo = createTopology(kind, [
    { namespace: 'x', name: 'a' },
    { namespace: 'x', name: 'b' },
    { namespace: 'y', name: 'c' },
  ]);
  const { logger, lines } = recordingLogger('info');
  const socket = NetlinkSocket.open({ netns: topo.nodeNetnsPath });
  const modes = new PolicyModes('enforce');
  const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', log: LOG, modes, logger });
  const drops = await startDropLogging({ log: LOG, nodeName: NODE, modes, denyAction: 'drop', logger, registry: new Registry(), netns: topo.nodeNetnsPath });
  const agent = new Agent({ socket, logger, components: [component] });
  const snapshot = cluster(topo).snapshot();
  drops.load(snapshot);
  const close = async () => {
    await drops.close();
    await agent.stop();
    await socket.close();
    topo.close();
  };
  try {
    await agent.start(snapshot);
  } catch (err) {
    await close();
    throw err;
  }
  return { topo, agent, component, logger, lines, close };
}

/** a forges b's address to c, then b sends its own: only b's own datagrams may reach c, and the
 * forged one is logged once as a spoofed source of x/b that came in on interface inIfindex. */
async function assertForgeryDropped(topo: Topology, lines: Record<string, any>[], family: 4 | 6, tag: string, inIfindex: number): Promise<void> {
  const [a, b, c] = topo.pods;
  const addr = (p: PodEndpoint) => (family === 4 ? p.ipv4 : p.ipv6);
  const what = `IPv${family}, ${tag}`;
  lines.length = 0;
  const marker = `from-b-${family}-${tag}`;
  const received = await listen(c, marker);
  await send(a, family, addr(b), addr(c), `forged-${family}-${tag}`);
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
    { reason: 'spoofed source', verdict: 'drop', pod: 'x/b', src: 'x/b', dst: 'y/c', protocol: 'udp', dport: PORT, inIfindex },
    what,
  );
  assert.match(lines.find((l) => l.drop)!.msg, /spoofed source: x\/b's address came in on interface #\d+/);
}

/** `7: nfk0@if2: <...>`: a link's index, by the ip oracle. */
function linkIndex(netnsPath: string, dev: string): number {
  return Number(/^(\d+):/.exec(execFileSync('nsenter', [`--net=${netnsPath}`, 'ip', '-o', 'link', 'show', 'dev', dev], { encoding: 'utf8' }))![1]);
}

test('a pod sending with a neighbour\'s source address reaches nothing, is logged as a spoofed source, with rp_filter off and on; the neighbour itself still gets through', { timeout: 180_000 }, async () => {
  const { topo, lines, close } = await enforced('routed');
  try {
    const hostIfOfA = linkIndex(topo.nodeNetnsPath, 'nfk0');
    for (const rpFilter of ['0', '1']) {
      execFileSync('nsenter', [`--net=${topo.nodeNetnsPath}`, 'sysctl', '-q', '-w', `net.ipv4.conf.all.rp_filter=${rpFilter}`, `net.ipv4.conf.nfk0.rp_filter=${rpFilter}`]);
      for (const family of [4, 6] as const) await assertForgeryDropped(topo, lines, family, `rp_filter=${rpFilter}`, hostIfOfA);
    }
  } finally {
    await close();
  }
});

test('on a bridge, a pod forging the address of a pod on the same bridge reaches nothing and is logged: each address is bound to the MAC the node\'s neighbour table saw for it', { timeout: 180_000, skip: bridgeNetfilterUnavailable() }, async () => {
  const { topo, agent, component, logger, lines, close } = await enforced('bridged');
  try {
    const watch = await bindNeighbours(agent, component, { netns: topo.nodeNetnsPath, logger });
    try {
      // Each pod sends one datagram to its gateway: its ARP and NDP give the node its MAC.
      for (const p of topo.pods) {
        await send(p, 4, p.ipv4, topo.nodeIPv4, 'hello');
        await send(p, 6, p.ipv6, topo.nodeIPv6, 'hello');
      }
      const b = topo.pods[1];
      const macOfB = /link\/ether ([0-9a-f:]{17})/.exec(execFileSync('nsenter', [`--net=${b.netnsPath}`, 'ip', '-o', 'link', 'show', 'dev', 'eth0'], { encoding: 'utf8' }))![1];
      const bound = [`${b.ipv4} . ${macOfB}`, `${b.ipv6} . ${macOfB}`];
      const listed = () => ['local_mac_v4', 'local_mac_v6'].map((set) => execFileSync('nsenter', [`--net=${topo.nodeNetnsPath}`, 'nft', 'list', 'set', 'inet', 'nfkube', set], { encoding: 'utf8' })).join('');
      // The neighbour entries come as notifications: wait (bounded) for b's bindings in the kernel.
      for (let i = 0; i < 50 && !bound.every((e) => listed().includes(e)); i++) {
        await agent.idle();
        await new Promise((r) => setTimeout(r, 100));
      }
      const kernel = listed();
      for (const e of bound) assert.ok(kernel.includes(e), `binding ${e} in the kernel: ${kernel}`);
      const bridge = linkIndex(topo.nodeNetnsPath, 'br0');
      for (const family of [4, 6] as const) await assertForgeryDropped(topo, lines, family, 'bridged', bridge);
    } finally {
      await watch.close();
    }
  } finally {
    await close();
  }
});
