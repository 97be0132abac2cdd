/** The options that shape a table, as the agent records them in it (Table.options) and the read
 * commands (verify, explain, status) take them back: they agree with the running agent without
 * its flags being repeated. What the user gives explicitly (flag, NFKUBE_*, --config) still wins,
 * with a note when it differs from the record. */
import { parseArgs } from 'node:util';
import type { DropLogOptions } from '../policy/render/tail';
import type { ProxyOptions } from '../proxy/component';
import type { OptionValues } from './config';
import type { NetlinkSocket } from '../netlink/socket';
import { isNfkubeTable } from '../nft/ownership';
import { listTables } from '../nft/readback';
import type { Family } from '../nft/types';
import { DEFAULT_PROXY_TABLE } from '../proxy/render';
import { tableName } from './options';

/** The recorded options of the policy table, and of the proxy's. */
export const POLICY_RECORDED = ['deny-action', 'log-drops', 'log-group', 'log-rate', 'log-burst', 'policy-mode'] as const;
export const PROXY_RECORDED = ['cluster-cidr', 'nodeport-addresses', 'masquerade-all', 'allowed-external-ip-cidrs'] as const;
const RECORDED_TYPES: Record<string, 'string' | 'boolean'> = { 'log-drops': 'boolean', 'masquerade-all': 'boolean' };

/** `--name=value` words, `--name` for a boolean that is on; the order is fixed so one setting
 * always records the same text. */
function flagText(entries: [string, string | boolean | undefined][]): string {
  return entries
    .filter(([, v]) => v !== undefined && v !== false)
    .map(([k, v]) => (v === true ? `--${k}` : `--${k}=${v}`))
    .join(' ');
}

/** The policy table's record, from the options the agent runs with. */
export function policyRecord(o: { denyAction: string; log?: DropLogOptions; policyMode?: string }): string {
  return flagText([
    ['deny-action', o.denyAction],
    ['log-drops', o.log !== undefined],
    ['log-group', o.log?.group.toString()],
    ['log-rate', o.log?.rate.toString()],
    ['log-burst', o.log?.burst.toString()],
    ['policy-mode', o.policyMode],
  ]);
}

/** The proxy table's record. */
export function proxyRecord(o: Omit<ProxyOptions, 'nodeName'>): string {
  const np = o.nodePortAddresses;
  return flagText([
    ['cluster-cidr', o.clusterCIDRs?.join(',')],
    ['nodeport-addresses', np === undefined || np === 'primary' ? undefined : np.join(',')],
    ['masquerade-all', o.masqueradeAll === true],
    ['allowed-external-ip-cidrs', o.allowedExternalIPCIDRs?.length ? o.allowedExternalIPCIDRs.join(',') : undefined],
  ]);
}

/** A record read back, as option values; words it does not know (a newer agent's) are skipped. */
export function readRecord(text: string, names: readonly string[]): OptionValues {
  const options = Object.fromEntries(names.map((n) => [n, { type: RECORDED_TYPES[n] ?? 'string' }]));
  const { values } = parseArgs({ args: text.split(' ').filter(Boolean), options, strict: false, allowPositionals: true });
  return Object.fromEntries(Object.entries(values).filter(([k, v]) => names.includes(k) && typeof v === (RECORDED_TYPES[k] ?? 'string'))) as OptionValues;
}

/** The user's options with the record filling in what they leave out; `note` is told of each
 * option the user gave differently. */
export function withRecorded(given: OptionValues, recorded: OptionValues, where: string, note: (text: string) => void): OptionValues {
  const out = { ...given };
  for (const [k, v] of Object.entries(recorded)) {
    if (out[k] === undefined) out[k] = v;
    else if (out[k] !== v) note(`--${k}${out[k] === true ? '' : ` ${String(out[k])}`} differs from ${v === true ? `--${k}` : `${v}`}, which the agent recorded in table ${where}; using the given value`);
  }
  return out;
}

/** The record of table `family name` as option values ({} when the table is absent, not
 * nfkube's, or records nothing). */
export async function readTableRecord(socket: NetlinkSocket, family: Family, name: string, names: readonly string[]): Promise<OptionValues> {
  const t = (await listTables(socket, family)).find((x) => x.name === name);
  return t?.options !== undefined && isNfkubeTable(t) ? readRecord(t.options, names) : {};
}

/** The user's options completed from the records of the policy table and, with --proxy, the
 * proxy's; each difference is noted on stderr as `nfkube COMMAND: note: ...`. */
export async function withTableRecords(socket: NetlinkSocket, command: string, given: OptionValues): Promise<OptionValues> {
  const policyTable = tableName(given.table);
  const proxyTable = tableName((given['proxy-table'] as string | undefined) ?? DEFAULT_PROXY_TABLE);
  const note = (text: string) => process.stderr.write(`nfkube ${command}: note: ${text}\n`);
  let v = withRecorded(given, await readTableRecord(socket, 'inet', policyTable, POLICY_RECORDED), `inet ${policyTable}`, note);
  if (v.proxy === true) v = withRecorded(v, await readTableRecord(socket, 'inet', proxyTable, PROXY_RECORDED), `inet ${proxyTable}`, note);
  return v;
}
