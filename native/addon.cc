// Module init: the transport surface nfkube's TypeScript builds on. Framing only; every byte of
// nf_tables or ipset meaning lives in src/.
#include <napi.h>

#include "netns.h"
#include "socket.h"

namespace {

Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  exports.Set("NetlinkSocket", nfnl::NetlinkSocket::Init(env));
  exports.Set("createNetns", Napi::Function::New(env, nfnl::CreateNetns, "createNetns"));
  exports.Set("openNetns", Napi::Function::New(env, nfnl::OpenNetns, "openNetns"));
  exports.Set("closeFd", Napi::Function::New(env, nfnl::CloseFd, "closeFd"));
  // Sandbox helpers (netns.h, sandbox.cc) for `nfkube demo` and the tests; not the agent's.
  exports.Set("listenInNetns", Napi::Function::New(env, nfnl::ListenInNetns, "listenInNetns"));
  exports.Set("connectInNetns", Napi::Function::New(env, nfnl::ConnectInNetns, "connectInNetns"));
  exports.Set("writeSysctlInNetns", Napi::Function::New(env, nfnl::WriteSysctlInNetns, "writeSysctlInNetns"));
  return exports;
}

}  // namespace

NODE_API_MODULE(nfnl, InitModule)
