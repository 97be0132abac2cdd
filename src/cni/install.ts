/** `nfkube install --cni`: puts the CNI IPAM plugin where container runtimes look for plugins
 * (/opt/cni/bin) as one file — the compiled plugin with a shebang naming the node binary to run it
 * (copied to <prefix>/bin/node unless --system-node). Files are written to a temporary name and
 * renamed, so a runtime exec'ing the plugin mid-install sees the old or the new one, never half.
 * --root DIR writes everything under DIR (an init container's view of the host) while the paths
 * inside the files stay the host's. */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const DEFAULT_CNI_BIN_DIR = '/opt/cni/bin';
export const PLUGIN_NAME = 'nfkube-cni-ipam';

export interface CniInstallOptions {
  prefix: string;
  cniBinDir: string;
  root: string;
  systemNode: boolean;
  /** The node binary is already being copied to <prefix>/bin/node (by --systemd). */
  nodeCopiedElsewhere: boolean;
}

interface Step {
  describe: string;
  apply(): void;
}

function atomicWrite(path: string, data: string | Buffer, mode: number): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, data, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

export function cniPlan(o: CniInstallOptions): Step[] {
  const compiled = join(__dirname, 'plugin.js');
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing (run npm run build)`);
  const node = o.systemNode ? '/usr/bin/env node' : join(o.prefix, 'bin', 'node');
  const steps: Step[] = [];
  if (!o.systemNode && !o.nodeCopiedElsewhere) {
    const target = join(o.root, node);
    steps.push({
      describe: `copy node ${process.version} ${process.execPath} -> ${target}`,
      apply: () => atomicWrite(target, readFileSync(process.execPath), 0o755),
    });
  }
  const plugin = join(o.root, o.cniBinDir, PLUGIN_NAME);
  steps.push({
    describe: `write CNI plugin ${plugin} (#!${node})`,
    apply: () => atomicWrite(plugin, `#!${node}\n${readFileSync(compiled, 'utf8').replace(/^#!.*\n/, '')}`, 0o755),
  });
  return steps;
}
