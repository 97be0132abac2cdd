/** deploy/ as a cluster gets it: the kustomize base and overlays, and the Helm chart's rendered
 * output, applied to the real apiserver by server-side apply (strict field validation), CRDs
 * first and established before anything uses them; and the DaemonSet ServiceAccount's identity
 * for the agents. */
import { join } from 'node:path';
import { renderChart } from '../helpers/chart-render';
import { renderKustomization } from '../helpers/kustomize-render';
import { ApiError, waitFor, type KObject, type KubeApi } from './api';
import { REPO_ROOT } from './control-plane';

export type DeployVariant = 'kubernetes' | 'overlays/proxy' | 'overlays/ipam' | 'helm';

export function deployObjects(variant: DeployVariant): KObject[] {
  if (variant === 'helm') return renderChart(join(REPO_ROOT, 'deploy', 'helm', 'nfkube'), { namespace: 'kube-system' });
  return renderKustomization(join(REPO_ROOT, 'deploy', variant));
}

/** Applies every object; returns the warnings the apiserver sent. A rejected object throws,
 * naming it. */
export async function applyObjects(api: KubeApi, objects: KObject[]): Promise<string[]> {
  const warnings: string[] = [];
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
  const rest = objects.filter((o) => o.kind !== 'CustomResourceDefinition');
  for (const o of [...crds, ...rest]) {
    const res = await api.applyRaw(o, 'nfkube-deploy');
    if (res.status < 200 || res.status >= 300) throw new ApiError(res.status, res.body, `server-side apply of ${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name}`);
    warnings.push(...res.warnings.map((w) => `${o.kind} ${o.metadata.name}: ${w}`));
    if (o.kind === 'CustomResourceDefinition') {
      await waitFor(`CRD ${o.metadata.name} to be established`, async () => {
        const crd = await api.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${o.metadata.name}`);
        return crd.status?.conditions?.some((c: KObject) => c.type === 'Established' && c.status === 'True') ? true : undefined;
      });
    }
  }
  return warnings;
}

/** The DaemonSet's ServiceAccount (namespace, name) in what was applied. */
export function daemonSetAccount(objects: KObject[]): { namespace: string; name: string } {
  const ds = objects.find((o) => o.kind === 'DaemonSet');
  if (!ds) throw new Error('deploy/ has no DaemonSet');
  return { namespace: ds.metadata.namespace ?? 'default', name: ds.spec.template.spec.serviceAccountName ?? 'default' };
}

/** `system:serviceaccount:NS:NAME`, the username the apiserver sees for a ServiceAccount token. */
export function accountUsername(account: { namespace: string; name: string }): string {
  return `system:serviceaccount:${account.namespace}:${account.name}`;
}
