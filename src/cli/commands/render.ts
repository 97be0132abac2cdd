/** `nfkube render`: print the ruleset the agent would enforce, without touching the kernel.
 * Exits 1 when any input could not be read or rendered as written: what is printed then is what
 * the agent would enforce, with those objects failing closed. Warnings do not change the exit. */
import { Renderer } from '../../agent/render';
import { ManifestSource } from '../../k8s/manifest-source';
import { formatTable } from '../../nft/format';
import { compileFull } from '../../policy/compile';
import { modelToContents } from '../../ruleset/model';
import { Command } from '../command';
import { PROXY_CLI_OPTIONS, PROXY_USAGE, proxyChoice, proxyComponent } from '../proxy-options';
import { denyAction, nodeName, parse, tableName } from '../options';

const usage = `usage: nfkube render --manifests DIR [--node-name N] [--table T] [--deny-action drop|reject]
                     ${PROXY_USAGE}`;

const command: Command = {
  summary: 'print the nftables ruleset for a manifests directory (no root needed)',
  usage,
  async run(args, ctx) {
    const v = parse(args, { manifests: { type: 'string' }, 'node-name': { type: 'string' }, table: { type: 'string' }, 'deny-action': { type: 'string' }, ...PROXY_CLI_OPTIONS }, usage);
    const choice = proxyChoice(v);
    if (!v.manifests) throw new Error(`--manifests is required\n${usage}`);
    let errors = 0;
    // `object field` of problems already reported by the source, so the compiler's copy of a
    // problem normalization survived is not printed twice.
    const reported = new Set<string>();
    const source = new ManifestSource({
      dir: v.manifests as string,
      kinds: choice.kinds,
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
    if (choice.policy) {
      const model = new Renderer({ table: tableName(v.table), denyAction: denyAction(v['deny-action']), onFailClosed }).full(ir);
      process.stdout.write(formatTable(modelToContents(model)));
    }
    if (choice.proxy) {
      const proxy = proxyComponent(choice.proxy, nodeName(v['node-name']));
      proxy.start(snap);
      process.stdout.write(formatTable(modelToContents(proxy.desired)));
    }
    return errors ? 1 : 0;
  },
};

export default command;
