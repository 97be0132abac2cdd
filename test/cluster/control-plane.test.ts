/** The tier's own control plane: a real release answers, its controllers run, and closing it
 * leaves no process, namespace or file behind. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { waitFor } from './api';
import { ControlPlane, KUBERNETES_SERVICE_IPS } from './control-plane';

test('etcd, kube-apiserver and kube-controller-manager start in their own namespace and are removed again', async () => {
  const cp = await ControlPlane.start();
  let pids: number[] = [];
  try {
    const version = await cp.admin.get('/version');
    assert.match(version.gitVersion, /^v1\.\d+\.\d+$/, `a released kube-apiserver, not a development build: ${JSON.stringify(version)}`);

    // The ServiceAccount controller makes every namespace's default account.
    await cp.admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'smoke' } });
    await waitFor('the default ServiceAccount of a new namespace', async () => (await cp.admin.raw('GET', '/api/v1/namespaces/smoke/serviceaccounts/default')).status === 200 || undefined);

    // ServiceCIDR allocation: the kubernetes Service holds the first address of each range.
    const svc = await cp.admin.get('/api/v1/namespaces/default/services/kubernetes');
    assert.deepEqual(svc.spec.clusterIPs, KUBERNETES_SERVICE_IPS.slice(0, 1), 'single-stack by default, from the first range');

    // The namespace controller finalizes a deleted namespace.
    await cp.admin.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'smoke' } });
    await waitFor('namespace smoke to be finalized', async () => (await cp.admin.raw('GET', '/api/v1/namespaces/smoke')).status === 404 || undefined);
    pids = cp.pids();
    assert.equal(pids.length, 3);
  } finally {
    await cp.close();
  }
  assert.equal(existsSync(cp.netnsPath), false, 'the namespace is deleted');
  assert.equal(existsSync(cp.dir), false, 'the files are removed');
  for (const pid of pids) assert.equal(existsSync(`/proc/${pid}`), false, `process ${pid} is gone`);
});
