// Listener: hands unsolicited messages (nfnetlink_log packets) that arrive on a netlink socket to
// a JS callback. libuv polls the socket on the event loop and each wake-up drains what is queued
// with non-blocking reads: no thread, nothing ever blocks, one callback per wake-up.
#pragma once
#include <napi.h>
#include <uv.h>

#include <stdint.h>

#include <vector>

namespace nfnl {

class Listener {
 public:
  // onMessages(messages: Buffer, overruns: number, errno: number) — messages are whole
  // nlmsghdr-framed messages from the kernel; overruns counts ENOBUFS (the kernel dropped
  // messages because the receive queue was full); errno is a read error other than that, or 0,
  // and after one no callback follows.
  // Returns the running listener, or nullptr with err set (a positive errno) when there is no
  // event loop or libuv refuses the descriptor.
  static Listener* Start(Napi::Env env, int fd, Napi::Function onMessages, int& err);

  // No callback runs after Stop returns; the listener frees itself once libuv has let go of it.
  void Stop();

 private:
  Listener(Napi::Env env, int fd, Napi::Function onMessages);
  static void OnReadable(uv_poll_t* handle, int status, int events);
  void Drain(int status);

  uv_poll_t handle_;
  napi_env env_;
  int fd_;
  bool stopped_ = false;
  Napi::FunctionReference onMessages_;
  std::vector<uint8_t> buffer_;
};

}  // namespace nfnl
