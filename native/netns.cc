#include "netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "errors.h"

namespace nfnl {

int RunInNetns(int nsFd, const std::function<int()>& fn) {
  int result = 0;
  // The helper thread exits right after fn, taking its namespace with it.
  std::thread helper([&]() {
    if (nsFd >= 0 && setns(nsFd, CLONE_NEWNET) != 0) {
      result = errno;
      return;
    }
    result = fn();
  });
  helper.join();
  return result;
}

Napi::Value CreateNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = -1;
  const char* failed = "unshare";
  int err = RunInNetns(-1, [&]() {
    if (unshare(CLONE_NEWNET) != 0) return errno;
    fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      failed = "open /proc/thread-self/ns/net";
      return errno;
    }
    return 0;
  });
  if (err != 0) throw SystemError(env, err, failed);
  return Napi::Number::New(env, fd);
}

Napi::Value OpenNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    throw Napi::TypeError::New(env, "openNetns(path): path must be a string");
  }
  std::string path = info[0].As<Napi::String>();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError(env, errno, "open " + path);
  return Napi::Number::New(env, fd);
}

Napi::Value CloseFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    throw Napi::TypeError::New(env, "closeFd(fd): fd must be a number");
  }
  int fd = info[0].As<Napi::Number>().Int32Value();
  if (close(fd) != 0) throw SystemError(env, errno, "close");
  return env.Undefined();
}

namespace {

// Parses a numeric IPv4 or IPv6 address (the family follows from the text) and a port.
bool ParseSockaddr(const std::string& address, int port, sockaddr_storage& sa, socklen_t& len) {
  memset(&sa, 0, sizeof sa);
  if (port < 0 || port > 65535) return false;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&sa);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v4;
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&sa);
  if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v6;
    return true;
  }
  return false;
}

struct Endpoint {
  int nsFd;
  sockaddr_storage sa;
  socklen_t len;
};

// Reads (nsFd, address, port) from info[0..2]; throws a TypeError naming fn on bad input.
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

// One TCP connection attempt made from inside a namespace, off the JS thread.
class ConnectWorker : public Napi::AsyncWorker {
 public:
  ConnectWorker(Napi::Env env, Endpoint e, int timeoutMs)
      : Napi::AsyncWorker(env), e_(e), timeoutMs_(timeoutMs), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    int fd = -1;
    setupError_ = RunInNetns(e_.nsFd, [&]() {
      fd = socket(e_.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      return fd < 0 ? errno : 0;
    });
    if (setupError_ != 0) return;
    if (connect(fd, reinterpret_cast<sockaddr*>(&e_.sa), e_.len) == 0) {
      outcome_ = 0;
    } else if (errno != EINPROGRESS) {
      outcome_ = errno;
    } else {
      // An ICMP error that arrives while connect() still holds the socket (the whole exchange
      // can run in softirq inside the syscall, as IPv6 rejects between namespaces do) is only
      // recorded as a soft error, and the SYN is retried a second later: poll in short slices
      // and report such an error (SO_ERROR returns it) as soon as it is there.
      pollfd p = {fd, POLLOUT, 0};
      int n = 0;
      for (int left = timeoutMs_; left > 0;) {
        int slice = left < kSoftErrorSliceMs ? left : kSoftErrorSliceMs;
        do n = poll(&p, 1, slice); while (n < 0 && errno == EINTR);
        if (n != 0) break;
        left -= slice;
        int soft = 0;
        socklen_t len = sizeof soft;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soft, &len) == 0 && soft != 0) {
          outcome_ = soft;
          break;
        }
      }
      if (outcome_ == 0) {
        if (n == 0) {
          outcome_ = ETIMEDOUT;
        } else if (n < 0) {
          outcome_ = errno;
        } else {
          socklen_t len = sizeof outcome_;
          if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &outcome_, &len) != 0) outcome_ = errno;
        }
      }
    }
    close(fd);
  }

  void OnOK() override {
    if (setupError_ != 0) {
      deferred_.Reject(SystemError(Env(), setupError_, "connectInNetns: socket").Value());
    } else {
      deferred_.Resolve(Napi::Number::New(Env(), outcome_));
    }
  }

 private:
  Endpoint e_;
  int timeoutMs_;
  int setupError_ = 0;
  int outcome_ = 0;
  Napi::Promise::Deferred deferred_;
};

}  // namespace

Napi::Value ListenInNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Endpoint e = EndpointArgs(info, "listenInNetns(nsFd, address, port)");
  int fd = -1;
  const char* failed = "socket";
  int err = RunInNetns(e.nsFd, [&]() {
    fd = socket(e.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    int on = 1;
    // A v6 listener takes only v6, so one port can have a listener per family.
    if ((e.sa.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) != 0) ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0) {
      failed = "setsockopt";
    } else if (bind(fd, reinterpret_cast<sockaddr*>(&e.sa), e.len) != 0) {
      failed = "bind";
    } else if (listen(fd, 128) != 0) {
      failed = "listen";
    } else {
      return 0;
    }
    int saved = errno;
    close(fd);
    return saved;
  });
  if (err != 0) throw SystemError(env, err, std::string("listenInNetns: ") + failed);
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
  const char* failed = "open";
  int err = RunInNetns(nsFd, [&]() {
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    int result = 0;
    if (write(fd, value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
      result = errno != 0 ? errno : EIO;
      failed = "write";
    }
    close(fd);
    return result;
  });
  if (err != 0) throw SystemError(env, err, std::string(failed) + " " + path);
  return env.Undefined();
}

}  // namespace nfnl
