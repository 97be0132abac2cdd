/** Read-back: the kernel's nf_tables state as the same typed objects nfkube writes. */
import { AttrWriter } from '../netlink/attr';
import { encodeNfMessage, NFNL_SUBSYS_NFTABLES, NfMessage, nfMsgType, NLM_F_DUMP, NLM_F_REQUEST } from '../netlink/message';
import { NetlinkSocket } from '../netlink/socket';
import { getGeneration } from './generation';
import { checkElements, decodeChain, decodeRule, decodeSet, decodeSetElements, decodeTable, userElements } from './objects';
import * as C from './constants';
import { Chain, Family, NFPROTO, NftSet, Rule, SetElement, Table, TableContents } from './types';

const msg = (m: number) => nfMsgType(NFNL_SUBSYS_NFTABLES, m);

function dumpRequest(socket: NetlinkSocket, type: number, family: number, payload?: Buffer): Buffer {
  return encodeNfMessage({ type: msg(type), flags: NLM_F_REQUEST | NLM_F_DUMP, seq: socket.nextSeq(), family, payload });
}

export async function listTables(socket: NetlinkSocket, family?: Family): Promise<Table[]> {
  // A node has a few tables, one short message each: read on the calling thread (see dumpAll),
  // sparing a trip to the I/O thread at every start, table check and read-back.
  const [msgs] = await socket.dumpAll([dumpRequest(socket, C.NFT_MSG_GETTABLE, family ? NFPROTO[family] : 0)], () => 'NFT_MSG_GETTABLE', { small: true });
  return msgs.map((m) => decodeTable(m.family, m.payload));
}

/** Chains of one table, or of every table when table is omitted. */
export async function listChains(socket: NetlinkSocket, family?: Family, table?: string): Promise<Chain[]> {
  const payload = table ? new AttrWriter().str(C.NFTA_CHAIN_TABLE, table).finish() : undefined;
  const msgs = await socket.dump(dumpRequest(socket, C.NFT_MSG_GETCHAIN, family ? NFPROTO[family] : 0, payload), 'NFT_MSG_GETCHAIN');
  return msgs.map((m) => decodeChain(m.family, m.payload)).filter((c) => !table || c.table === table);
}

export async function listRules(socket: NetlinkSocket, family: Family, table: string, chain?: string): Promise<Rule[]> {
  const w = new AttrWriter().str(C.NFTA_RULE_TABLE, table);
  if (chain) w.str(C.NFTA_RULE_CHAIN, chain);
  const msgs = await socket.dump(dumpRequest(socket, C.NFT_MSG_GETRULE, NFPROTO[family], w.finish()), 'NFT_MSG_GETRULE');
  return msgs.map((m) => decodeRule(m.family, m.payload)).filter((r) => r.table === table && (!chain || r.chain === chain));
}

/** The rules of several chains of one table (by chain name), in one batch of dumps. */
export async function listChainRules(socket: NetlinkSocket, family: Family, table: string, chains: string[]): Promise<Map<string, Rule[]>> {
  const requests = chains.map((chain) =>
    dumpRequest(socket, C.NFT_MSG_GETRULE, NFPROTO[family], new AttrWriter().str(C.NFTA_RULE_TABLE, table).str(C.NFTA_RULE_CHAIN, chain).finish()),
  );
  // A handful of chains is read on the calling thread (see NetlinkSocket.dumpAll).
  const dumps = await socket.dumpAll(requests, (i) => `NFT_MSG_GETRULE ${chains[i]}`, { small: chains.length <= 16 });
  const out = new Map<string, Rule[]>();
  chains.forEach((chain, i) => out.set(chain, dumps[i].map((m) => decodeRule(m.family, m.payload)).filter((r) => r.table === table && r.chain === chain)));
  return out;
}

export async function listSets(socket: NetlinkSocket, family: Family, table: string): Promise<NftSet[]> {
  const payload = new AttrWriter().str(C.NFTA_SET_TABLE, table).finish();
  const msgs = await socket.dump(dumpRequest(socket, C.NFT_MSG_GETSET, NFPROTO[family], payload), 'NFT_MSG_GETSET');
  return msgs.map((m) => decodeSet(m.family, m.payload)).filter((s) => s.table === table);
}

