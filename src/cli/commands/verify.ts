/** `nfkube verify`: read nfkube's table back and compare it, canonically, with what the cluster
 * state says it must be. Exit 0 only when they are equal. The agent's planner decides. */
import { Renderer } from '../../agent/render';
import { NetlinkSocket } from '../../netlink/socket';
import { listTable } from '../../nft/readback';
import { tableText } from '../../pipeline/component';
import { plan } from '../../pipeline/plan';
import { compileFull } from '../../policy/compile';
import { formatDiff, isEmptyDiff } from '../../ruleset/diff';
import { emptyModel, modelFromKernel, RulesetModel, tableFlagsProblem } from '../../ruleset/model';
import { PROXY_CLI_OPTIONS, PROXY_USAGE, proxyChoice, proxyComponent } from '../proxy-options';
import { Command } from '../command';
import { denyAction, nodeName, parse, tableName } from '../options';
import { openSource, SOURCE_OPTIONS } from '../source';

const usage = `usage: nfkube verify [--manifests DIR | --kubeconfig P] [--node-name N] [--table T] [--deny-action drop|reject]
                     ${PROXY_USAGE}`;

const command: Command = {
  summary: 'compare the kernel with the desired ruleset; print the difference (exit 1 if any)',
  usage,
  async run(args, ctx) {
    const v = parse(args, { ...SOURCE_OPTIONS, ...PROXY_CLI_OPTIONS }, usage);
    const choice = proxyChoice(v);
    const renderer = new Renderer({ table: tableName(v.table), denyAction: denyAction(v['deny-action']) });
    const source = openSource(v, { onChange: () => undefined, onError: (e) => process.stderr.write(`nfkube: ${e.message}\n`) }, choice.kinds);
    ctx.defer(() => source.stop());
    const snap = await source.start();
    await source.stop();
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    const desiredModels: RulesetModel[] = [];
    if (choice.policy) {
      const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, nodeName(v['node-name']));
      desiredModels.push(renderer.full(ir));
    }
    if (choice.proxy) {
      const proxy = proxyComponent(choice.proxy, nodeName(v['node-name']));
      proxy.start(snap);
      desiredModels.push(proxy.desired);
    }
    let differ = 0;
    for (const desired of desiredModels) differ += await verifyTable(socket, desired);
    return differ > 0 ? 1 : 0;
  },
};

/** Prints how the kernel's copy of one table differs from `desired`; 1 when it does. */
async function verifyTable(socket: NetlinkSocket, desired: RulesetModel): Promise<number> {
  const table = desired.table;
  const back = await listTable(socket, table.family, table.name);
  const kernel = back ? modelFromKernel(back) : undefined;
  const flags = back ? tableFlagsProblem(back.table) : undefined;
  const p = plan(kernel, flags, desired, false);
  if (!back) process.stdout.write(`table ${tableText(table)} does not exist\n`);
  if (flags) process.stdout.write(`${flags}\n`);
  if (p.action === 'noop') {
    process.stdout.write(`table ${tableText(table)} matches the desired state (${desired.chains.size} chains, ${desired.sets.size} sets)\n`);
    return 0;
  }
  if (!isEmptyDiff(p.diff)) process.stdout.write(`${formatDiff(kernel ?? emptyModel(table), desired, p.diff)}\n`);
  return 1;
}

export default command;
