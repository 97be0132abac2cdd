/** The kernel's side of one endpoint change of the proxy's endpoint maps, layout against layout
 * in one namespace, alternately (issue 14): a chain of 50 endpoints gains or loses one, so every
 * share of its 65,536 draws moves (50 ranges out, 51 in, one transaction, the same ranges each
 * way). Layouts: the interval map the proxy uses (`id . draw` as one 32-bit key: nft_set_rbtree,
 * each range a start and an end element), and the concatenation `id . draw` with an interval
 * flag (nft_set_pipapo, each range one element with NFTA_SET_ELEM_KEY_END). Also how the
 * rbtree's cost grows with the chains sharing its block (the commit rebuilds the block's lookup
 * array), and the per-element baseline of a hash set, for the block size trade-off render.ts
 * documents. Last, what every commit pays for the chains of the namespace, whatever it changes:
 * nf_tables_commit walks every chain of every table (step 2, making new rule blobs visible), and
 * the proxy has a chain per service port. */
import { performance } from 'node:perf_hooks';
import * as C from '../src/nft/constants';
import { commit, Transaction } from '../src/nft/transaction';
import type { NftSet, SetElement } from '../src/nft/types';
import { openSandbox } from '../test/helpers/netns';
import { DRAWS, shareStart } from '../src/proxy/render';
import { ms, ratio, table } from './harness';

const TABLE = 'layout';
const ENDPOINTS = 50;
const DATA: NftSet['data'] = ['ipv4_addr', 'inet_service'];

const u32 = (x: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(x >>> 0);
  return b;
};
const endpointData = (i: number): Buffer => Buffer.concat([u32((100 << 24) | i), u32(8080 << 16)]);

interface Layout {
  set: NftSet;
  /** The shares of chain `id` among n endpoints. */
  shares(id: number, n: number): SetElement[];
}

function rbtree(name: string): Layout {
  return {
    set: { family: 'inet', table: TABLE, name, key: ['integer'], flags: C.NFT_SET_INTERVAL, data: DATA },
    shares: (id, n) => Array.from({ length: n }, (_, i) => ({ key: u32((id << 16) | shareStart(i, n)), keyEnd: u32((id << 16) | (shareStart(i + 1, n) - 1)), data: endpointData(i) })),
  };
}

function pipapo(name: string): Layout {
  return {
    set: { family: 'inet', table: TABLE, name, key: ['integer', 'integer'], flags: C.NFT_SET_INTERVAL, data: DATA },
    shares: (id, n) =>
      Array.from({ length: n }, (_, i) => ({ key: Buffer.concat([u32(id), u32(shareStart(i, n))]), keyEnd: Buffer.concat([u32(id), u32(shareStart(i + 1, n) - 1)]), data: endpointData(i) })),
  };
}

/** Chain ids spread over the 16-bit id space, as the draw slot hash spreads them. */
const chainIds = (chains: number): number[] => Array.from({ length: chains }, (_, j) => (j * 6151 + 17) & 0xffff);

interface Case {
  label: string;
  layout: Layout;
  ids: number[];
  n: number;
  times: number[];
}

/** p50 of a one-element commit with `chains` empty chains in the namespace's table. */
async function commitWithChains(chains: number): Promise<number> {
  const sb = openSandbox();
  try {
    const set: NftSet = { family: 'inet', table: TABLE, name: 'one', key: ['ipv4_addr'], flags: 0 };
    const tx = new Transaction().addTable({ family: 'inet', name: TABLE }).addSet(set);
    for (let i = 0; i < chains; i++) tx.addChain({ family: 'inet', table: TABLE, name: `c${i}` });
    await commit(sb.socket, tx, { echo: false });
    const element = [{ key: Buffer.from([198, 18, 0, 1]) }];
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = i % 2 ? new Transaction().deleteElements(set, element) : new Transaction().addElements(set, element);
      const t0 = performance.now();
      await commit(sb.socket, t, { echo: false });
      times.push(performance.now() - t0);
    }
    return [...times].sort((a, b) => a - b)[times.length >> 1];
  } finally {
    await sb.close();
  }
}

