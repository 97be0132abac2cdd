/** The real `helm`, built by scripts/build-helm.sh into the tools cache (test infrastructure
 * only), or undefined where it was not built; chart tests then use chart-render.ts. */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const HELM_VERSION = 'v4.3.2';

export function helmBinary(): string | undefined {
  const path = join(process.env.NFKUBE_TOOLS_CACHE ?? '/var/cache/nfkube-tools', `helm-${HELM_VERSION}`, 'helm');
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}

/** Runs helm with a values file (JSON is YAML) and its own empty config and cache, so nothing of
 * the user's helm setup is read or written. */
export function runHelm(helm: string, args: string[], values?: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-helm-'));
  try {
    const extra: string[] = [];
    if (values !== undefined) {
      writeFileSync(join(dir, 'values.json'), JSON.stringify(values));
      extra.push('--values', join(dir, 'values.json'));
    }
    const env = { PATH: process.env.PATH ?? '', HOME: dir, HELM_CONFIG_HOME: join(dir, 'config'), HELM_CACHE_HOME: join(dir, 'cache'), HELM_DATA_HOME: join(dir, 'data') };
    return execFileSync(helm, [...args, ...extra], { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `helm template RELEASE CHART --namespace NS` as objects. */
export function helmTemplate(helm: string, chart: string, options: { namespace: string; releaseName?: string; values?: unknown }): Obj[] {
  const out = runHelm(helm, ['template', options.releaseName ?? 'nfkube', chart, '--namespace', options.namespace], options.values ?? {});
  return parseAllDocuments(out).map((d) => d.toJS() as Obj).filter((o) => o !== null);
}
