/** `nfkube install --systemd`: lays out a self-contained copy of nfkube under a prefix (node
 * binary, compiled code, production dependencies, the addon, a launcher) and writes the systemd
 * unit with those paths. It never runs systemctl: it prints the commands to run. The unit text
 * is generated here; deploy/systemd/nfkube.service is its output for the default prefix. Every
 * file goes under --root; the paths written inside files stay the host's. */
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { Command } from '../command';
import { OptionTable, parse, usageText, ValuesOf } from '../options';
import { addonPath } from '../../native/binding';
import { CNI_PLUGIN_KINDS, CniPluginKind, cniPlan, DEFAULT_CNI_BIN_DIR } from '../../cni/install';

export const DEFAULT_PREFIX = '/opt/nfkube';
export const DEFAULT_ENV_FILE = '/etc/nfkube/nfkube.env';
export const DEFAULT_SYSUSERS_DIR = '/etc/sysusers.d';
export const DEFAULT_UNIT_DIR = '/etc/systemd/system';
/** Under StateDirectory=, RuntimeDirectory= and CacheDirectory= (all "nfkube"): the only places
 * the agent writes on a host where ProtectSystem=strict makes the rest read-only. */
export const STATE_DIR = '/var/lib/nfkube';
export const RUNTIME_DIR = '/run/nfkube';
export const CACHE_DIR = '/var/cache/nfkube';
/** The dedicated system user the unit runs as. */
export const SERVICE_USER = 'nfkube';
export const UNIT_FILE = 'nfkube.service';
export const SYSUSERS_FILE = 'nfkube.conf';

/** systemd-sysusers(8) entry creating the service's user and group. */
export const SYSUSERS_ENTRY = `# nfkube.service runs as this system user (no login, no home); CAP_NET_ADMIN is its only privilege.
u ${SERVICE_USER} - "nfkube NetworkPolicy agent" / /usr/sbin/nologin
`;

/** One ExecStart= word as systemd reads it: specifiers (%) escaped, variables ($) too except in
 * the executable (systemd expands them only in arguments), and the word double-quoted (C
 * escapes) when it holds whitespace, quotes, a backslash or a semicolon. */
