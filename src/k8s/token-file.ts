/** A kubeconfig user's `tokenFile` (client-go's field; what a rotated, projected ServiceAccount
 * token is given by): @kubernetes/client-node ignores it (it reads only `token` and, once, a
 * `token-file`), so such a user would reach the apiserver anonymously. It is handed to
 * client-node's token-file provider instead, the one its in-cluster config uses, which reads the
 * file again every minute, so a rotated token is picked up as client-go does. */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { KubeConfig, User } from '@kubernetes/client-node';

interface RawUser {
  name?: unknown;
  user?: { token?: unknown; tokenFile?: unknown; 'token-file'?: unknown } | null;
}

/** The token file of each user that has one and no inline token, by user name; a relative path
 * is relative to the kubeconfig's directory, as in client-go. */
export function tokenFiles(kubeconfigText: string, kubeconfigPath: string): Map<string, string> {
  // Loaded here, not at import: the kubeconfig code is imported by every command, and `yaml`
  // (72 modules, ~45 ms of CPU to load) is needed only when a kubeconfig is read.
  const { parse } = require('yaml') as typeof import('yaml');
  const raw = parse(kubeconfigText) as { users?: RawUser[] } | null;
  const out = new Map<string, string>();
  for (const u of raw?.users ?? []) {
    const file = u.user?.tokenFile ?? u.user?.['token-file'];
    if (typeof u.name !== 'string' || typeof file !== 'string' || !file || u.user?.token) continue;
    out.set(u.name, resolve(dirname(kubeconfigPath), file));
  }
  return out;
}

/** Gives each user with a token file client-node's re-reading token-file provider. */
export function useTokenFiles(kc: KubeConfig, kubeconfigPath: string): void {
  const files = tokenFiles(readFileSync(kubeconfigPath, 'utf8'), kubeconfigPath);
  if (files.size === 0) return;
  kc.users = kc.users.map((u): User => {
    const file = files.get(u.name);
    return file ? { ...u, token: undefined, authProvider: { name: 'tokenFile', config: { tokenFile: file } } } : u;
  });
}
