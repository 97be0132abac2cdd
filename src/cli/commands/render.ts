/** `nfkube render`: print the ruleset the agent would enforce, without touching the kernel. */
import { Renderer } from '../../agent/render';
import { ManifestSource } from '../../k8s/manifest-source';
import { formatTable } from '../../nft/format';
import { compileFull } from '../../policy/compile';
import { modelToContents } from '../../ruleset/model';
import { Command } from '../command';
import { denyAction, nodeName, parse, tableName } from '../options';
import { DENY_OPTIONS, dropLogOptions, policyModes } from '../deny-options';

const usage = 'usage: nfkube render --manifests DIR [--node-name N] [--table T] [--deny-action drop|reject] [--log-drops [--log-group G] [--log-rate R] [--log-burst B]] [--policy-mode enforce|audit]';

const command: Command = {
  summary: 'print the nftables ruleset for a manifests directory (no root needed)',
  usage,
  async run(args) {
    const v = parse(args, { manifests: { type: 'string' }, 'node-name': { type: 'string' }, table: { type: 'string' }, 'deny-action': { type: 'string' }, ...DENY_OPTIONS }, usage);
    if (!v.manifests) throw new Error(`--manifests is required\n${usage}`);
    let errors = 0;
    const source = new ManifestSource({
      dir: v.manifests as string,
      onChange: () => undefined,
      onError: (e) => {
        errors++;
        process.stderr.write(`nfkube: ${e.message}\n`);
      },
    });
    const snap = await source.start();
    await source.stop();
    const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, nodeName(v['node-name']));
    for (const p of ir.policies.values()) {
      for (const e of p.errors) {
        errors++;
        process.stderr.write(`nfkube: NetworkPolicy ${e.policy}: ${e.field}: ${e.message}\n`);
      }
    }
    const model = new Renderer({ table: tableName(v.table), denyAction: denyAction(v['deny-action']), log: dropLogOptions(v), modes: policyModes(v, snap.namespaces.values()) }).full(ir);
    process.stdout.write(formatTable(modelToContents(model)));
    return errors ? 1 : 0;
  },
};

export default command;
