/** The one run `npm run bench` makes (bench/run.ts): for each bench file, the seconds it is given
 * on a quiet 2-CPU machine and the knobs that fit it in them. A knob the caller sets wins, and
 * NFKUBE_BENCH_LONG=1 applies none: each bench then runs its own (long) defaults. Budgets come
 * from each bench measured alone, its CPU on a busy machine (bench/README.md has the
 * measurements and every knob); they sum to about 27 minutes. */

export interface BenchPlan {
  /** Seconds on a quiet machine: the run prints it beside the time taken. */
  budgetS: number;
  /** Environment for the one run, unless the caller set the variable. */
  env?: Record<string, string>;
  /** What the knobs shorten, as the RESULTS.md header states it. */
  shortened?: string;
}

export const PLANS: Record<string, BenchPlan> = {
  'agent-memory': { budgetS: 45, env: { AGENT_MEMORY_RUNS: '1' }, shortened: 'one run per manifest shape (long form: 2)' },
  agent: { budgetS: 30 },
  batches: { budgetS: 150, env: { BATCH_BENCH_ROUNDS: '1', BATCH_BENCH_ONCE_ROUNDS: '1' }, shortened: 'one round of each method per size and of each `--once` row (long form: 2)' },
  cnp: { budgetS: 140, env: { NFKUBE_CNP_SOAK_SETS: '200' }, shortened: 'fuzz soak of 200 sets (long form: 2,000)' },
  'combo-dispatch': { budgetS: 60 },
  dispatch: { budgetS: 10 },
  droplog: { budgetS: 25 },
  e2e: { budgetS: 240 },
  ipam: { budgetS: 50 },
  ipset: { budgetS: 80 },
  'kube-apiserver': { budgetS: 200 },
  'manifest-parse': { budgetS: 35 },
  nft: { budgetS: 10 },
  objects: { budgetS: 30 },
  'pod-events': { budgetS: 15 },
  policy: { budgetS: 5 },
  'proxy-layout': { budgetS: 5 },
  proxy: {
    budgetS: 150,
    env: { PROXY_BENCH_SIZES: '1000x5,10000x5,5000x50,44125x2', PROXY_BENCH_NFT_MAX_ENDPOINTS: '50000' },
    shortened: 'adds 44,125 x 2 (in-process: full sync, one endpoint change p50/p99, one Service added p50), whose `nft -f` is proxy-scale\'s bounded row',
  },
  'proxy-scale': {
    budgetS: 420,
    env: { PROXY_SCALE_ONCE_RUNS: '1', PROXY_SCALE_IDLE_S: '30', PROXY_SCALE_CHURN_S: '60', PROXY_SCALE_NFT_BOUND_S: '60' },
    shortened: '`--once` rows one run each (long form: 2), idle 30 s and endpoint churn 60 s (long form: 60 s and 120 s; the issue asks for an hour), the kube-proxy-style `nft -f` stopped after 60 s and extrapolated (long form: 300 s)',
  },
  verify: { budgetS: 10 },
  watch: { budgetS: 10 },
};

/** A bench file with no plan yet: given this, and said so. */
export const UNPLANNED: BenchPlan = { budgetS: 120, shortened: 'no plan in bench/plan.ts: its own defaults' };

/** Issue 28's targets and the rows of the one run that measure each, at the issue's scale. */
export const ISSUE_28_TARGETS: [target: string, scale: string, rows: string, goal: string][] = [
  ['1. Bounded transactions', '5k Services x 50 (250k endpoints); 44,125 x 2; 20k pods / 2k policies', 'batches: "Bounded kernel transactions"', 'kernel per transaction <= 50 ms; second writer p99 < 60 ms; full sync <= 1.2x one transaction. kill -9 at every batch boundary: in `npm test`, not here'],
  ['2. 44,125 Services', '44,125 x 2 endpoints', 'proxy-scale (long-running agent row; `nft -f` kube-proxy style, bounded); proxy (in-process 44125 x 2 rows); batches (full sync)', 'full sync, one endpoint change p50/p99, one Service added p50, idle CPU, RSS, beside kube-proxy-style `nft -f`'],
  ['3. 20k pods / 2k policies', '20k pods / 2,000 policies', 'e2e (agent over HTTP, 20k rows); pod-events (in-process, by add and delete); dispatch (kernel side of one pod write); combo-dispatch (data-path price of a verdict-free layout)', 'API write -> commit p50 <= 1.5 ms, p99 <= 5 ms'],
  ['4. Memory at scale', '5k Services x 50 endpoints', 'proxy-scale (`--once` rows; long-running 5000 x 50 row after churn)', 'peak and steady RSS <= 256 MiB'],
  ['5. Cold paths', '5k pods / 500 policies; informers also 20k / 2k', 'e2e (`agent --once --manifests` rows; objects-as-served informer rows); objects (kernel objects)', 'CPU <= 1.0x `nft -f` of the straightforward rendering; informer peak RSS <= 100 MiB (5k/500), <= 150 MiB (20k/2k); chains and rules <= the straightforward rendering'],
];
