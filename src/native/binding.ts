/** The only importer of the compiled addon; its raw surface is typed here. */
import * as path from 'node:path';

export interface NativeAck {
  seq: number;
  errno: number;
  code?: string;
  extAck?: string;
  offset?: number;
}

export interface NativeDump {
  messages: Buffer;
  error?: NativeAck;
}

export interface NativeTransact {
  /** Every ack in arrival order as (seq, errno) pairs. */
  ackWords: Uint32Array;
  /** The acks that carry more than a success (an error, a reason text, an offset), by position. */
  ackDetails: { index: number; ack: NativeAck }[];
  /** Every other reply, as received. */
  messages: Buffer;
}

export interface NativeSocket {
  readonly portId: number;
  transact(datagrams: Buffer[]): Promise<NativeTransact>;
  /** transact on the calling thread, for small batches. */
  transactSync(datagrams: Buffer[]): NativeTransact;
  dump(request: Buffer, timeoutMs: number): Promise<NativeDump>;
  /** Runs the dumps one after another in one trip to a worker thread. */
  dumpAll(requests: Buffer[], timeoutMs: number): Promise<NativeDump[]>;
  /** dumpAll on the calling thread, for small reads. */
  dumpAllSync(requests: Buffer[], timeoutMs: number): NativeDump[];
  close(): void;
  /** Hands every message the kernel sends unasked to onMessages, on the event loop (libuv polls
   * the socket; reads never block): whole netlink messages, the ENOBUFS overruns seen, and a
   * read errno or 0 (after a read error no call follows). No call after unlisten() or close(). */
  listen(onMessages: (messages: Buffer, overruns: number, errno: number) => void): void;
  unlisten(): void;
}

export interface NativeAddon {
  NetlinkSocket: new (protocol: number, netnsFd?: number) => NativeSocket;
  createNetns(): number;
  openNetns(path: string): number;
  closeFd(fd: number): void;
  /** fd of a non-blocking TCP socket listening on address:port inside the namespace. */
  listenInNetns(nsFd: number, address: string, port: number): number;
  /** One TCP connect from inside the namespace: 0 when established, else its errno. */
  connectInNetns(nsFd: number, address: string, port: number, timeoutMs: number): Promise<number>;
  /** Writes /proc/sys/<key> (key under net/) as seen from inside the namespace. */
  writeSysctlInNetns(nsFd: number, key: string, value: string): void;
}

const root = path.resolve(__dirname, '..', '..', '..');
const candidates = [path.join(root, 'build', 'Release', 'nfnl.node'), path.join(root, 'build', 'Debug', 'nfnl.node')];

function load(): NativeAddon {
  const errors: string[] = [];
  for (const file of candidates) {
    try {
      return require(file) as NativeAddon;
    } catch (err) {
      errors.push(`${file}: ${(err as Error).message}`);
    }
  }
  throw new Error(`nfkube: cannot load the native addon (run "npm install" to build it):\n  ${errors.join('\n  ')}`);
}

let addon: NativeAddon | undefined;

export function native(): NativeAddon {
  addon ??= load();
  return addon;
}
