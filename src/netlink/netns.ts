/** Network namespaces as handles: create a sandbox, or open one by path, without `ip netns`. */
import { fstatSync } from 'node:fs';
import { native } from '../native/binding';

export class Netns {
  private closed = false;

  private constructor(readonly fd: number) {}

  /** A fresh, empty network namespace owned by this handle (gone when closed and unused). */
  static create(): Netns {
    return new Netns(native().createNetns());
  }

  /** The namespace at path, e.g. /var/run/netns/NAME or /proc/PID/ns/net. */
  static open(nsPath: string): Netns {
    return new Netns(native().openNetns(nsPath));
  }

  /** A path other processes can enter (`nsenter --net=PATH`) while this handle is open. */
  get path(): string {
    return `/proc/${process.pid}/fd/${this.fd}`;
  }

  /** `net:[inode]`: the namespace's identity, as `ls -l /proc/PID/ns/net` shows it. From the
   * descriptor's inode, not its link: a handle opened through a bind mount (/var/run/netns/NAME)
   * links to that path. */
  get id(): string {
    return `net:[${fstatSync(this.live('id')).ino}]`;
  }

  /** Writes /proc/sys/<key> as seen from inside this namespace; key is under net/ (e.g.
   * net/ipv6/conf/all/forwarding, which rtnetlink cannot set). */
  writeSysctl(key: string, value: string): void {
    native().writeSysctlInNetns(this.live('writeSysctl'), key, value);
  }

  /** Sandbox helper (`nfkube demo`, tests): the fd of a non-blocking TCP socket listening on the
   * numeric address:port inside this namespace, for `net.Server.listen({ fd })`. */
  listenTcp(address: string, port: number): number {
    return native().listenInNetns(this.live('listenTcp'), address, port);
  }

  /** Sandbox helper (`nfkube demo`, tests): one TCP connect from inside this namespace, on a worker
   * thread. Resolves with 0 when established, else the connect's errno (ETIMEDOUT after
   * timeoutMs); rejects only when no socket can be made here. Keep the handle open until it settles. */
  connectTcp(address: string, port: number, timeoutMs: number): Promise<number> {
    return native().connectInNetns(this.live('connectTcp'), address, port, timeoutMs);
  }

  /** The descriptor, refusing a closed handle: its number may already name another file. */
  private live(use: string): number {
    if (this.closed) throw new Error(`Netns.${use}: the namespace handle ${this.fd} is closed`);
    return this.fd;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    native().closeFd(this.fd);
  }
}
