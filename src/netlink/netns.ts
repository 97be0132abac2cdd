/** Network namespaces as handles: create a sandbox, or open one by path, without `ip netns`. */
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

  close(): void {
    if (this.closed) return;
    this.closed = true;
    native().closeFd(this.fd);
  }
}
