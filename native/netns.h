// Network namespaces without touching the calling thread: every setns/unshare happens on a
// short-lived helper thread, so no Node or libuv thread ever changes namespace.
#pragma once
#include <functional>
#include <napi.h>

namespace nfnl {

// Runs fn on a fresh thread that first enters the network namespace behind nsFd (or stays in
// the current one when nsFd < 0). Returns 0 or the errno of the failed setns.
int RunInNetns(int nsFd, const std::function<int()>& fn);

// createNetns(): fd of a new, empty network namespace that lives as long as the fd is open.
Napi::Value CreateNetns(const Napi::CallbackInfo& info);
// closeFd(fd): close a descriptor returned by createNetns or openNetns.
Napi::Value CloseFd(const Napi::CallbackInfo& info);
// openNetns(path): fd of the namespace at path (e.g. /var/run/netns/x, /proc/PID/ns/net).
Napi::Value OpenNetns(const Napi::CallbackInfo& info);

// Sockets inside a namespace, for sandboxes that must carry real traffic (`nfkube demo`). The
// namespace fd must stay open until each call returns or its promise settles.
// listenInNetns(nsFd, address, port): fd of a non-blocking TCP socket bound to the numeric
// address and listening, created inside the namespace (hand it to net.Server.listen({ fd })).
Napi::Value ListenInNetns(const Napi::CallbackInfo& info);
// connectInNetns(nsFd, address, port, timeoutMs): Promise<number> of one TCP connect made from
// inside the namespace on a worker thread: 0 when established, else its errno (ECONNREFUSED,
// ETIMEDOUT after timeoutMs, ...). Rejects only when no socket could be made.
Napi::Value ConnectInNetns(const Napi::CallbackInfo& info);
// writeSysctlInNetns(nsFd, key, value): writes /proc/sys/<key> as seen from inside the
// namespace; key must be under net/ (e.g. net/ipv6/conf/all/forwarding, which rtnetlink cannot set).
Napi::Value WriteSysctlInNetns(const Napi::CallbackInfo& info);

}  // namespace nfnl
