/** The fast YAML path gives the values `yaml`'s document model gives (YAML 1.2 core scalars, no
 * timestamps, no merge keys), and hands back what it does not take as is: syntax errors, unknown
 * tags and aliases of collections (the alias-expansion limit lives on the exact path). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { fastYamlDocuments } from '../../src/k8s/yaml-documents';

function exact(text: string): unknown[] {
  return parseAllDocuments(text).map((d) => d.toJS({ maxAliasCount: 100 }));
}

const SAME = [
  'apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x, labels: {app: web}}\nstatus: {podIP: 198.18.0.1}\n',
  'kind: Namespace\nmetadata:\n  name: x\n---\nkind: Namespace\nmetadata:\n  name: y\n',
  '---\napiVersion: v1\nkind: List\nitems:\n- kind: Namespace\n  metadata: {name: z}\n...\n',
  '',
  '---\n---\nkind: Namespace\n',
  // Scalars the two schemas must resolve alike.
  'a: 8080\nb: "8080"\nc: 0x1F\nd: 0o17\ne: 017\nf: 1e3\ng: 1.5\nh: .inf\ni: ~\nj: Null\nk: TRUE\nl: yes\nm: no\nn: on\n',
  'created: 2026-11-30T08:15:42Z\nday: 2026-11-30\ntime: 12:30\nver: 1.24.3\n',
  '<<: {b: 1}\nc: !!str 5\nd: !!int "7"\n',
  'lit: |\n  x\n  y\nfold: >-\n  a\n  b\nq: \'it\'\'s\'\nu: "\\u00e9\\t"\n',
  'labels:\n  "app.kubernetes.io/name": web\n  key with spaces: v\nempty: {}\nlist: []\n',
  'a: &x plain\nb: *x\n',
];

describe('fastYamlDocuments', () => {
  test('gives the documents yaml gives', () => {
    for (const text of SAME) assert.deepEqual(fastYamlDocuments(text), exact(text), JSON.stringify(text));
    // A comment-only file: one empty document here, none there; either way no object.
    assert.deepEqual(fastYamlDocuments('# only a comment\n'), [null]);
    assert.deepEqual(exact('# only a comment\n'), []);
  });

  test('hands back what it does not take as is', () => {
    assert.equal(fastYamlDocuments('kind: Pod\n  bad: [unclosed\n'), undefined, 'syntax error');
    assert.equal(fastYamlDocuments('a: !custom x\n'), undefined, 'unknown tag');
    assert.equal(fastYamlDocuments('a: 1\na: 2\n'), undefined, 'duplicate key');
    assert.equal(fastYamlDocuments('a: &x {b: 1}\nc: *x\n'), undefined, 'alias of a map');
    assert.equal(fastYamlDocuments('a: &x [1, 2]\nc: [*x, *x]\n'), undefined, 'alias of a list');
  });

  test('an alias bomb is left to the exact path, whose limit refuses it', () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 9; i++) levels.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10).fill(`*${String.fromCharCode(96 + i)}`).join(',')}]`);
    const bomb = levels.join('\n') + '\n';
    assert.equal(fastYamlDocuments(bomb), undefined);
    assert.throws(() => exact(bomb), /alias/i);
  });
});
