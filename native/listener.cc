#include "listener.h"

#include <errno.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include <algorithm>

namespace nfnl {

namespace {

constexpr size_t kDatagramBufferSize = 64 * 1024;
// Bounds the work of one wake-up so a flood cannot starve the rest of the event loop; what is
// left is read at the next wake-up (the socket stays readable).
constexpr int kMaxDatagramsPerWake = 256;

}  // namespace

Listener::Listener(Napi::Env env, int fd, Napi::Function onMessages)
    : env_(env), fd_(fd), onMessages_(Napi::Persistent(onMessages)), buffer_(kDatagramBufferSize) {
  handle_.data = this;
}

Listener* Listener::Start(Napi::Env env, int fd, Napi::Function onMessages, int& err) {
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) {
    err = EINVAL;
    return nullptr;
  }
  auto* self = new Listener(env, fd, onMessages);
  int r = uv_poll_init(loop, &self->handle_, fd);
  if (r != 0) {
    err = -r;
    delete self;  // libuv never held the handle
    return nullptr;
  }
  r = uv_poll_start(&self->handle_, UV_READABLE, OnReadable);
  if (r != 0) {
    err = -r;
    self->Stop();
    return nullptr;
  }
  return self;
}

void Listener::Stop() {
  if (stopped_) return;
  stopped_ = true;
  onMessages_.Reset();
  uv_poll_stop(&handle_);
  uv_close(reinterpret_cast<uv_handle_t*>(&handle_), [](uv_handle_t* h) { delete static_cast<Listener*>(h->data); });
}

void Listener::OnReadable(uv_poll_t* handle, int status, int) {
  static_cast<Listener*>(handle->data)->Drain(status);
}

void Listener::Drain(int status) {
  if (stopped_) return;
  // libuv reports a pending socket error (POLLERR) as UV_EBADF and stops polling. On a netlink
  // socket that error is ENOBUFS: the kernel dropped messages because the queue was full. The
  // read below clears and counts it; polling goes on. A real read error stops it for good.
  if (status < 0) uv_poll_start(&handle_, UV_READABLE, OnReadable);
  std::vector<uint8_t> messages;
  uint32_t overruns = 0;
  int error = 0;
  for (int i = 0; i < kMaxDatagramsPerWake && error == 0; ++i) {
    sockaddr_nl from{};
    iovec iov{buffer_.data(), buffer_.size()};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    ssize_t n = recvmsg(fd_, &msg, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == ENOBUFS) {
        ++overruns;
        continue;
      }
      error = errno;
      break;
    }
    if (from.nl_pid != 0) continue;  // only the kernel speaks on this socket
    if (msg.msg_flags & MSG_TRUNC) {
      ++overruns;
      continue;
    }
    size_t remaining = static_cast<size_t>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer_.data()); NLMSG_OK(h, remaining); h = NLMSG_NEXT(h, remaining)) {
      const uint8_t* start = reinterpret_cast<const uint8_t*>(h);
      messages.insert(messages.end(), start, start + std::min<size_t>(NLMSG_ALIGN(h->nlmsg_len), remaining));
    }
  }
  if (error != 0) uv_poll_stop(&handle_);
  if (messages.empty() && overruns == 0 && error == 0) return;
  Napi::Env env(env_);
  Napi::HandleScope scope(env);
  try {
    onMessages_.MakeCallback(env.Global(), {Napi::Buffer<uint8_t>::Copy(env, messages.data(), messages.size()),
                                            Napi::Number::New(env, overruns), Napi::Number::New(env, error)});
  } catch (const Napi::Error& e) {
    napi_fatal_exception(env, e.Value());
  }
}

}  // namespace nfnl
