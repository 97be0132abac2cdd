/** `nfkube drops`: the denied packets the local agent logged (--log-drops), read from its /drops
 * endpoint: a small local `hubble observe --verdict DROPPED`. */
import { describe as describeDrop } from '../../policy/droplog/drop-log';
import type { TimedDrop } from '../../policy/droplog/drop-ring';
import { DEFAULT_METRICS_ADDR, localClientAddress, parseListenAddress } from '../../observe/server';
import { Command } from '../command';
import { OptionTable, OUTPUT_OPTION, outputFormat, parse, parseDuration, usageText } from '../options';
import { UsageError } from '../../options/usage-error';

const options = {
  pod: { type: 'string', value: 'NAMESPACE/NAME', description: "only drops to, from or caught by this pod's default deny" },
  since: { type: 'string', value: 'DURATION', description: 'only drops logged this long ago or later (e.g. 30s, 5m)', default: 'all the agent keeps (the last 4096)' },
  follow: { type: 'boolean', description: 'after the recent drops, print each new one as it is logged, until interrupted' },
  'metrics-addr': { type: 'string', value: 'ADDR', description: "the local agent's --metrics-addr, where it serves /drops to loopback clients", default: DEFAULT_METRICS_ADDR },
  output: OUTPUT_OPTION,
} as const satisfies OptionTable;
const usage = usageText('nfkube drops [--pod NAMESPACE/NAME] [--since DURATION] [--follow] [options]', options, 'Prints the packets the default deny of this node dropped, rejected or (audit) let through,\nas logged by the local agent started with --log-drops.');

/** `12:00:01.123 drop tcp x/a:41000 -> x/b:80 (ingress of x/b; policies x/deny-b)` */
export function formatDrop(d: TimedDrop): string {
  return `${new Date(d.time).toISOString().slice(11, 23)} ${d.drop.verdict.padEnd(6)} ${describeDrop(d.drop)}\n`;
}

const command: Command = {
  summary: 'print the packets the local agent logged as denied (--pod, --since, --follow)',
  usage,
  options,
  async run(args, ctx) {
    const v = parse(args, options, usage);
    const format = outputFormat(v.output);
    const pod = v.pod;
    if (pod !== undefined && !/^[^/\s]+\/[^/\s]+$/.test(pod)) throw new UsageError(`--pod: "${pod}" is not NAMESPACE/NAME`);
    const since = v.since === undefined ? 0 : Date.now() - parseDuration(v.since, '--since');
    const address = parseListenAddress(v['metrics-addr'] ?? DEFAULT_METRICS_ADDR);
    const agent = localClientAddress(address);
    const query = new URLSearchParams({ since: String(since), ...(pod ? { pod } : {}), ...(v.follow ? { follow: '1' } : {}) });
    const url = `http://${agent}/drops?${query}`;
    const abort = new AbortController();
    ctx.defer(() => abort.abort());
    const stop = () => abort.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    ctx.defer(() => (process.off('SIGINT', stop), process.off('SIGTERM', stop)));
    let res: Response;
    try {
      res = await fetch(url, { signal: abort.signal });
    } catch (err) {
      throw new Error(`cannot reach the agent at ${agent} (${(err as { cause?: Error }).cause?.message ?? (err as Error).message}): is it running, with this --metrics-addr?`);
    }
    if (!res.ok || !res.body) throw new Error(`the agent at ${agent} answered ${res.status}: ${(await res.text()).trim()}`);
    let rest = '';
    try {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        rest += Buffer.from(chunk).toString('utf8');
        const lines = rest.split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines.filter(Boolean)) process.stdout.write(format === 'json' ? `${line}\n` : formatDrop(JSON.parse(line) as TimedDrop));
      }
    } catch (err) {
      // Interrupted while following: the end the user asked for.
      if (!abort.signal.aborted) throw err;
    }
    return 0;
  },
};

export default command;
