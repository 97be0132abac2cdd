/** `nfkube render`: print the ruleset the agent would enforce, without touching the kernel.
 * Exits 1 when any input could not be read or rendered as written: what is printed then is what
 * the agent would enforce, with those objects failing closed. Warnings do not change the exit. */
import { Renderer } from '../../policy/render/render';
import { ManifestSource } from '../../k8s/manifest-source';
import { manifestsMaxBytes } from '../source';
import { formatTable } from '../../nft/format';
import { markedTable } from '../../nft/ownership';
import { compileFull } from '../../policy/engine/compile';
import { fullPolicyTable } from '../../policy/cluster/tiers';
import { createLogger } from '../../log';
import { modelToContents } from '../../ruleset/model';
import { Command } from '../command';
import { UsageError } from '../usage-error';
import { warnNoPods } from '../source';
import { COMMON_OPTIONS, denyAction, nodeName, parse, tableName, usageText } from '../options';
import { DENY_OPTIONS, dropLogOptions, policyModes } from '../deny-options';
import { PROXY_CLI_OPTIONS, proxyChoice, proxyComponent } from '../proxy-options';
import { OptionTable } from '../options';

const { manifests, 'manifests-max-bytes': manifestsMax, 'node-name': node, table, 'deny-action': deny } = COMMON_OPTIONS;
const options = { manifests: { ...manifests, description: 'directory of Namespaces, Pods and NetworkPolicies to render (required)' }, 'manifests-max-bytes': manifestsMax, 'node-name': node, table, 'deny-action': deny, ...DENY_OPTIONS, ...PROXY_CLI_OPTIONS, 'no-policy': { type: 'boolean', description: 'with --proxy: render the proxy table alone' } } as const satisfies OptionTable;
const usage = usageText('nfkube render --manifests DIR [options]', options, 'Prints the nftables ruleset the agent would enforce, in nft syntax, without touching the kernel.');

const command: Command = {
  summary: 'print the nftables ruleset for a manifests directory (no root needed)',
  usage,
  options,
  async run(args, ctx) {
    const v = parse(args, options, usage);
    if (!v.manifests) throw new UsageError('--manifests is required (see nfkube render --help)');
    const choice = proxyChoice(v);
    let errors = 0;
    // `object field` of problems already reported by the source, so the compiler's copy of a
    // problem normalization survived is not printed twice.
    const reported = new Set<string>();
    const source = new ManifestSource({
      dir: v.manifests as string,
      kinds: choice.kinds,
      maxTotalBytes: manifestsMaxBytes(v),
      onChange: () => undefined,
      onWarning: (w) => process.stderr.write(`nfkube: warning: ${w.message}\n`),
      onError: (e) => {
        errors++;
        if (e.object !== undefined && e.field !== undefined) reported.add(`${e.object} ${e.field}`);
        process.stderr.write(`nfkube: ${e.message}\n`);
      },
    });
    ctx.defer(() => source.stop());
    const snap = await source.start();
    await source.stop();
    if (choice.policy) warnNoPods(snap, nodeName(v['node-name']), (text) => process.stderr.write(`nfkube render: warning: ${text}\n`));
    const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, nodeName(v['node-name']));
    for (const p of ir.policies.values()) {
      for (const e of p.errors) {
        errors++;
        if (reported.has(`NetworkPolicy ${e.policy} ${e.field}`)) continue;
        process.stderr.write(`nfkube: NetworkPolicy ${e.policy}: ${e.field}: ${e.message}\n`);
      }
    }
    const onFailClosed = (err: Error) => {
      errors++;
      process.stderr.write(`nfkube: ${err.message}\n`);
    };
    const models = [];
    if (choice.policy) {
      const renderer = new Renderer({ table: tableName(v.table), denyAction: denyAction(v['deny-action']), log: dropLogOptions(v), modes: policyModes(v, snap.namespaces.values()), onFailClosed });
      const { model, tiers } = fullPolicyTable(renderer, ir, snap, createLogger('silent'));
      for (const p of tiers.engine.state().policies.values()) {
        for (const e of p.errors) {
          errors++;
          if (!reported.has(`ClusterNetworkPolicy ${e.policy} ${e.field}`)) process.stderr.write(`nfkube: ClusterNetworkPolicy ${e.policy}: ${e.field}: ${e.message}\n`);
        }
      }
      models.push(model);
    }
    if (choice.proxy) {
      const proxy = proxyComponent(choice.proxy, nodeName(v['node-name']));
      proxy.start(snap);
      models.push(proxy.desired);
    }
    // With nfkube's mark, as the agent creates it: `render | nft -f` makes tables nfkube owns.
    for (const model of models) process.stdout.write(formatTable({ ...modelToContents(model), table: markedTable(model.table) }));
    return errors ? 1 : 0;
  },
};

export default command;
