/** A reachability matrix: rows are sources, columns are destinations (pod:port per address
 * family), cells what a TCP connect from the row to the column did. */
import type { Outcome, Target } from './traffic';

export interface MatrixRow {
  label: string;
  /** The source pod (`namespace/name`) and its addresses; absent for the node's own row. */
  pod?: { key: string; ips: string[] };
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
const REVERSE = '\x1b[7m';
const RESET = '\x1b[0m';

export const CELL = { allowed: '✓', blocked: '✗', notApplicable: '·' } as const;
/** Appended to a cell whose outcome differs from the previous matrix's. */
export const CHANGED = '*';

function cellText(o: Outcome | undefined): { text: string; color: string } {
  if (o === undefined) return { text: CELL.notApplicable, color: DIM };
  if (o === 'allowed') return { text: CELL.allowed, color: GREEN };
  if (o === 'blocked') return { text: CELL.blocked, color: RED };
  return { text: o, color: YELLOW };
}

/** Two header lines (`namespace/pod:port`, then the family), then one line per source. Cells
 * that differ from `previous` (same rows and columns) carry CHANGED, and in colour are reversed. */
export function formatMatrix(m: Matrix, color: boolean, previous?: Matrix): string {
  const changed = (ri: number, ci: number) => previous !== undefined && previous.rows[ri]?.cells[ci] !== m.rows[ri].cells[ci];
  const header1 = ['from \\ to', ...m.columns.map((c) => `${c.pod.key}:${c.port}`)];
  const header2 = ['', ...m.columns.map((c) => c.family)];
  const body = m.rows.map((r, ri) => [r.label, ...r.cells.map((c, ci) => cellText(c).text + (changed(ri, ci) ? CHANGED : ''))]);
  const widths = header1.map((_, i) => Math.max(...[header1, header2, ...body].map((line) => [...line[i]].length)));
  const pad = (s: string, i: number) => s + ' '.repeat(widths[i] - [...s].length);
  const lines = [header1, header2].map((h) => h.map(pad).join('  ').trimEnd());
  m.rows.forEach((r, ri) => {
    const cells = r.cells.map((c, ci) => {
      const padded = pad(body[ri][ci + 1], ci + 1);
      if (!color) return padded;
      // Only the symbol is reversed, not the padding after it.
      const text = body[ri][ci + 1];
      return `${cellText(c).color}${changed(ri, ci) ? REVERSE : ''}${text}${RESET}${padded.slice(text.length)}`;
    });
    lines.push([pad(r.label, 0), ...cells].join('  ').trimEnd());
  });
  return lines.join('\n') + '\n';
}

/** What connect() errors mean in the demo's sandbox. */
const ERRNO_MEANING: Record<string, string> = {
  EHOSTUNREACH: 'an ICMP "host unreachable / administratively prohibited" answered: the IPv4 reject (--deny-action reject)',
  EACCES: 'an ICMPv6 "administratively prohibited" answered: the IPv6 reject (--deny-action reject)',
  ECONNREFUSED: 'a TCP reset answered: nothing listens on that port, or a reject with tcp reset',
  ENETUNREACH: 'no route to the destination network',
  ECONNRESET: 'the connection was reset during the handshake',
};

/** The key to a matrix: its symbols, the errno names it shows, the node row, and the change mark. */
export function formatLegend(m: Matrix, o: { timeoutMs: number; nodeLabel: string; changes: boolean }): string {
  const lines = [
    'Legend:',
    `  ${CELL.allowed}  connected (the TCP handshake completed)`,
    `  ${CELL.blocked}  no answer within ${o.timeoutMs} ms: dropped (the default --deny-action drop)`,
    `  ${CELL.notApplicable}  not probed: a pod to its own address never leaves its namespace`,
  ];
  const errnos = new Set<string>();
  for (const r of m.rows) for (const c of r.cells) if (c !== undefined && c !== 'allowed' && c !== 'blocked') errnos.add(c);
  for (const e of [...errnos].sort()) lines.push(`  ${e}  ${ERRNO_MEANING[e] ?? 'connect() failed with this errno'}`);
  if (o.changes) lines.push(`  ${CHANGED}  changed from the matrix before the policies`);
  lines.push(`  row ${o.nodeLabel}: connections made by the node itself (kubelet probes, host processes); nfkube never matches them, so they stay open`);
  return lines.join('\n') + '\n';
}
