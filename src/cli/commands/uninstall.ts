/** `nfkube uninstall`: removes what `nfkube install` put on a host, found through the same path
 * options: nfkube's own kernel tables (through the library, as `nfkube cleanup`), the unit, the
 * sysusers.d entry, the self-contained copy, the CNI plugin, the agent's state, runtime and cache
 * directories, and the example environment file if it was never edited. It never runs systemctl
 * or any other program, so it stops nothing: a running agent holds its table, and the kernel's
 * refusal to delete it is reported with the command that stops the service. */
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PLUGIN_NAME } from '../../cni/install';
import { NetlinkSocket } from '../../netlink/socket';
import { ForeignTableError } from '../../nft/ownership';
import { Command } from '../command';
import { parse, usageText } from '../options';
import { ownedTables } from '../../node/enabled';
import { deleteOwnTables, TABLE_OPTIONS } from './cleanup';
import { CACHE_DIR, ENV_EXAMPLE, installPaths, PATH_OPTIONS, RUNTIME_DIR, STATE_DIR, SYSUSERS_FILE, UNIT_FILE } from './install';

const options = {
  ...PATH_OPTIONS,
  ...TABLE_OPTIONS,
  'keep-tables': { type: 'boolean', description: "leave the kernel's tables alone (when --root is not this host's view)" },
  purge: { type: 'boolean', description: 'remove the environment file even if it was edited' },
} as const;

const usage = usageText('nfkube uninstall [options]', options, `Removes what \`nfkube install --systemd\` and/or \`--cni\` wrote (same options, same defaults), the
agent's ${STATE_DIR}, ${RUNTIME_DIR} and ${CACHE_DIR}, and nfkube's own tables in this host's
network namespace. Stop the service first (systemctl disable --now nfkube): a running agent holds
its table and the kernel refuses to delete it.`);

/** A directory nfkube install made: the copy (its package.json names nfkube) or, for a CNI-only
 * install, a bin/ holding only the node binary the plugin runs on. Anything else is refused. */
function isOwnPrefix(dir: string): boolean {
  try {
    if (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name === 'nfkube') return true;
  } catch {
    // no package.json: maybe a CNI-only install
  }
  const entries = readdirSync(dir);
  return entries.length === 1 && entries[0] === 'bin' && readdirSync(join(dir, 'bin')).every((f) => f === 'node');
}

/** Removes path and what is under it; returns what it did, a line each. A directory that cannot
 * go itself (a mount point, or read-only above one: a host directory seen through a volume in
 * the cleanup DaemonSet) is emptied instead. */
function removeTree(path: string): string[] {
  try {
    rmSync(path, { recursive: true, force: true });
    return [`remove ${path}`];
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if ((code !== 'EBUSY' && code !== 'EROFS') || !statSync(path).isDirectory()) throw err;
    return [...readdirSync(path).flatMap((entry) => removeTree(join(path, entry))), `keep ${path}, emptied (a mount point, or read-only here)`];
  }
}

const command: Command = {
  summary: "remove a host install (unit, files, CNI plugin, state) and nfkube's own tables; runs no program, stops nothing",
  usage,
  options,
  async run(args, ctx) {
    const v = parse(args, options, usage);
    const o = installPaths(v);
    const say = (line: string) => process.stdout.write(`${o.dryRun ? 'would ' : ''}${line}\n`);
    if (v['keep-tables'] !== true) {
      const socket = NetlinkSocket.open();
      ctx.defer(() => socket.close());
      try {
        for (const [table, what] of o.dryRun ? [] : await deleteOwnTables(socket, v)) if (what === 'deleted') say(`delete table ${table}`);
      } catch (err) {
        if (err instanceof ForeignTableError && err.reason === 'held') throw new Error(`${err.message}\nstop the agent first (systemctl disable --now nfkube, or delete its DaemonSet), then run nfkube uninstall again; nothing was removed`);
        throw err;
      }
      if (o.dryRun) say(`delete tables ${ownedTables(v).map((t) => `${t.family} ${t.name}`).join(', ')} if present`);
    }
    const at = (path: string) => join(o.root, path);
    const prefix = at(o.prefix);
    if (existsSync(prefix) && !isOwnPrefix(prefix)) throw new Error(`option --prefix: ${prefix} is not an nfkube install (no package.json naming nfkube): not removed, nor anything else`);
    const envFile = at(o.envFile);
    const files = [at(join(o.unitDir, UNIT_FILE)), at(join(o.sysusersDir, SYSUSERS_FILE)), at(join(o.cniBinDir, PLUGIN_NAME))];
    const dirs = [prefix, at(STATE_DIR), at(RUNTIME_DIR), at(CACHE_DIR)];
    let kept: string | undefined;
    if (existsSync(envFile)) {
      if (v.purge === true || readFileSync(envFile, 'utf8') === ENV_EXAMPLE) files.push(envFile);
      else kept = envFile;
    }
    for (const path of [...files, ...dirs]) {
      if (!existsSync(path)) continue;
      if (o.dryRun) say(`remove ${path}`);
      else for (const line of removeTree(path)) say(line);
    }
    if (kept) process.stdout.write(`kept ${kept}: it was edited (remove it yourself, or pass --purge)\n`);
    if (!o.dryRun) process.stdout.write(`then: systemctl daemon-reload (the "nfkube" system user stays; userdel nfkube removes it)\n`);
    return 0;
  },
};

export default command;
