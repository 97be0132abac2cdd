/** Multicast groups and socket filters on a real kernel: a socket in NFNLGRP_NFTABLES hears each
 * commit; filtered to NFT_MSG_NEWGEN it hears only the generation, once per commit, with the
 * generation NFT_MSG_GETGEN then reads; a malformed program is refused before the kernel. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acceptFirstMessageType, encodeSockFilter } from '../../src/netlink/bpf';
import { decodeNfMessages } from '../../src/netlink/message';
import { NetlinkSocket } from '../../src/netlink/socket';
import * as C from '../../src/nft/constants';
import { decodeGeneration, getGeneration } from '../../src/nft/generation';
import { msg } from '../../src/nft/objects/codec';
import { withSandbox } from '../helpers/netns';

const NFNLGRP_NFTABLES = 7;

/** Every datagram a listening socket receives, as lists of message types (and NEWGEN ids). */
function listenAll(socket: NetlinkSocket): { types: number[][]; gens: number[] } {
  const seen = { types: [] as number[][], gens: [] as number[] };
  socket.listen((messages) => {
    const decoded = decodeNfMessages(messages);
    seen.types.push(decoded.map((m) => m.type));
    for (const m of decoded) if (m.type === msg(C.NFT_MSG_NEWGEN)) seen.gens.push(decodeGeneration(m.payload));
  });
  return seen;
}

const settle = () => new Promise((r) => setTimeout(r, 200));

test('a group member hears every commit; filtered to NEWGEN, only the generation, once per commit', { timeout: 30_000 }, async () => {
  await withSandbox(async (sb) => {
    const all = sb.socket.sibling();
    const gens = sb.socket.sibling();
    try {
      all.joinGroup(NFNLGRP_NFTABLES);
      gens.attachFilter(acceptFirstMessageType(msg(C.NFT_MSG_NEWGEN)));
      gens.joinGroup(NFNLGRP_NFTABLES);
      const everything = listenAll(all);
      const onlyGen = listenAll(gens);
      sb.run('nft', ['add table inet g; add chain inet g c; add rule inet g c accept']);
      sb.run('nft', ['add rule inet g c drop']);
      await settle();
      const now = await getGeneration(sb.socket);
      // Unfiltered: the objects (table, chain, rules) as well as the generations.
      const types = everything.types.flat();
      assert.ok(types.includes(msg(C.NFT_MSG_NEWTABLE)) && types.includes(msg(C.NFT_MSG_NEWRULE)), JSON.stringify(types));
      assert.deepEqual(everything.gens, [now - 1, now]);
      // Filtered: nothing but the NEWGEN of each commit was queued.
      assert.deepEqual(onlyGen.types.flat(), [msg(C.NFT_MSG_NEWGEN), msg(C.NFT_MSG_NEWGEN)]);
      assert.deepEqual(onlyGen.gens, [now - 1, now]);
    } finally {
      await all.close();
      await gens.close();
    }
  });
});

test('a socket filter that is not whole instructions is refused', async () => {
  await withSandbox(async (sb) => {
    const s = sb.socket;
    assert.throws(() => s.attachFilter(Buffer.alloc(12)), RangeError);
    assert.throws(() => s.attachFilter(Buffer.alloc(0)), RangeError);
    // A well-formed program the kernel's verifier refuses (no return) is the kernel's EINVAL.
    assert.throws(() => s.attachFilter(encodeSockFilter([[0x28, 0, 0, 4]])), (err: NodeJS.ErrnoException) => err.code === 'EINVAL' || /EINVAL/.test(String(err.message)));
  });
});
