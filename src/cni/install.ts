/** `nfkube install --cni`: puts the CNI IPAM plugin where container runtimes look for plugins
 * (/opt/cni/bin) as one file: the compiled plugin (native/cni/, a static executable starting in
 * about a millisecond) when this package has one for this machine, else the Node plugin with a
 * shebang naming the node binary to run it (copied to <prefix>/bin/node unless --system-node);
 * --cni-plugin compiled|node insists on one. Files are written to a temporary name and
 * renamed, so a runtime exec'ing the plugin mid-install sees the old or the new one, never half.
 * --root DIR writes everything under DIR (an init container's view of the host) while the paths
 * inside the files stay the host's. */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export const DEFAULT_CNI_BIN_DIR = '/opt/cni/bin';
export const PLUGIN_NAME = 'nfkube-cni-ipam';
export const CNI_PLUGIN_KINDS = ['auto', 'compiled', 'node'] as const;
export type CniPluginKind = (typeof CNI_PLUGIN_KINDS)[number];

const packageRoot = resolve(__dirname, '..', '..', '..');
/** ELF e_machine per Node architecture: a prebuilt binary for another machine is never installed. */
const ELF_MACHINE: Record<string, number> = { x64: 62, arm64: 183, arm: 40, ia32: 3, ppc64: 21, s390x: 22, riscv64: 243, loong64: 258 };

/** Where the compiled plugin may be, best first: node-gyp's build of native/cni/ (made for this
 * very machine by npm install when no prebuilt addon fits it), then the prebuilt one. */
export function compiledPluginCandidates(base = packageRoot, platform: string = process.platform, arch: string = process.arch): string[] {
  return [join(base, 'build', 'Release', PLUGIN_NAME), join(base, 'prebuilds', `${platform}-${arch}`, PLUGIN_NAME)];
}

/** An ELF executable for this machine's architecture (read from its header; never executed). */
function runsHere(path: string, arch: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(20);
    if (readSync(fd, head, 0, 20, 0) < 20 || head.readUInt32BE(0) !== 0x7f454c46) return false;
    const want = ELF_MACHINE[arch];
    return want === undefined || (head[5] === 2 ? head.readUInt16BE(18) : head.readUInt16LE(18)) === want;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The compiled plugin to install here, if this package has one. */
export function findCompiledPlugin(base = packageRoot, platform: string = process.platform, arch: string = process.arch): string | undefined {
  return compiledPluginCandidates(base, platform, arch).find((p) => runsHere(p, arch));
}

export interface CniInstallOptions {
  prefix: string;
  cniBinDir: string;
  root: string;
  systemNode: boolean;
  /** The node binary is already being copied to <prefix>/bin/node (by --systemd). */
  nodeCopiedElsewhere: boolean;
  /** auto: the compiled plugin if there is one, else the Node plugin. */
  plugin?: CniPluginKind;
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
  const plugin = join(o.root, o.cniBinDir, PLUGIN_NAME);
  const kind = o.plugin ?? 'auto';
  const binary = kind === 'node' ? undefined : findCompiledPlugin();
  if (binary) return [{ describe: `write CNI plugin ${plugin} (compiled, from ${binary})`, apply: () => atomicWrite(plugin, readFileSync(binary), 0o755) }];
  if (kind === 'compiled') {
    throw new Error(`--cni-plugin compiled: no compiled ${PLUGIN_NAME} for ${process.platform}-${process.arch} in ${compiledPluginCandidates().join(' or ')}; build it (npm install with a C compiler, or npm run prebuilds) or use --cni-plugin node`);
  }
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
  steps.push({
    describe: `write CNI plugin ${plugin} (#!${node})`,
    apply: () => atomicWrite(plugin, `#!${node}\n${readFileSync(compiled, 'utf8').replace(/^#!.*\n/, '')}`, 0o755),
  });
  return steps;
}
