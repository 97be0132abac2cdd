/** `nfkube cleanup`: remove nfkube's own table, and nothing else. */
import { policyTable } from '../../agent/policy-component';
import { NetlinkSocket } from '../../netlink/socket';
import { commit, Transaction } from '../../nft/transaction';
import { DEFAULT_PROXY_TABLE } from '../../proxy/render';

import { Command } from '../command';
import { parse, tableName } from '../options';

const usage = 'usage: nfkube cleanup [--table T] [--proxy-table T]';

const command: Command = {
  summary: "remove nfkube's own nftables tables, policy and proxy (other tables are never touched)",
  usage,
  async run(args, ctx) {
    const v = parse(args, { table: { type: 'string' }, 'proxy-table': { type: 'string' } }, usage);
    const table = policyTable(tableName(v.table));
    const proxy = { family: 'inet' as const, name: tableName((v['proxy-table'] as string | undefined) ?? DEFAULT_PROXY_TABLE) };
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    // add-then-delete: valid whether or not the table exists, on every kernel.
    await commit(socket, new Transaction().addTable(table).deleteTable(table).addTable(proxy).deleteTable(proxy));
    return 0;
  },
};

export default command;
