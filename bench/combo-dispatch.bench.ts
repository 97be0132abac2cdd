/** Issue 28 target 3, the data path of a verdict-free per-pod dispatch: per-combination address
 * sets with one `ip daddr @set goto combo` rule each (what a pod joining a combination would
 * write is then a plain set element, which the commit does not validate) against today's one
 * verdict-map lookup. The cost per packet that is not established: CPU per UDP packet sent to
 * loopback in a fresh namespace, through an output-hook chain holding each layout (the packet's
 * address in no set: what traffic to a pod no policy isolates, and the scan's worst case, pays),
 * minus the same chain empty. 131 is the combinations node-0 holds at 20k pods / 2,000 policies
 * (bench/pod-events.bench.ts). Each layout in turn, ROUNDS times; medians.
 * Run: node dist/bench/combo-dispatch.bench.js */
import { openSandbox } from '../test/helpers/netns';
import { table } from './harness';

const PACKETS = 100_000;
const ROUNDS = 5;
const SENDER = `
import socket, time, sys
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r.bind(('127.0.0.1', 0))
r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a = r.getsockname(); m = b'x' * 64
n = int(sys.argv[1]); t0 = time.process_time()
for _ in range(n): s.sendto(m, a)
print((time.process_time() - t0) / n * 1e9)
`;

function layout(kind: 'empty' | 'vmap' | 'sets', combos: number): string {
  const out = ['table ip bench {', '  chain out { type filter hook output priority 0; policy accept;'];
  const addr = (c: number, k: number) => `198.18.${c >> 2}.${((c & 3) << 6) | k}`;
  if (kind === 'vmap') out.push('    ip daddr vmap @pods');
  if (kind === 'sets') for (let c = 0; c < combos; c++) out.push(`    ip daddr @combo_${c} goto combo_${c}`);
  out.push('  }');
  for (let c = 0; c < combos; c++) {
    out.push(`  chain combo_${c} { }`);
    if (kind === 'sets') out.push(`  set combo_${c} { type ipv4_addr; elements = { ${[1, 2, 3].map((k) => addr(c, k)).join(', ')} } }`);
  }
  if (kind === 'vmap') out.push(`  map pods { type ipv4_addr : verdict; elements = { ${Array.from({ length: combos * 3 }, (_, i) => `${addr(i / 3, (i % 3) + 1)} : goto combo_${Math.floor(i / 3)}`).join(', ')} } }`);
  out.push('}');
  return out.join('\n') + '\n';
}

function main(): void {
  const rows: string[][] = [];
  for (const combos of [131, 500]) {
    const kinds = ['empty', 'vmap', 'sets'] as const;
    const ns = new Map<string, number[]>(kinds.map((k) => [k, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of kinds) {
        const sb = openSandbox();
        try {
          sb.run('ip', ['link', 'set', 'lo', 'up']);
          sb.run('nft', ['-f', '-'], layout(kind, combos));
          ns.get(kind)!.push(Number(sb.run('python3', ['-c', SENDER, String(PACKETS)])));
        } finally {
          void sb.close();
        }
      }
    }
    const med = (k: string) => ns.get(k)!.sort((a, b) => a - b)[ROUNDS >> 1];
    rows.push([String(combos), `${med('empty').toFixed(0)} ns`, `+${(med('vmap') - med('empty')).toFixed(0)} ns`, `+${(med('sets') - med('empty')).toFixed(0)} ns`]);
  }
  console.log('\n## Per-packet cost of the per-pod dispatch, by layout (issue 28 target 3) (CPU per packet sent, median of ' + ROUNDS + ' x ' + PACKETS + ' packets)\n');
  console.log(table(['combinations on the node', 'send, empty chain', 'one vmap lookup (now)', 'a rule per combination, address in none'], rows));
}

main();
