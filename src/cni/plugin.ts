/** nfkube-cni-ipam: the CNI IPAM plugin (spec 0.3.0 to 1.1.0). The container runtime (or a main
 * plugin such as bridge) execs it per attachment; it forwards the request to the node agent over
 * its unix socket and prints the agent's answer as a CNI result or CNI error. It loads nothing but
 * node:net and node:fs, so it can be installed as this one file and starts in milliseconds. With
 * the agent down it fails at once (code 11, try again later) having allocated nothing.
 * cniCall is also what the agent runs for the compiled plugin (native/cni/), which forwards the
 * runtime's environment and configuration unread (EXEC): both plugins answer with one code. */
import { lstatSync, readSync } from 'node:fs';
import { connect } from 'node:net';
import type { IpamReply, IpamRequest } from './protocol';

const SUPPORTED = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];
const DEFAULT_SOCKET = '/run/nfkube/ipam.sock';
/** How long an ADD may wait for the agent (a block claim under API trouble) before giving up;
 * NFKUBE_CNI_IPAM_TIMEOUT_MS (a positive integer) overrides it, as in the compiled plugin. */
const TIMEOUT_MS = 60_000;
/** The largest network configuration read from stdin (the compiled plugin's bound too). */
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;
// The CNI error codes this file uses (kept here so the plugin needs no other module at run time).
const ERR = { incompatibleVersion: 1, invalidEnv: 4, ioFailure: 5, decodeFailure: 6, invalidConfig: 7, tryAgainLater: 11 } as const;

class CniError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly details?: string,
  ) {
    super(message);
  }
}

export interface NetConf {
  cniVersion?: string;
  name?: string;
  ipam?: { type?: string; socket?: string; pool?: string };
  prevResult?: { ips?: Array<{ address?: string }> };
  'cni.dev/valid-attachments'?: Array<{ containerID?: string; ifname?: string }>;
}

function versionAtLeast(v: string, min: string): boolean {
  const a = v.split('.').map(Number);
  const b = min.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** The CNI spec's rule for a container ID: alphanumeric first, then alphanumerics, `_`, `.`, `-`. */
export function containerIdProblem(id: unknown): string | undefined {
  if (typeof id !== 'string' || id === '') return 'CNI_CONTAINERID is not set';
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(id)) return `CNI_CONTAINERID ${JSON.stringify(id)} must start with a letter or digit and hold only letters, digits, "_", "." and "-"`;
  return undefined;
}

