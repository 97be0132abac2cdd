/** Issue 28 target 5, kernel objects: the chains and rules nfkube makes for a cluster against a
 * straightforward rendering of the same intent (bench/reference.ts: a chain per policy direction
 * with one rule per peer x port, a chain per isolated pod and direction, per-pod dispatch rules),
 * each loaded into a fresh namespace and read back from the kernel. Clusters: the mixed generator
 * (bench/cluster.ts buildMixedCluster) and the bench's own.
 * Run: node dist/bench/objects.bench.js */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Renderer } from '../src/policy/render/render';
import { listTable } from '../src/nft/readback';
import { commit, Transaction } from '../src/nft/transaction';
import { compileFull } from '../src/policy/engine/compile';
import { diffRulesets, diffTransaction } from '../src/ruleset/diff';
import { emptyModel } from '../src/ruleset/model';
import { openSandbox, Sandbox } from '../test/helpers/netns';
import { buildCluster, buildMixedCluster, Cluster, NODE } from './cluster';
import { ratio, table } from './harness';
import { straightforwardNft } from './reference';

interface Counts {
  chains: number;
  rules: number;
  sets: number;
  elements: number;
}

async function read(sb: Sandbox, table: string): Promise<Counts> {
  const t = await listTable(sb.socket, 'inet', table);
  if (!t) throw new Error(`table inet ${table} is missing`);
  let elements = 0;
  for (const e of t.elements.values()) elements += e.length;
  return { chains: t.chains.length, rules: t.rules.length, sets: t.sets.length, elements };
}

async function count(cluster: Cluster): Promise<{ nfkube: Counts; plain: Counts; plainUsed: Counts; targets: number; policies: number }> {
  const ir = compileFull(cluster, NODE);
  const model = new Renderer({ table: 'nfkube', denyAction: 'drop' }).full(ir);
  const sb = openSandbox();
  const plainSb = openSandbox();
  const usedSb = openSandbox();
  try {
    const empty = emptyModel(model.table);
    await commit(sb.socket, diffTransaction(empty, model, diffRulesets(empty, model), new Transaction().addTable(model.table)));
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-objects-bench-'));
    writeFileSync(join(dir, 'plain.nft'), straightforwardNft(ir));
    plainSb.run('nft', ['-f', join(dir, 'plain.nft')]);
    writeFileSync(join(dir, 'used.nft'), straightforwardNft(ir, { onlyUsedPolicies: true }));
    usedSb.run('nft', ['-f', join(dir, 'used.nft')]);
    return { nfkube: await read(sb, 'nfkube'), plain: await read(plainSb, 'plain'), plainUsed: await read(usedSb, 'plain'), targets: ir.targets.size, policies: ir.policies.size };
  } finally {
    await sb.close();
    await plainSb.close();
    await usedSb.close();
  }
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  const clusters: [string, Cluster][] = [
    ['mixed, 5k pods / 500 policies', buildMixedCluster(5000, 500, 28)],
    ['bench, 5k pods / 500 policies', buildCluster(5000, 500, 42)],
    ['bench, 20k pods / 2000 policies', buildCluster(20000, 2000, 42)],
  ];
  for (const [name, cluster] of clusters) {
    const c = await count(cluster);
    const o = (x: Counts) => `${x.chains} / ${x.rules} / ${x.sets} / ${x.elements}`;
    rows.push([name, `${c.targets} / ${c.policies}`, o(c.nfkube), o(c.plain), o(c.plainUsed), `${ratio(c.nfkube.chains, c.plain.chains)} / ${ratio(c.nfkube.chains, c.plainUsed.chains)}`, `${ratio(c.nfkube.rules, c.plain.rules)} / ${ratio(c.nfkube.rules, c.plainUsed.rules)}`]);
  }
  process.stdout.write(
    '## Kernel objects: nfkube against a straightforward rendering (issue 28 target 5)\n\n' +
      table(['cluster (node-0)', 'isolated local pods / policies', 'nfkube: chains / rules / sets / elements', 'straightforward, every policy: chains / rules / sets / elements', 'straightforward, the policies of this node\'s pods', 'chains, nfkube / straightforward (every policy / this node\'s)', 'rules, nfkube / straightforward (every policy / this node\'s)'], rows) +
      '\n\nEach table is committed into a fresh namespace and read back (nfkube over netlink, the straightforward file by `nft -f`; its anonymous sets count as sets). "This node\'s policies": the straightforward file without the chains of policy directions that isolate no pod of this node, as a person writing one node\'s rules would leave them out; nfkube renders a policy direction\'s chain only while a combination chain of a local pod jumps to it. Target: chains and rules at most the straightforward rendering\'s.\n',
  );
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
