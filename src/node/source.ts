/** Picks the source of cluster state from --manifests / --kubeconfig (in-cluster by default, and
 * only inside a pod). */
import { accessSync, constants } from 'node:fs';
import { ClusterSnapshot, ClusterSource, ObjectKind, SourceHandlers } from '../k8s/source';
import { describeKubeconfig, findKubeconfig } from '../k8s/kubeconfig-path';
import type { OptionValues } from '../options/table';
import { parseByteSize, stringOption } from '../options/values';

/** `kinds`: what to read (default: what NetworkPolicy enforcement reads). */
export function openSource(values: OptionValues, handlers: SourceHandlers, kinds?: readonly ObjectKind[]): ClusterSource {
  // Commands that take no warnings still show them, marked as such.
  if (!handlers.onWarning) handlers = { ...handlers, onWarning: (w) => handlers.onError({ ...w, severity: 'warning' }) };
  const manifests = stringOption(values, 'manifests');
  const kubeconfig = stringOption(values, 'kubeconfig');
  if (manifests && kubeconfig) throw new Error('--manifests and --kubeconfig exclude each other');
  if (manifests) {
    const { ManifestSource } = require('../k8s/manifest-source') as typeof import('../k8s/manifest-source');
    return new ManifestSource({ dir: manifests, kinds, maxTotalBytes: manifestsMaxBytes(values), ...handlers });
  }
  if (kubeconfig) {
    // Checked before client-node takes seconds to load.
    try {
      accessSync(kubeconfig, constants.R_OK);
    } catch (err) {
      throw new Error(`--kubeconfig ${kubeconfig}: ${(err as Error).message}`);
    }
  } else findKubeconfig(undefined);
  const { InformerSource, loadKubeConfig } = require('../k8s/informer-source') as typeof import('../k8s/informer-source');
  return new InformerSource({ kubeConfig: loadKubeConfig(kubeconfig), kinds, ...handlers });
}

/** --manifests-max-bytes, undefined for the default. */
export function manifestsMaxBytes(values: OptionValues): number | undefined {
  const text = stringOption(values, 'manifests-max-bytes');
  return text === undefined ? undefined : parseByteSize(text, '--manifests-max-bytes');
}

/** The cluster state once, for a command that reads it and exits: the source's problems on
 * stderr, the source stopped however the command ends. */
export async function readSnapshot(values: OptionValues, ctx: { defer(close: () => unknown): void }, kinds?: readonly ObjectKind[]): Promise<ClusterSnapshot> {
  await prepareSource(values);
  const source = openSource(values, { onChange: () => undefined, onError: (e) => process.stderr.write(`nfkube: ${e.message}\n`) }, kinds);
  ctx.defer(() => source.stop());
  const snap = await source.start();
  await source.stop();
  return snap;
}

/** Before openSource() for a cluster: loads the part of client-node the informers use, not its
 * generated API (src/k8s/client-node.ts). */
export async function prepareSource(values: OptionValues): Promise<void> {
  if (values.manifests) return;
  const { loadInformerClient } = require('../k8s/client-node') as typeof import('../k8s/client-node');
  await loadInformerClient();
}

/** Where cluster state comes from, in words, for the agent's first log line. */
export function describeSource(values: OptionValues): string {
  const manifests = stringOption(values, 'manifests');
  if (manifests) return `manifests ${manifests}`;
  return describeKubeconfig(findKubeconfig(stringOption(values, 'kubeconfig')));
}
