/** Local pods' addresses bound to MACs from the node's neighbour table (src/policy/render/source-check.ts,
 * neighbour-watch.ts): the last MAC seen binds the address while a pod holds it, whichever comes
 * first (the pod or the neighbour entry), and the binding leaves with the pod. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DesiredTable } from '../../src/policy/render/desired';
import { neighbourMac } from '../../src/policy/neighbour-watch';
import { Renderer } from '../../src/policy/render/render';
import { adoptBindings } from '../../src/policy/render/source-check';
import { PodInfo } from '../../src/k8s/model';
import { ChangeScope } from '../../src/pipeline/scope';
import { cloneModel, diffRulesets, formatDiff } from '../../src/ruleset/diff';
import { PolicyEngine } from '../../src/policy/engine/engine';
import { NUD_FAILED, NUD_INCOMPLETE, NUD_PERMANENT, NUD_REACHABLE, NUD_STALE } from '../../src/rtnl/constants';
import { Cluster, pod } from '../agent/fixtures';

const NODE = 'node-1';
const MAC_B = Buffer.from('020000000002', 'hex');
const MAC_A = Buffer.from('020000000001', 'hex');

/** The elements of the binding sets, as `set: key` in hex. */
function bindings(d: DesiredTable): string[] {
  return ['bound_src_v4', 'local_mac_v4', 'bound_src_v6', 'local_mac_v6'].flatMap((s) => [...d.model.sets.get(s)!.elements.keys()].map((k) => `${s}: ${k}`)).sort();
}

function podB(): PodInfo {
  const cl = new Cluster();
  cl.apply(pod('x', 'b', '198.18.0.2', {}, { ip6: '2001:db8::2' }));
  return cl.snapshot().pods.get('x/b')!;
}

const B_BOUND = [
  'bound_src_v4: c6120002',
  'bound_src_v6: 20010db8000000000000000000000002',
  'local_mac_v4: c61200020200000000020000',
  'local_mac_v6: 20010db80000000000000000000000020200000000020000',
].sort();

test('an address is bound to the MAC the neighbour table has for it, whether the pod or the entry comes first; a new MAC moves it, an expired entry keeps it; the pod leaving removes it', () => {
  const renderer = new Renderer({ table: 'nfkube', denyAction: 'drop' });
  const b = podB();
  const upsert = { kind: 'Pod' as const, type: 'upsert' as const, key: 'x/b', object: b };

  // Neighbour entries first: nothing is bound until the pod is local.
  const early = new DesiredTable(renderer, new PolicyEngine(NODE).state());
  assert.equal(early.neighbourChanged('198.18.0.2', MAC_B, new ChangeScope()), false);
  assert.equal(early.neighbourChanged('2001:db8::2', MAC_B, new ChangeScope()), false);
  assert.deepEqual(bindings(early), []);
  const scope = new ChangeScope();
  assert.equal(early.podChanged(upsert, scope), true);
  assert.deepEqual(bindings(early), B_BOUND);
  assert.deepEqual([...scope.elements.get('local_mac_v4')!], ['c61200020200000000020000'], 'the binding is in the change scope');

  // The pod first, then its entries.
  const late = new DesiredTable(renderer, new PolicyEngine(NODE).state());
  late.podChanged(upsert, new ChangeScope());
  assert.deepEqual(bindings(late), []);
  assert.equal(late.neighbourChanged('198.18.0.2', MAC_B, new ChangeScope()), true);
  assert.equal(late.neighbourChanged('2001:db8::2', MAC_B, new ChangeScope()), true);
  assert.deepEqual(bindings(late), B_BOUND);

  // The entry expiring keeps the binding; the same MAC again changes nothing.
  assert.equal(late.neighbourChanged('198.18.0.2', undefined, new ChangeScope()), false);
  assert.equal(late.neighbourChanged('198.18.0.2', MAC_B, new ChangeScope()), false);
  assert.deepEqual(bindings(late), B_BOUND);
  // Another MAC (the pod's sandbox recreated with a new veth) moves the binding, one transaction.
  const moved = new ChangeScope();
  assert.equal(late.neighbourChanged('198.18.0.2', MAC_A, moved), true);
  assert.deepEqual([...moved.elements.get('local_mac_v4')!].sort(), ['c61200020200000000010000', 'c61200020200000000020000']);
  assert.ok(bindings(late).includes('local_mac_v4: c61200020200000000010000'));
  assert.ok(!bindings(late).includes('local_mac_v4: c61200020200000000020000'));

  // The pod leaves: its bindings go; the address's next pod binds to what the table has then.
  const gone = new ChangeScope();
  late.podChanged({ ...upsert, type: 'delete' }, gone);
  assert.deepEqual(bindings(late), []);
  assert.ok(gone.elements.get('bound_src_v4')!.has('c6120002'));
  late.podChanged(upsert, new ChangeScope());
  assert.ok(bindings(late).includes('local_mac_v4: c61200020200000000010000'));
});

