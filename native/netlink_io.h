// Blocking netlink I/O on a bound socket: batch send with reply collection, and multi-part
// dumps; and the namespace switch that opening a socket in another namespace needs. Pure C++ (the
// C++ and C standard libraries, Linux headers; no N-API), so it runs on libuv worker threads and
// links into programs that are not addons.
#pragma once
#include <stdint.h>

#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace nfnl {

struct SocketState {
  std::mutex mu;  // one operation at a time owns the socket
  int fd = -1;
  uint32_t portId = 0;
  int sndbuf = 0;
  int rcvbuf = 0;
  std::vector<uint8_t> recvBuffer;  // reused by every receive: a fresh 1 MiB per call costs more than small dumps
};

// The kernel's answer to one message that asked for an ack, or that failed.
struct Ack {
  uint32_t seq = 0;
  int error = 0;            // positive errno, 0 for success
  std::string extAckMsg;    // NLMSGERR_ATTR_MSG
  bool hasOffset = false;   // NLMSGERR_ATTR_OFFS present
  uint32_t offset = 0;      // byte offset of the offending attribute in the failed message
};

// Why an operation failed: the errno and the call that returned it.
struct IoFailure {
  int error = 0;
  std::string syscall;

  // Records the failure and returns false, so a failing path reads `return failure.Set(...)`.
  bool Set(int err, std::string call) {
    error = err;
    syscall = std::move(call);
    return false;
  }
};

struct TransactOutcome {
  std::vector<Ack> acks;
  std::vector<uint8_t> messages;  // every other reply (echoes), whole nlmsghdr-framed messages
};

// Sends each datagram with one sendmsg (a datagram may hold many messages, e.g. one nfnetlink
// batch) and collects every reply to the sent sequence numbers. The kernel processes netlink
// requests inside sendmsg, so all replies are queued when it returns. Returns false (failure set)
// when a send or receive fails or a datagram is malformed; the kernel's own errors are acks in
// out, not failures.
bool Transact(SocketState& s, const std::vector<std::vector<uint8_t>>& datagrams,
              TransactOutcome& out, IoFailure& failure);

// Sends one NLM_F_DUMP request and puts all parts up to NLMSG_DONE in out; restarts the dump when
// the kernel flags NLM_F_DUMP_INTR (the dumped state changed underneath), up to a bound. Returns
// true when the dump ended, with kernelError.error set (and out holding what came before) when the
// kernel refused it; false (failure set) on an I/O error, a timeout or too many restarts.
bool Dump(SocketState& s, const std::vector<uint8_t>& request, int timeoutMs,
          std::vector<uint8_t>& out, Ack& kernelError, IoFailure& failure);

// One dump request's result, for DumpAll.
struct DumpOutcome {
  std::vector<uint8_t> messages;
  Ack kernelError;
};

// Runs each request as a Dump, one after another on the calling thread: many small dumps (the
// elements of every set) cost one thread hop instead of one each. Returns false (failure set) at
// the first I/O failure; a kernel error ends only its own request.
bool DumpAll(SocketState& s, const std::vector<std::vector<uint8_t>>& requests, int timeoutMs,
             std::vector<DumpOutcome>& out, IoFailure& failure);

// Opens a NETLINK socket of the given protocol in the namespace behind nsFd (-1: current) and binds
// it. Returns false (failure set: setns, socket, bind or getsockname) when it cannot.
bool OpenSocket(SocketState& s, int protocol, int nsFd, IoFailure& failure);

// Runs fn on a fresh thread that first enters the network namespace behind nsFd (or stays in the
// current one when nsFd < 0), so no Node or libuv thread ever changes namespace; whatever fn
// creates there (a socket, an open /proc/sys file) stays in that namespace. Returns fn's result,
// or false with failure {errno, "setns"} when the namespace cannot be entered.
bool RunInNetns(int nsFd, IoFailure& failure, const std::function<bool()>& fn);

}  // namespace nfnl
