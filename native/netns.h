// Network namespaces for JS: handles (netns.cc), and the sandbox helpers (sandbox.cc). Every
// setns/unshare happens on a short-lived helper thread (RunInNetns in netlink_io.h), so no Node or
// libuv thread ever changes namespace.
#pragma once
#include <napi.h>

namespace nfnl {

// createNetns(): fd of a new, empty network namespace that lives as long as the fd is open.
// Throws (unshare or open) when it cannot be made.
Napi::Value CreateNetns(const Napi::CallbackInfo& info);
// closeFd(fd): close a descriptor returned by createNetns or openNetns. Throws when close fails.
Napi::Value CloseFd(const Napi::CallbackInfo& info);
// openNetns(path): fd of the namespace at path (e.g. /var/run/netns/x, /proc/PID/ns/net). Throws
// an error naming the path and errno when it cannot be opened.
Napi::Value OpenNetns(const Napi::CallbackInfo& info);

// Sandbox helpers, not transport: TCP sockets and a sysctl write made inside a namespace, for
// sandboxes that carry real traffic between namespaces (`nfkube demo`, the kernel tests). The
// agent never calls them; TypeScript reaches them through Netns (src/netlink/netns.ts). The
// namespace fd must stay open until each call returns or its promise settles.
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
