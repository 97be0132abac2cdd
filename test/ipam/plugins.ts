/** The two nfkube-cni-ipam plugins as a runtime execs them: the Node one from this checkout and the
 * compiled one (native/cni/, built by npm install or shipped in prebuilds/), for tests and the
 * benchmark to run from one table. */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { findCompiledPlugin } from '../../src/cni/install';

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