/** The CNI spec's rule for an interface name (a Linux name: IFNAMSIZ - 1 bytes at most). */
export function ifnameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name === '') return 'CNI_IFNAME is not set';
  const shown = JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}...` : name);
  if (Buffer.byteLength(name) > 15) return `CNI_IFNAME ${shown} is longer than 15 bytes`;
  if (name === '.' || name === '..') return `CNI_IFNAME ${shown} is not an interface name`;
  if (/[/:\s]/.test(name)) return `CNI_IFNAME ${shown} holds "/", ":" or whitespace`;
  return undefined;
}

/** CNI_ARGS: "K1=V1;K2=V2". */
function parseCniArgs(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0) out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

/** Sends one request to the agent; the Node plugin's is the socket, the agent's its own handler. */
export type Ask = (socketPath: string, req: IpamRequest) => Promise<IpamReply>;

function timeoutMs(env: NodeJS.ProcessEnv): number {
  const t = env.NFKUBE_CNI_IPAM_TIMEOUT_MS;
  return t && /^[1-9]\d{0,8}$/.test(t) ? Number(t) : TIMEOUT_MS;
}

/** Why the socket may not be the agent's: Node cannot read SO_PEERCRED, so the plugin trusts the
 * socket only when this user (root) owns it and its directory, and nobody else can write that
 * directory (so nobody else can have put a socket there, nor swap it before the connect). */
function untrustedSocket(socketPath: string): string | undefined {
  const uid = typeof process.geteuid === 'function' ? process.geteuid() : 0;
  const dir = socketPath.slice(0, Math.max(1, socketPath.lastIndexOf('/')));
  let sock, parent;
  try {
    sock = lstatSync(socketPath);
    parent = lstatSync(dir);
  } catch {
    return undefined; // missing: the connect reports it (nothing is sent)
  }
  if (sock.uid !== uid) return `nfkube ipam agent at ${socketPath} is a socket of uid ${sock.uid}, not uid ${uid}; nothing was sent`;
  if (parent.uid !== uid || parent.mode & 0o022) return `nfkube ipam agent at ${socketPath} is in ${dir}, which uid ${uid} does not own alone; nothing was sent`;
  return undefined;
}

function askSocket(socketPath: string, req: IpamRequest, timeout: number): Promise<IpamReply> {
  const untrusted = untrustedSocket(socketPath);
  if (untrusted) return Promise.reject(new CniError(ERR.ioFailure, untrusted));
  return new Promise((resolve, reject) => {
    const sock = connect(socketPath);
    let buf = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new CniError(ERR.tryAgainLater, `nfkube ipam agent at ${socketPath} did not answer within ${timeout / 1000} s`));
    }, timeout);
    sock.setEncoding('utf8');
    sock.on('connect', () => sock.write(JSON.stringify(req) + '\n'));
    sock.on('data', (c: string) => (buf += c));
    sock.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const down = err.code === 'ENOENT' || err.code === 'ECONNREFUSED';
      reject(new CniError(ERR.tryAgainLater, down ? `nfkube ipam agent is not running (${socketPath}: ${err.code}); nothing was allocated` : `nfkube ipam agent at ${socketPath}: ${err.message}`));
    });
    sock.on('end', () => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(buf) as IpamReply);
      } catch {
        reject(new CniError(ERR.tryAgainLater, `nfkube ipam agent at ${socketPath} closed the connection without an answer`));
      }
    });
  });
}

const STDIN_WAIT = new Int32Array(new SharedArrayBuffer(4));

/** Reads stdin up to MAX_CONFIG_BYTES (as the compiled plugin): /dev/zero must not exhaust memory. */
function readStdin(): string {
  const chunks: Buffer[] = [];
  let total = 0;
  const chunk = Buffer.alloc(64 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(0, chunk, 0, chunk.length, null);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') {
        Atomics.wait(STDIN_WAIT, 0, 0, 10); // a non-blocking stdin: wait for more, do not spin
        continue;
      }
      if (code === 'EOF') break;
      throw new CniError(ERR.ioFailure, `reading the network configuration from stdin: ${(err as Error).message}`);
    }
    if (n === 0) break;
    total += n;
    if (total > MAX_CONFIG_BYTES) throw new CniError(ERR.decodeFailure, `network configuration on stdin is larger than ${MAX_CONFIG_BYTES} bytes`);
    chunks.push(Buffer.from(chunk.subarray(0, n)));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function readConf(): NetConf {
  const text = readStdin();
  try {
    const conf = JSON.parse(text) as NetConf;
    if (!conf || typeof conf !== 'object') throw new Error('not an object');
    return conf;
  } catch (err) {
    throw new CniError(ERR.decodeFailure, `network configuration on stdin is not JSON: ${(err as Error).message}`);
  }
}

/** CHECK: the addresses of prevResult, which must be a list of {address: string}. */
function expectedAddresses(prev: NetConf['prevResult']): string[] {
  const ips = prev?.ips ?? [];
  if (!Array.isArray(ips) || !ips.every((ip) => ip && typeof ip === 'object' && typeof ip.address === 'string')) {
    throw new CniError(ERR.invalidConfig, 'prevResult.ips must be a list of objects with a string address');
  }
  return ips.map((ip) => ip.address as string);
}

/** The cniVersion errors are reported in: the configuration's, once it has been read. */
interface CallState {
  replyVersion: string;
}

async function run(env: NodeJS.ProcessEnv, readConfig: () => NetConf, ask: Ask, state: CallState): Promise<string | undefined> {
  const command = env.CNI_COMMAND;
  if (command === 'VERSION') return JSON.stringify({ cniVersion: '1.1.0', supportedVersions: SUPPORTED });
  if (!command) throw new CniError(ERR.invalidEnv, 'CNI_COMMAND is not set');
  const conf = readConfig();
  const version = conf.cniVersion ?? '0.3.0';
  if (SUPPORTED.includes(version)) state.replyVersion = version;
  if (!SUPPORTED.includes(version)) throw new CniError(ERR.incompatibleVersion, `cniVersion ${version} is not supported`, `supported: ${SUPPORTED.join(', ')}`);
  if (!conf.name) throw new CniError(ERR.invalidConfig, 'network configuration: name is required');
  const ipam = conf.ipam ?? {};
  if (ipam.pool !== undefined && typeof ipam.pool !== 'string') throw new CniError(ERR.invalidConfig, 'ipam.pool must be a string');
  const socketPath = ipam.socket ?? DEFAULT_SOCKET;
  const base = { network: conf.name, pool: ipam.pool };
  let req: IpamRequest;
  switch (command) {
    case 'ADD':
    case 'DEL':
    case 'CHECK': {
      if (command === 'CHECK' && !versionAtLeast(version, '0.4.0')) throw new CniError(ERR.incompatibleVersion, `CHECK needs cniVersion 0.4.0 or later, not ${version}`);
      const containerID = env.CNI_CONTAINERID;
      const ifname = env.CNI_IFNAME;
      const badEnv = containerIdProblem(containerID) ?? ifnameProblem(ifname);
      if (badEnv) throw new CniError(ERR.invalidEnv, badEnv);
      if (command === 'ADD' && !env.CNI_NETNS) throw new CniError(ERR.invalidEnv, 'CNI_NETNS is not set');
      req = { command, ...base, containerID: containerID!, ifname: ifname!, args: parseCniArgs(env.CNI_ARGS) };
      if (command === 'CHECK') req.expected = expectedAddresses(conf.prevResult);
      break;
    }
    case 'GC': {
      if (!versionAtLeast(version, '1.1.0')) throw new CniError(ERR.incompatibleVersion, `GC needs cniVersion 1.1.0, not ${version}`);
      const list = conf['cni.dev/valid-attachments'];
      if (!Array.isArray(list)) throw new CniError(ERR.invalidConfig, 'cni.dev/valid-attachments is required for GC');
      const validAttachments = list.map((a, i) => {
        if (!a || typeof a !== 'object' || typeof a.containerID !== 'string' || typeof a.ifname !== 'string') {
          throw new CniError(ERR.invalidConfig, `cni.dev/valid-attachments[${i}] must be an object with string containerID and ifname`);
        }
        return { containerID: a.containerID, ifname: a.ifname };
      });
      req = { command, ...base, validAttachments };
      break;
    }
    case 'STATUS':
      if (!versionAtLeast(version, '1.1.0')) throw new CniError(ERR.incompatibleVersion, `STATUS needs cniVersion 1.1.0, not ${version}`);
      req = { command, ...base };
      break;
    default:
      throw new CniError(ERR.invalidEnv, `CNI_COMMAND ${command} is not supported`);
  }
  const reply = await ask(socketPath, req);
  if (!reply.ok) throw new CniError(reply.code, reply.msg, reply.details);
  if (command !== 'ADD') return undefined;
  const legacy = !versionAtLeast(version, '1.0.0');
  const ips = (reply.ips ?? []).map((ip) => (legacy ? { version: ip.family === 'v4' ? '4' : '6', address: ip.address } : { address: ip.address }));
  return JSON.stringify({ cniVersion: version, ips, dns: {} });
}

/** One CNI call: the exit status and stdout of the plugin, given the runtime's environment, a
 * reader of its configuration and a way to ask the agent. */
export async function cniCall(env: NodeJS.ProcessEnv, readConfig: () => NetConf, ask: Ask): Promise<{ code: number; out: string }> {
  const state: CallState = { replyVersion: '1.1.0' };
  try {
    const out = await run(env, readConfig, ask, state);
    return { code: 0, out: out ? out + '\n' : '' };
  } catch (err) {
    const e = err instanceof CniError ? err : new CniError(ERR.ioFailure, (err as Error)?.message ?? String(err));
    const body: Record<string, unknown> = { cniVersion: state.replyVersion, code: e.code, msg: e.message };
    if (e.details) body.details = e.details;
    return { code: 1, out: JSON.stringify(body) + '\n' };
  }
}

/** The agent's answer to the compiled plugin's EXEC: the same call, the environment and
 * configuration as the runtime gave them to the plugin, the agent's own handler as `ask`. */
export function cniExec(env: unknown, config: unknown, ask: Ask): Promise<{ code: number; out: string }> {
  const vars: NodeJS.ProcessEnv = {};
  if (env && typeof env === 'object') for (const [k, v] of Object.entries(env)) if (typeof v === 'string') vars[k] = v;
  return cniCall(vars, () => {
    if (!config || typeof config !== 'object') throw new CniError(ERR.decodeFailure, 'network configuration on stdin is not JSON: not an object');
    return config as NetConf;
  }, ask);
}

export function main(env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; out: string }> {
  const timeout = timeoutMs(env);
  return cniCall(env, readConf, (socketPath, req) => askSocket(socketPath, req, timeout));
}

if (require.main === module || process.env.NFKUBE_CNI_IPAM_MAIN === '1') {
  void main().then(({ code, out }) => {
    process.stdout.write(out, () => process.exit(code));
  });
}
