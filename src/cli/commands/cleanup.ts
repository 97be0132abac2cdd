/** `nfkube cleanup`: remove nfkube's own table, and nothing else. */
import { NetlinkSocket } from '../../netlink/socket';
import { commit, Transaction } from '../../nft/transaction';
import { Command } from '../command';
import { parse, tableName } from '../options';

const usage = 'usage: nfkube cleanup [--table T]';

const command: Command = {
  summary: "remove nfkube's own nftables table (other tables are never touched)",
  usage,
  async run(args) {
    const v = parse(args, { table: { type: 'string' } }, usage);
    const table = { family: 'inet' as const, name: tableName(v.table) };
    const socket = NetlinkSocket.open();
    try {
      // add-then-delete: valid whether or not the table exists, on every kernel.
      await commit(socket, new Transaction().addTable(table).deleteTable(table));
    } finally {
      await socket.close();
    }
    return 0;
  },
};

export default command;
