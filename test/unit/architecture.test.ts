/** The house's import graph, read from src/ as the compiler reads it (static imports and
 * re-exports, `import()`, `require()`, `typeof import()`): no cycle among files, none among the
 * folders under src/, and every import between folders runs down the layers below. A new folder
 * (or file directly under src/) must be given its layer here. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';

const SRC = join(__dirname, '..', '..', '..', 'src');

/** Bottom first. A folder may import only from folders on a lower line: features side by side
 * (policy, proxy, IPAM) never import each other. Files directly under src/ are units of their own. */
const LAYERS: readonly (readonly string[])[] = [
  ['native', 'net', 'startup', 'build-info.ts', 'edit-distance.ts', 'log-format.ts'],
  ['log.ts', 'observe'],
  ['netlink'],
  ['nft', 'ipset', 'rtnl', 'conntrack', 'nflog'],
  ['ruleset'],
  ['k8s'],
  ['pipeline', 'cni'],
  ['policy', 'proxy', 'ipam'],
  ['explain'],
  ['demo'],
  ['cli', 'index.ts', 'netfilter.ts'],
];

type Graph = Map<string, Set<string>>;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The file a relative specifier names, as Node's resolution finds it among `files`. */
function resolveSpecifier(from: string, specifier: string, files: ReadonlySet<string>): string | undefined {
  const base = resolve(dirname(from), specifier);
  return [`${base}.ts`, join(base, 'index.ts')].find((candidate) => files.has(candidate));
}

/** src-relative file -> the src-relative files it imports; read once. */
let read: Graph | undefined;
function fileGraph(): Graph {
  if (read) return read;
  const files = sourceFiles(SRC);
  const known = new Set(files);
  const graph: Graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = new Set<string>();
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = resolveSpecifier(file, fileName, known);
      assert.ok(target, `${relative(SRC, file)} imports "${fileName}", which is no file under src/`);
      targets.add(relative(SRC, target));
    }
    graph.set(relative(SRC, file), targets);
  }
  return (read = graph);
}

/** The folder directly under src/ a file is in, or the file itself when it is directly under src/. */
function unitOf(file: string): string {
  return file.split('/')[0];
}

/** Folder -> folder, each edge with the file imports that make it. */
function unitEdges(files: Graph): Map<string, Map<string, string[]>> {
  const edges = new Map<string, Map<string, string[]>>();
  for (const [from, targets] of files) {
    for (const to of targets) {
      const [a, b] = [unitOf(from), unitOf(to)];
      if (a === b) continue;
      const out = edges.get(a) ?? edges.set(a, new Map()).get(a)!;
      out.set(b, [...(out.get(b) ?? []), `${from} -> ${to}`]);
    }
  }
  return edges;
}

/** Strongly connected components of more than one node (Tarjan), each sorted: the cycles. */
function cycles(nodes: Iterable<string>, next: (n: string) => Iterable<string>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const n of nodes) if (!index.has(n)) visit(n);
  return found;
}

test('the cycle finder finds a cycle and only a cycle', () => {
  const g: Record<string, string[]> = { a: ['b'], b: ['c'], c: ['a'], d: ['a'], e: [] };
  assert.deepEqual(cycles(Object.keys(g), (n) => g[n]), [['a', 'b', 'c']]);
  assert.deepEqual(cycles(['x', 'y'], (n) => (n === 'x' ? ['y'] : [])), []);
});

test('the import reader sees every way a file is loaded', () => {
  const text = [
    `import { a } from './a';`,
    `import type { B } from './b';`,
    `export { c } from './c';`,
    `const d = require('./d');`,
    `const e = () => import('./e');`,
    `let f: typeof import('./f');`,
    `import './g';`,
  ].join('\n');
  const names = ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
  for (const n of ['./a', './b', './c', './d', './e', './f', './g']) assert.ok(names.includes(n), `${n} not read from ${names.join(' ')}`);
});

test('no cycle among the files under src/', () => {
  const files = fileGraph();
  assert.ok(files.size > 100, `found only ${files.size} files under ${SRC}`);
  const found = cycles(files.keys(), (f) => files.get(f)!);
  assert.ok(found.length === 0, `files importing each other:\n${found.map((c) => `  ${c.join(', ')}`).join('\n')}`);
});

test('no cycle among the folders under src/', () => {
  const edges = unitEdges(fileGraph());
  const found = cycles(edges.keys(), (u) => edges.get(u)?.keys() ?? []);
  const described = found.map((c) => c.flatMap((a) => c.filter((b) => edges.get(a)?.has(b)).map((b) => `  ${a} -> ${b}: ${edges.get(a)!.get(b)!.join(', ')}`)).join('\n'));
  assert.ok(found.length === 0, `folders importing each other:\n${described.join('\n')}`);
});

test('every import between folders runs down the layers', () => {
  const rank = new Map(LAYERS.flatMap((units, i) => units.map((u) => [u, i] as const)));
  const units = new Set(readdirSync(SRC).filter((e) => statSync(join(SRC, e)).isDirectory() || e.endsWith('.ts')));
  const unplaced = [...units].filter((u) => !rank.has(u));
  assert.deepEqual(unplaced, [], 'folders (or files directly under src/) missing from LAYERS');
  const upward: string[] = [];
  for (const [from, out] of unitEdges(fileGraph())) {
    for (const [to, imports] of out) if (rank.get(to)! >= rank.get(from)!) upward.push(`${from} -> ${to}: ${imports.join(', ')}`);
  }
  assert.ok(upward.length === 0, `imports that do not run down the layers:\n${upward.join('\n')}`);
});
