#include "socket.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errors.h"

namespace nfnl {

namespace {

std::vector<uint8_t> CopyBuffer(const Napi::Value& v) {
  auto b = v.As<Napi::Buffer<uint8_t>>();
  return std::vector<uint8_t>(b.Data(), b.Data() + b.Length());
}

Napi::Object AckToJs(Napi::Env env, const Ack& ack) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("seq", Napi::Number::New(env, ack.seq));
  o.Set("errno", Napi::Number::New(env, ack.error));
  if (ack.error != 0) o.Set("code", Napi::String::New(env, ErrnoName(ack.error)));
  if (!ack.extAckMsg.empty()) o.Set("extAck", Napi::String::New(env, ack.extAckMsg));
  if (ack.hasOffset) o.Set("offset", Napi::Number::New(env, ack.offset));
  return o;
}

// Copies inputs in the constructor, touches no JS in Execute, builds results in OnOK. A failed
// Execute calls Fail (SetError), and OnError rejects with the errno-carrying error of IoFailure.
class IoWorker : public Napi::AsyncWorker {
 public:
  IoWorker(Napi::Env env, std::shared_ptr<SocketState> state)
      : Napi::AsyncWorker(env), state_(std::move(state)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Fail(const IoFailure& f) {
    failure_ = f;
    SetError(f.syscall);
  }
  void OnError(const Napi::Error&) override {
    deferred_.Reject(SystemError(Env(), failure_.error, failure_.syscall).Value());
  }
  std::shared_ptr<SocketState> state_;
  Napi::Promise::Deferred deferred_;
  IoFailure failure_;
};

// Acks go out as (seq, errno) pairs in one typed array: a batch of thousands of messages gets
// thousands of acks, and building an object for each through N-API costs far more than filling
// an array. Only acks with more to say (an error, a reason text, an offset) become objects.
Napi::Object TransactResultToJs(Napi::Env env, const TransactOutcome& outcome) {
  Napi::Object result = Napi::Object::New(env);
  size_t n = outcome.acks.size();
  Napi::Uint32Array words = Napi::Uint32Array::New(env, n * 2);
  Napi::Array details = Napi::Array::New(env);
  uint32_t detailCount = 0;
  for (size_t i = 0; i < n; ++i) {
    const Ack& ack = outcome.acks[i];
    words[2 * i] = ack.seq;
    words[2 * i + 1] = static_cast<uint32_t>(ack.error);
    if (ack.error == 0 && ack.extAckMsg.empty() && !ack.hasOffset) continue;
    Napi::Object d = Napi::Object::New(env);
    d.Set("index", Napi::Number::New(env, static_cast<double>(i)));
    d.Set("ack", AckToJs(env, ack));
    details.Set(detailCount++, d);
  }
  result.Set("ackWords", words);
  result.Set("ackDetails", details);
  result.Set("messages", Napi::Buffer<uint8_t>::Copy(env, outcome.messages.data(), outcome.messages.size()));
  return result;
}

class TransactWorker : public IoWorker {
 public:
  TransactWorker(Napi::Env env, std::shared_ptr<SocketState> state, std::vector<std::vector<uint8_t>> datagrams)
      : IoWorker(env, std::move(state)), datagrams_(std::move(datagrams)) {}

  void Execute() override {
    std::lock_guard<std::mutex> lock(state_->mu);
    IoFailure f;
    if (!nfnl::Transact(*state_, datagrams_, outcome_, f)) Fail(f);
  }

  void OnOK() override { deferred_.Resolve(TransactResultToJs(Env(), outcome_)); }

 private:
  std::vector<std::vector<uint8_t>> datagrams_;
  TransactOutcome outcome_;
};

class DumpWorker : public IoWorker {
 public:
  DumpWorker(Napi::Env env, std::shared_ptr<SocketState> state, std::vector<uint8_t> request, int timeoutMs)
      : IoWorker(env, std::move(state)), request_(std::move(request)), timeoutMs_(timeoutMs) {}

  void Execute() override {
    std::lock_guard<std::mutex> lock(state_->mu);
    IoFailure f;
    if (!nfnl::Dump(*state_, request_, timeoutMs_, out_, kernelError_, f)) Fail(f);
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object result = Napi::Object::New(env);
    result.Set("messages", Napi::Buffer<uint8_t>::Copy(env, out_.data(), out_.size()));
    if (kernelError_.error != 0) result.Set("error", AckToJs(env, kernelError_));
    deferred_.Resolve(result);
  }

