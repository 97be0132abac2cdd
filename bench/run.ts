/** `npm run bench`: runs every bench/*.bench.js in turn, each in its own process group with the
 * knobs of its plan (bench/plan.ts), and writes bench/RESULTS.md with that one run: the run's
 * table (budget, time, CPU, load per bench), issue 28's targets and their rows, then each
 * bench's section. RESULTS.md is rewritten after every bench, so a bench that fails, hangs past
 * its limit or is interrupted leaves the others' sections.
 * Run: node dist/bench/run.js [NAME-PREFIX ...] (NFKUBE_BENCH_LONG=1: no plan knobs). */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, release } from 'node:os';
import { join } from 'node:path';
import { table } from './harness';
import { BenchPlan, ISSUE_28_TARGETS, PLANS, UNPLANNED } from './plan';

const dir = __dirname;
const RESULTS = join(dir, '..', '..', 'bench', 'RESULTS.md');
const LONG = process.env.NFKUBE_BENCH_LONG === '1';
/** A bench still running after this many times its budget (and at least a minute) is stopped
 * (NFKUBE_BENCH_LIMIT_FACTOR): a busy machine stretched the heavier ones to about 3x. */
const LIMIT_FACTOR = Number(process.env.NFKUBE_BENCH_LIMIT_FACTOR ?? 4);
const CLK_TCK = 100;

