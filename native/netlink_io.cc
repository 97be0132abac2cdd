#include "netlink_io.h"

#include <errno.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <unordered_set>

namespace nfnl {

namespace {

constexpr size_t kRecvBufferSize = 1 << 20;
constexpr int kBaseRcvbuf = 8 << 20;
constexpr int kMaxSockbuf = 1 << 30;
constexpr int kPerMessageReplyBudget = 2048;  // skb truesize of an ack or a small echo
constexpr int kMaxDumpRestarts = 16;

// SO_*BUFFORCE needs CAP_NET_ADMIN, which this process has to program netfilter anyway; the plain
// option is the fallback for unprivileged read-only use.
void GrowBuffer(int fd, int forceOpt, int plainOpt, int want, int& current) {
  if (want <= current) return;
  want = std::min(want, kMaxSockbuf);
  if (setsockopt(fd, SOL_SOCKET, forceOpt, &want, sizeof want) != 0) {
    setsockopt(fd, SOL_SOCKET, plainOpt, &want, sizeof want);
  }
  int actual = 0;
  socklen_t len = sizeof actual;
  if (getsockopt(fd, SOL_SOCKET, plainOpt, &actual, &len) == 0) current = actual / 2;
}

void ParseAck(const nlmsghdr* h, Ack& ack) {
  ack.seq = h->nlmsg_seq;
  if (h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) {
    ack.error = EBADMSG;
    return;
  }
  const auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
  ack.error = -err->error;
  if (!(h->nlmsg_flags & NLM_F_ACK_TLVS)) return;
  size_t tlvStart = NLMSG_HDRLEN + sizeof(nlmsgerr);
  if (!(h->nlmsg_flags & NLM_F_CAPPED)) {
    tlvStart += NLMSG_ALIGN(err->msg.nlmsg_len - std::min<uint32_t>(err->msg.nlmsg_len, NLMSG_HDRLEN));
  }
  const uint8_t* base = reinterpret_cast<const uint8_t*>(h);
  size_t pos = tlvStart;
  while (pos + sizeof(nlattr) <= h->nlmsg_len) {
    const auto* a = reinterpret_cast<const nlattr*>(base + pos);
    if (a->nla_len < sizeof(nlattr) || pos + a->nla_len > h->nlmsg_len) break;
    const uint8_t* payload = base + pos + NLA_HDRLEN;
    size_t plen = a->nla_len - NLA_HDRLEN;
    switch (a->nla_type & NLA_TYPE_MASK) {
      case NLMSGERR_ATTR_MSG:
        ack.extAckMsg.assign(reinterpret_cast<const char*>(payload), strnlen(reinterpret_cast<const char*>(payload), plen));
        break;
      case NLMSGERR_ATTR_OFFS:
        if (plen >= 4) {
          memcpy(&ack.offset, payload, 4);
          ack.hasOffset = true;
        }
        break;
    }
    pos += NLA_ALIGN(a->nla_len);
  }
}

constexpr ssize_t kReceiveFailed = -1;
constexpr ssize_t kNotFromKernel = -2;

// Reads one datagram into buf. Returns its length; 0 when nothing is queued (non-blocking only);
// kNotFromKernel for a datagram another socket sent, to be skipped; kReceiveFailed with failure
// set on an error, a timeout (blocking only) or a truncated datagram.
ssize_t ReceiveOne(int fd, uint8_t* buf, bool block, int timeoutMs, IoFailure& failure) {
  if (block) {
    pollfd p{fd, POLLIN, 0};
    int r;
    do {
      r = poll(&p, 1, timeoutMs);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return failure.Set(errno, "poll"), kReceiveFailed;
    if (r == 0) return failure.Set(ETIMEDOUT, "recvmsg"), kReceiveFailed;
  }
  sockaddr_nl from{};
  iovec iov{buf, kRecvBufferSize};
  msghdr msg{};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof from;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ssize_t n;
  do {
    n = recvmsg(fd, &msg, block ? 0 : MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (!block && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return failure.Set(errno, "recvmsg"), kReceiveFailed;
  }
  if (msg.msg_flags & MSG_TRUNC) return failure.Set(EMSGSIZE, "recvmsg"), kReceiveFailed;
  if (from.nl_pid != 0) return kNotFromKernel;
  return n;
}

bool SendAll(SocketState& s, const std::vector<uint8_t>& datagram, IoFailure& failure) {
  GrowBuffer(s.fd, SO_SNDBUFFORCE, SO_SNDBUF, static_cast<int>(std::min<size_t>(datagram.size() + 65536, kMaxSockbuf)), s.sndbuf);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  iovec iov{const_cast<uint8_t*>(datagram.data()), datagram.size()};
  msghdr msg{};
  msg.msg_name = &kernel;
  msg.msg_namelen = sizeof kernel;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ssize_t n;
  do {
    n = sendmsg(s.fd, &msg, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return failure.Set(errno, "sendmsg");
  if (static_cast<size_t>(n) != datagram.size()) return failure.Set(EMSGSIZE, "sendmsg");
  return true;
}

uint8_t* RecvBuffer(SocketState& s) {
  if (s.recvBuffer.size() < kRecvBufferSize) s.recvBuffer.resize(kRecvBufferSize);
  return s.recvBuffer.data();
}

}  // namespace

bool RunInNetns(int nsFd, IoFailure& failure, const std::function<bool()>& fn) {
  bool ok = false;
  // The helper thread exits right after fn, taking its namespace with it.
  std::thread helper([&]() {
    if (nsFd >= 0 && setns(nsFd, CLONE_NEWNET) != 0) {
      ok = failure.Set(errno, "setns");
      return;
    }
    ok = fn();
  });
  helper.join();
  return ok;
}

bool OpenSocket(SocketState& s, int protocol, int nsFd, IoFailure& failure) {
  int fd = -1;
  bool opened = RunInNetns(nsFd, failure, [&]() {
    fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
    return fd >= 0 || failure.Set(errno, "socket");
  });
  if (!opened) return false;
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    failure.Set(errno, "bind");
    close(fd);
    return false;
  }
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    failure.Set(errno, "getsockname");
    close(fd);
    return false;
  }
  int one = 1;
  // Extended acks carry the kernel's reason text; capped acks keep replies to big batches small.
  setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  s.fd = fd;
  s.portId = local.nl_pid;
  GrowBuffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, kBaseRcvbuf, s.rcvbuf);
  return true;
}

bool Transact(SocketState& s, const std::vector<std::vector<uint8_t>>& datagrams,
              TransactOutcome& out, IoFailure& failure) {
  if (s.fd < 0) return failure.Set(EBADF, "transact");
  uint8_t* buf = RecvBuffer(s);
  for (const auto& datagram : datagrams) {
    std::unordered_set<uint32_t> sent;
    size_t count = 0;
    for (size_t pos = 0; pos + NLMSG_HDRLEN <= datagram.size();) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(datagram.data() + pos);
      if (h->nlmsg_len < NLMSG_HDRLEN || pos + h->nlmsg_len > datagram.size()) {
        return failure.Set(EINVAL, "transact: malformed outgoing message");
      }
      sent.insert(h->nlmsg_seq);
      ++count;
      pos += NLMSG_ALIGN(h->nlmsg_len);
    }
    long want = kBaseRcvbuf + static_cast<long>(count) * kPerMessageReplyBudget;
    GrowBuffer(s.fd, SO_RCVBUFFORCE, SO_RCVBUF, static_cast<int>(std::min<long>(want, kMaxSockbuf)), s.rcvbuf);
    if (!SendAll(s, datagram, failure)) return false;
    for (;;) {
      ssize_t n = ReceiveOne(s.fd, buf, false, 0, failure);
      if (n == kReceiveFailed) return false;
      if (n == 0) break;
      if (n == kNotFromKernel) continue;
      size_t remaining = static_cast<size_t>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, remaining); h = NLMSG_NEXT(h, remaining)) {
        if (sent.count(h->nlmsg_seq) == 0 || h->nlmsg_pid != s.portId) continue;  // stale or foreign
        if (h->nlmsg_type == NLMSG_ERROR) {
          Ack ack;
          ParseAck(h, ack);
          out.acks.push_back(ack);
        } else if (h->nlmsg_type != NLMSG_DONE && h->nlmsg_type != NLMSG_NOOP) {
          const uint8_t* start = reinterpret_cast<const uint8_t*>(h);
          out.messages.insert(out.messages.end(), start, start + NLMSG_ALIGN(h->nlmsg_len));
        }
      }
    }
  }
  return true;
}

