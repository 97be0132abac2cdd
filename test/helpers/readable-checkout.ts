/** Parts of the suite run as uid 65534 (nobody), which cannot read a checkout under a 0700
 * directory (root's home, where `git clone` as root puts it). Those tests run nfkube from here:
 * the checkout itself where every other user can reach it, else a copy of what they run in a
 * world-readable temporary directory, said in one line. */
import { accessSync, chmodSync, constants, cpSync, existsSync, lstatSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { productionPackages } from '../../src/cli/commands/install';

export const CHECKOUT = resolve(__dirname, '..', '..', '..');

/** Whether a user who is neither owner nor in the group can open path: every directory on the
 * way enterable by others, the path itself readable (and enterable, if a directory). */
export function othersCanRead(path: string): boolean {
  const real = realpathSync(path);
  const st = statSync(real);
  if ((st.mode & 0o004) === 0 || (st.isDirectory() && (st.mode & 0o001) === 0)) return false;
  for (let dir = dirname(real); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === dirname(dir)) return true;
  }
}

/** Makes a copied tree readable (and its directories enterable) by everyone; links are left
 * alone. */
export function openUp(path: string): void {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return;
  const dir = st.isDirectory();
  chmodSync(path, dir ? 0o755 : st.mode & 0o111 ? 0o755 : 0o644);
  if (dir) for (const e of readdirSync(path)) openUp(join(path, e));
}

export interface ReadableCheckout {
  /** Where bin/nfkube, dist/, build/ and node_modules/ are, readable by uid 65534. */
  root: string;
  close(): void;
}

/** The checkout, or a world-readable copy of what running nfkube needs (package.json, bin/,
 * dist/, the addon's build/ and prebuilds/, and node_modules: the production packages, or all
 * of them with `allModules`). Refuses, in one line, a node binary others cannot run. */
export function readableCheckout(opts: { allModules?: boolean; log?: (line: string) => void } = {}): ReadableCheckout {
  try {
    accessSync(process.execPath, constants.X_OK);
    if (!othersCanRead(process.execPath)) throw new Error('not readable by others');
  } catch {
    throw new Error(`${process.execPath} (node) cannot be run by uid 65534: install node where every user can run it (e.g. /usr/bin/node) to run this test`);
  }
  const needed = ['package.json', 'bin/nfkube', 'dist', 'node_modules'].map((p) => join(CHECKOUT, p));
  if (needed.every(othersCanRead)) return { root: CHECKOUT, close: () => undefined };
  const copy = mkdtempSync(join(tmpdir(), 'nfkube-readable-'));
  (opts.log ?? ((line: string) => process.stderr.write(`${line}\n`)))(`${CHECKOUT} is not readable by uid 65534: running a copy in ${copy}`);
  for (const part of ['package.json', 'bin', 'dist', 'build', 'prebuilds', 'examples', 'test']) {
    if (existsSync(join(CHECKOUT, part))) cpSync(join(CHECKOUT, part), join(copy, part), { recursive: true, dereference: true });
  }
  const modules = opts.allModules ? ['node_modules'] : productionPackages(CHECKOUT);
  for (const rel of modules) cpSync(join(CHECKOUT, rel), join(copy, rel), { recursive: true, dereference: true });
  openUp(copy);
  return { root: copy, close: () => rmSync(copy, { recursive: true, force: true }) };
}
