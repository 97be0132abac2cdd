/** `nfkube ipam show [--node N]` lists pools, blocks and allocations as the API holds them;
 * `nfkube ipam check` audits the cluster for duplicates, leaks and orphans (exit 1 when any). */
import { ClientNodeApi, loadKubeConfig, ApiNode } from '../../ipam/api';
import { auditCluster, HeldAddress, heldAddresses } from '../../ipam/check';
import { PLURALS, readBlock, readClaim } from '../../ipam/objects';
import { Command } from '../command';
import { didYouMean, UsageError } from '../../options/usage-error';
import { OptionTable, parse, usageText } from '../options';

const options = {
  kubeconfig: { type: 'string', value: 'PATH', description: 'the cluster to read (in-cluster config when absent)' },
  node: { type: 'string', value: 'NAME', description: "show: keep one node's blocks and claims" },
  json: { type: 'boolean', description: 'print JSON instead of text' },
} as const satisfies OptionTable;

const usage = usageText(
  'nfkube ipam show|check [options]',
  options,
  `show   pools, then each block (CIDR, node, lent range) with its published allocations, then
       borrowed addresses.
check  duplicates (an address held twice), leaks (held for a pod that no longer exists) and
       orphans (blocks or claims of deleted Nodes); exits 1 when it finds any, 0 when clean.`,
);

const command: Command = {
  summary: 'show IPAM pools, blocks and allocations, or check them (show | check)',
  usage,
  options,
  async run(args) {
    const [sub, ...rest] = args;
    if (sub !== 'show' && sub !== 'check') throw new UsageError(`expected show or check, got ${sub === undefined ? 'nothing' : JSON.stringify(sub)}${sub === undefined ? '' : didYouMean(sub, ['show', 'check'])} (see nfkube ipam --help)`);
    const v = parse(rest, options, usage);
    const api = new ClientNodeApi({ kubeConfig: loadKubeConfig(v.kubeconfig) });
    const [pools, blocks, claims] = await Promise.all([api.list(PLURALS.pools), api.list(PLURALS.blocks), api.list(PLURALS.claims)]);
    if (sub === 'show') {
      const node = v.node;
      const bs = blocks.map(readBlock).filter((b) => !node || b.node === node).sort((a, b) => (a.name < b.name ? -1 : 1));
      const cs = claims.map(readClaim).filter((c) => !node || c.node === node);
      if (v.json) {
        process.stdout.write(JSON.stringify({ pools, blocks: bs, claims: cs }, null, 2) + '\n');
        return 0;
      }
      const lines: string[] = ['POOLS'];
      for (const p of pools) lines.push(`  ${p.metadata?.name}  cidrs=${(p.spec?.cidrs ?? []).join(',')}  blockSize=${JSON.stringify(p.spec?.blockSize ?? {})}${p.spec?.nodeSelector ? `  nodeSelector=${JSON.stringify(p.spec.nodeSelector)}` : ''}`);
      lines.push('BLOCKS');
      const heldVia = new Map<string, HeldAddress[]>();
      for (const h of heldAddresses(bs, [])) {
        const list = heldVia.get(h.via);
        if (list) list.push(h);
        else heldVia.set(h.via, [h]);
      }
      for (const b of bs) {
        lines.push(`  ${b.cidr}  node=${b.node}  pool=${b.pool}  allocated=${Object.keys(b.allocations).length}${b.lendFrom !== undefined ? `  lends-from-ordinal=${b.lendFrom}` : ''}`);
        for (const h of heldVia.get(`IPBlock ${b.name}`) ?? []) lines.push(`    ${h.address}  ${h.holder}${h.pod ? `  pod=${h.pod.namespace}/${h.pod.name}` : ''}`);
      }
      lines.push('BORROWED');
      for (const c of cs) lines.push(`  ${c.address}  node=${c.node}  from=${c.block}  ${c.handle}${c.pod ? `  pod=${c.pod.namespace}/${c.pod.name}` : ''}`);
      process.stdout.write(lines.join('\n') + '\n');
      return 0;
    }
    let nodes: ApiNode[] | undefined;
    try {
      nodes = await api.listNodes();
    } catch (err) {
      process.stderr.write(`nfkube ipam check: cannot list Nodes (${(err as Error).message}); orphan checks skipped\n`);
    }
    const pods = await api.listPods();
    const findings = auditCluster({ pools, blocks, claims, pods, nodes });
    if (v.json) process.stdout.write(JSON.stringify({ findings }, null, 2) + '\n');
    else {
      for (const f of findings) process.stdout.write(`${f.kind}: ${f.message}\n`);
      process.stdout.write(findings.length ? `${findings.length} problem(s)\n` : `ok: ${blocks.length} blocks, ${claims.length} borrowed addresses, no duplicates, leaks or orphans\n`);
    }
    return findings.length ? 1 : 0;
  },
};

export default command;
