// Sandbox helpers: TCP sockets and a sysctl write made inside a network namespace, for sandboxes
// that carry real traffic between namespaces (`nfkube demo`, the kernel tests). Not transport: the
// library never calls them. TypeScript reaches them through Netns (src/netlink/netns.ts). The
// namespace fd must stay open until each call returns or its promise settles.
#pragma once
#include <napi.h>

namespace nfnl {

// listenInNetns(nsFd, address, port): fd of a non-blocking TCP socket bound to the numeric
// address and listening, created inside the namespace (hand it to net.Server.listen({ fd })).
// Throws a TypeError for an address or port that is not valid, and an error naming the failed
// call (setns, socket, setsockopt, bind, listen) and its errno otherwise.
Napi::Value ListenInNetns(const Napi::CallbackInfo& info);
// connectInNetns(nsFd, address, port, timeoutMs): Promise<number> of one TCP connect made from
// inside the namespace on a worker thread. Resolves with 0 when established, else with the
// connect's errno (ECONNREFUSED, ETIMEDOUT after timeoutMs, ...). Rejects, with an error naming
// the failed call (setns, socket) and its errno, only when no socket could be made there.
Napi::Value ConnectInNetns(const Napi::CallbackInfo& info);
// writeSysctlInNetns(nsFd, key, value): writes /proc/sys/<key> as seen from inside the
// namespace; key must be under net/ (e.g. net/ipv6/conf/all/forwarding, which rtnetlink cannot
// set). Throws a TypeError for another key, and an error naming the path and errno when the
// namespace cannot be entered or the write fails.
Napi::Value WriteSysctlInNetns(const Napi::CallbackInfo& info);

}  // namespace nfnl
