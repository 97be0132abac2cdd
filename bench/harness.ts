/** Shared bench helpers: repeated timing with medians, and markdown tables. */
import { performance } from 'node:perf_hooks';

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
