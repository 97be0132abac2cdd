/** Files no manifest directory should hold (issue 11, defects 3, 4 and 10): alias bombs, deep
 * nesting, huge files, unknown kinds, malformed Lists. The source never throws and never hangs;
 * each file is reported by name, its last good objects stay, and a NetworkPolicy that cannot be
 * read fails closed instead of disappearing. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SourceError } from '../../src/k8s/errors';
import { MAX_MANIFEST_BYTES, ManifestSource } from '../../src/k8s/manifest-source';
import type { ClusterChange } from '../../src/k8s/source';
import { Recorder } from './recorder';

const T = { timeout: 60_000 };

const ALIAS_BOMB = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: bomb, namespace: x}
spec:
  podSelector: {matchLabels: {app: web}}
  a: &a ["l","o","l","l","o","l","l","o","l"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
`;

const POLICY_YAML = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: bomb, namespace: x}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{}]
`;

const isKey = (kind: ClusterChange['kind'], key: string, type?: ClusterChange['type']) => (c: ClusterChange) =>
  c.kind === kind && c.key === key && (type === undefined || c.type === type);

/** A source over a directory holding `files`; returns it started, with what it recorded. */
async function startOver(files: Record<string, string>, warnings: SourceError[] = [], maxTotalBytes?: number) {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-hostile-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const rec = new Recorder();
  const source = new ManifestSource({ dir, ...rec, onWarning: (w) => warnings.push(w), maxTotalBytes });
  const initial = await source.start();
  return { dir, rec, source, initial, stop: async () => (await source.stop(), rmSync(dir, { recursive: true, force: true })) };
}

