#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "errors.h"
#include "netlink_io.h"

namespace nfnl {

Napi::Value CreateNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = -1;
  IoFailure failure;
  bool made = RunInNetns(-1, failure, [&]() {
    if (unshare(CLONE_NEWNET) != 0) return failure.Set(errno, "unshare");
    fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    return fd >= 0 || failure.Set(errno, "open /proc/thread-self/ns/net");
  });
  if (!made) throw SystemError(env, failure.error, failure.syscall);
  return Napi::Number::New(env, fd);
}

Napi::Value OpenNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    throw Napi::TypeError::New(env, "openNetns(path): path must be a string");
  }
  std::string path = info[0].As<Napi::String>();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    throw SystemError(env, err, "open " + path);
  }
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

}  // namespace nfnl