test('only a usable Ethernet neighbour entry gives a MAC', () => {
  const entry = (state: number, lladdr?: Buffer) => ({ family: 2, index: 4, state, address: '198.18.0.2', ...(lladdr ? { lladdr } : {}) });
  assert.deepEqual(neighbourMac(entry(NUD_REACHABLE, MAC_B), false), MAC_B);
  assert.deepEqual(neighbourMac(entry(NUD_STALE, MAC_B), false), MAC_B);
  assert.deepEqual(neighbourMac(entry(NUD_PERMANENT, MAC_B), false), MAC_B);
  assert.equal(neighbourMac(entry(NUD_STALE, MAC_B), true), undefined, 'deleted');
  assert.equal(neighbourMac(entry(NUD_INCOMPLETE), false), undefined);
  assert.equal(neighbourMac(entry(NUD_FAILED, MAC_B), false), undefined);
  assert.equal(neighbourMac(entry(NUD_REACHABLE, Buffer.alloc(16)), false), undefined, 'not Ethernet');
});

test('verify adopts the kernel\'s bindings of local pods\' addresses only: a deleted pod\'s binding or a second MAC stays a difference', () => {
  const renderer = new Renderer({ table: 'nfkube', denyAction: 'drop' });
  const b = podB();
  const agentTable = new DesiredTable(renderer, new PolicyEngine(NODE).state());
  agentTable.podChanged({ kind: 'Pod', type: 'upsert', key: 'x/b', object: b }, new ChangeScope());
  agentTable.neighbourChanged('198.18.0.2', MAC_B, new ChangeScope());
  agentTable.neighbourChanged('2001:db8::2', MAC_B, new ChangeScope());
  const kernel = cloneModel(agentTable.model);
  // A binding left behind for an address no local pod has, and a second MAC for b's.
  kernel.sets.get('bound_src_v4')!.elements.set('c6120009', { key: Buffer.from('c6120009', 'hex') });
  kernel.sets.get('local_mac_v4')!.elements.set('c61200090200000000010000', { key: Buffer.from('c61200090200000000010000', 'hex') });
  kernel.sets.get('local_mac_v4')!.elements.set('c61200020200000000010000', { key: Buffer.from('c61200020200000000010000', 'hex') });

  const fromCluster = new DesiredTable(renderer, new PolicyEngine(NODE).state());
  fromCluster.podChanged({ kind: 'Pod', type: 'upsert', key: 'x/b', object: b }, new ChangeScope());
  adoptBindings(fromCluster.model, kernel);
  const d = diffRulesets(kernel, fromCluster.model);
  assert.deepEqual(formatDiff(kernel, fromCluster.model, d).split('\n').filter((l) => /element/.test(l)).length, 3, formatDiff(kernel, fromCluster.model, d));
  assert.ok(fromCluster.model.sets.get('local_mac_v6')!.elements.size === 1, 'b\'s IPv6 binding adopted');
  assert.ok(fromCluster.model.sets.get('bound_src_v4')!.elements.has('c6120002'), 'b\'s IPv4 binding adopted');
  assert.ok(!fromCluster.model.sets.get('bound_src_v4')!.elements.has('c6120009'), 'the stale binding is not');
});
