/** The two nfkube-cni-ipam plugins as a runtime execs them: the Node one from this checkout and the
 * compiled one (native/cni/, built by npm install or shipped in prebuilds/), for tests and the
 * benchmark to run from one table. */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { findCompiledPlugin } from '../../src/cni/install';
import { IpamService } from '../../src/ipam/service';
import { KObject } from '../../src/ipam/objects';
import { IpamSocketServer, serveIpamSocket } from '../../src/ipam/server';
import { TestApiServer } from '../helpers/apiserver';
import { agentFactory, node, startIpamApiServer } from './cluster';

export interface PluginUnderTest {
  name: 'node' | 'compiled';
  /** The program and its arguments; undefined when this checkout has no such plugin. */
  argv?: string[];
}

export const NODE_PLUGIN = resolve(__dirname, '..', '..', '..', 'bin', 'nfkube-cni-ipam');
export const COMPILED_PLUGIN = findCompiledPlugin();

export const PLUGINS: PluginUnderTest[] = [
  { name: 'node', argv: [process.execPath, NODE_PLUGIN] },
  { name: 'compiled', argv: COMPILED_PLUGIN ? [COMPILED_PLUGIN] : undefined },
];

export interface PluginRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  err: string;
  /** Wall time from spawn to exit, ms. */
  ms: number;
}

/** Runs argv with exactly env (nothing inherited) and stdin; async, so an agent in this process
 * can answer it. */
export function runPlugin(argv: string[], env: Record<string, string>, stdin: string | Buffer, prefix: string[] = []): Promise<PluginRun> {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const [cmd, ...args] = [...prefix, ...argv];
    const child = spawn(cmd, args, { env, timeout: 30_000 });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.stdin.on('error', () => {});
    child.on('error', rej);
    child.on('close', (status, signal) => res({ status, signal, out, err, ms: performance.now() - t0 }));
    child.stdin.end(stdin);
  });
}

/** One node's agent, started against a fresh test API server holding `pools`, serving its socket
 * in its state directory: what the plugins talk to. */
export interface PluginAgent {
  server: TestApiServer;
  agent: IpamService;
  socket: IpamSocketServer;
  close(): Promise<void>;
}

export async function startPluginAgent(nodeName: string, pools: KObject[]): Promise<PluginAgent> {
  const server = await startIpamApiServer();
  for (const p of pools) server.create(p);
  server.create(node(nodeName));
  const f = agentFactory(server);
  const agent = f.make(nodeName);
  await agent.start();
  const socket = await serveIpamSocket(join(f.stateDir, 'ipam.sock'), (req) => agent.handle(req));
  return {
    server,
    agent,
    socket,
    async close() {
      await socket.close();
      await agent.stop();
      await server.close();
    },
  };
}

/** Sends one raw request line to an agent's socket; resolves with its parsed reply. */
export function askAgent(socketPath: string, line: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const s = connect(socketPath);
    let buf = '';
    s.setEncoding('utf8');
    s.on('connect', () => s.write(line + '\n'));
    s.on('data', (c: string) => (buf += c));
    s.on('error', reject);
    s.on('end', () => {
      try {
        resolve(JSON.parse(buf));
      } catch {
        reject(new Error(`no answer from ${socketPath}`));
      }
    });
  });
}
