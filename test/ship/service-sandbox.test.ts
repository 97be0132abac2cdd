/** The agent really runs under what nfkube.service imposes on its process, checked without a
 * running systemd: a non-root uid holding only CAP_NET_ADMIN as an ambient capability
 * (setpriv), no_new_privs, the unit's system call filter (@system-service minus @privileged and
 * @resources, expanded by `systemd-analyze syscall-filter`; EPERM for the rest) with setns and
 * unshare refused (RestrictNamespaces), applied through libseccomp by
 * test/helpers/service-sandbox.py. And why the unit has no MemoryDenyWriteExecute: under
 * PR_SET_MDWE node's JIT aborts, only `node --jitless` runs. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Netns } from '../../src/netlink/netns';
import { readableCheckout } from '../helpers/readable-checkout';

const root = join(__dirname, '..', '..', '..');
/** What uid 65534 runs: the checkout, or a readable copy when the checkout is under a 0700
 * directory. */
const checkout = readableCheckout();
after(() => checkout.close());
const NOBODY = '65534';

/** The system calls a SystemCallFilter= group allows, its nested groups expanded. */
function syscalls(group: string, seen = new Set<string>()): Set<string> {
  const r = spawnSync('systemd-analyze', ['syscall-filter', '--no-pager', group], { encoding: 'utf8' });
  assert.equal(r.status, 0, `systemd-analyze syscall-filter ${group}: ${r.stderr} (install Debian's "systemd" package)`);
  const out = new Set<string>();
  for (const line of r.stdout.split('\n').slice(1)) {
    const name = line.trim();
    if (!name || name.startsWith('#')) continue;
    if (name.startsWith('@')) {
      if (seen.has(name)) continue;
      seen.add(name);
      for (const s of syscalls(name, seen)) out.add(s);
    } else out.add(name);
  }
  return out;
}

function withFiles<T>(fn: (dir: string, filter: string, helper: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-sandbox-'));
  chmodSync(dir, 0o755);
  try {
    const allowed = syscalls('@system-service');
    for (const group of ['@privileged', '@resources']) for (const s of syscalls(group)) allowed.delete(s);
    const filter = join(dir, 'filter');
    writeFileSync(filter, [...allowed].sort().join('\n'), { mode: 0o644 });
    const helper = join(dir, 'service-sandbox.py');
    copyFileSync(join(root, 'test', 'helpers', 'service-sandbox.py'), helper);
    chmodSync(helper, 0o644);
    return fn(dir, filter, helper);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs node with args as the unit would, in a fresh network namespace. */
function asService(ns: Netns, filter: string, helper: string, nodeArgs: string[], opts: { mdwe: boolean }) {
  const setpriv = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--inh-caps=-all,+net_admin', '--ambient-caps=-all,+net_admin', '--bounding-set=-all,+net_admin'];
  const sandbox = ['/usr/bin/python3', helper, ...(opts.mdwe ? [] : ['--no-mdwe']), filter, '--'];
  return spawnSync('nsenter', [`--net=${ns.path}`, ...setpriv, ...sandbox, process.execPath, ...nodeArgs], { cwd: checkout.root, encoding: 'utf8', timeout: 60_000 });
}

const agentOnce = [join(checkout.root, 'bin', 'nfkube'), 'agent', '--once', '--manifests', join(checkout.root, 'examples'), '--node-name', 'node-1'];

function tables(ns: Netns): string {
  return spawnSync('nsenter', [`--net=${ns.path}`, 'nft', 'list', 'tables'], { encoding: 'utf8' }).stdout;
}

test('agent --once works as an unprivileged user with ambient CAP_NET_ADMIN under the unit syscall filter and namespace restriction', () => {
  withFiles((_dir, filter, helper) => {
    const ns = Netns.create();
    try {
      const r = asService(ns, filter, helper, agentOnce, { mdwe: false });
      assert.equal(r.status, 0, `${r.stderr}`);
      assert.match(r.stderr, /"msg":"sync committed"/);
      assert.match(tables(ns), /table inet nfkube/);
      // The restriction is real: creating a namespace fails inside the sandbox.
      const probe = spawnSync('/usr/bin/python3', [helper, '--no-mdwe', filter, '--', '/usr/bin/unshare', '--net', 'true'], { encoding: 'utf8' });
      assert.notEqual(probe.status, 0, 'unshare is refused inside the sandbox');
    } finally {
      ns.close();
    }
  });
});

test('MemoryDenyWriteExecute: node with its JIT aborts under PR_SET_MDWE; node --jitless runs the agent', () => {
  withFiles((_dir, filter, helper) => {
    const ns = Netns.create();
    try {
      const jit = asService(ns, filter, helper, agentOnce, { mdwe: true });
      assert.notEqual(jit.status, 0, 'the JIT cannot make its code executable');
      assert.match(jit.stderr, /Check failed|Fatal/);
      assert.doesNotMatch(tables(ns), /nfkube/);
      const jitless = asService(ns, filter, helper, ['--jitless', ...agentOnce], { mdwe: true });
      assert.equal(jitless.status, 0, jitless.stderr);
      assert.match(tables(ns), /table inet nfkube/);
    } finally {
      ns.close();
    }
  });
});