async function main(): Promise<void> {
  const sb = openSandbox();
  const rows: string[][] = [];
  try {
    const cases: Case[] = [
      ...[1, 10, 50].map((chains) => ({ label: `rbtree, ${chains} chains in the block`, layout: rbtree(`rb-${chains}`), ids: chainIds(chains), n: ENDPOINTS, times: [] as number[] })),
      ...[1, 10].map((chains) => ({ label: `pipapo, ${chains} chains in the block`, layout: pipapo(`pp-${chains}`), ids: chainIds(chains), n: ENDPOINTS, times: [] as number[] })),
    ];
    const tx = new Transaction().addTable({ family: 'inet', name: TABLE });
    for (const c of cases) {
      tx.addSet(c.layout.set);
      for (const id of c.ids) tx.addElements(c.layout.set, c.layout.shares(id, ENDPOINTS));
    }
    await commit(sb.socket, tx, { echo: false });
    // The per-element baseline: 102 elements (what 51 ranges are to the rbtree) in and out of a hash set.
    const hash: NftSet = { family: 'inet', table: TABLE, name: 'hash', key: ['ipv4_addr', 'ipv4_addr'], flags: 0 };
    await commit(sb.socket, new Transaction().addSet(hash), { echo: false });
    const hashElements = Array.from({ length: 2 * (ENDPOINTS + 1) }, (_, i) => ({ key: Buffer.concat([u32(0x0a000000 + i), u32(1)]) }));
    const hashTimes: number[] = [];
    let hashIn = false;
    const rounds = Number(process.env.PROXY_LAYOUT_ROUNDS ?? 60);
    for (let r = 0; r < rounds; r++) {
      for (const c of r % 2 ? cases : [...cases].reverse()) {
        // pipapo takes tens of milliseconds a change: a few rounds tell.
        if (c.label.startsWith('pipapo') && r >= 10) continue;
        const id = c.ids[c.ids.length >> 1];
        const next = c.n === ENDPOINTS ? ENDPOINTS + 1 : ENDPOINTS;
        const change = new Transaction().deleteElements(c.layout.set, c.layout.shares(id, c.n)).addElements(c.layout.set, c.layout.shares(id, next));
        const t0 = performance.now();
        await commit(sb.socket, change, { echo: false });
        c.times.push(performance.now() - t0);
        c.n = next;
      }
      const h = hashIn ? new Transaction().deleteElements(hash, hashElements) : new Transaction().addElements(hash, hashElements);
      const t0 = performance.now();
      await commit(sb.socket, h, { echo: false });
      hashTimes.push(performance.now() - t0);
      hashIn = !hashIn;
    }
    const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    const base = p50(cases[1].times);
    for (const c of cases) rows.push([c.label, `${c.times.length}`, ms(p50(c.times)), ratio(p50(c.times), base)]);
    rows.push([`hash set, ${hashElements.length} elements in or out (per-element baseline)`, `${hashTimes.length}`, ms(p50(hashTimes)), ratio(p50(hashTimes), base)]);
  } finally {
    await sb.close();
  }
  process.stdout.write(`## Proxy endpoint-map layouts (kernel side of one endpoint change, ${ENDPOINTS} <-> ${ENDPOINTS + 1} endpoints of ${DRAWS} draws)\n\n`);
  process.stdout.write(table(['layout', 'changes', 'commit p50', 'vs rbtree, 10 chains (the proxy at 5k x 50)'], rows) + '\n\n');
  const chainRows: string[][] = [];
  let none = 0;
  for (const chains of [0, 1000, 5000, 10000, 20000]) {
    const t = await commitWithChains(chains);
    if (chains === 0) none = t;
    chainRows.push([`${chains}`, ms(t), ratio(t, none)]);
  }
  process.stdout.write('### One-element commit by chains in the namespace (nf_tables_commit walks them all)\n\n');
  process.stdout.write(table(['chains', 'commit p50', 'vs none'], chainRows) + '\n');
}

void main();
