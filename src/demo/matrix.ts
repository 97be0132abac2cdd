/** A reachability matrix: rows are sources, columns are destinations (pod:port per address
 * family), cells what a TCP connect from the row to the column did. */
import type { Outcome, Target } from './traffic';

export interface MatrixRow {
  label: string;
  /** One cell per column; undefined where the probe does not apply (a pod to itself). */
  cells: (Outcome | undefined)[];
}

export interface Matrix {
  columns: Target[];
  rows: MatrixRow[];
}

const GREEN = '\x1b[32m';
const RED = '\x1b[31m';
const YELLOW = '\x1b[33m';
const DIM = '\x1b[2m';
const RESET = '\x1b[0m';

export const CELL = { allowed: '✓', blocked: '✗', notApplicable: '·' } as const;

function cellText(o: Outcome | undefined): { text: string; color: string } {
  if (o === undefined) return { text: CELL.notApplicable, color: DIM };
  if (o === 'allowed') return { text: CELL.allowed, color: GREEN };
  if (o === 'blocked') return { text: CELL.blocked, color: RED };
  return { text: o, color: YELLOW };
}

/** Two header lines (`namespace/pod:port`, then the family), then one line per source. */
export function formatMatrix(m: Matrix, color: boolean): string {
  const header1 = ['from \\ to', ...m.columns.map((c) => `${c.pod.key}:${c.port}`)];
  const header2 = ['', ...m.columns.map((c) => c.family)];
  const body = m.rows.map((r) => [r.label, ...r.cells.map((c) => cellText(c).text)]);
  const widths = header1.map((_, i) => Math.max(...[header1, header2, ...body].map((line) => [...line[i]].length)));
  const pad = (s: string, i: number) => s + ' '.repeat(widths[i] - [...s].length);
  const lines = [header1, header2].map((h) => h.map(pad).join('  ').trimEnd());
  m.rows.forEach((r, ri) => {
    const cells = r.cells.map((c, ci) => {
      const padded = pad(body[ri][ci + 1], ci + 1);
      return color ? `${cellText(c).color}${padded}${RESET}` : padded;
    });
    lines.push([pad(r.label, 0), ...cells].join('  ').trimEnd());
  });
  return lines.join('\n') + '\n';
}
