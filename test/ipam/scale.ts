/** The scale-and-faults scenario, shared by the test (small numbers) and the bench (100 nodes,
 * 5,000 ADDs): N node agents against the test API server through client-node, ADDs all at once,
 * random DELs, pods deleted without DEL, agents crashed and restarted mid-allocation, and
 * injected faults (delays, 500s, writes committed with their reply dropped). A runtime model
 * retries failed ADDs as kubelet does and checks every answer against the addresses live right
 * then; at the end GC runs and the checker compares the API with every agent's state. */
import { performance } from 'node:perf_hooks';
import { IpamService } from '../../src/ipam/service';
import { Finding } from '../../src/ipam/check';
import { IpamReply } from '../../src/cni/protocol';
import { Fault, TestApiServer } from '../helpers/apiserver';
import { mulberry32 } from '../helpers/prng';
import { agentFactory, checkEverything, node, pool, podObject, startIpamApiServer } from './cluster';

export interface ScaleOptions {
  nodes: number;
  adds: number;
  /** Fraction of API requests that get a fault (0..1). */
  faultRate: number;
  /** Agents crashed (and restarted from their record) while ADDs are in flight. */
  crashes: number;
  /** Fraction of successful ADDs later DELeted by the runtime. */
  delRate: number;
  /** Fraction of pods deleted without any DEL (GC must find them). */
  vanishRate: number;
  seed: number;
  dualStack?: boolean;
}

