// Blocking netlink I/O on a bound socket: batch send with reply collection, and multi-part
// dumps. Pure C++ with no JS, so it runs on libuv worker threads.
#pragma once
#include <stdint.h>

#include <memory>
#include <mutex>
#include <string>
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

struct IoFailure {
  int error = 0;
  std::string syscall;
};

struct TransactOutcome {
  std::vector<Ack> acks;
  std::vector<uint8_t> messages;  // every other reply (echoes), whole nlmsghdr-framed messages
};

// Sends each datagram with one sendmsg (a datagram may hold many messages, e.g. one nfnetlink
// batch) and collects every reply to the sent sequence numbers. The kernel processes netlink
// requests inside sendmsg, so all replies are queued when it returns.
bool Transact(SocketState& s, const std::vector<std::vector<uint8_t>>& datagrams,
              TransactOutcome& out, IoFailure& failure);

// Sends one NLM_F_DUMP request and returns all parts up to NLMSG_DONE; restarts the dump when
// the kernel flags NLM_F_DUMP_INTR (the dumped state changed underneath), up to a bound.
bool Dump(SocketState& s, const std::vector<uint8_t>& request, int timeoutMs,
          std::vector<uint8_t>& out, Ack& kernelError, IoFailure& failure);

// One dump request's result, for DumpAll.
struct DumpOutcome {
  std::vector<uint8_t> messages;
  Ack kernelError;
};

// Runs each request as a Dump, one after another on the calling thread: many small dumps (the
// elements of every set) cost one thread hop instead of one each. Stops at the first I/O failure;
// a kernel error ends only its own request.
bool DumpAll(SocketState& s, const std::vector<std::vector<uint8_t>>& requests, int timeoutMs,
             std::vector<DumpOutcome>& out, IoFailure& failure);

// Opens a NETLINK socket of the given protocol in the namespace behind nsFd (-1: current).
bool OpenSocket(SocketState& s, int protocol, int nsFd, IoFailure& failure);

}  // namespace nfnl
