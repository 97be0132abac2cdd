/** `nfkube ipset restore|save`: the `ipset save` format over netlink, in the current namespace.
 * restore parses all input first, then brings each set to the input's content without a flush
 * window (syncSets); save prints what `ipset save` prints. */
import { Command } from '../command';
import { OptionTable, parse, usageText } from '../options';
import { didYouMean, UsageError } from '../../options/usage-error';
import { fatalMessage } from '../fatal-message';
import { NetlinkSocket } from '../../netlink/socket';
import { IpsetClient } from '../../ipset/client';
import { formatSave, parseSave, RestoreSyntaxError } from '../../ipset/save-format';
import { SyncInputError, SyncResult, syncSets, SyncMode, tempNamePattern } from '../../ipset/sync';
import { IpsetSet } from '../../ipset/types';

const options = {
  mode: { type: 'string', value: 'incremental|replace', description: 'restore: change members in place, or build each set beside it and swap', default: 'incremental' },
  prefix: { type: 'string', value: 'P', description: 'restore: own every set named P* (remove those FILE does not create); save: print only sets named P*', default: 'every set named in FILE / every set' },
} as const satisfies OptionTable;

const usage = usageText('nfkube ipset restore [--mode incremental|replace] [--prefix P] < FILE\n       nfkube ipset save [--prefix P]', options, `restore  applies create/add lines (the \`ipset save\` format) set by set, with no moment where a
         member present before and after is missing. Without --prefix only the sets named in
         FILE are touched; with --prefix every set named P* that FILE does not create is removed.
save     prints sets (those named P* with --prefix) as \`ipset save\` does.`);

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function restore(args: string[]): Promise<number> {
  const flags = parse(args, options, usage);
  const mode = (flags.mode ?? 'incremental') as SyncMode;
  if (mode !== 'incremental' && mode !== 'replace') throw new Error(`--mode must be incremental or replace, got "${mode}"`);
  const prefix = flags.prefix;
  let sets;
  try {
    sets = parseSave(await readStdin());
  } catch (err) {
    if (err instanceof RestoreSyntaxError) {
      process.stderr.write(`nfkube ipset restore: input rejected, nothing applied:\n${err.errors.map((e) => `  line ${e.line}: ${e.message}`).join('\n')}\n`);
      return 1;
    }
    throw err;
  }
  if (prefix !== undefined) {
    const outside = [...sets.entries()].filter(([name]) => !name.startsWith(prefix));
    if (outside.length > 0) {
      const lines = outside.map(([name, s]) => `  line ${s.line}: set ${name} does not start with --prefix "${prefix}"`);
      process.stderr.write(`nfkube ipset restore: input rejected, nothing applied:\n${lines.join('\n')}\n`);
      return 1;
    }
  }
  const socket = NetlinkSocket.open();
  try {
    const client = new IpsetClient(socket);
    const result = await syncSets(client, sets, { prefix: prefix ?? '', mode, prune: prefix !== undefined });
    for (const name of result.retained) process.stderr.write(`nfkube ipset restore: set ${name} is still referenced; kept\n`);
    for (const f of result.failures) process.stderr.write(`nfkube ipset restore: ${f.message}\n`);
    process.stderr.write(`nfkube ipset restore: ${restoreSummary(result)}\n`);
    return result.failures.length > 0 ? 1 : 0;
  } catch (err) {
    if (err instanceof SyncInputError) {
      process.stderr.write(`nfkube ipset restore: input rejected, nothing applied:\n  ${err.problems.join('\n  ')}\n`);
      return 1;
    }
    throw err;
  } finally {
    await socket.close();
  }
}

/** What a restore did, in one line: sets by outcome, then members. */
export function restoreSummary(r: SyncResult): string {
  const sets = ([['created', r.created.length], ['updated', r.updated.length], ['replaced', r.replaced.length], ['destroyed', r.destroyed.length], ['kept (still referenced)', r.retained.length], ['unchanged', r.unchanged]] as const)
    .filter(([, n]) => n > 0)
    .map(([what, n]) => `${n} ${what}`);
  return `sets: ${sets.length ? sets.join(', ') : 'none'}; members: ${r.added} added, ${r.deleted} deleted${r.failures.length ? `; ${r.failures.length} failed` : ''}`;
}

async function save(args: string[]): Promise<number> {
  const flags = parse(args, options, usage);
  if (flags.mode !== undefined) throw new UsageError('--mode applies to restore only');
  const prefix = flags.prefix ?? '';
  const socket = NetlinkSocket.open();
  try {
    const client = new IpsetClient(socket);
    const temp = tempNamePattern(prefix);
    const { sets, otherTypes } = await client.list({ include: (n) => n.startsWith(prefix) && !temp.test(n) });
    for (const o of otherTypes) process.stderr.write(`nfkube ipset save: set ${o.name} has type ${o.typeName}, which nfkube does not read; skipped\n`);
    process.stdout.write(formatSave(sets as IpsetSet[]));
    return 0;
  } finally {
    await socket.close();
  }
}

const command: Command = {
  summary: 'restore or save ipset sets over netlink (no ipset binary)',
  usage,
  options,
  async run(args) {
    const [sub, ...rest] = args;
    try {
      if (sub === 'restore') return await restore(rest);
      if (sub === 'save') return await save(rest);
    } catch (err) {
      if (err instanceof UsageError) throw err;
      process.stderr.write(`nfkube ipset ${sub}: ${fatalMessage(err)}\n`);
      return 1;
    }
    throw new UsageError(`expected restore or save${sub === undefined ? '' : `, got ${JSON.stringify(sub)}${didYouMean(sub, ['restore', 'save'])}`} (see nfkube ipset --help)`);
  },
};

export default command;
