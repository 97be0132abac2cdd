/** The block-style subset parser gives, for every text it takes, exactly the documents js-yaml
 * (core schema) gives, and declines (undefined) everything outside the subset, so the full
 * parsers keep deciding what is accepted and every error. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CORE_SCHEMA, dump, loadAll } from 'js-yaml';
import { stringify } from 'yaml';
import { blockYamlDocuments, implicitTypes, type FieldsOf, type FieldTree } from '../../src/k8s/yaml-block';
import { mulberry32 } from '../helpers/prng';

const TYPES = implicitTypes(CORE_SCHEMA)!;

function jsYaml(text: string): unknown[] {
  return loadAll(text, null, { schema: CORE_SCHEMA });
}

function block(text: string): unknown[] | undefined {
  return blockYamlDocuments(text, TYPES);
}

const POD = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web-7d9f8-abcde',
    namespace: 'shop',
    resourceVersion: '205000',
    creationTimestamp: '2026-11-30T08:15:42Z',
    labels: { app: 'web', 'app.kubernetes.io/name': 'web', 'pod-template-hash': '7d9f8', tier: 'true' },
    annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9090', note: "it's a \"pod\"", empty: '' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f8', controller: true }],
  },
  spec: {
    nodeName: 'node-0',
    hostNetwork: false,
    containers: [
      {
        name: 'app',
        image: 'registry.example.com/team/app:1.24.3',
        args: ['--listen=:8080', '-v', '--url=http://a:80/b'],
        ports: [
          { name: 'http', containerPort: 8080, protocol: 'TCP' },
          { name: 'dns', containerPort: 53, protocol: 'UDP' },
        ],
        resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1' } },
        env: [],
      },
    ],
    securityContext: {},
    terminationGracePeriodSeconds: 30,
  },
  status: { phase: 'Running', podIP: '198.18.0.10', podIPs: [{ ip: '198.18.0.10' }, { ip: '2001:db8::a' }], startTime: null, ratio: 0.5, big: 12345678901234567890 },
};

describe('blockYamlDocuments', () => {
  test("takes kubectl's and yaml.stringify's layouts, with js-yaml's values", () => {
    const texts = [
      stringify(POD),
      stringify(POD, { indentSeq: false }),
      dump(POD, { lineWidth: -1 }),
      dump(POD, { lineWidth: -1, noArrayIndent: true }),
      `# a pod\n---\n${stringify(POD)}---\n${stringify({ apiVersion: 'v1', kind: 'List', items: [POD, structuredClone(POD)] })}`,
      `${stringify(POD)}---\n`,
      '---\n---\nkind: Namespace\n',
      'a:\n  - 1\n  -\n  - x: 1\n    y: 2\n  -   deep: 1\n      deeper: 2\nb:\n\n  # a comment line\n  c: ~\n',
      'a:\n- 1\n- 2\nb: 3',
      "q: 'it''s'\nd: \"double\"\ne: ''\nlist: []\nmap: {}\n",
      'k: -1\nj: 0x1F\nf: 1_000\ng: .5\nh: 1e3\nn: ~\nm: Null\nb: TRUE\ne: 012\no: 0o12\np: +12\nr: .inf\nt: 1.\nu: 08\nv: -0\nw: 9007199254740993\n',
      '-foo: x\nurl: http://a:80/b\nhash: a#b\n',
      '',
      '\n',
      '# only a comment\n',
      'a: 1 ',
      'a: 1\n\n\n',
    ];
    for (const text of texts) {
      const got = block(text);
      assert.notEqual(got, undefined, `declined: ${JSON.stringify(text)}`);
      assert.deepEqual(got, jsYaml(text), JSON.stringify(text));
    }
  });

  test('declines what is outside the subset', () => {
    const outside = [
      'a:\tb\n', // tab
      'a: b\r\n', // CR
      'a: é\n', // non-ASCII
      'a: \x01\n', // control character (js-yaml refuses it)
      'a: {b: 1}\n', // flow mapping
      'a: [1, 2]\n', // flow sequence
      'a: |\n  x\n', // literal block
      'a: >\n  x\n', // folded block
      'a: "x\\ty"\n', // escape
      'a: "x\n  y"\n', // multi-line quoted
      'a: x\n  y\n', // multi-line plain
      'a: &x 1\nb: *x\n', // anchor and alias
      'a: !!str 1\n', // tag
      '%YAML 1.2\n---\na: 1\n', // directive
      'a: 1\n...\n', // document end marker
      '--- a: 1\n', // content on the separator line
      '"a": 1\n', // quoted key
      "'a': 1\n", // quoted key
      '? a\n: 1\n', // complex key
      'a: 1\na: 2\n', // duplicate key (js-yaml refuses it)
      '1: a\n', // a key that is not a string as written
      'true: a\n',
      '~: a\n',
      '__proto__: a\n',
      '<<: {b: 1}\n',
      'constructor: 1\nconstructor: 2\n',
      'a: 1 # comment\n', // trailing comment
      'a: "x" # comment\n',
      'a: b: c\n', // mapping in a plain scalar
      'a: b:\n',
      'a: - b\n',
      '- - a\n', // sequence in a sequence on one line
      'plain\n', // a scalar document
      'a:\n  b: 1\n c: 2\n', // indentation it does not expect
      '  a: 1\nb: 2\n',
      'a: 1\n- b\n',
      'a: 1\nb: 2\n  c: 3\n',
      'key : v\n',
      'a: @x\n',
      'a: `x\n',
      'a: %x\n',
      'a: ,x\n',
      'a: ?x\n',
      'a: :x\n',
      "a: 'x\n",
      'a: "x\n',
      "a: 'x'y'\n",
      'a: "x"y"\n',
    ];
    for (const text of outside) assert.equal(block(text), undefined, JSON.stringify(text));
  });

  test('random documents and damaged texts: js-yaml to the value, or declined', () => {
    const rnd = mulberry32(13);
    const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)];
    const scalars = ['', 'web', 'v1', '8080', '08', '1.5', '1e3', '0x1F', '1_000', '.5', '-.inf', '.nan', '+12', '-0', 'true', 'True', 'yes', 'null', 'Null', '~', '100m', '1.24.3', '2026-11-30T08:15:42Z', 'a: b', 'a #b', 'a#b', '-', '- a', '---', '...', "it's", 'say "hi"', 'x\ty', 'line\nbreak', 'é', ' lead', 'trail ', '{}', '[]', '&a', '*a', '!t', '|', '>', '%x', '@x', '?x', ':x', 'x:', 'http://a:80/b', 'C:\\dir', '12345678901234567890', 'n', 'F', '0b101', '0xZZ'];
    const keys = ['a', 'name', 'app.kubernetes.io/name', 'k8s-app', '-k', '1', 'true', '~', 'x y', 'a:b', 'a#b', 'constructor', '<<', 'k ', '0x10', 'ü', ''];
    const value = (depth: number): unknown => {
      const r = rnd();
      if (depth > 3 || r < 0.45) {
        const s = rnd();
        return s < 0.7 ? pick(scalars) : s < 0.8 ? Math.floor(rnd() * 1e6) : s < 0.85 ? rnd() * 100 : s < 0.9 ? null : rnd() < 0.5;
      }
      if (r < 0.75) {
        const o: Record<string, unknown> = {};
        for (let i = Math.floor(rnd() * 5); i > 0; i--) o[rnd() < 0.7 ? pick(['a', 'name', 'spec', 'x.io/y']) : pick(keys)] = value(depth + 1);
        return o;
      }
      return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
    };
    const write = (v: unknown): string => {
      switch (Math.floor(rnd() * 4)) {
        case 0:
          return stringify(v);
        case 1:
          return dump(v, { lineWidth: -1, noArrayIndent: rnd() < 0.5 });
        case 2:
          return dump(v, { flowLevel: Math.floor(rnd() * 3), quotingType: '"' });
        default:
          return stringify(v, { indent: 1 + Math.floor(rnd() * 4), indentSeq: rnd() < 0.5, defaultStringType: pick(['PLAIN', 'QUOTE_DOUBLE', 'QUOTE_SINGLE'] as const) });
      }
    };
    const damage = (text: string): string => {
      for (let i = Math.floor(rnd() * 3); i > 0; i--) {
        const at = Math.floor(rnd() * (text.length + 1));
        const op = rnd();
        if (op < 0.4) text = text.slice(0, at) + pick([' ', ':', '-', '#', '"', "'", '\n', '  ', '- ', ': ', '---\n', '{', '[', '&a ', '*a', '!', '|', '\\']) + text.slice(at);
        else if (op < 0.8) text = text.slice(0, at) + text.slice(at + 1 + Math.floor(rnd() * 3));
        else text = text.slice(0, at) + text.slice(at, at + 5) + text.slice(at);
      }
      return text;
    };
    let taken = 0;
    for (let i = 0; i < 4000; i++) {
      let text = Array.from({ length: 1 + Math.floor(rnd() * 2) }, () => write(value(0))).join(pick(['---\n', '--- \n', '---\n\n', '\n---\n# c\n']));
      if (rnd() < 0.5) text = damage(text);
      const got = block(text);
      if (got === undefined) continue;
      taken++;
      assert.deepEqual(got, jsYaml(text), JSON.stringify(text));
    }
    // The generator must exercise the subset, not only what it declines.
    assert.ok(taken > 200, `only ${taken} texts taken`);
  });
  test("js-yaml's own readings: a text of spaces alone is no document; an outer entry after an inner null entry is left to it", () => {
    for (const text of [' ', ' \n', '    \n', '  \n  \n', ' # c\n']) assert.deepEqual(block(text), jsYaml(text), JSON.stringify(text));
    // js-yaml files `- k: v` under `d:` (the `yaml` package does not): declined, js-yaml decides.
    const quirk = ' a:\n -\n   d:\n    -\n - k: v\n';
    assert.equal(block(quirk), undefined);
    assert.deepEqual(jsYaml(quirk), [{ a: [{ d: [null, { k: 'v' }] }] }]);
  });

  test('lines of dashes and keys at random indentation: js-yaml to the value, or declined', () => {
    const rnd = mulberry32(7);
    const tokens = ['- ', '-', 'a:', 'b: 1', '- x', '- k: v', 'c:', '- -', 'd: ', '  '];
    let taken = 0;
    for (let n = 0; n < 20000; n++) {
      const lines = Array.from({ length: 1 + Math.floor(rnd() * 6) }, () => ' '.repeat(Math.floor(rnd() * 5)) + tokens[Math.floor(rnd() * tokens.length)]);
      const text = `${lines.join('\n')}\n`;
      const got = block(text);
      if (got === undefined) continue;
      taken++;
      let want: unknown;
      try {
        want = jsYaml(text);
      } catch (err) {
        assert.fail(`taken, but js-yaml refuses ${JSON.stringify(text)}: ${err instanceof Error ? err.message : String(err)}`);
      }
      assert.deepEqual(got, want, JSON.stringify(text));
    }
    assert.ok(taken > 1000, `only ${taken} texts taken`);
  });

  test('asked for some fields: exactly those of the value js-yaml gives, and the same texts taken', () => {
    const rnd = mulberry32(29);
    const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)];
    const trees: Record<string, FieldTree> = {
      Pod: { apiVersion: true, metadata: { name: true, labels: true }, spec: { containers: { ports: true } } },
      Skipped: {},
      Deep: { spec: { a: { name: true } }, items: true },
    };
    const fieldsOf: FieldsOf = (kind) => (kind.endsWith('List') ? undefined : trees[kind]);
    const keys = ['apiVersion', 'kind', 'metadata', 'name', 'labels', 'spec', 'containers', 'ports', 'a', 'items', 'status', 'x.io/y'];
    const scalars = ['Pod', 'Skipped', 'Deep', 'List', 'PodList', 'web', '8080', 'true', 'null', '', 'a: b', '1.5', "it's"];
    const value = (depth: number): unknown => {
      const r = rnd();
      if (depth > 4 || r < 0.35) return rnd() < 0.85 ? pick(scalars) : Math.floor(rnd() * 100);
      if (r < 0.8) {
        const o: Record<string, unknown> = {};
        // Now and then a key Object.prototype has: declined alike, built or skipped.
        for (let i = Math.floor(rnd() * 6); i > 0; i--) o[rnd() < 0.02 ? 'constructor' : pick(keys)] = value(depth + 1);
        return o;
      }
      return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
    };
    const object = (): unknown => {
      const o: Record<string, unknown> = {};
      // kind mostly first (as written by kubectl and yaml.stringify), sometimes after other keys.
      if (rnd() < 0.3) o[pick(keys)] = value(1);
      o.kind = pick(['Pod', 'Skipped', 'Deep', 'List', 'PodList', 'Other', 7]);
      for (let i = Math.floor(rnd() * 6); i > 0; i--) o[pick(keys)] = value(1);
      if (String(o.kind).endsWith('List') || rnd() < 0.2) o.items = Array.from({ length: Math.floor(rnd() * 4) }, () => (rnd() < 0.8 ? object() : value(2)));
      return o;
    };
    // The reference: js-yaml's documents, cut as the tree says.
    const cut = (v: unknown, want: FieldTree | true | 'items'): unknown => {
      if (want === true) return v;
      if (want === 'items') return Array.isArray(v) ? v.map((e) => root(e)) : v;
      if (Array.isArray(v)) return v.map((e) => cut(e, want));
      if (typeof v !== 'object' || v === null) return v;
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) if (Object.hasOwn(want, k)) out[k] = cut(x, want[k]);
      return out;
    };
    const root = (v: unknown): unknown => {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
      let fields: FieldTree | true = true;
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const sub = fields === true ? (k === 'items' ? 'items' : true) : k === 'kind' ? true : Object.hasOwn(fields, k) ? fields[k] : undefined;
        if (sub === undefined) continue;
        out[k] = cut(x, sub);
        if (k === 'kind' && typeof x === 'string') fields = fieldsOf(x) ?? true;
      }
      return out;
    };
    let taken = 0;
    for (let i = 0; i < 3000; i++) {
      let text = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => stringify(object(), { indentSeq: rnd() < 0.5 })).join('---\n');
      // Damage: a duplicate key, a bad indent, a flow value, a tab, somewhere in the text.
      if (rnd() < 0.3) {
        const lines = text.split('\n');
        const at = Math.floor(rnd() * lines.length);
        lines.splice(at, 0, ' '.repeat(Math.floor(rnd() * 8)) + pick(['name: x', 'a: 1', 'kind: Pod', '- a', 'ports: [1]', 'a:\tb', 'a: |', 'a: &x 1']));
        text = lines.join('\n');
      }
      const whole = block(text);
      const pruned = blockYamlDocuments(text, TYPES, fieldsOf);
      assert.equal(pruned === undefined, whole === undefined, `taken by one and not the other: ${JSON.stringify(text)}`);
      if (pruned === undefined) continue;
      taken++;
      assert.deepEqual(pruned, jsYaml(text).map(root), JSON.stringify(text));
    }
    assert.ok(taken > 400, `only ${taken} texts taken`);
  });
});
