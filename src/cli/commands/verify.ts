/** `nfkube verify`: read nfkube's table back and compare it, canonically, with what the cluster
 * state says it must be. Exit 0 only when they are equal. */
import { Renderer } from '../../agent/render';
import { NetlinkSocket } from '../../netlink/socket';
import { listTable } from '../../nft/readback';
import { compileFull } from '../../policy/compile';
import { diffRulesets, formatDiff, isEmptyDiff } from '../../ruleset/diff';
import { emptyModel, modelFromKernel, tableFlagsProblem } from '../../ruleset/model';
import { Command } from '../command';
import { denyAction, nodeName, parse, tableName } from '../options';
import { openSource, SOURCE_OPTIONS } from '../source';
import { dropLogOptions, policyModes } from '../deny-options';
import { formatPolicyCounters, policyCounters, readCounterRows } from '../../explain/counters';

const usage = 'usage: nfkube verify [--manifests DIR | --kubeconfig P] [--node-name N] [--table T] [--deny-action drop|reject] [--counters]';

const command: Command = {
  summary: 'compare the kernel with the desired ruleset; print the difference (exit 1 if any)',
  usage,
  async run(args) {
    const v = parse(args, { ...SOURCE_OPTIONS, counters: { type: 'boolean' } }, usage);
    const table = tableName(v.table);
    const source = openSource(v, { onChange: () => undefined, onError: (e) => process.stderr.write(`nfkube: ${e.message}\n`) });
    const snap = await source.start();
    await source.stop();
    const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, nodeName(v['node-name']));
    const desired = new Renderer({ table, denyAction: denyAction(v['deny-action']), log: dropLogOptions(v), modes: policyModes(v, snap.namespaces.values()) }).full(ir);
    const socket = NetlinkSocket.open();
    try {
      const back = await listTable(socket, 'inet', table);
      const kernel = back ? modelFromKernel(back) : emptyModel({ family: 'inet', name: table });
      const d = diffRulesets(kernel, desired);
      const flags = back ? tableFlagsProblem(back.table) : undefined;
      if (v.counters && back) process.stdout.write(formatPolicyCounters(policyCounters(await readCounterRows(socket, table), ir)));
      if (!back) process.stdout.write(`table inet ${table} does not exist\n`);
      if (flags) process.stdout.write(`${flags}\n`);
      if (isEmptyDiff(d) && back && !flags) {
        process.stdout.write(`table inet ${table} matches the desired state (${desired.chains.size} chains, ${desired.sets.size} sets)\n`);
        return 0;
      }
      if (!isEmptyDiff(d)) process.stdout.write(`${formatDiff(kernel, desired, d)}\n`);
      return 1;
    } finally {
      await socket.close();
    }
  },
};

export default command;
