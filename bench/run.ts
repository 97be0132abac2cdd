/** `npm run bench`: runs every bench/*.bench.js in turn, each in its own process, and writes their
 * sections with the machine and date to bench/RESULTS.md. */
import { spawnSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, release } from 'node:os';
import { join } from 'node:path';

const dir = __dirname;
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.js'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();
const sections: string[] = [];
let failed = 0;
for (const f of files) {
  process.stderr.write(`bench: ${f}\n`);
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['--expose-gc', join(dir, f)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) {
    failed++;
    sections.push(`## ${f}\n\nFAILED (exit ${r.status})\n`);
    continue;
  }
  sections.push(`${r.stdout.trim()}\n\n_${f}: ${((Date.now() - t0) / 1000).toFixed(0)} s_\n`);
  process.stdout.write(r.stdout);
}
const header = `# nfkube benchmark results\n\n${new Date().toISOString()} — ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}, Node ${process.version}.\nEach benchmark compares methods side by side in one run on this machine; read the ratios, not the absolute times.\n\n`;
const out = join(dir, '..', '..', 'bench', 'RESULTS.md');
writeFileSync(out, header + sections.join('\n'));
process.stderr.write(`bench: wrote ${out}\n`);
process.exitCode = failed ? 1 : 0;
