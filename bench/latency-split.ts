/** An event's latency by stage: the bench's own stamps (the write, the test server's send, the
 * poller seeing the commit) set beside the agent's (NFKUBE_LATENCY_TRACE, src/observe/latency-trace.ts),
 * all CLOCK_MONOTONIC nanoseconds. */
import { TRACE_STAGES } from '../src/observe/latency-trace';
import { table } from './harness';

/** One event as the bench saw it: its write, the test server's send, the poller's commit. */
export interface BenchEvent {
  t0: bigint;
  sent?: bigint;
  seen?: bigint;
}

export interface StageRow {
  stage: string;
  events: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface LatencySplit {
  /** Consecutive stamps, in path order: from -> to, in ms. */
  stages: StageRow[];
  /** The after-commit read-back (commit -> start, and its own time), off the event's path. */
  after: StageRow[];
  /** The slowest events: total, the stage that took longest, GC inside. */
  slow: { totalMs: number; worst: string; worstMs: number; gcMs: number }[];
  /** GC pauses inside events (write -> seen): count and sum. */
  gc: { pauses: number; ms: number; eventsWithGc: number };
  matched: number;
}

const PATH = ['write', 'sent', ...TRACE_STAGES.filter((s) => s !== 'readback' && s !== 'verified'), 'seen'] as const;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function row(stage: string, xs: number[]): StageRow {
  const s = [...xs].sort((a, b) => a - b);
  return { stage, events: s.length, p50: pct(s, 50), p90: pct(s, 90), p99: pct(s, 99), max: s[s.length - 1] };
}

const msBetween = (a: bigint, b: bigint) => Number(b - a) / 1e6;

/** Matches each seen event with the first trace record whose data stamp follows its write. */
export function splitLatency(events: BenchEvent[], trace: string): LatencySplit {
  const records: Record<string, bigint>[] = [];
  const gcs: { at: bigint; ms: number }[] = [];
  for (const line of trace.split('\n')) {
    if (!line) continue;
    const o = JSON.parse(line) as Record<string, string | number>;
    if ('gc' in o) gcs.push({ at: BigInt(o.gc), ms: Number(o.ms) });
    else if (o.data) records.push(Object.fromEntries(Object.entries(o).map(([k, v]) => [k, BigInt(v)])));
  }
  const byStage = new Map<string, number[]>();
  const after = new Map<string, number[]>();
  const add = (m: Map<string, number[]>, k: string, v: number) => m.set(k, [...(m.get(k) ?? []), v]);
  const slow: LatencySplit['slow'] = [];
  const gc = { pauses: 0, ms: 0, eventsWithGc: 0 };
  let matched = 0;
  let next = 0;
  for (const e of events) {
    if (e.seen === undefined) continue;
    while (next < records.length && records[next].data < e.t0) next++;
    const r = records[next];
    // The poller can see the commit before the agent, preempted after its sendmsg, stamps the
    // ack: the stamps are taken in time order, so "send -> seen" shows it.
    if (!r || r.committed === undefined || r.data > e.seen) continue;
    next++;
    matched++;
    const stamps: [string, bigint][] = [];
    for (const s of PATH) {
      const at = s === 'write' ? e.t0 : s === 'sent' ? e.sent : s === 'seen' ? e.seen : r[s];
      if (at !== undefined) stamps.push([s, at]);
    }
    stamps.sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    let worst = '';
    let worstMs = -1;
    for (let i = 1; i < stamps.length; i++) {
      const k = `${stamps[i - 1][0]} -> ${stamps[i][0]}`;
      const v = msBetween(stamps[i - 1][1], stamps[i][1]);
      add(byStage, k, v);
      if (v > worstMs) [worst, worstMs] = [k, v];
    }
    if (r.readback !== undefined) add(after, 'committed -> readback', msBetween(r.committed, r.readback));
    if (r.readback !== undefined && r.verified !== undefined) add(after, 'readback -> verified', msBetween(r.readback, r.verified));
    const inside = gcs.filter((g) => g.at >= e.t0 && g.at <= e.seen!);
    const gcMs = inside.reduce((a, g) => a + g.ms, 0);
    gc.pauses += inside.length;
    gc.ms += gcMs;
    if (inside.length) gc.eventsWithGc++;
    slow.push({ totalMs: msBetween(e.t0, e.seen), worst, worstMs, gcMs });
  }
  slow.sort((a, b) => b.totalMs - a.totalMs);
  const order = (k: string) => PATH.indexOf(k.split(' -> ')[0] as (typeof PATH)[number]) * 100 + PATH.indexOf(k.split(' -> ')[1] as (typeof PATH)[number]);
  const stages = [...byStage].sort((a, b) => order(a[0]) - order(b[0])).map(([k, v]) => row(k, v));
  stages.push(row('write -> seen (total)', slow.map((s) => s.totalMs)));
  return { stages, after: [...after].map(([k, v]) => row(k, v)), slow: slow.slice(0, Math.max(3, Math.ceil(slow.length / 20))), gc, matched };
}

export function splitText(what: string, s: LatencySplit): string {
  const f = (n: number) => (n * 1000).toFixed(0);
  const out = [`\n### ${what}: an event's latency by stage (µs; ${s.matched} events traced)\n`];
  out.push(table(['stage', 'events', 'p50', 'p90', 'p99', 'max'], [...s.stages, ...s.after].map((r) => [r.stage, String(r.events), f(r.p50), f(r.p90), f(r.p99), f(r.max)])));
  out.push(`\nGC inside events: ${s.gc.pauses} pauses, ${s.gc.ms.toFixed(2)} ms in ${s.gc.eventsWithGc} events. Slowest events: ${s.slow.map((x) => `${x.totalMs.toFixed(2)} ms (${x.worst} ${x.worstMs.toFixed(2)} ms${x.gcMs ? `, GC ${x.gcMs.toFixed(2)} ms` : ''})`).join('; ')}.\n`);
  return out.join('\n');
}