export interface ScaleResult {
  succeeded: number;
  failedCleanly: number;
  /** An ADD answered with an address some live attachment already held. */
  duplicatesSeen: string[];
  findings: Finding[];
  /** Allocations left in agents after GC beyond the live attachments. */
  leaks: string[];
  /** Live attachments whose address the agent no longer holds (or holds differently). */
  lost: string[];
  timeToLastMs: number;
  addLatencyMs: number[];
  writes: Map<string, number>;
  faultsInjected: number;
  blocks: number;
  /** Why the last attempt of each failed ADD failed (message -> count). */
  failReasons: Map<string, number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runScale(o: ScaleOptions): Promise<ScaleResult> {
  const rand = mulberry32(o.seed);
  const server: TestApiServer = await startIpamApiServer();
  server.create(pool('scale', o.dualStack === false ? ['198.18.0.0/16'] : ['198.18.0.0/16', '2001:db8:5::/104']));
  const names = Array.from({ length: o.nodes }, (_, i) => `node-${String(i).padStart(3, '0')}`);
  for (const n of names) server.create(node(n));
  const f = agentFactory(server, { publishDelayMs: 200 });
  const agents = new Map<string, IpamService>();
  // A loaded machine can make a start time out: an agent that fails to start is started again,
  // as systemd or the kubelet would.
  const startAgent = async (n: string): Promise<IpamService> => {
    for (let attempt = 0; ; attempt++) {
      const a = f.make(n);
      try {
        await a.start();
        return a;
      } catch (err) {
        if (attempt > 20) throw err;
        await sleep(50);
      }
    }
  };
  await Promise.all(names.map(async (n) => agents.set(n, await startAgent(n))));
  let faultsInjected = 0;
  let faultsOn = true;
  server.faults = (ctx) => {
    if (!faultsOn || ctx.watch || rand() >= o.faultRate) return undefined;
    faultsInjected++;
    const r = rand();
    const fault: Fault = r < 0.35 ? { status: 500 } : r < 0.7 ? { dropReply: true } : r < 0.85 ? { delayMs: 20 + Math.floor(rand() * 200) } : { resetBefore: true };
    return fault;
  };
  server.writes.clear();

  // The runtime's model: which attachment holds which address right now.
  const liveByAddress = new Map<string, string>();
  const liveAttachments = new Map<string, { node: string; ips: string[] }>();
  const duplicatesSeen: string[] = [];
  const addLatencyMs: number[] = [];
  let failedCleanly = 0;
  const failReasons = new Map<string, number>();
  /** Nodes whose agent crashed and is not back yet. */
  const down = new Set<string>();
  let restarting = 0;

  const ask = async (nodeName: string, req: Parameters<IpamService['handle']>[0]): Promise<IpamReply> => {
    for (let attempt = 0; ; ) {
      const agent = agents.get(nodeName)!;
      const t0 = performance.now();
      const reply = await agent.handle(req);
      if (req.command === 'ADD' && reply.ok) addLatencyMs.push(performance.now() - t0);
      // kubelet tries again a little later; time spent while the node's agent restarts does not
      // count against the budget (kubelet retries a sandbox for as long as the pod exists).
      if (!down.has(nodeName)) attempt++;
      if (reply.ok || attempt >= 30) return reply;
      await sleep(20 + Math.floor(rand() * 50));
    }
  };

  const crash = async (nodeName: string) => {
    // One agent per node at a time, as on a real node (the new one starts after the old died).
    if (down.has(nodeName)) return;
    down.add(nodeName);
    restarting++;
    agents.get(nodeName)!.crash();
    agents.set(nodeName, await startAgent(nodeName));
    down.delete(nodeName);
    restarting--;
  };

  const t0 = performance.now();
  let lastAnswer = t0;
  const pods: Array<{ ns: string; name: string; node: string; containerID: string }> = [];
  for (let i = 0; i < o.adds; i++) {
    const p = { ns: 'default', name: `pod-${i}`, node: names[i % names.length], containerID: `c${i}` };
    server.create(podObject(p.ns, p.name, p.node));
    pods.push(p);
  }
  const crashTimes = Array.from({ length: o.crashes }, () => Math.floor(rand() * 300));
  const crashes = crashTimes.map(async (ms) => {
    await sleep(ms);
    await crash(names[Math.floor(rand() * names.length)]);
  });
  const work = pods.map(async (p) => {
    const uid = server.get('Pod', p.ns, p.name)!.metadata.uid as string;
    const key = `net/${p.containerID}/eth0`;
    const reply = await ask(p.node, { command: 'ADD', network: 'net', containerID: p.containerID, ifname: 'eth0', args: { K8S_POD_NAMESPACE: p.ns, K8S_POD_NAME: p.name, K8S_POD_UID: uid } });
    lastAnswer = performance.now();
    if (!reply.ok) {
      failedCleanly++;
      const reason = reply.msg.replace(/\d+/g, 'N');
      failReasons.set(reason, (failReasons.get(reason) ?? 0) + 1);
      server.delete('Pod', p.ns, p.name);
      return;
    }
    const ips = reply.ips!.map((x) => x.address.split('/')[0]);
    for (const ip of ips) {
      const holder = liveByAddress.get(ip);
      if (holder) duplicatesSeen.push(`${ip}: ${key} on ${p.node} while ${holder} holds it`);
      liveByAddress.set(ip, `${key} on ${p.node}`);
    }
    liveAttachments.set(key, { node: p.node, ips });
    const r = rand();
    if (r < o.delRate) {
      await sleep(Math.floor(rand() * 100));
      for (const ip of ips) liveByAddress.delete(ip);
      liveAttachments.delete(key);
      const del = await ask(p.node, { command: 'DEL', network: 'net', containerID: p.containerID, ifname: 'eth0' });
      if (!del.ok) throw new Error(`DEL failed: ${del.msg}`);
      server.delete('Pod', p.ns, p.name);
    } else if (r < o.delRate + o.vanishRate) {
      // The pod is deleted and its DEL never comes (node restarted, kubelet gave up).
      for (const ip of ips) liveByAddress.delete(ip);
      liveAttachments.delete(key);
      server.delete('Pod', p.ns, p.name);
    }
  });
  await Promise.all([...work, ...crashes]);
  const timeToLastMs = lastAnswer - t0;
  while (restarting > 0) await sleep(10);
  faultsOn = false;

  // GC: pod lists on every node, then the runtime's own CNI GC with what it knows is live.
  await sleep(5);
  for (const [n, a] of agents) {
    await a.runGc();
    const valid = [...liveAttachments].filter(([, v]) => v.node === n).map(([k]) => ({ containerID: k.split('/')[1], ifname: 'eth0' }));
    const gc = await a.handle({ command: 'GC', network: 'net', validAttachments: valid });
    if (!gc.ok) throw new Error(`GC failed on ${n}: ${gc.msg}`);
  }
  for (const a of agents.values()) await a.flushPublish();

  const all = [...agents.values()];
  const findings = checkEverything(server, all);
  const leaks: string[] = [];
  const lost: string[] = [];
  for (const a of all) {
    for (const [key, alloc] of a.state.allocations) {
      const live = liveAttachments.get(key);
      if (!live || live.node !== a.nodeName) leaks.push(`${a.nodeName} ${key} ${alloc.ips.map((x) => x.address).join(',')}`);
    }
  }
  for (const [key, live] of liveAttachments) {
    const held = agents.get(live.node)!.state.allocations.get(key);
    if (!held || held.ips.map((x) => x.address).join() !== live.ips.join()) lost.push(`${key} on ${live.node}`);
  }
  const result: ScaleResult = {
    succeeded: o.adds - failedCleanly,
    failedCleanly,
    duplicatesSeen,
    findings,
    leaks,
    lost,
    timeToLastMs,
    addLatencyMs,
    writes: new Map(server.writes),
    faultsInjected,
    blocks: server.objects('ipblocks').length,
    failReasons,
  };
  for (const a of all) await a.stop();
  await server.close();
  return result;
}
