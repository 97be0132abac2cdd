// NetlinkSocket: the JS-facing owner of one netlink socket. transact(), dump() and dumpAll() run
// on libuv worker threads and resolve promises, or reject with an errno-carrying error when the
// I/O fails (transactSync and dumpAllSync do the same on the calling thread and throw); kernel
// NLMSG_ERRORs in a batch are data, not exceptions.
#pragma once
#include <napi.h>

#include <memory>

#include "listener.h"
#include "netlink_io.h"

namespace nfnl {

class NetlinkSocket : public Napi::ObjectWrap<NetlinkSocket> {
 public:
  static Napi::Function Init(Napi::Env env);
  explicit NetlinkSocket(const Napi::CallbackInfo& info);
  ~NetlinkSocket() override;

 private:
  Napi::Value Transact(const Napi::CallbackInfo& info);
  Napi::Value TransactSync(const Napi::CallbackInfo& info);
  Napi::Value Dump(const Napi::CallbackInfo& info);
  Napi::Value DumpAll(const Napi::CallbackInfo& info);
  Napi::Value DumpAllSync(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value PortId(const Napi::CallbackInfo& info);
  Napi::Value Listen(const Napi::CallbackInfo& info);
  Napi::Value Unlisten(const Napi::CallbackInfo& info);
  Napi::Value JoinGroup(const Napi::CallbackInfo& info);
  Napi::Value AttachFilter(const Napi::CallbackInfo& info);
  void StopListening();

  std::shared_ptr<SocketState> state_;
  Listener* listener_ = nullptr;  // frees itself after Stop
};

}  // namespace nfnl
