/** Which process holds a table: the kernel names the holder by its netlink port (NFTA_TABLE_OWNER);
 * /proc/net/netlink maps the port to a socket inode, and a process's fds to the inode. Read from
 * /proc of the namespace nfkube runs in; a process this user may not inspect is not found. */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** NETLINK_NETFILTER, the protocol of nf_tables sockets. */
const NETLINK_NETFILTER = 12;

export interface TableHolder {
  port: number;
  pid?: number;
  command?: string;
}

/** The socket inode of netfilter netlink port `port`, from /proc/net/netlink's text. */
export function netlinkInode(procNetNetlink: string, port: number): number | undefined {
  for (const line of procNetNetlink.split('\n').slice(1)) {
    // sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
    const f = line.trim().split(/\s+/);
    if (f.length >= 10 && Number(f[1]) === NETLINK_NETFILTER && Number(f[2]) === port) return Number(f[9]);
  }
  return undefined;
}

export function findHolder(port: number): TableHolder {
  let inode: number | undefined;
  try {
    inode = netlinkInode(readFileSync('/proc/net/netlink', 'utf8'), port);
  } catch {
    return { port };
  }
  if (inode === undefined) return { port };
  const target = `socket:[${inode}]`;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (link !== target) continue;
      let command: string | undefined;
      try {
        command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      } catch {
        command = undefined;
      }
      return { port, pid: Number(pid), command };
    }
  }
  return { port };
}
