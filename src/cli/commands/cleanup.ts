/** `nfkube cleanup`: remove nfkube's own table, and nothing else. */
import { policyTable } from '../../agent/policy-component';
import { NetlinkSocket } from '../../netlink/socket';
import { deleteOwnTable } from '../../nft/ownership';
import { Command } from '../command';
import { COMMON_OPTIONS, parse, tableName, usageText } from '../options';

const options = { table: COMMON_OPTIONS.table };
const usage = usageText('nfkube cleanup [--table NAME]', options, "Deletes nfkube's own table (family inet), whether or not it exists; nothing else.");

const command: Command = {
  summary: "remove nfkube's own nftables table (other tables are never touched)",
  usage,
  options,
  async run(args, ctx) {
    const v = parse(args, options, usage);
    const table = policyTable(tableName(v.table));
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    // A table of that name nfkube did not create, or one a running agent holds, is refused.
    await deleteOwnTable(socket, table.family, table.name);
    return 0;
  },
};

export default command;
