/** Issue 2 benchmark: load 50,000 set elements and 2,000 rules, nfkube vs `nft -f`; read the
 * same ruleset back, nfkube vs `nft -j list ruleset`. Same fresh namespace setup for both. */
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as b from '../src/nft/build';
import { listTable } from '../src/nft/readback';
import { commit, Transaction } from '../src/nft/transaction';
import { NftSet, Rule } from '../src/nft/types';
import { ipv4 } from '../src/net/ip-bytes';
import { openSandbox } from '../test/helpers/netns';
import { median, ms, ratio, table } from './harness';

const ELEMENTS = 50_000;
const RULES = 2_000;
const RUNS = 5;

const addr = (i: number) => `198.${18 + (i >> 16)}.${(i >> 8) & 0xff}.${i & 0xff}`;
const peers: NftSet = { family: 'inet', table: 'bench', name: 'peers', key: ['ipv4_addr'], flags: 0 };

function nfkubeTransaction(): Transaction {
  const tx = new Transaction();
  tx.addTable({ family: 'inet', name: 'bench' });
  tx.addChain({ family: 'inet', table: 'bench', name: 'input', base: { hook: 'input', type: 'filter', priority: 0, policy: 'accept' } });
  tx.addSet(peers);
  tx.addElements(peers, Array.from({ length: ELEMENTS }, (_, i) => ({ key: ipv4(addr(i)) })));
  for (let i = 0; i < RULES; i++) {
    const r: Rule = { family: 'inet', table: 'bench', chain: 'input', exprs: [...b.matchAddrInSet('ip saddr', 'peers'), ...b.matchPort('tcp', 'th dport', 1000 + i), b.counter(), b.accept()] };
    tx.addRule(r);
  }
  return tx;
}

function nftScript(): string {
  const elems = Array.from({ length: ELEMENTS }, (_, i) => addr(i)).join(', ');
  const rules = Array.from({ length: RULES }, (_, i) => `    ip saddr @peers tcp dport ${1000 + i} counter accept`).join('\n');
  return `table inet bench {\n  set peers {\n    type ipv4_addr\n    elements = { ${elems} }\n  }\n  chain input {\n    type filter hook input priority 0; policy accept;\n${rules}\n  }\n}\n`;
}

async function main(): Promise<void> {
  const sb = openSandbox();
  try {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-bench-'));
    const file = join(dir, 'ruleset.nft');
    writeFileSync(file, nftScript());
    const reset = async () => void (await commit(sb.socket, new Transaction().destroyTable({ family: 'inet', name: 'bench' })));

    const nfkubeLoad = await median(RUNS, async () => void (await commit(sb.socket, nfkubeTransaction(), { echo: false })), reset);
    const nftLoad = await median(RUNS, () => void sb.run('nft', ['-f', file]), reset);

    const nfkubeRead = await median(RUNS, async () => void (await listTable(sb.socket, 'inet', 'bench')));
    const nftRead = await median(RUNS, () => void sb.run('nft', ['-j', 'list', 'ruleset']));

    process.stdout.write(
      `## nf_tables load and read-back (${ELEMENTS.toLocaleString('en')} elements, ${RULES.toLocaleString('en')} rules; median of ${RUNS})\n\n` +
        table(
          ['operation', 'nfkube', 'nft', 'nfkube / nft'],
          [
            ['load (build + encode + commit vs `nft -f`)', ms(nfkubeLoad), ms(nftLoad), ratio(nfkubeLoad, nftLoad)],
            ['read back (vs `nft -j list ruleset`)', ms(nfkubeRead), ms(nftRead), ratio(nfkubeRead, nftRead)],
          ],
        ) +
        '\n\n',
    );
  } finally {
    await sb.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