 private:
  std::vector<uint8_t> request_;
  int timeoutMs_;
  std::vector<uint8_t> out_;
  Ack kernelError_;
};

Napi::Array DumpResultsToJs(Napi::Env env, const std::vector<DumpOutcome>& out) {
  Napi::Array results = Napi::Array::New(env, out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    Napi::Object r = Napi::Object::New(env);
    r.Set("messages", Napi::Buffer<uint8_t>::Copy(env, out[i].messages.data(), out[i].messages.size()));
    if (out[i].kernelError.error != 0) r.Set("error", AckToJs(env, out[i].kernelError));
    results.Set(i, r);
  }
  return results;
}

class DumpAllWorker : public IoWorker {
 public:
  DumpAllWorker(Napi::Env env, std::shared_ptr<SocketState> state, std::vector<std::vector<uint8_t>> requests, int timeoutMs)
      : IoWorker(env, std::move(state)), requests_(std::move(requests)), timeoutMs_(timeoutMs) {}

  void Execute() override {
    std::lock_guard<std::mutex> lock(state_->mu);
    IoFailure f;
    if (!nfnl::DumpAll(*state_, requests_, timeoutMs_, out_, f)) Fail(f);
  }

  void OnOK() override { deferred_.Resolve(DumpResultsToJs(Env(), out_)); }

 private:
  std::vector<std::vector<uint8_t>> requests_;
  int timeoutMs_;
  std::vector<DumpOutcome> out_;
};

std::vector<std::vector<uint8_t>> CopyBuffers(Napi::Env env, const Napi::Value& v, const char* usage) {
  if (!v.IsArray()) throw Napi::TypeError::New(env, usage);
  Napi::Array arr = v.As<Napi::Array>();
  std::vector<std::vector<uint8_t>> out;
  out.reserve(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    Napi::Value item = arr.Get(i);
    if (!item.IsBuffer()) throw Napi::TypeError::New(env, usage);
    out.push_back(CopyBuffer(item));
  }
  return out;
}

// The timeout in milliseconds at info[index]; 30 s when it is not given.
int TimeoutArg(const Napi::CallbackInfo& info, size_t index) {
  if (info.Length() > index && info[index].IsNumber()) return info[index].As<Napi::Number>().Int32Value();
  return 30000;
}

}  // namespace

Napi::Function NetlinkSocket::Init(Napi::Env env) {
  return DefineClass(env, "NetlinkSocket",
                     {InstanceMethod<&NetlinkSocket::Transact>("transact"),
                      InstanceMethod<&NetlinkSocket::TransactSync>("transactSync"),
                      InstanceMethod<&NetlinkSocket::Dump>("dump"),
                      InstanceMethod<&NetlinkSocket::DumpAll>("dumpAll"),
                      InstanceMethod<&NetlinkSocket::DumpAllSync>("dumpAllSync"),
                      InstanceMethod<&NetlinkSocket::Close>("close"),
                      InstanceMethod<&NetlinkSocket::Listen>("listen"),
                      InstanceMethod<&NetlinkSocket::Unlisten>("unlisten"),
                      InstanceMethod<&NetlinkSocket::JoinGroup>("joinGroup"),
                      InstanceMethod<&NetlinkSocket::AttachFilter>("attachFilter"),
                      InstanceAccessor<&NetlinkSocket::PortId>("portId")});
}

// new NetlinkSocket(protocol, netnsFd = -1)
NetlinkSocket::NetlinkSocket(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<NetlinkSocket>(info), state_(std::make_shared<SocketState>()) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    throw Napi::TypeError::New(env, "NetlinkSocket(protocol, netnsFd?): protocol must be a number");
  }
  int protocol = info[0].As<Napi::Number>().Int32Value();
  int nsFd = -1;
  if (info.Length() >= 2 && info[1].IsNumber()) nsFd = info[1].As<Napi::Number>().Int32Value();
  IoFailure f;
  if (!OpenSocket(*state_, protocol, nsFd, f)) throw SystemError(env, f.error, f.syscall);
}

NetlinkSocket::~NetlinkSocket() {
  StopListening();
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->fd >= 0) close(state_->fd);
  state_->fd = -1;
}

// transact(datagrams: Buffer[]): Promise<{ackWords, ackDetails, messages}>
Napi::Value NetlinkSocket::Transact(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto datagrams = CopyBuffers(env, info[0], "transact(datagrams): datagrams must be an array of Buffers");
  auto* worker = new TransactWorker(env, state_, std::move(datagrams));
  Napi::Promise p = worker->Promise();
  worker->Queue();
  return p;
}

// transactSync(datagrams: Buffer[]): {ackWords, ackDetails, messages} — the same exchange on the
// calling thread. The kernel handles netlink inside sendmsg, so a small batch costs less than the
// two thread hops of the async form; callers keep it for small batches.
Napi::Value NetlinkSocket::TransactSync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto datagrams = CopyBuffers(env, info[0], "transactSync(datagrams): datagrams must be an array of Buffers");
  TransactOutcome outcome;
  IoFailure f;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!nfnl::Transact(*state_, datagrams, outcome, f)) throw SystemError(env, f.error, f.syscall);
  }
  return TransactResultToJs(env, outcome);
}

