/** A byte relay between network namespaces: a Unix socket is reachable from every network
 * namespace (it lives in the file system), so the control plane's loopback ports are carried by
 * one relay inside its namespace (`tcp` -> `unix`), and each simulated node gets a relay of its
 * own (`unix` -> its loopback `tcp`), with TLS end to end. The test process reaches the Unix
 * sockets directly.
 *
 * `node relay.js FROM=TO ...` with endpoints `unix:PATH` or `tcp:HOST:PORT`; prints one line
 * `ready` once every listener is up. Without arguments it does nothing, because test runners
 * execute every file under test/. */
import { connect, createServer, type Server, type Socket } from 'node:net';

export type Endpoint = { unix: string } | { host: string; port: number };

export function parseEndpoint(text: string): Endpoint {
  if (text.startsWith('unix:')) return { unix: text.slice(5) };
  const m = /^tcp:(.+):(\d+)$/.exec(text);
  if (!m) throw new Error(`relay endpoint "${text}": expected unix:PATH or tcp:HOST:PORT`);
  return { host: m[1], port: Number(m[2]) };
}

export function formatEndpoint(e: Endpoint): string {
  return 'unix' in e ? `unix:${e.unix}` : `tcp:${e.host}:${e.port}`;
}

function dial(to: Endpoint): Socket {
  return 'unix' in to ? connect({ path: to.unix }) : connect({ host: to.host, port: to.port });
}

/** Listens on `from` and pipes each connection to a new connection to `to`. */
export function relay(from: Endpoint, to: Endpoint): Promise<Server> {
  const server = createServer((inbound) => {
    const outbound = dial(to);
    const close = (): void => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('error', close).on('close', close);
    outbound.on('error', close).on('close', close);
    inbound.pipe(outbound).pipe(inbound);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const ready = (): void => resolve(server);
    if ('unix' in from) server.listen({ path: from.unix }, ready);
    else server.listen({ host: from.host, port: from.port }, ready);
  });
}

async function main(pairs: string[]): Promise<void> {
  if (pairs.length === 0) return;
  for (const pair of pairs) {
    const [from, to] = pair.split('=');
    await relay(parseEndpoint(from), parseEndpoint(to));
  }
  process.stdout.write('ready\n');
  // The parent closing our stdin is the signal to go.
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`relay: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
