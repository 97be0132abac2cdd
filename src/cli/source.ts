/** Picks the source of cluster state from --manifests / --kubeconfig (in-cluster by default). */
import { ClusterSource, SourceHandlers } from '../k8s/source';
import { DENY_OPTIONS } from './deny-options';

export function openSource(values: Record<string, string | boolean | undefined>, handlers: SourceHandlers): ClusterSource {
  const manifests = values.manifests as string | undefined;
  const kubeconfig = values.kubeconfig as string | undefined;
  if (manifests && kubeconfig) throw new Error('--manifests and --kubeconfig exclude each other');
  if (manifests) {
    const { ManifestSource } = require('../k8s/manifest-source') as typeof import('../k8s/manifest-source');
    return new ManifestSource({ dir: manifests, ...handlers });
  }
  const { InformerSource, loadKubeConfig } = require('../k8s/informer-source') as typeof import('../k8s/informer-source');
  return new InformerSource({ kubeConfig: loadKubeConfig(kubeconfig), ...handlers });
}

export const SOURCE_OPTIONS = {
  manifests: { type: 'string' },
  kubeconfig: { type: 'string' },
  'node-name': { type: 'string' },
  table: { type: 'string' },
  'deny-action': { type: 'string' },
  'log-level': { type: 'string' },
  ...DENY_OPTIONS,
} as const;
