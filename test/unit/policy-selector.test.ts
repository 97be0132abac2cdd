import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectorIndex, compileSelector, matches } from '../../src/k8s/selector';
import { canonicalIp, formatCidr, formatIp, parseCidr, subtractRanges } from '../../src/net/ip';

const sel = (s: Parameters<typeof compileSelector>[0]) => compileSelector(s, 'spec.podSelector');

test('matchLabels requires every pair; the empty selector matches everything', () => {
  const s = sel({ matchLabels: { app: 'web', tier: 'fe' } }).selector;
  assert.equal(matches(s, { app: 'web', tier: 'fe', x: '1' }), true);
  assert.equal(matches(s, { app: 'web' }), false);
  assert.equal(matches(s, { app: 'web', tier: 'be' }), false);
  assert.equal(matches(sel({}).selector, {}), true);
  assert.equal(matches(sel(undefined).selector, { a: 'b' }), true);
});

test('matchExpressions In, NotIn, Exists, DoesNotExist', () => {
  const m = (operator: string, values: string[] | undefined, labels: Record<string, string>) =>
    matches(sel({ matchExpressions: [{ key: 'env', operator, values }] }).selector, labels);
  assert.equal(m('In', ['a', 'b'], { env: 'b' }), true);
  assert.equal(m('In', ['a', 'b'], { env: 'c' }), false);
  assert.equal(m('In', ['a'], {}), false);
  assert.equal(m('NotIn', ['a'], { env: 'b' }), true);
  assert.equal(m('NotIn', ['a'], { env: 'a' }), false);
  assert.equal(m('NotIn', ['a'], {}), true, 'NotIn matches objects without the key');
  assert.equal(m('Exists', undefined, { env: '' }), true);
  assert.equal(m('Exists', undefined, {}), false);
  assert.equal(m('DoesNotExist', undefined, {}), true);
  assert.equal(m('DoesNotExist', undefined, { env: 'x' }), false);
  const both = sel({ matchLabels: { app: 'web' }, matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] }).selector;
  assert.equal(matches(both, { app: 'web', env: 'prod' }), true);
  assert.equal(matches(both, { app: 'web', env: 'dev' }), false);
});

test('invalid requirements are reported with their field and left out', () => {
  const r = sel({
    matchExpressions: [
      { key: 'a', operator: 'Equals', values: ['x'] },
      { key: 'b', operator: 'In', values: [] },
      { key: 'c', operator: 'Exists', values: ['x'] },
      { key: 'd', operator: 'Exists' },
    ],
  });
  assert.deepStrictEqual(r.errors.map((e) => e.field), [
    'spec.podSelector.matchExpressions[0].operator',
    'spec.podSelector.matchExpressions[1].values',
    'spec.podSelector.matchExpressions[2].values',
  ]);
  assert.match(r.errors[0].message, /unknown operator "Equals"/);
  assert.equal(r.selector.canonical, '{d}');
});

test('equal meaning gives equal canonical text', () => {
  const a = sel({ matchLabels: { tier: 'fe', app: 'web' } }).selector.canonical;
  const b = sel({ matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }, { key: 'tier', operator: 'In', values: ['fe'] }] }).selector.canonical;
  assert.equal(a, b);
  assert.equal(a, '{app=web,tier=fe}');
  const c = sel({ matchExpressions: [{ key: 'x', operator: 'In', values: ['b', 'a', 'b'] }] }).selector.canonical;
  assert.equal(c, '{x in (a,b)}');
  assert.notEqual(sel({ matchLabels: { 'a b': 'c' } }).selector.canonical, sel({ matchLabels: { a: 'b c' } }).selector.canonical);
});

