#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
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

}  // namespace nfnl