// dump(request: Buffer, timeoutMs = 30000): Promise<{messages, error?}> — error is the kernel's
// refusal of the dump; an I/O failure or timeout rejects.
Napi::Value NetlinkSocket::Dump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsBuffer()) throw Napi::TypeError::New(env, "dump(request, timeoutMs): request must be a Buffer");
  auto* worker = new DumpWorker(env, state_, CopyBuffer(info[0]), TimeoutArg(info, 1));
  Napi::Promise p = worker->Promise();
  worker->Queue();
  return p;
}

// dumpAll(requests: Buffer[], timeoutMs = 30000): Promise<{messages, error?}[]>, one per request.
Napi::Value NetlinkSocket::DumpAll(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto requests = CopyBuffers(env, info[0], "dumpAll(requests, timeoutMs): requests must be an array of Buffers");
  auto* worker = new DumpAllWorker(env, state_, std::move(requests), TimeoutArg(info, 1));
  Napi::Promise p = worker->Promise();
  worker->Queue();
  return p;
}

// dumpAllSync(requests: Buffer[], timeoutMs = 30000): {messages, error?}[] — on the calling
// thread, for reads known to be small (a few chains just written).
Napi::Value NetlinkSocket::DumpAllSync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto requests = CopyBuffers(env, info[0], "dumpAllSync(requests, timeoutMs): requests must be an array of Buffers");
  std::vector<DumpOutcome> out;
  IoFailure f;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!nfnl::DumpAll(*state_, requests, TimeoutArg(info, 1), out, f)) throw SystemError(env, f.error, f.syscall);
  }
  return DumpResultsToJs(env, out);
}

Napi::Value NetlinkSocket::Close(const Napi::CallbackInfo& info) {
  StopListening();
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->fd >= 0) close(state_->fd);
  state_->fd = -1;
  return info.Env().Undefined();
}

// listen(onMessages): from now on every message the kernel sends to this socket unasked goes to
// onMessages(messages, overruns, errno) on the event loop (see listener.h). The socket must carry
// no request of its own meanwhile: the listener would take the replies.
Napi::Value NetlinkSocket::Listen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) throw Napi::TypeError::New(env, "listen(onMessages): onMessages must be a function");
  if (listener_ != nullptr) throw Napi::Error::New(env, "listen: already listening");
  int fd;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    fd = state_->fd;
  }
  if (fd < 0) throw SystemError(env, EBADF, "listen");
  int err = 0;
  listener_ = Listener::Start(env, fd, info[0].As<Napi::Function>(), err);
  if (listener_ == nullptr) throw SystemError(env, err, "uv_poll_start");
  return env.Undefined();
}

// unlisten(): no callback runs after it returns.
Napi::Value NetlinkSocket::Unlisten(const Napi::CallbackInfo& info) {
  StopListening();
  return info.Env().Undefined();
}

// joinGroup(group): the socket receives the group's multicast messages from now on (read them
// with listen()); NFNLGRP_NFTABLES carries every ruleset change and each commit's NEWGEN.
Napi::Value NetlinkSocket::JoinGroup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "joinGroup(group): group must be a number");
  int group = info[0].As<Napi::Number>().Int32Value();
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->fd < 0) throw SystemError(env, EBADF, "joinGroup");
  if (setsockopt(state_->fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) != 0) throw SystemError(env, errno, "setsockopt(NETLINK_ADD_MEMBERSHIP)");
  return env.Undefined();
}

// attachFilter(program): a classic BPF program (struct sock_filter[], 8 bytes each) run on each
// datagram before it is queued (SO_ATTACH_FILTER): a listener wakes only for what it accepts.
Napi::Value NetlinkSocket::AttachFilter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsBuffer()) throw Napi::TypeError::New(env, "attachFilter(program): program must be a Buffer");
  auto b = info[0].As<Napi::Buffer<uint8_t>>();
  if (b.Length() == 0 || b.Length() % sizeof(sock_filter) != 0 || b.Length() / sizeof(sock_filter) > BPF_MAXINSNS) {
    throw Napi::RangeError::New(env, "attachFilter(program): not a whole number of sock_filter instructions");
  }
  std::vector<sock_filter> code(b.Length() / sizeof(sock_filter));
  memcpy(code.data(), b.Data(), b.Length());
  sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->fd < 0) throw SystemError(env, EBADF, "attachFilter");
  if (setsockopt(state_->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0) throw SystemError(env, errno, "setsockopt(SO_ATTACH_FILTER)");
  return env.Undefined();
}

void NetlinkSocket::StopListening() {
  if (listener_ == nullptr) return;
  listener_->Stop();
  listener_ = nullptr;
}

Napi::Value NetlinkSocket::PortId(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), state_->portId);
}

}  // namespace nfnl