bool Dump(SocketState& s, const std::vector<uint8_t>& request, int timeoutMs,
          std::vector<uint8_t>& out, Ack& kernelError, IoFailure& failure) {
  if (s.fd < 0) return failure.Set(EBADF, "dump");
  if (request.size() < NLMSG_HDRLEN) return failure.Set(EINVAL, "dump: malformed request");
  const uint32_t seq = reinterpret_cast<const nlmsghdr*>(request.data())->nlmsg_seq;
  uint8_t* buf = RecvBuffer(s);
  for (int attempt = 0; attempt <= kMaxDumpRestarts; ++attempt) {
    out.clear();
    bool interrupted = false;
    bool done = false;
    if (!SendAll(s, request, failure)) return false;
    while (!done) {
      ssize_t n = ReceiveOne(s.fd, buf, true, timeoutMs, failure);
      if (n == kReceiveFailed) return false;
      if (n == kNotFromKernel) continue;
      size_t remaining = static_cast<size_t>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, remaining); h = NLMSG_NEXT(h, remaining)) {
        if (h->nlmsg_seq != seq || h->nlmsg_pid != s.portId) continue;
        if (h->nlmsg_flags & NLM_F_DUMP_INTR) interrupted = true;
        if (h->nlmsg_type == NLMSG_DONE) {
          done = true;
          if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
            int status;
            memcpy(&status, NLMSG_DATA(h), sizeof status);
            if (status < 0) {
              kernelError.seq = seq;
              kernelError.error = -status;
            }
          }
          break;
        }
        if (h->nlmsg_type == NLMSG_ERROR) {
          ParseAck(h, kernelError);
          done = true;
          break;
        }
        const uint8_t* start = reinterpret_cast<const uint8_t*>(h);
        out.insert(out.end(), start, start + NLMSG_ALIGN(h->nlmsg_len));
      }
    }
    if (kernelError.error != 0) return true;
    if (!interrupted) return true;
  }
  return failure.Set(EINTR, "dump: interrupted too often");
}

bool DumpAll(SocketState& s, const std::vector<std::vector<uint8_t>>& requests, int timeoutMs,
             std::vector<DumpOutcome>& out, IoFailure& failure) {
  out.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!Dump(s, requests[i], timeoutMs, out[i].messages, out[i].kernelError, failure)) return false;
  }
  return true;
}

}  // namespace nfnl
