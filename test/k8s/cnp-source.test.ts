/** ClusterNetworkPolicy through the informer source: a server without its CRD does not hold back
 * the start (the agent enforces NetworkPolicy and says once that the kind is not served); once the
 * CRD is served its policies are read and delivered, normalized, watch events included. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InformerSource, loadKubeConfig } from '../../src/k8s/informer-source';
import type { ClusterChange, SourceError } from '../../src/k8s/source';
import type { ClusterNetworkPolicyInfo } from '../../src/k8s/cluster-policy-model';
import { CLUSTER_NETWORK_POLICIES, TestApiServer } from '../helpers/apiserver';

const deadline = async (what: string, until: () => boolean): Promise<void> => {
  for (let i = 0; i < 400 && !until(); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(until(), what);
};

test('a missing ClusterNetworkPolicy CRD is said once and picked up when served', { timeout: 30_000 }, async () => {
  const server = await TestApiServer.start();
  const changes: ClusterChange[] = [];
  const errors: SourceError[] = [];
  const notices: string[] = [];
  const source = new InformerSource({
    kubeConfig: loadKubeConfig(server.writeKubeconfig()),
    retry: { initialMs: 10, maxMs: 100 },
    notServedRetryMs: 100,
    onChange: (c) => changes.push(c),
    onError: (e) => errors.push(e),
    onNotice: (m) => notices.push(m),
  });
  try {
    server.create({ kind: 'Namespace', metadata: { name: 'x' } });
    const initial = await source.start();
    assert.equal(initial.namespaces.size, 1);
    assert.equal(initial.clusterPolicies?.size, 0);
    assert.deepEqual(errors, [], 'a kind that is not served is no error');
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(notices.filter((n) => /ClusterNetworkPolicy is not served/.test(n)).length, 1, notices.join('\n'));

    server.serveResource(CLUSTER_NETWORK_POLICIES);
    server.create({
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: 'guard' },
      spec: { tier: 'Admin', priority: 1, subject: { namespaces: {} }, egress: [{ action: 'Deny', to: [{ networks: ['169.254.169.254/32'] }] }] },
    });
    await deadline('the policy is delivered once served', () => changes.some((c) => c.kind === 'ClusterNetworkPolicy' && c.key === 'guard'));
    const got = changes.find((c) => c.kind === 'ClusterNetworkPolicy')!.object as ClusterNetworkPolicyInfo;
    assert.deepEqual(got.egress, [{ action: 'Deny', peers: [{ kind: 'networks', networks: ['169.254.169.254/32'] }] }]);
    server.delete('ClusterNetworkPolicy' as never, undefined as never, 'guard');
    await deadline('its deletion is watched', () => changes.some((c) => c.kind === 'ClusterNetworkPolicy' && c.type === 'delete'));
    assert.deepEqual(errors, []);
  } finally {
    await source.stop();
    await server.close();
  }
});
