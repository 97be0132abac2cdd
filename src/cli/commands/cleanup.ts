/** `nfkube cleanup`: remove nfkube's own table, and nothing else. */
import { policyTable } from '../../agent/policy-component';
import { NetlinkSocket } from '../../netlink/socket';
import { deleteOwnTable } from '../../nft/ownership';
import { DEFAULT_PROXY_TABLE } from '../../proxy/render';
import { Command } from '../command';
import { PROXY_CLI_OPTIONS } from '../proxy-options';
import { COMMON_OPTIONS, parse, tableName, usageText } from '../options';

const options = {
  table: COMMON_OPTIONS.table,
  'proxy-table': PROXY_CLI_OPTIONS['proxy-table'],
} as const;
const usage = usageText('nfkube cleanup [--table NAME] [--proxy-table NAME]', options, "Deletes nfkube's own tables (policy and proxy, family inet), whether or not they exist; nothing else.");

const command: Command = {
  summary: "remove nfkube's own nftables tables, policy and proxy (other tables are never touched)",
  usage,
  options,
  async run(args, ctx) {
    const v = parse(args, options, usage);
    const table = policyTable(tableName(v.table));
    const proxy = { family: 'inet' as const, name: tableName((v['proxy-table'] as string | undefined) ?? DEFAULT_PROXY_TABLE) };
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    // A table of that name nfkube did not create, or one a running agent holds, is refused.
    for (const t of [table, proxy]) {
      const done = await deleteOwnTable(socket, t.family, t.name);
      process.stdout.write(done === 'deleted' ? `deleted table ${t.family} ${t.name}\n` : `table ${t.family} ${t.name} does not exist: nothing to delete\n`);
    }
    return 0;
  },
};

export default command;
