/** Issue 5 benchmark: a full verify of the 20,000-pod/2,000-policy ruleset. nfkube's verify is the
 * consistent read-back of its table over netlink (readTable), the conversion to a RulesetModel
 * and the canonical compare with the rendered desired model (diffRulesets); it is timed against
 * `nft -j list ruleset` alone (which only prints, it compares nothing). Median of 5 runs each, in
 * one sandbox loaded by an Agent.
 * Run: npm run build && node dist/bench/verify.bench.js [--quick] */
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { PolicyComponent } from '../src/policy/component';
import { Agent } from '../src/pipeline/agent';
import { readTable } from '../src/nft/readback';
import { diffRulesets, isEmptyDiff } from '../src/ruleset/diff';
import { countElements, countRules, modelFromKernel, RulesetModel } from '../src/ruleset/model';
import { openSandbox, Sandbox } from '../test/helpers/netns';
import { buildCluster, NODE } from './cluster';
import { median, ms, ratio, table } from './harness';

const RUNS = 5;
const quick = process.argv.includes('--quick');
const [PODS, POLICIES] = quick ? [5000, 500] : [20000, 2000];

async function nfkubeVerify(sb: Sandbox, desired: RulesetModel): Promise<{ readMs: number; compareMs: number; equal: boolean }> {
  const t0 = performance.now();
  const { value } = await readTable(sb.socket, 'inet', 'nfkube');
  const t1 = performance.now();
  const kernel = modelFromKernel(value!);
  const equal = isEmptyDiff(diffRulesets(kernel, desired));
  return { readMs: t1 - t0, compareMs: performance.now() - t1, equal };
}

function nftListRuleset(sb: Sandbox): string {
  return execFileSync('nsenter', [`--net=${sb.netns.path}`, 'nft', '-j', 'list', 'ruleset'], { encoding: 'utf8', maxBuffer: 1 << 30 });
}

async function main(): Promise<void> {
  const cluster = buildCluster(PODS, POLICIES, PODS);
  const sb = openSandbox();
  try {
    const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) })] });
    const t0 = performance.now();
    await agent.start({
      pods: new Map(cluster.pods.map((p) => [`${p.namespace}/${p.name}`, p])),
      namespaces: new Map(cluster.namespaces.map((n) => [n.name, n])),
      policies: new Map(cluster.policies.map((p) => [`${p.namespace}/${p.name}`, p])),
    });
    const loadMs = performance.now() - t0;
    await agent.stop();
    const desired = agent.desiredModel!;

    const reads: number[] = [];
    const compares: number[] = [];
    const nfkubeMs = await median(RUNS, async () => {
      const r = await nfkubeVerify(sb, desired);
      if (!r.equal) throw new Error('the loaded table does not verify equal');
      reads.push(r.readMs);
      compares.push(r.compareMs);
    });
    let jsonBytes = 0;
    const nftMs = await median(RUNS, () => {
      jsonBytes = nftListRuleset(sb).length;
    });
    const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

    const size = `${PODS.toLocaleString('en')} pods / ${POLICIES.toLocaleString('en')} policies`;
    const shape = `${desired.chains.size} chains, ${countRules(desired).toLocaleString('en')} rules, ${desired.sets.size} sets, ${countElements(desired).toLocaleString('en')} elements`;
    process.stdout.write(
      [
        `## Full verify (${size})`,
        '',
        `Ruleset: ${shape}; loaded by the agent in ${ms(loadMs)}; \`nft -j\` prints ${(jsonBytes / 1048576).toFixed(1)} MiB. Median of ${RUNS}.`,
        '',
        table(
          ['what', 'time', 'vs `nft -j list ruleset`'],
          [
            ['nfkube verify: read-back + canonical compare', ms(nfkubeMs), ratio(nfkubeMs, nftMs)],
            ['&nbsp;&nbsp;read-back (readTable, generation-consistent)', ms(mid(reads)), ratio(mid(reads), nftMs)],
            ['&nbsp;&nbsp;modelFromKernel + diffRulesets', ms(mid(compares)), ratio(mid(compares), nftMs)],
            ['`nft -j list ruleset` alone (process included)', ms(nftMs), '1.00x'],
          ],
        ),
        '',
        nfkubeMs < nftMs
          ? `nfkube's whole verify is ${(nftMs / nfkubeMs).toFixed(1)}x faster than \`nft -j list ruleset\` by itself.`
          : `nfkube's whole verify is ${(nfkubeMs / nftMs).toFixed(1)}x slower than \`nft -j list ruleset\` by itself (target missed).`,
        '',
      ].join('\n'),
    );
  } finally {
    await sb.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : err}\n`);
  process.exitCode = 1;
});