/** Runs a group of dumps until no commit happened while they ran. A commit bumps the ruleset
 * generation before any of its changes become visible, and a multi-part dump is otherwise not
 * isolated from a concurrent commit, so equal generations before and after prove the reads saw
 * one state. Returns that generation with the result, for optimistic commits (NFNL_BATCH_GENID). */
export async function consistentRead<T>(socket: NetlinkSocket, read: () => Promise<T>, attempts = 20): Promise<{ value: T; genId: number }> {
  for (let i = 0; i < attempts; i++) {
    const before = await getGeneration(socket);
    const value = await read();
    const after = await getGeneration(socket);
    if (before === after) return { value, genId: after };
    // A busy writer commits back to back: wait a growing, jittered while for a quiet moment.
    await new Promise((r) => setTimeout(r, Math.random() * Math.min(200, 2 ** i)));
  }
  throw new Error(`the ruleset kept changing during ${attempts} attempts to read it`);
}

/** The elements of one set, read in one consistent state. */
export async function listElements(socket: NetlinkSocket, set: NftSet): Promise<SetElement[]> {
  return (await consistentRead(socket, () => dumpElements(socket, set))).value;
}

function elementsRequest(socket: NetlinkSocket, set: NftSet): Buffer {
  const payload = new AttrWriter().str(C.NFTA_SET_ELEM_LIST_TABLE, set.table).str(C.NFTA_SET_ELEM_LIST_SET, set.name).finish();
  return dumpRequest(socket, C.NFT_MSG_GETSETELEM, NFPROTO[set.family], payload);
}

/** One set's element dump as user-level elements, checked against the set's types. */
export function decodeElementDump(set: NftSet, msgs: Pick<NfMessage, 'payload'>[]): SetElement[] {
  const raw = msgs.flatMap((m) => decodeSetElements(m.payload).elements);
  checkElements(set, raw);
  return userElements(set, raw);
}

async function dumpElements(socket: NetlinkSocket, set: NftSet): Promise<SetElement[]> {
  return decodeElementDump(set, await socket.dump(elementsRequest(socket, set), 'NFT_MSG_GETSETELEM'));
}

/** The elements of many sets, in one batch of dumps on the socket. */
async function dumpElementsOf(socket: NetlinkSocket, sets: NftSet[]): Promise<SetElement[][]> {
  const msgs = await socket.dumpAll(
    sets.map((s) => elementsRequest(socket, s)),
    (i) => `NFT_MSG_GETSETELEM ${sets[i].name}`,
  );
  return msgs.map((m, i) => decodeElementDump(sets[i], m));
}

/** Everything in one table, read in one consistent state; undefined when the table does not exist. */
export async function listTable(socket: NetlinkSocket, family: Family, name: string): Promise<TableContents | undefined> {
  return (await readTable(socket, family, name)).value;
}

/** listTable with the generation it was read at. */
export function readTable(socket: NetlinkSocket, family: Family, name: string): Promise<{ value: TableContents | undefined; genId: number }> {
  return consistentRead(socket, () => dumpTable(socket, family, name));
}

async function dumpTable(socket: NetlinkSocket, family: Family, name: string): Promise<TableContents | undefined> {
  const table = (await listTables(socket, family)).find((t) => t.name === name);
  if (!table) return undefined;
  // A socket carries one dump at a time. A second one reads the rules (the bulk of the bytes)
  // while the first reads chains, sets and elements; elements are then shared between both.
  const helper = socket.sibling();
  try {
    const rulesRead = listRules(helper, family, name);
    const [chains, sets] = await Promise.all([listChains(socket, family, name), listSets(socket, family, name)]);
    const half = Math.ceil(sets.length / 2);
    const [first, second] = await Promise.all([dumpElementsOf(socket, sets.slice(0, half)), dumpElementsOf(helper, sets.slice(half))]);
    const elements = new Map<string, SetElement[]>();
    sets.forEach((s, i) => elements.set(s.name, i < half ? first[i] : second[i - half]));
    const rules = await rulesRead;
    return { table, chains, rules, sets, elements };
  } finally {
    await helper.close();
  }
}