interface Outcome {
  name: string;
  plan: BenchPlan;
  env: Record<string, string>;
  wallS: number;
  cpuS: number;
  load: [string, string];
  status: string;
  section: string;
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** CPU seconds (user + system) of this process's waited-for descendants, so far. */
function childrenCpuS(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / CLK_TCK;
}

function planOf(name: string): BenchPlan {
  return PLANS[name] ?? UNPLANNED;
}

/** The plan's knobs the caller has not set itself (none with NFKUBE_BENCH_LONG=1). */
function knobs(plan: BenchPlan): Record<string, string> {
  if (LONG) return {};
  return Object.fromEntries(Object.entries(plan.env ?? {}).filter(([k]) => process.env[k] === undefined));
}

/** One bench in its own process group, stopped (the whole group) after its limit. */
function runBench(file: string, name: string): Promise<Outcome> {
  const plan = planOf(name);
  const env = knobs(plan);
  const limitS = Math.max(plan.budgetS * LIMIT_FACTOR, 60);
  const load0 = loadAverage();
  const cpu0 = childrenCpuS();
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', join(dir, file)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    // Its own group (so a stop reaches its children) is out of reach of the terminal's ^C: pass it on.
    const interrupt = () => {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // The group has already gone.
      }
      process.exit(130);
    };
    process.once('SIGINT', interrupt).once('SIGTERM', interrupt);
    let stdout = '';
    let stderrTail = '';
    let stopped = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => void (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      process.stderr.write(d);
      stderrTail = (stderrTail + d).slice(-3000);
    });
    const timer = setTimeout(() => {
      stopped = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // The group has already gone.
      }
    }, limitS * 1000);
    const finish = (status: string, ok: boolean) => {
      clearTimeout(timer);
      process.off('SIGINT', interrupt).off('SIGTERM', interrupt);
      const wallS = (Date.now() - t0) / 1000;
      const out = stdout.trim();
      const failure = ok ? '' : `\n\n**${name}.bench.js: ${status}.**${stderrTail.trim() ? ` Its last output:\n\n\`\`\`\n${stderrTail.trim().split('\n').slice(-15).join('\n')}\n\`\`\`` : ''}`;
      const section = `${out || `## ${name}.bench.js`}${failure}`;
      resolve({ name, plan, env, wallS, cpuS: childrenCpuS() - cpu0, load: [load0, loadAverage()], status, section });
    };
    child.on('error', (err) => finish(`FAILED to start: ${err.message}`, false));
    child.on('close', (code, signal) => {
      if (stopped) finish(`stopped after ${limitS} s (its limit: ${LIMIT_FACTOR}x its budget, at least 60 s)`, false);
      else if (code === 0) finish('ok', true);
      else finish(`FAILED (${signal ? `signal ${signal}` : `exit ${code}`})`, false);
    });
  });
}

function commitText(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain'], { cwd: dir, encoding: 'utf8' }).trim() !== '';
    return `commit ${sha}${dirty ? ' with uncommitted changes' : ''}`;
  } catch {
    return 'commit unknown';
  }
}

function footer(o: Outcome): string {
  return `_${o.name}.bench.js: ${o.wallS.toFixed(0)} s (budget ${o.plan.budgetS} s), CPU ${o.cpuS.toFixed(0)} s, load average ${o.load[0]} -> ${o.load[1]}_`;
}

function results(started: Date, done: Outcome[], pending: string[]): string {
  const total = (f: (o: Outcome) => number) => done.reduce((n, o) => n + f(o), 0);
  const failed = done.filter((o) => o.status !== 'ok').length;
  const rows = [
    ...done.map((o) => [`${o.name}`, `${o.plan.budgetS} s`, `${o.wallS.toFixed(0)} s`, `${o.cpuS.toFixed(0)} s`, `${o.load[0]} -> ${o.load[1]}`, o.status, Object.keys(o.env).length ? `${Object.entries(o.env).map(([k, v]) => `${k}=${v}`).join(' ')}: ${o.plan.shortened ?? ''}` : (o.plan.shortened ?? '')]),
    ...pending.map((name) => [name, `${planOf(name).budgetS} s`, '-', '-', '-', 'not run yet', '']),
    ['**total**', `${total((o) => o.plan.budgetS) + pending.reduce((n, p) => n + planOf(p).budgetS, 0)} s`, `${total((o) => o.wallS).toFixed(0)} s`, `${total((o) => o.cpuS).toFixed(0)} s`, '', `${done.length - failed} ok, ${failed} not`, ''],
  ];
  return [
    '# nfkube benchmark results',
    '',
    `One \`npm run bench\`${LONG ? ' (NFKUBE_BENCH_LONG=1: every bench\'s own long defaults)' : ''}, started ${started.toISOString()}${pending.length ? ', still running' : `, finished ${new Date().toISOString()}`}: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}, Node ${process.version}, ${commitText()}.`,
    'Each benchmark compares methods side by side in this one run on this machine; read the ratios, not the absolute times. The budgets are for a quiet machine; CPU is that of the bench\'s processes (user + system), which a busy machine does not inflate as it does wall time. Knobs, budgets and the long forms: bench/README.md. Sections run by hand before this runner: bench/HISTORY.md.',
    '',
    table(['bench', 'budget', 'took', 'CPU', 'load average, start -> end', 'status', 'knobs of this run: what they shorten'], rows),
    '',
    '## Issue 28: each target and the rows that measure it',
    '',
    table(['target', 'scale', 'rows (bench: section)', 'goal'], ISSUE_28_TARGETS),
    '',
    ...done.map((o) => `${o.section}\n\n${footer(o)}\n`),
  ].join('\n');
}

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.bench.js'))
    .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
    .sort();
  const names = files.map((f) => f.replace(/\.bench\.js$/, ''));
  const started = new Date();
  const done: Outcome[] = [];
  for (const [i, file] of files.entries()) {
    const name = names[i];
    const plan = planOf(name);
    process.stderr.write(`bench: ${name} (budget ${plan.budgetS} s${Object.keys(knobs(plan)).length ? `; ${Object.entries(knobs(plan)).map(([k, v]) => `${k}=${v}`).join(' ')}` : ''}), load average ${loadAverage()}\n`);
    const o = await runBench(file, name);
    done.push(o);
    process.stdout.write(`${o.section}\n\n${footer(o)}\n\n`);
    process.stderr.write(`bench: ${name}: ${o.status}, ${o.wallS.toFixed(0)} s (budget ${plan.budgetS} s), CPU ${o.cpuS.toFixed(0)} s\n`);
    writeFileSync(RESULTS, results(started, done, names.slice(i + 1)));
  }
  const wall = done.reduce((n, o) => n + o.wallS, 0);
  const budget = done.reduce((n, o) => n + o.plan.budgetS, 0);
  process.stderr.write(`bench: total ${wall.toFixed(0)} s (budget ${budget} s), CPU ${done.reduce((n, o) => n + o.cpuS, 0).toFixed(0)} s; wrote ${RESULTS}\n`);
  process.exitCode = done.every((o) => o.status === 'ok') ? 0 : 1;
}

void main();
