/** `nfkube cleanup`: remove nfkube's own table, and nothing else. */
import { NetlinkSocket } from '../../netlink/socket';
import { commit, Transaction } from '../../nft/transaction';
import { Command } from '../command';
import { COMMON_OPTIONS, parse, tableName, usageText } from '../options';

const options = { table: COMMON_OPTIONS.table };
const usage = usageText('nfkube cleanup [--table NAME]', options, "Deletes nfkube's own table (family inet), whether or not it exists; nothing else.");

const command: Command = {
  summary: "remove nfkube's own nftables table (other tables are never touched)",
  usage,
  options,
  async run(args) {
    const v = parse(args, options, usage);
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
