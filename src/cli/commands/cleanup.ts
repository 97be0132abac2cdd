/** `nfkube cleanup`: remove nfkube's own table, and nothing else. */
import { policyTable } from '../../agent/policy-component';
import { NetlinkSocket } from '../../netlink/socket';
import { commit, Transaction } from '../../nft/transaction';

import { Command } from '../command';
import { parse, tableName } from '../options';

const usage = 'usage: nfkube cleanup [--table T]';

const command: Command = {
  summary: "remove nfkube's own nftables table (other tables are never touched)",
  usage,
  async run(args, ctx) {
    const v = parse(args, { table: { type: 'string' } }, usage);
    const table = policyTable(tableName(v.table));
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    // add-then-delete: valid whether or not the table exists, on every kernel.
    await commit(socket, new Transaction().addTable(table).deleteTable(table));
    return 0;
  },
};

export default command;
