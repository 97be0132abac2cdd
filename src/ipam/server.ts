/** The agent's unix socket for the CNI plugin: one JSON request line in, one JSON reply line out,
 * per connection. The socket is created mode 0600 in a 0700 directory that must be this user's and
 * not writable by others: only root's plugin may ask for addresses, and only root can put the
 * socket there (the plugins check that too). A malformed request gets a CNI decode error, never a crash. An EXEC (the compiled
 * plugin) is answered by the Node plugin's own CNI code with `handle` as its agent. */
import { chmodSync, existsSync, lstatSync, unlinkSync } from 'node:fs';
import { connect, createServer, Server, Socket } from 'node:net';
import { dirname } from 'node:path';
import { cniExec } from '../cni/plugin';
import { unsafeDirReason } from '../startup/compile-cache';
import { CniExecReply, CniExecRequest, CNI_ERR, IpamReply, IpamRequest } from '../cni/protocol';

export const DEFAULT_IPAM_SOCKET = '/run/nfkube/ipam.sock';
/** A request larger than this is refused (a GC list of ~10,000 attachments fits). */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

export interface IpamSocketServer {
  path: string;
  close(): Promise<void>;
}

function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

export async function serveIpamSocket(path: string, handle: (req: IpamRequest) => Promise<IpamReply>): Promise<IpamSocketServer> {
  // A directory another user can write lets them replace the socket and answer root's plugin.
  const unsafe = unsafeDirReason(dirname(path));
  if (unsafe) throw new Error(`--ipam-socket: ${unsafe}; refusing to serve there`);
  // A socket file left by a previous run would make listen fail; anything else is not ours.
  // A live one means another agent serves this node: two would hand out the same addresses.
  if (existsSync(path)) {
    if (!lstatSync(path).isSocket()) throw new Error(`--ipam-socket: ${path} exists and is not a socket`);
    if (await answers(path)) throw new Error(`--ipam-socket: another ipam agent is serving ${path}; refusing to start a second one`);
    unlinkSync(path);
  }
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buf = '';
    let answered = false;
    const answer = (reply: IpamReply | CniExecReply) => {
      if (answered) return;
      answered = true;
      socket.end(JSON.stringify(reply) + '\n');
    };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      if (answered) return;
      buf += chunk;
      if (buf.length > MAX_REQUEST_BYTES) return answer({ ok: false, code: CNI_ERR.decodeFailure, msg: 'ipam request too large' });
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      let req: IpamRequest;
      try {
        req = JSON.parse(buf.slice(0, nl)) as IpamRequest;
        if (!req || typeof req !== 'object' || typeof req.command !== 'string') throw new Error('not a request object');
      } catch (err) {
        return answer({ ok: false, code: CNI_ERR.decodeFailure, msg: `ipam request: ${(err as Error).message}` });
      }
      if ((req as { command: string }).command === 'EXEC') {
        const exec = req as unknown as CniExecRequest;
        return void cniExec(exec.env, exec.config, (_path, r) => handle(r)).then(
          ({ code, out }) => answer({ exit: code, stdout: out }),
          (err) => answer({ ok: false, code: CNI_ERR.tryAgainLater, msg: `ipam: ${(err as Error).message}` }),
        );
      }
      handle(req).then(answer, (err) => answer({ ok: false, code: CNI_ERR.tryAgainLater, msg: `ipam: ${(err as Error).message}` }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  return {
    path,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
