/** Where an event's time goes on its way to the kernel, for benches: with NFKUBE_LATENCY_TRACE
 * set to a file, each commit of an event appends one JSON line of CLOCK_MONOTONIC stamps (ns,
 * process.hrtime.bigint(): one clock for every process on the machine, so a bench can set them
 * beside its own write and the generation poller's view), and every GC pause one line too.
 *
 * Off (the default) each stamp is one test of a constant: nothing is recorded or allocated.
 *
 * The event path runs in one turn of the event loop (socket data -> commit), so one open
 * record is enough: the first stamp of a stage wins (a commit that merges several events
 * keeps the first event's times), `committed` closes the record, and the read-back that follows
 * is stamped on the record it verifies. */
import { closeSync, openSync, writeSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';

/** Stages in path order. */
export const TRACE_STAGES = [
  /** The watch socket's data callback (or the manifests directory's watch callback). */
  'data',
  /** The event's JSON parsed (or the file read and parsed). */
  'parsed',
  /** The object normalized. */
  'normalized',
  /** Offered to a component (after the cache's compare). */
  'offered',
  /** The component applied it to its desired model. */
  'applied',
  /** The commit lane started on it. */
  'lane',
  /** Its changes taken for one commit. */
  'flush',
  /** Diff and transaction built. */
  'diffed',
  /** The batch handed to the socket (checked and encoded). */
  'send',
  /** The kernel's acks back. */
  'acked',
  /** The commit recorded (logs, metrics, observers). */
  'committed',
  /** The read-back of the chains it wrote: start and end. */
  'readback',
  'verified',
] as const;

export type TraceStage = (typeof TRACE_STAGES)[number];

const file = process.env.NFKUBE_LATENCY_TRACE;
/** Constant for the process's life: a stamp is a no-op when false. Tested through a module-local
 * const: compiled to CommonJS, the exported one is a property of `exports`, loaded at every stamp. */
const on = !!file;
export const tracing = on;

let open: Partial<Record<TraceStage, bigint>> | undefined;
let closed: Partial<Record<TraceStage, bigint>> | undefined;
let fd = -1;
/** Closed records and GC pauses, serialized when written (a record's read-back comes later). */
const lines: Record<string, bigint | number>[] = [];
let writeScheduled = false;

/** Records the time of `stage` for the event in flight (the first stamp of a stage wins). */
export function stamp(stage: TraceStage): void {
  if (!on) return;
  const now = process.hrtime.bigint();
  if (stage === 'readback' || stage === 'verified') {
    if (closed && !closed[stage]) closed[stage] = now;
    return;
  }
  // New data starts a new record unless the open one holds an applied change waiting for its
  // commit (then the commit merges both, and its record keeps the first event's times). A stage
  // with no record open (a retry, a resync) opens one all the same.
  if (!open || (stage === 'data' && !open.applied)) open = {};
  open[stage] ??= now;
  if (stage === 'committed') {
    closed = open;
    open = undefined;
    lines.push(closed);
    scheduleWrite();
  }
}

/** A change that needs no commit (an empty diff): its record is dropped. */
export function discard(): void {
  if (on) open = undefined;
}

/** Lines are written well after the commit (and its read-back), never on the event's path. */
function scheduleWrite(): void {
  if (writeScheduled) return;
  writeScheduled = true;
  setTimeout(() => {
    writeScheduled = false;
    write();
  }, 20).unref();
}

function write(): void {
  if (lines.length === 0) return;
  if (fd < 0) fd = openSync(file!, 'a');
  writeSync(fd, lines.splice(0).map((l) => JSON.stringify(l, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))).join('\n') + '\n');
}

if (on) {
  // GC pauses as `{"gc": start ns, "ms": duration}`, to set beside slow events.
  const origin = process.hrtime.bigint() - BigInt(Math.round(performance.now() * 1e6));
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) lines.push({ gc: origin + BigInt(Math.round(e.startTime * 1e6)), ms: e.duration });
    scheduleWrite();
  }).observe({ entryTypes: ['gc'] });
  process.on('exit', () => {
    write();
    if (fd >= 0) closeSync(fd);
  });
}
