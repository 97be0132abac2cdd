/** `nfkube cleanup`: remove nfkube's own table, and nothing else. */
import { policyTable } from '../../agent/policy-component';
import { NetlinkSocket } from '../../netlink/socket';
import { deleteOwnTable } from '../../nft/ownership';
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
    // A table of that name nfkube did not create, or one a running agent holds, is refused.
    await deleteOwnTable(socket, table.family, table.name);
    return 0;
  },
};

export default command;