export function execWord(word: string, executable = false): string {
  let escaped = word.replace(/%/g, '%%');
  if (!executable) escaped = escaped.replace(/\$/g, '$$$$');
  if (!/[\s"'\\;]/.test(word)) return escaped;
  return `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** A path setting (EnvironmentFile=) as systemd reads it: the whole value is the path, only
 * specifiers are expanded. */
function pathSetting(path: string): string {
  return path.replace(/%/g, '%%');
}

/** A path that will be written into the unit, the launcher's #! line or the CNI plugin's: one
 * line of text, so a control character (a newline adding `ExecStartPre=`) is refused, naming the
 * option. */
export function writablePath(option: string, value: string): string {
  const bad = /[\x00-\x1f\x7f]/.exec(value);
  if (bad) throw new Error(`option --${option}: ${JSON.stringify(value)} holds the control character ${JSON.stringify(bad[0])}; a path written into a unit file must be one line of printable text`);
  return value;
}

/** Where an install puts things; `nfkube uninstall` takes the same options to find them. */
export const PATH_OPTIONS = {
  prefix: { type: 'string', value: 'DIR', description: 'where the self-contained copy goes', default: DEFAULT_PREFIX },
  'unit-dir': { type: 'string', value: 'DIR', description: 'where nfkube.service is written', default: DEFAULT_UNIT_DIR },
  'environment-file': { type: 'string', value: 'PATH', description: "the unit's EnvironmentFile (NFKUBE_ARGS); an example is written if absent", default: DEFAULT_ENV_FILE },
  'sysusers-dir': { type: 'string', value: 'DIR', description: 'where the "nfkube" system user\'s sysusers.d entry is written', default: DEFAULT_SYSUSERS_DIR },
  'cni-bin-dir': { type: 'string', value: 'DIR', description: 'where the CNI plugin goes', default: DEFAULT_CNI_BIN_DIR },
  root: { type: 'string', value: 'DIR', description: "every path above is taken under DIR (an init container's view of the host, or a scratch image); the paths written inside files stay the host's", default: '/' },
  'dry-run': { type: 'boolean', description: 'print the plan, change nothing' },
} as const satisfies OptionTable;

const options = {
  systemd: { type: 'boolean', description: 'install as a systemd service (required: the only kind of install)' },
  'system-node': { type: 'boolean', description: 'do not copy node: the unit runs "node" from PATH, which must be Node >= 20' },
  cni: { type: 'boolean', description: 'install the CNI IPAM plugin as one file, nfkube-cni-ipam, into --cni-bin-dir (alone or with --systemd)' },
  'cni-plugin': { type: 'string', value: 'KIND', description: 'which CNI plugin: compiled (native/cni/, no node needed at run time), node, or auto (compiled when this package has one for this machine)', default: 'auto' },
  ...PATH_OPTIONS,
} as const satisfies OptionTable;

const usage = usageText('nfkube install --systemd | --cni [options]', options, `Copies nfkube to DIR (default /opt/nfkube): bin/node (this node binary), bin/nfkube, dist/,
node_modules/ (production dependencies), build/Release/nfnl.node; writes nfkube.service to
--unit-dir (default /etc/systemd/system), the "nfkube" system user's sysusers.d entry to
--sysusers-dir (default /etc/sysusers.d) and, if absent, an example --environment-file (default
/etc/nfkube/nfkube.env). With --root DIR every file goes under DIR. \`nfkube uninstall\` removes it all.`);

/** The systemd unit for an installed copy. `node` is the interpreter's absolute path, or
 * "/usr/bin/env node". */
export function renderUnit(o: { prefix: string; envFile: string; node: string }): string {
  const node = o.node.startsWith('/usr/bin/env ') ? o.node : execWord(o.node, true);
  return `# nfkube: Kubernetes NetworkPolicy agent for this host, speaking nfnetlink directly.
# Generated by \`nfkube install --systemd\`; configuration goes in the EnvironmentFile.
[Unit]
Description=nfkube NetworkPolicy agent
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
EnvironmentFile=${pathSetting(o.envFile)}
# A 4 MB young generation: fewer objects promoted while the first LIST is read (peak RSS at
# 20k pods 135 MB instead of 176 MB, the same CPU; bench/RESULTS.md).
Environment=NODE_OPTIONS=--max-semi-space-size=4
# The node name is this host's name unless NFKUBE_ARGS says --node-name.
Environment=NODE_NAME=%H
ExecStart=${node} ${execWord(`${o.prefix}/bin/nfkube`)} agent --ipam-state-dir ${STATE_DIR}/ipam --ipam-socket ${RUNTIME_DIR}/ipam.sock $NFKUBE_ARGS
Restart=on-failure
RestartSec=5s
# A dedicated user (systemd-sysusers creates it from nfkube's sysusers.d entry) holding only
# CAP_NET_ADMIN, which nf_tables and ipset need; a kubeconfig must be readable by it.
User=${SERVICE_USER}
Group=${SERVICE_USER}
AmbientCapabilities=CAP_NET_ADMIN
CapabilityBoundingSet=CAP_NET_ADMIN
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
# The only writable places (ProtectSystem=strict leaves nothing else), owned by the service user:
# IPAM's write-ahead record of its allocations (/var/lib/nfkube/ipam), kept across restarts; the
# socket the CNI plugin asks (/run/nfkube/ipam.sock, in a 0700 directory: only root's plugin
# reaches it); and the compiled code of the agent's modules, so a restart skips most of the
# parsing and compiling (CACHE_DIRECTORY).
StateDirectory=nfkube
StateDirectoryMode=0700
RuntimeDirectory=nfkube
RuntimeDirectoryMode=0700
CacheDirectory=nfkube
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
ProcSubset=pid
# The agent works in the host's network namespace: it never creates or enters another.
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RemoveIPC=yes
UMask=0077
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
SystemCallErrorNumber=EPERM
# No MemoryDenyWriteExecute: V8's JIT makes code pages executable and aborts under it. With
# node --jitless it runs (Environment=NODE_OPTIONS="--max-semi-space-size=4 --jitless" in a drop-in), at 4-10x the CPU
# time in the netlink codecs; see docs/security.md.
# Netlink for the kernel, inet for the API server and /metrics, unix for logging.
RestrictAddressFamilies=AF_NETLINK AF_UNIX AF_INET AF_INET6

[Install]
WantedBy=multi-user.target
`;
}

export const ENV_EXAMPLE = `# nfkube agent options (see \`nfkube agent --help\`), read by nfkube.service.
# Kubeconfig for this node's credentials. The node name is this host's name; if the Node object
# is named otherwise, add --node-name NAME. Add --proxy and/or --ipam to run those parts.
NFKUBE_ARGS=--kubeconfig /etc/nfkube/kubeconfig --metrics-addr 127.0.0.1:9476 --log-level info
`;

/** The package root: where dist/, build/ and node_modules/ of the running nfkube are. */
function packageRoot(): string {
  return resolve(__dirname, '..', '..', '..', '..');
}

/** The production dependency closure of `root`, as directories relative to it, found the way
 * require() finds them (nearest node_modules going up). Needs no lockfile. */
export function productionPackages(root: string): string[] {
  const found = new Set<string>();
  const visit = (fromDir: string, manifest: { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }) => {
    const optional = new Set(Object.keys(manifest.optionalDependencies ?? {}));
    for (const name of new Set([...Object.keys(manifest.dependencies ?? {}), ...optional])) {
      const dir = locate(root, fromDir, name);
      if (!dir) {
        if (optional.has(name)) continue;
        throw new Error(`dependency "${name}" of ${relative(root, fromDir) || 'nfkube'} is not installed (run npm install)`);
      }
      const rel = relative(root, dir);
      if (found.has(rel)) continue;
      found.add(rel);
      visit(dir, JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')));
    }
  };
  visit(root, JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')));
  return [...found].sort();
}

function locate(root: string, fromDir: string, name: string): string | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === root || dir === dirname(dir)) return undefined;
  }
}

interface Step {
  describe: string;
  apply(): void;
}

function plan(o: { prefix: string; unitDir: string; envFile: string; sysusersDir: string; systemNode: boolean; root: string }): Step[] {
  const root = packageRoot();
  /** Where a host path is written: under --root. */
  const at = (path: string) => join(o.root, path);
  const prefix = at(o.prefix);
  // The addon this nfkube loads (a prebuilt one or node-gyp's build), copied as the installed
  // copy's own build.
  const addon = addonPath();
  const node = o.systemNode ? '/usr/bin/env node' : join(o.prefix, 'bin', 'node');
  const copyTree = (from: string, to: string, filter?: (src: string) => boolean): Step => ({
    describe: `copy ${from} -> ${to}`,
    apply: () => cpSync(from, to, { recursive: true, dereference: true, filter }),
  });
  const steps: Step[] = [
    { describe: `create ${prefix}/bin`, apply: () => mkdirSync(join(prefix, 'bin'), { recursive: true }) },
  ];
  if (!o.systemNode) {
    steps.push({
      describe: `copy node ${process.version} ${process.execPath} -> ${at(node)}`,
      apply: () => {
        copyFileSync(process.execPath, at(node));
        chmodSync(at(node), 0o755);
      },
    });
  }
  const launcher = join(prefix, 'bin', 'nfkube');
  steps.push({
    describe: `write launcher ${launcher} (#!${node})`,
    apply: () => {
      const body = readFileSync(join(root, 'bin', 'nfkube'), 'utf8').replace(/^#!.*\n/, '');
      writeFileSync(launcher, `#!${node}\n${body}`, { mode: 0o755 });
    },
  });
  steps.push(copyTree(join(root, 'package.json'), join(prefix, 'package.json')));
  steps.push(copyTree(join(root, 'dist', 'src'), join(prefix, 'dist', 'src'), (src) => !src.endsWith('.map')));
  steps.push(copyTree(addon, join(prefix, 'build', 'Release', 'nfnl.node')));
  const packages = productionPackages(root);
  steps.push({
    describe: `copy ${packages.length} production packages ${join(root, 'node_modules')} -> ${join(prefix, 'node_modules')}`,
    apply: () => {
      for (const rel of packages) {
        const from = join(root, rel);
        // Nested node_modules are copied as packages of their own, only if needed.
        cpSync(from, join(prefix, rel), { recursive: true, dereference: true, filter: (src) => relative(from, src).split('/')[0] !== 'node_modules' });
      }
    },
  });
  const unitPath = at(join(o.unitDir, UNIT_FILE));
  steps.push({
    describe: `write ${unitPath}`,
    apply: () => {
      mkdirSync(dirname(unitPath), { recursive: true });
      writeFileSync(unitPath, renderUnit({ prefix: o.prefix, envFile: o.envFile, node }));
    },
  });
  const sysusers = at(join(o.sysusersDir, SYSUSERS_FILE));
  steps.push({
    describe: `write ${sysusers} (the "${SERVICE_USER}" system user)`,
    apply: () => {
      mkdirSync(dirname(sysusers), { recursive: true });
      writeFileSync(sysusers, SYSUSERS_ENTRY);
    },
  });
  const envFile = at(o.envFile);
  if (!existsSync(envFile)) {
    steps.push({
      describe: `write example ${envFile} (edit it before starting)`,
      apply: () => {
        mkdirSync(dirname(envFile), { recursive: true });
        writeFileSync(envFile, ENV_EXAMPLE, { mode: 0o600 });
      },
    });
  }
  return steps;
}

function cniPluginKind(value: string | undefined): CniPluginKind {
  const kind = value ?? 'auto';
  if (!(CNI_PLUGIN_KINDS as readonly string[]).includes(kind)) throw new Error(`option --cni-plugin: ${JSON.stringify(kind)} is not one of ${CNI_PLUGIN_KINDS.join(', ')}`);
  return kind as CniPluginKind;
}

export interface InstallPaths {
  prefix: string;
  unitDir: string;
  envFile: string;
  sysusersDir: string;
  cniBinDir: string;
  root: string;
  dryRun: boolean;
}

/** The PATH_OPTIONS values: absolute, one line each. */
export function installPaths(v: ValuesOf<typeof PATH_OPTIONS>): InstallPaths {
  const path = (name: Exclude<keyof typeof PATH_OPTIONS, 'dry-run'>, fallback: string) => {
    const value = v[name];
    if (value === '') throw new Error(`option --${name} needs a value`);
    return resolve(writablePath(name, value ?? fallback));
  };
  return {
    prefix: path('prefix', DEFAULT_PREFIX),
    unitDir: path('unit-dir', DEFAULT_UNIT_DIR),
    envFile: path('environment-file', DEFAULT_ENV_FILE),
    sysusersDir: path('sysusers-dir', DEFAULT_SYSUSERS_DIR),
    cniBinDir: path('cni-bin-dir', DEFAULT_CNI_BIN_DIR),
    root: path('root', '/'),
    dryRun: v['dry-run'] === true,
  };
}

function parseArgs(args: string[]): InstallPaths & { systemNode: boolean; systemd: boolean; cni: boolean; cniPlugin: CniPluginKind } {
  const v = parse(args, options, usage);
  return {
    ...installPaths(v),
    systemNode: v['system-node'] === true,
    systemd: v.systemd === true,
    cni: v.cni === true,
    cniPlugin: cniPluginKind(v['cni-plugin']),
  };
}

const command: Command = {
  summary: 'install a self-contained copy and its systemd unit (--systemd [--prefix DIR]) and/or the CNI IPAM plugin (--cni)',
  usage,
  options,
  async run(args) {
    const o = parseArgs(args);
    if (!o.systemd && !o.cni) {
      process.stderr.write(`nfkube install: nothing to install: only --systemd is supported for the agent, --cni for the CNI IPAM plugin (or both)\n${usage}\n`);
      return 2;
    }
    const steps = [
      ...(o.systemd ? plan(o) : []),
      ...(o.cni ? cniPlan({ prefix: o.prefix, cniBinDir: o.cniBinDir, root: o.root, systemNode: o.systemNode, nodeCopiedElsewhere: o.systemd, plugin: o.cniPlugin }) : []),
    ];
    for (const step of steps) {
      process.stdout.write(`${o.dryRun ? 'would ' : ''}${step.describe}\n`);
      if (!o.dryRun) step.apply();
    }
    if (!o.dryRun && o.systemd) {
      process.stdout.write(
        `\nthen: systemd-sysusers; edit ${join(o.root, o.envFile)} (a kubeconfig it names must be readable by user ${SERVICE_USER}: chgrp ${SERVICE_USER} FILE; chmod 0640 FILE); systemctl daemon-reload; systemctl enable --now nfkube\n`,
      );
    }
    return 0;
  },
};

export default command;
