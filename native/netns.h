// Network namespace handles for JS. Every setns/unshare happens on a short-lived helper thread
// (RunInNetns in netlink_io.h), so no Node or libuv thread ever changes namespace.
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

}  // namespace nfnl
