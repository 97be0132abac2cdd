/** InformerSource stamps each watched change with the object's last change as the API server
 * recorded it (the latest metadata.managedFields time, else creationTimestamp), the start of
 * nfkube_network_programming_duration_seconds. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InformerSource, loadKubeConfig } from '../../src/k8s/informer-source';
import type { ClusterChange } from '../../src/k8s/source';
import { KObject, TestApiServer } from '../helpers/apiserver';
import { Recorder } from './recorder';

function pod(name: string, managedFields?: KObject[]): KObject {
  return {
    kind: 'Pod',
    metadata: { namespace: 'x', name, labels: { app: name }, ...(managedFields ? { managedFields } : {}) },
    spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'x' }] },
    status: { phase: 'Running', podIP: '198.18.0.10', podIPs: [{ ip: '198.18.0.10' }] },
  };
}

test('watched changes carry changedAt: the latest managedFields time, else creationTimestamp; deletes none', { timeout: 30_000 }, async () => {
  const server = await TestApiServer.start();
  const rec = new Recorder();
  const source = new InformerSource({ kubeConfig: loadKubeConfig(server.writeKubeconfig()), retry: { initialMs: 10, maxMs: 100 }, ...rec });
  try {
    server.create({ kind: 'Namespace', metadata: { name: 'x' } });
    await source.start();
    const is = (key: string, type: ClusterChange['type']) => (c: ClusterChange) => c.kind === 'Pod' && c.key === key && c.type === type;
    server.create(pod('a', [
      { manager: 'kubectl-client-side-apply', operation: 'Update', time: '2026-12-03T10:00:00Z' },
      { manager: 'kubelet', operation: 'Update', subresource: 'status', time: '2026-12-03T10:00:07Z' },
    ]));
    assert.equal((await rec.change(is('x/a', 'upsert'))).changedAt, Date.parse('2026-12-03T10:00:07Z'));
    const created = server.create(pod('b'));
    const b = await rec.change(is('x/b', 'upsert'));
    assert.equal(b.changedAt, Date.parse(created.metadata.creationTimestamp as string));
    server.delete('Pod', 'x', 'a');
    assert.equal((await rec.change(is('x/a', 'delete'))).changedAt, undefined);
  } finally {
    await source.stop();
    await server.close();
  }
});
