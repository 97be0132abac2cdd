/** Issue 13 target 2: YAML parser candidates side by side, in-process, on the manifests of the
 * 5k-pod bench cluster (one object per file, as `agent --manifests` reads them; every 4th, or
 * every 20th with --quick: the slow candidates take seconds a round), against JSON.parse of the
 * same objects. CPU time of this process, rounds interleaved, best round per candidate.
 * Run: node dist/bench/manifest-parse.bench.js [--quick] */
import { CORE_SCHEMA, loadAll } from 'js-yaml';
import { Composer, parse, parseAllDocuments, Parser, stringify } from 'yaml';
import { FIELDS_READ, type ObjectKind } from '../src/k8s/normalize';
import { blockYamlDocuments, implicitTypes, type FieldsOf } from '../src/k8s/yaml-block';
import { fastYamlDocuments } from '../src/k8s/yaml-documents';
import { buildCluster } from './cluster';
import { ms, table } from './harness';
import { clusterObjects } from './manifests';

const QUICK = process.argv.includes('--quick') || process.env.NFKUBE_BENCH_QUICK === '1';
const [PODS, POLICIES] = [5000, 500];
const EVERY = QUICK ? 20 : 4;
const ROUNDS = QUICK ? 1 : 2;

function cpuMs(): number {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
}

const CORE_TYPES = implicitTypes(CORE_SCHEMA)!;
/** What `agent --manifests` asks for: the fields its normalizers read (policy kinds). */
const READ: FieldsOf = (kind) => (kind.endsWith('List') ? undefined : (FIELDS_READ[kind as ObjectKind] ?? {}));

const candidates: [string, (text: string) => unknown][] = [
  ['`yaml` parseAllDocuments + toJS (the document model: nfkube before)', (t) => parseAllDocuments(t).map((d) => d.toJS({ maxAliasCount: 100 }))],
  ['`yaml` parse (one document, no lineCounter)', (t) => parse(t)],
  ['`yaml` Parser + Composer (lower-level API) + toJS', (t) => [...new Composer().compose(new Parser().parse(t))].map((d) => d.toJS({ maxAliasCount: 100 }))],
  ['`yaml` Parser alone (CST tokens, no values)', (t) => [...new Parser().parse(t)].length],
  ['`js-yaml` loadAll, core schema', (t) => loadAll(t, null, { schema: CORE_SCHEMA })],
  ['nfkube block-style subset parser alone (yaml-block.ts)', (t) => blockYamlDocuments(t, CORE_TYPES)],
  ['nfkube block-style subset parser, building only the fields read (FIELDS_READ)', (t) => blockYamlDocuments(t, CORE_TYPES, READ)],
  ['nfkube fastYamlDocuments with the fields read (the subset parser, else js-yaml + alias check: the path taken now)', (t) => fastYamlDocuments(t, READ)],
];

function main(): void {
  const objects = clusterObjects(buildCluster(PODS, POLICIES, 42)).filter((_, i) => i % EVERY === 0);
  const yamlTexts = objects.map((o) => stringify(o));
  const jsonTexts = objects.map((o) => JSON.stringify(o, null, 2));
  const mb = yamlTexts.reduce((n, t) => n + Buffer.byteLength(t), 0) / 2 ** 20;
  const best = new Map<string, number>();
  const record = (name: string, fn: () => void) => {
    const t0 = cpuMs();
    fn();
    const took = cpuMs() - t0;
    best.set(name, Math.min(best.get(name) ?? Infinity, took));
  };
  // Untimed: every candidate's code compiled and optimised before the first timed round.
  for (const [, parseText] of candidates) yamlTexts.slice(0, 100).forEach((t) => parseText(t));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, parseText] of candidates) record(name, () => yamlTexts.forEach((t) => parseText(t)));
    record('JSON.parse of the same objects (JSON files)', () => jsonTexts.forEach((t) => JSON.parse(t)));
  }
  const json = best.get('JSON.parse of the same objects (JSON files)')!;
  const old = best.get(candidates[0][0])!;
  process.stdout.write(
    `## YAML parser candidates, in-process (every ${EVERY}th manifest of ${PODS / 1000}k pods / ${POLICIES} policies: ${objects.length} files, ${mb.toFixed(1)} MB of YAML)\n\n` +
      `CPU time of this process, best of ${ROUNDS} interleaved rounds after one untimed warm-up.\n\n` +
      table(
        ['parser', 'CPU', 'vs JSON.parse', 'speed-up over the document model'],
        [...best].map(([name, t]) => [name, ms(t), `${(t / json).toFixed(1)}x`, `${(old / t).toFixed(1)}x`]),
      ) +
      '\n\n`yaml`\'s lower-level Parser alone (tokens, before any value exists) costs more than js-yaml\'s whole load, so no use of `yaml`\'s API can reach js-yaml. nfkube reads the block-style subset kubectl and `yaml.stringify` write (plain and quoted one-line scalars, `{}`/`[]`, comment lines, `---`) with its own one-pass parser, whose values are js-yaml\'s (its core-schema types resolve the plain scalars) and which builds only the fields the normalizers read (the rest is parsed and checked, no value made), then js-yaml (core schema: the scalars `yaml` resolves) for anything else, and keeps `yaml`\'s document model for the files js-yaml refuses and for aliases of collections (the alias-expansion limit).\n',
  );
}

main();
