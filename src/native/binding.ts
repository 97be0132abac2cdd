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
  /** Joins a multicast group (NETLINK_ADD_MEMBERSHIP): its messages then come to listen(). */
  joinGroup(group: number): void;
  /** Attaches a classic BPF program (struct sock_filter[]) run on each datagram before it is
   * queued (SO_ATTACH_FILTER). */
  attachFilter(program: Buffer): void;
}

/** The transport the library builds on: netlink sockets and network namespace handles. */
export interface NativeTransport {
  NetlinkSocket: new (protocol: number, netnsFd?: number) => NativeSocket;
  createNetns(): number;
  openNetns(path: string): number;
  closeFd(fd: number): void;
}

/** Test and sandbox helpers (native/sandbox.cc), not transport: TCP sockets and a sysctl write
 * made inside a namespace, for sandboxes that carry real traffic (`nfkube demo`, the kernel
 * tests). The agent never calls them; code outside this module reaches them through `Netns`. */
export interface NativeSandboxHelpers {
  /** fd of a non-blocking TCP socket listening on address:port inside the namespace. */
  listenInNetns(nsFd: number, address: string, port: number): number;
  /** One TCP connect from inside the namespace: 0 when established, else its errno. Rejects
   * (code, errno, syscall) only when no socket can be made there (setns, socket). */
  connectInNetns(nsFd: number, address: string, port: number, timeoutMs: number): Promise<number>;
  /** Writes /proc/sys/<key> (key under net/) as seen from inside the namespace. */
  writeSysctlInNetns(nsFd: number, key: string, value: string): void;
}

export type NativeAddon = NativeTransport & NativeSandboxHelpers;

const root = path.resolve(__dirname, '..', '..', '..');

/** Where the addon may be, best first: NFKUBE_ADDON if set, then the prebuilt binary for this
 * platform shipped in the package (prebuilds/linux-x64, linux-arm64: no compiler needed), then
 * node-gyp's build of native/ (made by npm install where no prebuilt loads). */
export function addonCandidates(base = root, platform: string = process.platform, arch: string = process.arch, env: NodeJS.ProcessEnv = process.env): string[] {
  return [
    ...(env.NFKUBE_ADDON ? [path.resolve(env.NFKUBE_ADDON)] : []),
    path.join(base, 'prebuilds', `${platform}-${arch}`, 'nfnl.node'),
    path.join(base, 'build', 'Release', 'nfnl.node'),
    path.join(base, 'build', 'Debug', 'nfnl.node'),
  ];
}

let loaded: { addon: NativeAddon; file: string } | undefined;

function load(): { addon: NativeAddon; file: string } {
  const errors: string[] = [];
  for (const file of addonCandidates()) {
    try {
      return { addon: require(file) as NativeAddon, file };
    } catch (err) {
      errors.push(`${file}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(`nfkube: cannot load the native addon (run "npm install" to build it):\n  ${errors.join('\n  ')}`);
}

export function native(): NativeAddon {
  loaded ??= load();
  return loaded.addon;
}

/** The file the addon was loaded from (loading it if need be). */
export function addonPath(): string {
  native();
  return loaded!.file;
}