describe('ManifestSource under hostile files', () => {
  test('an alias bomb read first: reported by file, the policy it names fails closed; the other files are served', T, async () => {
    const s = await startOver({ 'bomb.yaml': ALIAS_BOMB, 'ns.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n' });
    try {
      assert.ok(s.initial.namespaces.has('x'));
      const failed = s.initial.policies.get('x/bomb');
      assert.deepEqual(failed, { namespace: 'x', name: 'bomb', podSelector: {}, policyTypes: ['Ingress', 'Egress'], problems: [{ field: '(document)', message: 'cannot be parsed' }] });
      const files = s.rec.errors.map((e) => [e.file, e.document, e.object]);
      assert.deepEqual(files, [
        ['bomb.yaml', 0, undefined],
        ['bomb.yaml', 0, 'NetworkPolicy x/bomb'],
      ]);
      assert.match(s.rec.errors[0].message, /^bomb\.yaml, document 0: .*alias/i);
    } finally {
      await s.stop();
    }
  });

  test('an alias bomb written over a good file while running: the source survives and keeps the last good policy', T, async () => {
    const s = await startOver({ 'p.yaml': POLICY_YAML });
    try {
      const good = s.initial.policies.get('x/bomb');
      assert.deepEqual(good?.podSelector, { matchLabels: { app: 'web' } });
      const errFrom = s.rec.errors.length;
      writeFileSync(join(s.dir, 'p.yaml'), ALIAS_BOMB);
      const err = await s.rec.error((e) => e.file === 'p.yaml', errFrom);
      assert.match(err.message, /alias/i);
      // Still alive and serving: a new file is picked up, and the policy is as it was.
      const from = s.rec.changes.length;
      writeFileSync(join(s.dir, 'n.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: later}\n');
      await s.rec.change(isKey('Namespace', 'later'), from);
      assert.deepEqual(s.source.snapshot().policies.get('x/bomb'), good);
      assert.equal(s.rec.changes.filter(isKey('NetworkPolicy', 'x/bomb')).length, 0);
    } finally {
      await s.stop();
    }
  });

  test('deep nesting (JSON and YAML, flow and block) and oversized files are reported by name and skipped, quickly', T, async () => {
    const t0 = Date.now();
    const s = await startOver({
      'deep.json': '['.repeat(2_000_000) + ']'.repeat(2_000_000),
      'deep.yaml': 'a: ' + '['.repeat(2_000_000) + '\n',
      'block.yaml': Array.from({ length: 1500 }, (_, d) => ' '.repeat(d) + 'a:').join('\n') + '\n',
      'huge.yaml': `# ${'x'.repeat(MAX_MANIFEST_BYTES.yaml)}\n`,
      'ok.json': JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ok' } }),
    });
    try {
      assert.ok(s.initial.namespaces.has('ok'));
      const byFile = new Map(s.rec.errors.map((e) => [e.file, e.message]));
      assert.match(byFile.get('deep.json')!, /nested deeper than 1000 levels/);
      assert.match(byFile.get('deep.yaml')!, /nested deeper than 1000 levels/);
      assert.ok(byFile.has('block.yaml'), 'deep block nesting is reported');
      assert.match(byFile.get('huge.yaml')!, /more than the 4194304 this format may have/);
      // No timed assertion (a loaded machine); the point is that start() returned at all.
      console.log(`# hostile files read in ${Date.now() - t0} ms`);
    } finally {
      await s.stop();
    }
  });

  test('many files each within its own bound: the one that would cross the total is not read, named; the total follows edits and removals', T, async () => {
    const ns = (name: string, pad = 0) => JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations: { pad: 'x'.repeat(pad) } } });
    const s = await startOver({ 'a.json': ns('a', 300), 'b.yaml': POLICY_YAML, 'c.json': ns('c', 600), 'd.json': ns('d') }, [], 1000);
    try {
      assert.ok(s.initial.namespaces.has('a') && s.initial.policies.has('x/bomb') && s.initial.namespaces.has('d'));
      assert.ok(!s.initial.namespaces.has('c'), 'c.json would cross the total: not read');
      const refused = s.rec.errors.filter((e) => e.file === 'c.json');
      assert.equal(refused.length, 1);
      assert.match(refused[0].message, /^c\.json: \d+ bytes, with the other files' \d+ more than the 1000 all manifests may hold together \(--manifests-max-bytes\); not read/);
      assert.equal(s.rec.errors.length, 1, 'only the file that crosses it');

      // Room made by shrinking another file: c.json is read when it changes next.
      let from = s.rec.changes.length;
      writeFileSync(join(s.dir, 'a.json'), ns('a2'));
      await s.rec.change(isKey('Namespace', 'a2', 'upsert'), from);
      from = s.rec.changes.length;
      writeFileSync(join(s.dir, 'c.json'), ns('c', 500));
      await s.rec.change(isKey('Namespace', 'c', 'upsert'), from);

      // Growing a file that is read past the total: refused, its previous objects stay.
      const errFrom = s.rec.errors.length;
      writeFileSync(join(s.dir, 'd.json'), ns('d2', 700));
      const err = await s.rec.error((e) => e.file === 'd.json', errFrom);
      assert.match(err.message, /more than the 1000 all manifests may hold together/);
      assert.ok(s.source.snapshot().namespaces.has('d') && !s.source.snapshot().namespaces.has('d2'));
    } finally {
      await s.stop();
    }
  });

  test('the depth check skips strings: brackets and escaped quotes inside them do not count, an escaped backslash ends one', T, async () => {
    const ns = (name: string, label: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name }, spec: { note: label } });
    const s = await startOver({
      // 1,500 brackets inside strings, some between escaped quotes: no nesting at all.
      'strings.json': JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [ns('brackets', '[{'.repeat(750)), ns('quotes', '\\"[[[\\"'.repeat(300))] }),
      // A string that ends in an escaped backslash, then real nesting.
      'deep.json': String.raw`{"a": "x\\", "b": ` + '['.repeat(1500) + ']'.repeat(1500) + '}',
    });
    try {
      assert.ok(s.initial.namespaces.has('brackets') && s.initial.namespaces.has('quotes'));
      assert.deepEqual(
        s.rec.errors.map((e) => e.file),
        ['deep.json'],
      );
      assert.match(s.rec.errors[0].message, /nested deeper than 1000 levels/);
    } finally {
      await s.stop();
    }
  });

  test('a JSON List read item by item: an item that does not parse is named; the file defines nothing and reports nothing else; once fixed it is served', T, async () => {
    const ns = (name: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const items = [ns('a'), { kind: 'Widget', metadata: { name: 'w' } }, { kind: 'Pod', metadata: { namespace: 'a' } }, ns('b')].map((o) => JSON.stringify(o));
    // Past a MiB, as Lists read item by item are.
    const note = `"metadata":{"note":"${'x'.repeat(1 << 20)}"}`;
    const broken = `{"apiVersion":"v1","kind":"List",${note},"items":[${items.slice(0, 3).join(',')},{"kind":"Namespace","metadata":{"name":"c"]},${items[3]}]}`;
    const warnings: SourceError[] = [];
    const s = await startOver({ 'list.json': broken, 'deep.json': `{"kind":"List",${note},"items":[${'['.repeat(1200)}${']'.repeat(1200)}]}` }, warnings);
    try {
      assert.equal(s.initial.namespaces.size, 0);
      assert.equal(warnings.length, 0, 'the Widget before the bad item is not reported');
      assert.deepEqual(s.rec.errors.map((e) => [e.file, e.document]), [['deep.json', 0], ['list.json', 0]], 'nor the nameless Pod');
      assert.match(s.rec.errors[0].message, /nested deeper than 1000 levels/);
      assert.match(s.rec.errors[1].message, /^list\.json, document 0: items\[3\] \(at offset \d+\): /);
      writeFileSync(join(s.dir, 'list.json'), `{"apiVersion":"v1","kind":"List",${note},"items":[${items.join(',')}]}`);
      await s.rec.change(isKey('Namespace', 'b', 'upsert'));
      assert.ok(s.source.snapshot().namespaces.has('a'));
      assert.deepEqual(warnings.map((w) => w.file), ['list.json']);
      assert.match(warnings[0].message, /kind "Widget" is not one nfkube reads/);
      assert.ok(s.rec.errors.some((e) => e.file === 'list.json' && /items\[2\]\.metadata\.name/.test(e.message)), 'the nameless Pod is reported by its item');
    } finally {
      await s.stop();
    }
  });

  test('a JSON List under a MiB with more brackets than the nesting bound is read item by item too (its nesting scan would visit every character anyway)', T, async () => {
    const items = Array.from({ length: 600 }, (_, i) => JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: `n${i}`, labels: { i: String(i) } } }));
    items[3] = '{"kind":"Namespace","metadata":{"name":"c"]}';
    const text = `{"apiVersion":"v1","kind":"List","items":[${items.join(',')}]}`;
    assert.ok(text.length < 1 << 20);
    const s = await startOver({ 'small.json': text });
    try {
      assert.equal(s.initial.namespaces.size, 0);
      assert.deepEqual(s.rec.errors.map((e) => e.file), ['small.json']);
      assert.match(s.rec.errors[0].message, /^small\.json, document 0: items\[3\] \(at offset \d+\): /);
    } finally {
      await s.stop();
    }
  });

  test('unknown kinds warn (file and kind); near-miss kinds and Lists without a list of items are errors', T, async () => {
    const warnings: SourceError[] = [];
    const s = await startOver(
      {
        'k.yaml': [
          'kind: Deployment\nmetadata: {name: d}',
          'kind: NetworkPolcy\nmetadata: {name: typo, namespace: x}\nspec: {podSelector: {}}',
          'kind: List\nitems: {a: 1}',
          'kind: PodList\nitems: "none"',
          'kind: List\nitems: [{kind: networkpolicy, metadata: {name: p}}]',
        ].join('\n---\n'),
      },
      warnings,
    );
    try {
      assert.deepEqual(
        warnings.map((w) => [w.file, w.document, w.severity]),
        [['k.yaml', 0, 'warning']],
      );
      assert.match(warnings[0].message, /^k\.yaml, document 0: kind "Deployment" is not one nfkube reads/);
      assert.deepEqual(
        s.rec.errors.map((e) => [e.file, e.document, e.field]),
        [
          ['k.yaml', 1, 'kind'],
          ['k.yaml', 2, 'items'],
          ['k.yaml', 3, 'items'],
          ['k.yaml', 4, 'items[0].kind'],
        ],
      );
      assert.match(s.rec.errors[0].message, /unknown kind "NetworkPolcy"; did you mean NetworkPolicy\?/);
    } finally {
      await s.stop();
    }
  });

  test('a policy of another apiVersion, or with a spec that is a list, fails closed and says so', T, async () => {
    const s = await startOver({
      'p.yaml': [
        'apiVersion: networking.k8s.io/v2\nkind: NetworkPolicy\nmetadata: {name: v2, namespace: x}\nspec: {podSelector: {matchLabels: {app: web}}, policyTypes: [Ingress]}',
        'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: listy, namespace: x}\nspec: [{podSelector: {}}]',
      ].join('\n---\n'),
    });
    try {
      assert.deepEqual(s.initial.policies.get('x/v2')?.podSelector, { matchLabels: { app: 'web' } });
      assert.deepEqual(s.initial.policies.get('x/v2')?.policyTypes, ['Ingress', 'Egress'], 'a version not understood isolates both ways');
      assert.deepEqual(s.initial.policies.get('x/listy')?.podSelector, {});
      assert.deepEqual(
        s.rec.errors.map((e) => [e.object, e.field]),
        [
          ['NetworkPolicy x/v2', 'apiVersion'],
          ['NetworkPolicy x/listy', 'spec'],
        ],
      );
      assert.ok(s.rec.errors.every((e) => /failing closed/.test(e.message)));
    } finally {
      await s.stop();
    }
  });
});