test('SelectorIndex yields every matching selector and skips unrelated ones', () => {
  const index = new SelectorIndex<string>();
  const selectors = {
    web: sel({ matchLabels: { app: 'web' } }).selector,
    webOrDb: sel({ matchExpressions: [{ key: 'app', operator: 'In', values: ['web', 'db'] }] }).selector,
    hasEnv: sel({ matchExpressions: [{ key: 'env', operator: 'Exists' }] }).selector,
    all: sel({}).selector,
    notDev: sel({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] }).selector,
    db: sel({ matchLabels: { app: 'db' } }).selector,
  };
  for (const [id, s] of Object.entries(selectors)) index.add(id, s);
  const labelSets: Array<Record<string, string>> = [{ app: 'web' }, { app: 'db', env: 'dev' }, {}, { env: 'prod' }, { app: 'other' }];
  for (const labels of labelSets) {
    const candidates = new Set(index.candidates(labels));
    for (const [id, s] of Object.entries(selectors)) {
      if (matches(s, labels)) assert.ok(candidates.has(id), `${id} for ${JSON.stringify(labels)}`);
    }
  }
  assert.deepStrictEqual(new Set(index.candidates({ app: 'web' })), new Set(['web', 'webOrDb', 'all', 'notDev']));
  index.remove('web');
  assert.ok(![...index.candidates({ app: 'web' })].includes('web'));
  assert.equal(index.size, 5);
});

test('addresses are canonical: IPv4 dotted quad, IPv6 RFC 5952', () => {
  assert.equal(canonicalIp('198.18.0.1')?.text, '198.18.0.1');
  assert.equal(canonicalIp('2001:DB8:0:0::1')?.text, '2001:db8::1');
  assert.equal(canonicalIp('2001:db8:0:1:0:0:0:1')?.text, '2001:db8:0:1::1');
  assert.equal(canonicalIp('2001:db8:1:1:1:1:1:0')?.text, '2001:db8:1:1:1:1:1:0');
  assert.equal(canonicalIp('::')?.text, '::');
  assert.equal(canonicalIp('::ffff:198.18.0.1')?.text, '::ffff:c612:1');
  assert.equal(canonicalIp('::198.18.0.1')?.text, '::c612:1');
  assert.equal(canonicalIp('1:2:3:4:5:6:198.18.0.1')?.text, '1:2:3:4:5:6:c612:1');
  assert.equal(canonicalIp('1::')?.text, '1::');
  assert.equal(canonicalIp('0:0:0:0:0:0:0:1')?.text, '::1');
  for (const bad of ['198.18.0', '198.18.0.256', '01.2.3.4', '1::2::3', 'g::1', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7', '12345::', ':1.2.3.4', '1:2:3:4:5:6:7:1.2.3.4', '']) {
    assert.equal(canonicalIp(bad), undefined, bad);
  }
});

test('CIDRs parse with host bits cleared; cidr minus excepts gives disjoint ranges', () => {
  const c = parseCidr('198.18.1.7/16')!;
  assert.equal(formatCidr(c), '198.18.0.0/16');
  assert.equal(parseCidr('198.18.0.0/33'), undefined);
  assert.equal(parseCidr('198.18.0.0'), undefined);
  assert.equal(parseCidr('2001:db8::/129'), undefined);
  const ranges = subtractRanges(c, [parseCidr('198.18.0.0/24')!, parseCidr('198.18.255.0/24')!, parseCidr('198.18.16.0/20')!]);
  assert.deepStrictEqual(
    ranges.map(([a, b]) => [formatIp('v4', a), formatIp('v4', b)]),
    [
      ['198.18.1.0', '198.18.15.255'],
      ['198.18.32.0', '198.18.254.255'],
    ],
  );
  const v6 = parseCidr('2001:db8::/32')!;
  assert.deepStrictEqual(
    subtractRanges(v6, [parseCidr('2001:db8:8000::/33')!]).map(([a, b]) => [formatIp('v6', a), formatIp('v6', b)]),
    [['2001:db8::', '2001:db8:7fff:ffff:ffff:ffff:ffff:ffff']],
  );
});
