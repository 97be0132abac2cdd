/** Picks the source of cluster state from --manifests / --kubeconfig (in-cluster by default). */
import { ClusterSource, SourceHandlers } from '../k8s/source';
import { COMMON_OPTIONS } from './options';

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

/** Where cluster state comes from, in words, for the agent's first log line. */
export function describeSource(values: Record<string, string | boolean | undefined>): string {
  if (values.manifests) return `manifests ${values.manifests as string}`;
  if (values.kubeconfig) return `kubeconfig ${values.kubeconfig as string}`;
  return 'in-cluster';
}

export const SOURCE_OPTIONS = COMMON_OPTIONS;
