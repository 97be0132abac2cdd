// The sandbox helpers declared in netns.h: sockets and a sysctl write made inside a namespace.
#include "netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errors.h"
#include "netlink_io.h"

namespace nfnl {

namespace {

// Parses a numeric IPv4 or IPv6 address (the family follows from the text) and a port; returns
// false when either is not valid.
bool ParseSockaddr(const std::string& address, int port, sockaddr_storage& sa, socklen_t& len) {
  memset(&sa, 0, sizeof sa);
  if (port < 0 || port > 65535) return false;
  const uint16_t netPort = htons(static_cast<uint16_t>(port));
  auto* v4 = reinterpret_cast<sockaddr_in*>(&sa);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&sa);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = netPort;
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = netPort;
    len = sizeof *v6;
  } else {
    return false;
  }
  return true;
}

struct Endpoint {
  int nsFd;
  sockaddr_storage sa;
  socklen_t len;
};

// Reads (nsFd, address, port) from info[0..2]; throws a TypeError starting with usage on bad input.
Endpoint EndpointArgs(const Napi::CallbackInfo& info, const char* usage) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsString() || !info[2].IsNumber()) {
    throw Napi::TypeError::New(env, std::string(usage) + ": bad arguments");
  }
  Endpoint e;
  e.nsFd = info[0].As<Napi::Number>().Int32Value();
  std::string address = info[1].As<Napi::String>();
  if (!ParseSockaddr(address, info[2].As<Napi::Number>().Int32Value(), e.sa, e.len)) {
    throw Napi::TypeError::New(env, std::string(usage) + ": address " + address + " or port is not valid");
  }
  return e;
}

constexpr int kSoftErrorSliceMs = 25;

// Connects the non-blocking socket fd to e and waits up to timeoutMs. Returns 0 when the
// connection is established, else the errno that ended the attempt (ETIMEDOUT when time ran out).
int ConnectWithin(int fd, const Endpoint& e, int timeoutMs) {
  if (connect(fd, reinterpret_cast<const sockaddr*>(&e.sa), e.len) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  // An ICMP error that arrives while connect() still holds the socket (the whole exchange can run
  // in softirq inside the syscall, as IPv6 rejects between namespaces do) is only recorded as a
  // soft error, and the SYN is retried a second later: poll in short slices and report such an
  // error (SO_ERROR returns it) as soon as it is there.
  pollfd p = {fd, POLLOUT, 0};
  int n = 0;
  for (int left = timeoutMs; left > 0;) {
    int slice = left < kSoftErrorSliceMs ? left : kSoftErrorSliceMs;
    do n = poll(&p, 1, slice); while (n < 0 && errno == EINTR);
    if (n != 0) break;
    left -= slice;
    int soft = 0;
    socklen_t len = sizeof soft;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soft, &len) == 0 && soft != 0) return soft;
  }
  if (n == 0) return ETIMEDOUT;
  if (n < 0) return errno;
  int outcome = 0;
  socklen_t len = sizeof outcome;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &outcome, &len) != 0) return errno;
  return outcome;
}

// One TCP connection attempt made from inside a namespace, off the JS thread. A connect that
// fails is the result (its errno); only a socket that cannot be made fails the worker, through
// SetError/OnError as the socket workers do.
class ConnectWorker : public Napi::AsyncWorker {
 public:
  ConnectWorker(Napi::Env env, Endpoint e, int timeoutMs)
      : Napi::AsyncWorker(env), e_(e), timeoutMs_(timeoutMs), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    int fd = -1;
    bool made = RunInNetns(e_.nsFd, failure_, [&]() {
      fd = socket(e_.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      return fd >= 0 || failure_.Set(errno, "socket");
    });
    if (!made) {
      SetError(failure_.syscall);
      return;
    }
    outcome_ = ConnectWithin(fd, e_, timeoutMs_);
    close(fd);
  }

  void OnOK() override { deferred_.Resolve(Napi::Number::New(Env(), outcome_)); }

  void OnError(const Napi::Error&) override {
    deferred_.Reject(SystemError(Env(), failure_.error, "connectInNetns: " + failure_.syscall).Value());
  }

 private:
  Endpoint e_;
  int timeoutMs_;
  IoFailure failure_;
  int outcome_ = 0;
  Napi::Promise::Deferred deferred_;
};

}  // namespace

Napi::Value ListenInNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Endpoint e = EndpointArgs(info, "listenInNetns(nsFd, address, port)");
  int fd = -1;
  IoFailure failure;
  bool listening = RunInNetns(e.nsFd, failure, [&]() {
    fd = socket(e.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return failure.Set(errno, "socket");
    int on = 1;
    // A v6 listener takes only v6, so one port can have a listener per family.
    if ((e.sa.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) != 0) ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0) {
      failure.Set(errno, "setsockopt");
    } else if (bind(fd, reinterpret_cast<sockaddr*>(&e.sa), e.len) != 0) {
      failure.Set(errno, "bind");
    } else if (listen(fd, 128) != 0) {
      failure.Set(errno, "listen");
    } else {
      return true;
    }
    close(fd);
    return false;
  });
  if (!listening) throw SystemError(env, failure.error, "listenInNetns: " + failure.syscall);
  return Napi::Number::New(env, fd);
}

Napi::Value ConnectInNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Endpoint e = EndpointArgs(info, "connectInNetns(nsFd, address, port, timeoutMs)");
  if (info.Length() < 4 || !info[3].IsNumber()) {
    throw Napi::TypeError::New(env, "connectInNetns(nsFd, address, port, timeoutMs): timeoutMs must be a number");
  }
  auto* worker = new ConnectWorker(env, e, info[3].As<Napi::Number>().Int32Value());
  Napi::Promise p = worker->Promise();
  worker->Queue();
  return p;
}

Napi::Value WriteSysctlInNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsString() || !info[2].IsString()) {
    throw Napi::TypeError::New(env, "writeSysctlInNetns(nsFd, key, value): bad arguments");
  }
  int nsFd = info[0].As<Napi::Number>().Int32Value();
  std::string key = info[1].As<Napi::String>();
  std::string value = info[2].As<Napi::String>();
  // Only the namespace's own net/ tree, named without any way out of it.
  if (key.rfind("net/", 0) != 0 || key.find("..") != std::string::npos) {
    throw Napi::TypeError::New(env, "writeSysctlInNetns: key must be under net/ and contain no \"..\": " + key);
  }
  std::string path = "/proc/sys/" + key;
  IoFailure failure;
  bool written = RunInNetns(nsFd, failure, [&]() {
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return failure.Set(errno, "open");
    ssize_t n = write(fd, value.data(), value.size());
    bool ok = n == static_cast<ssize_t>(value.size()) || failure.Set(n < 0 ? errno : EIO, "write");
    close(fd);
    return ok;
  });
  if (!written) throw SystemError(env, failure.error, failure.syscall + " " + path);
  return env.Undefined();
}

}  // namespace nfnl
