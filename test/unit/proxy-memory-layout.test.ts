/** How the proxy's per-endpoint objects lie in V8's heap (issue 28, target 4: memory at scale).
 * At 250k endpoints every byte an endpoint keeps is 250 KB, so two layouts are checked with V8's
 * own view of an object (`%HaveSameMap`, in a child process started with --allow-natives-syntax):
 * - a normalised endpoint with its node has all its fields in the object: the same hidden class
 *   as a five-field literal (a field added after the literal goes to a property array of its
 *   own, ~40 bytes more);
 * - an 8-byte element key (a hairpin element) is one flat string, not a tree of joined pieces
 *   (two more string headers, ~60 bytes, kept by the model's map for every element);
 * - an endpoint-map element keeps its numbers, not three buffers (~300 bytes), and a hairpin
 *   element its address, not a buffer (~100 bytes): their bytes, spelt when read, are the
 *   endpoint's share and `address . address`. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { drawKey, drawShareKey, endpointData, hairpinKey } from '../../src/proxy/render';
import { ProxyComponent } from '../../src/proxy/component';
import { elementKey } from '../../src/ruleset/model';
import { ChangeScope } from '../../src/pipeline/scope';
import { endpoint, node, NODE, service, slice, snapshotOf } from '../proxy/fixtures';

const SRC = join(__dirname, '..', '..', 'src');

/** Runs `body` (which may use V8 natives) in a new node and returns what it printed, as JSON. */
function inV8(body: string): Record<string, boolean> {
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '-e', body], { encoding: 'utf8', env: { ...process.env, NFKUBE_SRC: SRC } });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, boolean>;
}

test('a normalised endpoint with a node name keeps all five fields in the object', () => {
  const out = inV8(`
    const { normalizeEndpointSlice } = require(process.env.NFKUBE_SRC + '/k8s/normalize-service');
    const slice = normalizeEndpointSlice({
      apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
      metadata: { namespace: 'ns', name: 'a-1', labels: { 'kubernetes.io/service-name': 'a' } },
      addressType: 'IPv4', ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      endpoints: [{ addresses: ['198.18.0.1'], conditions: { ready: true }, nodeName: 'node-1' }, { addresses: ['198.18.0.2'] }],
    });
    const [withNode, without] = slice.endpoints;
    console.log(JSON.stringify({
      nodeName: withNode.nodeName === 'node-1' && !('nodeName' in without),
      literal: %HaveSameMap(withNode, { address: '', ready: true, serving: true, terminating: false, nodeName: '' }),
    }));
  `);
  assert.deepEqual(out, { nodeName: true, literal: true });
});

test('the key of an 8-byte element is one flat string', () => {
  const out = inV8(`
    const { elementKey } = require(process.env.NFKUBE_SRC + '/ruleset/model');
    const { hairpinKey } = require(process.env.NFKUBE_SRC + '/proxy/render');
    const key = elementKey({ key: hairpinKey('198.18.0.1') });
    const flat = Buffer.from('c6120001c6120001', 'latin1').toString('latin1');
    console.log(JSON.stringify({ spelt: key === 'c6120001c6120001', flat: %HaveSameMap(key, flat) }));
  `);
  assert.deepEqual(out, { spelt: true, flat: true });
});

test("endpoint-map and hairpin elements hold no buffers, and read as their endpoint's", () => {
  const addresses = ['198.18.0.1', '198.18.0.2', '198.18.0.3'];
  const proxy = new ProxyComponent({ nodeName: NODE });
  proxy.start(snapshotOf([service('ns', 'web', { clusterIPs: ['198.19.0.10'] })], [slice('ns', 'web-a', 'web', { endpoints: addresses.map((a) => endpoint(a, NODE)) })], [node(NODE, { podCIDRs: ['198.18.0.0/24'] })]));
  const draws = [...proxy.desired.sets.values()].filter((s) => s.set.name.startsWith('endpoint-draws-v4-'));
  const elements = draws.flatMap((s) => [...s.elements]);
  assert.equal(elements.length, addresses.length);
  const seen = new Set<string>();
  for (const [k, e] of elements) {
    assert.deepEqual(Object.values(e).filter((v) => Buffer.isBuffer(v)), [], 'no buffer kept');
    const id = e.key.readUInt16BE(0);
    const first = e.key.readUInt16BE(2);
    const last = e.keyEnd!.readUInt16BE(2);
    assert.deepEqual([e.key, e.keyEnd], [drawKey(id, first), drawKey(id, last)]);
    assert.equal(k, drawShareKey(id, first, last));
    assert.equal(elementKey(e), k);
    const i = addresses.findIndex((a) => e.data!.equals(endpointData(a, 8080)));
    assert.ok(i >= 0, `data ${e.data!.toString('hex')} is an endpoint's`);
    seen.add(addresses[i]);
  }
  assert.equal(seen.size, addresses.length, 'one share per endpoint');
  const hairpin = [...proxy.desired.sets.get('hairpin-v4')!.elements];
  assert.deepEqual(hairpin.map(([k]) => k).sort(), addresses.map((a) => elementKey({ key: hairpinKey(a) })).sort());
  for (const [, e] of hairpin) assert.deepEqual(Object.values(e).filter((v) => Buffer.isBuffer(v)), [], 'no buffer kept');
});

test('a claimed hairpin element keeps its claim in the object: the same hidden class as an unclaimed one', () => {
  const out = inV8(`
    const { ProxyComponent } = require(process.env.NFKUBE_SRC + '/proxy/component');
    const { HairpinElement } = require(process.env.NFKUBE_SRC + '/proxy/render');
    const { endpoint, service, slice, snapshotOf } = require(process.env.NFKUBE_SRC + '/../test/proxy/fixtures');
    const snapshot = snapshotOf([service('ns', 'web', { clusterIPs: ['198.19.0.10'] })], [slice('ns', 'web-a', 'web', { endpoints: [endpoint('198.18.0.1', 'n')] })], []);
    const proxy = new ProxyComponent({ nodeName: 'n' });
    proxy.start(snapshot);
    const [claimed] = [...proxy.desired.sets.get('hairpin-v4').elements.values()];
    console.log(JSON.stringify({ hairpin: claimed instanceof HairpinElement, claimed: Object.getOwnPropertySymbols(claimed).some((s) => claimed[s] === 'ns/web'), sameMap: %HaveSameMap(claimed, new HairpinElement('198.18.0.2')) }));
  `);
  assert.deepEqual(out, { hairpin: true, claimed: true, sameMap: true });
});

test('an endpoint change keeps no index of the renders it compared: a service keeps what its first render kept', () => {
  const proxy = new ProxyComponent({ nodeName: NODE });
  const eps = (n: number) => Array.from({ length: n }, (_, i) => endpoint(`198.18.0.${i + 1}`, i === 0 ? NODE : 'node-2'));
  proxy.start(snapshotOf([service('ns', 'web', { clusterIPs: ['198.19.0.10'] })], [slice('ns', 'web-a', 'web', { endpoints: eps(3) })], [node(NODE, { podCIDRs: ['198.18.0.0/24'] })]));
  const rendered = (proxy as unknown as { rendered: Map<string, object> }).rendered;
  const fields = Object.keys(rendered.get('ns/web')!).sort();
  for (const n of [4, 2, 5]) {
    proxy.apply({ kind: 'EndpointSlice', type: 'upsert', key: 'ns/web-a', object: slice('ns', 'web-a', 'web', { endpoints: eps(n) }) }, new ChangeScope());
    assert.equal(proxy.stats().endpoints, n);
    assert.deepEqual(Object.keys(rendered.get('ns/web')!).sort(), fields);
  }
});
