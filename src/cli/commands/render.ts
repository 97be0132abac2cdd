/** `nfkube render`: print the ruleset the agent would enforce, without touching the kernel.
 * Exits 1 when any input could not be read or rendered as written: what is printed then is what
 * the agent would enforce, with those objects failing closed. Warnings do not change the exit. */
import { ManifestSource } from '../../k8s/manifest-source';
import { desiredComponents } from '../../node/desired';
import { enabledFeatures, kindsOf } from '../../node/enabled';
import { manifestsMaxBytes } from '../../node/source';
import { formatTable } from '../../nft/format';
import { markedTable } from '../../nft/ownership';
import { nodeName } from '../../options/values';
import { DENY_OPTIONS } from '../../policy/options';
import { PROXY_CLI_OPTIONS } from '../../proxy/options';
import { modelToContents } from '../../ruleset/model';
import { Command } from '../command';
import { COMMON_OPTIONS, OptionTable, parse, usageText } from '../options';
import { UsageError } from '../../options/usage-error';

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
    const enabled = enabledFeatures(v);
    const node = nodeName(v['node-name']);
    let errors = 0;
    // `object field` of problems already reported by the source, so the compiler's copy of a
    // problem normalization survived is not printed twice.
    const reported = new Set<string>();
    const source = new ManifestSource({
      dir: v.manifests,
      kinds: kindsOf(enabled),
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
    for (const { feature } of enabled) for (const text of feature.snapshotWarnings?.(snap, node) ?? []) process.stderr.write(`nfkube render: warning: ${text}\n`);
    const components = desiredComponents(enabled, snap, node, v, {
      problem(p) {
        errors++;
        if (p.field === undefined || !reported.has(`${p.object} ${p.field}`)) process.stderr.write(`nfkube: ${p.message}\n`);
      },
    });
    // With nfkube's mark, as the agent creates it: `render | nft -f` makes tables nfkube owns.
    for (const { desired } of components) process.stdout.write(formatTable({ ...modelToContents(desired), table: markedTable(desired.table) }));
    return errors ? 1 : 0;
  },
};

export default command;
