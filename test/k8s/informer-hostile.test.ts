/** Malformed NetworkPolicies through the API path (issue 11, defect 4): a watched policy (raw
 * JSON) that cannot be understood is delivered failing closed (every pod it could select
 * isolated, allowing nothing) and reported by object and field; it is never dropped.
 *
 * A real API server validates every NetworkPolicy, so only a misbehaving one serves these. Listed
 * pages are read as the server's raw JSON (src/k8s/raw-list.ts), so listed and watched objects
 * take the same normalisation path and fail closed alike. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { InformerSource, loadKubeConfig } from '../../src/k8s/informer-source';
import type { NetworkPolicyInfo } from '../../src/k8s/model';
import type { ClusterChange, ClusterSnapshot } from '../../src/k8s/source';
import { KObject, TestApiServer } from '../helpers/apiserver';
import { Recorder } from './recorder';

const T = { timeout: 30_000 };

function policy(name: string, spec: unknown): KObject {
  return { kind: 'NetworkPolicy', metadata: { namespace: 'x', name }, spec };
}

const isKey = (key: string) => (c: ClusterChange) => c.kind === 'NetworkPolicy' && c.key === key;

describe('InformerSource with malformed NetworkPolicies', () => {
  let server: TestApiServer;
  let source: InformerSource;
  let rec: Recorder;
  let initial: ClusterSnapshot;

  before(async () => {
    server = await TestApiServer.start();
    server.create({ kind: 'Namespace', metadata: { name: 'x' } });
    server.create(policy('listed-list', [{ podSelector: {} }]));
    server.create(policy('listed-string', { podSelector: { matchLabels: 'app=web' }, ingress: [{}] }));
    server.create(policy('good', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{}] }));
    rec = new Recorder();
    source = new InformerSource({ kubeConfig: loadKubeConfig(server.writeKubeconfig()), retry: { initialMs: 10, maxMs: 100 }, ...rec });
    initial = await source.start();
  });

  after(async () => {
    await source.stop();
    await server.close();
  });

  test('listed: a spec list is not dropped; it isolates every pod of the namespace', T, () => {
    const listy = initial.policies.get('x/listed-list') as NetworkPolicyInfo;
    assert.deepEqual(listy.podSelector, {});
    assert.ok(listy.policyTypes === undefined || listy.policyTypes.includes('Ingress'));
    assert.equal(listy.ingress, undefined, 'allowing nothing');
  });

  test('listed: a string matchLabels fails closed (every pod of the namespace, nothing allowed) and is reported', T, () => {
    const p = initial.policies.get('x/listed-string') as NetworkPolicyInfo;
    assert.ok(p, 'not dropped');
    assert.deepEqual(p.podSelector, {});
    assert.equal(p.ingress, undefined, 'allowing nothing');
    assert.ok(rec.errors.some((e) => e.object === 'NetworkPolicy x/listed-string' && /matchLabels/.test(e.field ?? '')), JSON.stringify(rec.errors));
  });

  test('watched: a good policy broken by an update fails closed instead of keeping its rules or vanishing', T, async () => {
    const from = rec.changes.length;
    const errFrom = rec.errors.length;
    server.modify('NetworkPolicy', 'x', 'good', (obj) => {
      obj.spec = { podSelector: { matchExpressions: { key: 'app' } }, ingress: [{}] };
    });
    const change = await rec.change(isKey('x/good'), from);
    assert.equal(change.type, 'upsert');
    const object = change.object as NetworkPolicyInfo;
    assert.deepEqual(object.podSelector, {});
    assert.deepEqual(object.policyTypes, ['Ingress', 'Egress']);
    assert.equal(object.ingress, undefined);
    const err = await rec.error((e) => e.object === 'NetworkPolicy x/good', errFrom);
    assert.equal(err.field, 'spec.podSelector.matchExpressions');
    assert.match(err.message, /failing closed/);
    // Fixed: the policy is itself again.
    server.modify('NetworkPolicy', 'x', 'good', (obj) => {
      obj.spec = { podSelector: { matchLabels: { app: 'web' } }, ingress: [{}] };
    });
    const fixed = await rec.change((c) => isKey('x/good')(c) && (c.object as NetworkPolicyInfo).ingress !== undefined, from);
    assert.deepEqual((fixed.object as NetworkPolicyInfo).podSelector, { matchLabels: { app: 'web' } });
  });
});
