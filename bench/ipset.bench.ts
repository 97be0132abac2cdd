/** Side-by-side: nfkube syncSets (incremental, replace) vs `ipset restore` with the swap method,
 * with one reused temporary set and with a temporary set per set, in a fresh namespace.
 * Run: node dist/bench/ipset.bench.js — prints a markdown section. */
import { execFileSync } from 'node:child_process';
import { IpsetClient } from '../src/ipset/client';
import { syncSets, SyncMode } from '../src/ipset/sync';
import { DesiredSet } from '../src/ipset/types';
import { Netns } from '../src/netlink/netns';
import { NetlinkSocket } from '../src/netlink/socket';

const addr = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

interface Row {
  scale: string;
  method: string;
  ms: number;
  messages: string;
}

async function scenario(sets: number, members: number, rows: Row[]): Promise<void> {
  const ns = Netns.create();
  const socket = NetlinkSocket.open({ netns: ns });
  const client = new IpsetClient(socket);
  const scale = `${sets} sets x ${members}`;
  let next = 0;
  let seed = 12345;
  const random = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32);
  const state = Array.from({ length: sets }, () => Array.from({ length: members }, () => next++));
  const churn = () => {
    for (const s of state) {
      const picked = new Set<number>();
      while (picked.size < Math.max(1, Math.round(members * 0.1))) picked.add(Math.floor(random() * members));
      for (const j of picked) s[j] = next++;
    }
  };
  const desired = (): Record<string, DesiredSet> => Object.fromEntries(state.map((m, i) => [`b-${i}`, { type: 'hash:ip', members: m.map(addr) } as DesiredSet]));
  const ipsetRestore = (script: string) => execFileSync('nsenter', [`--net=${ns.path}`, 'ipset', 'restore'], { input: script, maxBuffer: 1 << 30 });
  try {
    await syncSets(client, desired(), { prefix: 'b-' });
    const timeSync = async (mode: SyncMode, label: string) => {
      const d = desired();
      const t = process.hrtime.bigint();
      const r = await syncSets(client, d, { prefix: 'b-', mode });
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      if (r.failures.length > 0) throw r.failures[0];
      rows.push({ scale, method: label, ms, messages: `${r.messages.mutating} mutating, ${r.messages.read} read` });
    };
    churn();
    await timeSync('incremental', 'nfkube syncSets incremental (10% churn)');
    churn();
    await timeSync('replace', 'nfkube syncSets replace (10% churn)');
    await timeSync('incremental', 'nfkube syncSets, no change');

    churn();
    let script = 'create b-tmp hash:ip family inet -exist\n';
    state.forEach((m, i) => {
      script += `flush b-tmp\n${m.map((n) => `add b-tmp ${addr(n)}`).join('\n')}\nswap b-tmp b-${i}\n`;
    });
    script += 'destroy b-tmp\n';
    let t = process.hrtime.bigint();
    ipsetRestore(script);
    rows.push({ scale, method: '`ipset restore`, swap via one reused temporary set', ms: Number(process.hrtime.bigint() - t) / 1e6, messages: `${sets * 3 + 2}+ commands` });

    churn();
    script = '';
    state.forEach((m, i) => {
      script += `create b-tmp${i} hash:ip family inet\n${m.map((n) => `add b-tmp${i} ${addr(n)}`).join('\n')}\nswap b-tmp${i} b-${i}\ndestroy b-tmp${i}\n`;
    });
    t = process.hrtime.bigint();
    ipsetRestore(script);
    rows.push({ scale, method: '`ipset restore`, swap via a new temporary set per set', ms: Number(process.hrtime.bigint() - t) / 1e6, messages: `${sets * 4}+ commands` });
  } finally {
    await socket.close();
    ns.close();
  }
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  await scenario(450, 50, rows);
  await scenario(5000, 50, rows);
  let out = '## ipset: nfkube syncSets vs `ipset restore` (one re-sync, hash:ip, fresh namespace)\n\n';
  out += '| scale | method | time (ms) | x nfkube incremental | messages |\n|---|---|---:|---:|---|\n';
  for (const r of rows) {
    const base = rows.find((x) => x.scale === r.scale && x.method.startsWith('nfkube syncSets incremental'))!.ms;
    out += `| ${r.scale} | ${r.method} | ${r.ms.toFixed(1)} | ${(r.ms / base).toFixed(2)} | ${r.messages} |\n`;
  }
  process.stdout.write(out);
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exitCode = 1;
});
