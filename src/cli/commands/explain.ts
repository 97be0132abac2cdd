/** `nfkube explain SRC DST`: why a flow is allowed or denied, from the model the agent enforces
 * and from the table read back from the kernel; exit 1 when the two disagree. */
import { NetlinkSocket } from '../../netlink/socket';
import { listTable } from '../../nft/readback';
import { explainFlow, formatExplanation } from '../../explain/explain';
import { explainTiers } from '../../explain/tier-verdict';
import { flowPackets, FlowProtocol, resolveEndpoint } from '../../explain/flow';
import { Command } from '../command';
import { desiredComponents, policyOf } from '../../node/desired';
import { enabledFeatures, kindsOf } from '../../node/enabled';
import { readSnapshot } from '../../node/source';
import { nodeName, OptionTable, parseWithPositionals, SOURCE_OPTIONS, tableName, usageText } from '../options';
import { UsageError } from '../../options/usage-error';
import { withTableRecords } from '../table-record';

const options = {
  ...SOURCE_OPTIONS,
  port: { type: 'string', value: 'PORT', description: 'the destination port (1-65535)', default: 'any' },
  protocol: { type: 'string', value: 'tcp|udp|sctp', description: 'the transport protocol', default: 'tcp' },
} as const satisfies OptionTable;
const usage = usageText('nfkube explain SRC DST [options]', options, 'SRC, DST: namespace/pod or an address. Prints the verdict of the model the agent enforces and of the table read back\nfrom the kernel, with the policies and rules that decide; exit 1 when they disagree.');

const command: Command = {
  summary: 'explain why a flow is allowed or denied: the model and the kernel, side by side',
  usage,
  options,
  async run(args, ctx) {
    const parsed = parseWithPositionals(args, options, usage);
    if (parsed.positionals.length !== 2) throw new UsageError('needs SRC and DST (see nfkube explain --help)');
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    const v = await withTableRecords(socket, 'explain', parsed.values);
    const protocol = (v.protocol ?? 'tcp').toLowerCase();
    if (protocol !== 'tcp' && protocol !== 'udp' && protocol !== 'sctp') throw new Error(`--protocol: "${v.protocol}" is not tcp, udp or sctp`);
    const portText = v.port;
    const port = portText === undefined ? 0 : Number(portText);
    if (portText !== undefined && (!/^\d+$/.test(portText) || port < 1 || port > 65535)) throw new Error(`--port: "${portText}" is not a port from 1 to 65535`);
    const table = tableName(v.table);

    const enabled = enabledFeatures(v);
    const snap = await readSnapshot(v, ctx, kindsOf(enabled));
    const policy = policyOf(desiredComponents(enabled, snap, nodeName(v['node-name']), v))!;
    const [ir, modes] = [policy.state(), policy.modes];
    const [src, dst] = parsed.positionals.map((t) => resolveEndpoint(t, snap.pods));
    const tiers = explainTiers(snap, nodeName(v['node-name']), modes);

    const back = await listTable(socket, 'inet', table);
    if (!back) process.stdout.write(`table inet ${table} does not exist: the kernel enforces nothing of nfkube's\n`);
    let agree = true;
    let unknown = false;
    for (const packet of flowPackets(src, dst, protocol as FlowProtocol, port)) {
      const e = explainFlow(ir, modes, back, packet, tiers);
      process.stdout.write(formatExplanation(e, `${src.text} -> ${dst.text}`));
      agree &&= e.agree;
      unknown ||= !e.kernel;
    }
    if (unknown) process.stderr.write('nfkube: the kernel verdict is unknown: the table holds a rule explain cannot evaluate for this flow (named above)\n');
    else if (!agree) process.stderr.write('nfkube: the model and the kernel disagree: the table does not enforce what the cluster says (run nfkube verify)\n');
    return agree ? 0 : 1;
  },
};

export default command;
