/** `nfkube cleanup`: remove nfkube's own table, and nothing else. */
import { policyTable } from '../../policy/component';
import { TableRef } from '../../pipeline/component';
import { NetlinkSocket } from '../../netlink/socket';
import { deleteOwnTable } from '../../nft/ownership';
import { DEFAULT_PROXY_TABLE } from '../../proxy/render';
import { Command } from '../command';
import { PROXY_CLI_OPTIONS } from '../proxy-options';
import { COMMON_OPTIONS, parse, tableName, usageText } from '../options';

/** The names of nfkube's tables; `nfkube uninstall` takes them too. */
export const TABLE_OPTIONS = {
  table: COMMON_OPTIONS.table,
  'proxy-table': PROXY_CLI_OPTIONS['proxy-table'],
} as const;
const options = TABLE_OPTIONS;
const usage = usageText('nfkube cleanup [--table NAME] [--proxy-table NAME]', options, "Deletes nfkube's own tables (policy and proxy, family inet), whether or not they exist; nothing else.");

const command: Command = {
  summary: "remove nfkube's own nftables tables, policy and proxy (other tables are never touched)",
  usage,
  options,
  async run(args, ctx) {
    const v = parse(args, options, usage);
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    // A table of that name nfkube did not create, or one a running agent holds, is refused.
    for (const [name, done] of await deleteOwnTables(socket, v)) {
      process.stdout.write(done === 'deleted' ? `deleted table ${name}\n` : `table ${name} does not exist: nothing to delete\n`);
    }
    return 0;
  },
};

/** Deletes the policy and proxy tables named by the `table` and `proxy-table` options; returns
 * each as `inet NAME` with what happened to it. A table of that name nfkube did not create, or
 * one a running agent holds, is refused (ForeignTableError). */
export async function deleteOwnTables(socket: NetlinkSocket, v: Record<string, string | boolean | undefined>): Promise<[string, 'deleted' | 'absent'][]> {
  const done: [string, 'deleted' | 'absent'][] = [];
  for (const t of ownTables(v)) done.push([`${t.family} ${t.name}`, await deleteOwnTable(socket, t.family, t.name)]);
  return done;
}

/** The policy and proxy tables the TABLE_OPTIONS values name. */
export function ownTables(v: Record<string, string | boolean | undefined>): TableRef[] {
  return [policyTable(tableName(v.table)), { family: 'inet', name: tableName((v['proxy-table'] as string | undefined) ?? DEFAULT_PROXY_TABLE) }];
}

export default command;
