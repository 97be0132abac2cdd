/** A fatal error as the runner (main.ts) and `nfkube ipset` report it. */
import { NetlinkError } from '../netlink/errors';

/** The cause in words, with what to do about a missing privilege. */
export function fatalMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const code = err instanceof NetlinkError ? err.code : (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EPERM') return `${text}: the kernel refused (EPERM); nfkube needs CAP_NET_ADMIN in this network namespace (run it as root or grant the capability)`;
  return text;
}
