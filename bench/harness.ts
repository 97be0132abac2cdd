/** Shared bench helpers: repeated timing with medians, a running process's CPU and peak RSS,
 * and markdown tables. */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const CLK_TCK = 100;

/** CPU (ms, user + system), VmHWM and VmRSS (MB) of a running process. */
export function procStats(pid: number): { cpuMs: number; hwmMB: number; rssMB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kB = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { cpuMs, hwmMB: kB('VmHWM') / 1024, rssMB: kB('VmRSS') / 1024 };
}

export async function median(runs: number, fn: () => Promise<void> | void, before?: () => Promise<void> | void): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    await before?.();
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

export function ms(n: number): string {
  return n >= 100 ? `${n.toFixed(0)} ms` : `${n.toFixed(2)} ms`;
}

export function ratio(a: number, b: number): string {
  return `${(a / b).toFixed(2)}x`;
}

export function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
