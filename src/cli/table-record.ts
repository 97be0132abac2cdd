/** The options that shape a table, as the agent records them in it (Table.options) and the read
 * commands (verify, explain, status) take them back: they agree with the running agent without
 * its flags being repeated. What the user gives explicitly (flag, NFKUBE_*, --config) still wins,
 * with a note when it differs from the record. */
import { parseArgs } from 'node:util';
import { POLICY_RECORDED } from '../policy/table-record';
import { PROXY_RECORDED } from '../proxy/table-record';
import type { OptionValues } from './config';
import type { NetlinkSocket } from '../netlink/socket';
import { isNfkubeTable } from '../nft/ownership';
import { listTables } from '../nft/readback';
import type { Family } from '../nft/types';
import { DEFAULT_PROXY_TABLE } from '../proxy/render';
import { stringOption } from '../options/values';
import { tableName } from './options';

export { POLICY_RECORDED, policyRecord } from '../policy/table-record';
export { PROXY_RECORDED, proxyRecord } from '../proxy/table-record';

const RECORDED_TYPES: Record<string, 'string' | 'boolean'> = { 'log-drops': 'boolean', 'masquerade-all': 'boolean' };

/** A record read back, as option values; words it does not know (a newer agent's) are skipped. */
export function readRecord(text: string, names: readonly string[]): OptionValues {
  const options = Object.fromEntries(names.map((n) => [n, { type: RECORDED_TYPES[n] ?? 'string' }]));
  const { values } = parseArgs({ args: text.split(' ').filter(Boolean), options, strict: false, allowPositionals: true });
  return Object.fromEntries(Object.entries(values).filter(([k, v]) => names.includes(k) && typeof v === (RECORDED_TYPES[k] ?? 'string'))) as OptionValues;
}

/** The user's options with the record filling in what they leave out; `note` is told of each
 * option the user gave differently. */
export function withRecorded<V extends OptionValues>(given: V, recorded: OptionValues, where: string, note: (text: string) => void): V {
  const out: OptionValues = { ...given };
  for (const [k, v] of Object.entries(recorded)) {
    if (out[k] === undefined) out[k] = v;
    else if (out[k] !== v) note(`--${k}${out[k] === true ? '' : ` ${String(out[k])}`} differs from ${v === true ? `--${k}` : `${v}`}, which the agent recorded in table ${where}; using the given value`);
  }
  // readRecord keeps only recorded options, each of its recorded type.
  return out as V;
}

/** The record of table `family name` as option values ({} when the table is absent, not
 * nfkube's, or records nothing). */
export async function readTableRecord(socket: NetlinkSocket, family: Family, name: string, names: readonly string[]): Promise<OptionValues> {
  const t = (await listTables(socket, family)).find((x) => x.name === name);
  return t?.options !== undefined && isNfkubeTable(t) ? readRecord(t.options, names) : {};
}

/** The user's options completed from the records of the policy table and, with --proxy, the
 * proxy's; each difference is noted on stderr as `nfkube COMMAND: note: ...`. */
export async function withTableRecords<V extends OptionValues>(socket: NetlinkSocket, command: string, given: V): Promise<V> {
  const policyTable = tableName(stringOption(given, 'table'));
  const proxyTable = tableName(stringOption(given, 'proxy-table') ?? DEFAULT_PROXY_TABLE);
  const note = (text: string) => process.stderr.write(`nfkube ${command}: note: ${text}\n`);
  let v = withRecorded(given, await readTableRecord(socket, 'inet', policyTable, POLICY_RECORDED), `inet ${policyTable}`, note);
  if (v.proxy === true) v = withRecorded(v, await readTableRecord(socket, 'inet', proxyTable, PROXY_RECORDED), `inet ${proxyTable}`, note);
  return v;
}
