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

}  // namespace nfnl
