/** Which cluster a command talks to, found as kubectl finds it: --kubeconfig, else the files of
 * $KUBECONFIG (a list; missing ones are skipped), else ~/.kube/config, else the pod's service
 * account (in-cluster). */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { useTokenFiles } from './token-file';

export type KubeconfigChoice = { kind: 'files'; paths: string[]; via: '--kubeconfig' | '$KUBECONFIG' | '~/.kube/config' } | { kind: 'in-cluster' };

export const NO_CLUSTER =
  'no cluster to read: pass --kubeconfig PATH or --manifests DIR, set $KUBECONFIG, create ~/.kube/config, or run in a pod (in-cluster configuration needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, which are not set)';

export function findKubeconfig(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env, home: string = homedir()): KubeconfigChoice {
  if (explicit) return { kind: 'files', paths: [explicit], via: '--kubeconfig' };
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p !== '' && existsSync(p));
  if (listed.length > 0) return { kind: 'files', paths: listed, via: '$KUBECONFIG' };
  const own = join(home, '.kube', 'config');
  if (existsSync(own)) return { kind: 'files', paths: [own], via: '~/.kube/config' };
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) return { kind: 'in-cluster' };
  throw new Error(NO_CLUSTER);
}

/** The choice, in words, for a log line. */
export function describeKubeconfig(c: KubeconfigChoice): string {
  return c.kind === 'in-cluster' ? 'in-cluster' : `kubeconfig ${c.paths.join(delimiter)}${c.via === '--kubeconfig' ? '' : ` (${c.via})`}`;
}

/** Loads the choice into a new KubeConfig; several $KUBECONFIG files are merged, first one wins,
 * as kubectl merges them. */
export function loadChosenKubeconfig(kc: KubeConfig, c: KubeconfigChoice): KubeConfig {
  if (c.kind === 'in-cluster') kc.loadFromCluster();
  else {
    kc.loadFromFile(c.paths[0]);
    for (const path of c.paths.slice(1)) {
      const more = new (kc.constructor as new () => KubeConfig)();
      more.loadFromFile(path);
      kc.mergeConfig(more);
    }
    // client-node ignores a user's tokenFile (how a rotated token is given); read it as client-go does.
    for (const path of c.paths) useTokenFiles(kc, path);
  }
  return kc;
}
