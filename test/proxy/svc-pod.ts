/** The process standing in for a pod (or an external client) in the service proxy's packet tests.
 * `node svc-pod.js --name NAME --tcp 8080,8081 --udp 5353` serves those ports on IPv4 and IPv6,
 * answering every connection or datagram with `NAME SOURCE-ADDRESS` (the source it saw). It also
 * runs probes asked on stdin, one JSON line each ({id, host, port, protocol, sport?, timeoutMs}),
 * answering one JSON line ({id, reply} or {id, error}). Without --name it does nothing. */
import { createSocket } from 'node:dgram';
import { connect, createServer } from 'node:net';
import { createInterface } from 'node:readline';

export interface SvcProbe {
  id: number;
  host: string;
  port: number;
  protocol: 'tcp' | 'udp';
  /** UDP: the source port to send from (a fixed one keeps one conntrack entry). */
  sport?: number;
  timeoutMs: number;
}

export type SvcOutcome = { id: number; reply: string } | { id: number; error: string };

const plain = (addr: string | undefined) => (addr ?? '?').replace(/^::ffff:/, '');

function serve(name: string, tcp: number[], udp: number[]): void {
  for (const port of tcp) {
    for (const host of ['0.0.0.0', '::']) {
      createServer((s) => {
        s.on('error', () => undefined);
        s.end(`${name} ${plain(s.remoteAddress)}`);
      }).listen({ port, host, ipv6Only: host === '::' });
    }
  }
  for (const port of udp) {
    for (const type of ['udp4', 'udp6'] as const) {
      const sock = createSocket({ type, ipv6Only: type === 'udp6' });
      sock.on('message', (_msg, rinfo) => sock.send(`${name} ${plain(rinfo.address)}`, rinfo.port, rinfo.address));
      sock.on('error', () => undefined);
      sock.bind(port, type === 'udp4' ? '0.0.0.0' : '::');
    }
  }
}

function probe(p: SvcProbe): Promise<SvcOutcome> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (o: { reply: string } | { error: string }, cleanup: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      cleanup();
      resolve({ id: p.id, ...o });
    };
    let cleanup = () => undefined as void;
    const timer = setTimeout(() => finish({ error: 'timeout' }, cleanup), p.timeoutMs);
    const family = p.host.includes(':') ? 6 : 4;
    if (p.protocol === 'tcp') {
      const s = connect({ host: p.host, port: p.port, family });
      let reply = '';
      cleanup = () => s.destroy();
      s.setEncoding('utf8');
      s.on('data', (d: string) => (reply += d));
      s.on('end', () => finish(reply ? { reply } : { error: 'closed' }, cleanup));
      s.on('error', (err: NodeJS.ErrnoException) => finish({ error: err.code ?? err.message }, cleanup));
    } else {
      const s = createSocket({ type: family === 6 ? 'udp6' : 'udp4', reuseAddr: true });
      cleanup = () => s.close();
      s.on('message', (msg) => finish({ reply: msg.toString() }, cleanup));
      s.on('error', (err: NodeJS.ErrnoException) => finish({ error: err.code ?? err.message }, cleanup));
      // Connected, so an ICMP port unreachable (a reject) is reported as ECONNREFUSED.
      s.bind(p.sport ?? 0, () => s.connect(p.port, p.host, () => s.send('hello')));
    }
  });
}

function main(): void {
  const args = process.argv.slice(2);
  const arg = (flag: string) => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const name = arg('--name');
  if (!name) return;
  const list = (v: string | undefined) => (v ? v.split(',').filter(Boolean).map(Number) : []);
  serve(name, list(arg('--tcp')), list(arg('--udp')));
  const rl = createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    void probe(JSON.parse(line) as SvcProbe).then((o) => process.stdout.write(JSON.stringify(o) + '\n'));
  });
  rl.on('close', () => process.exit(0));
  process.stdout.write(JSON.stringify({ id: 0, reply: 'ready' }) + '\n');
}

main();
