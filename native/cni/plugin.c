/* nfkube-cni-ipam, compiled: the CNI IPAM plugin a container runtime execs per attachment. It
 * does no CNI semantics itself: it checks that stdin is one JSON document, finds ipam.socket (and
 * cniVersion, for its own errors), forwards the runtime's environment and configuration to the
 * node agent as one EXEC line, and prints the agent's answer (the exact stdout and exit status the
 * Node plugin would produce, computed by the same code in the agent). VERSION is answered here.
 * With the agent down it fails at once with the Node plugin's CNI error; every wait is bounded by
 * one deadline (60 s, or NFKUBE_CNI_IPAM_TIMEOUT_MS). Linked statically where the toolchain can,
 * so one binary runs on any host the init container copies it to. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

#define DEFAULT_SOCKET "/run/nfkube/ipam.sock"
#define DEFAULT_TIMEOUT_MS 60000L
#define MAX_CONFIG_BYTES (4u * 1024 * 1024)
#define MAX_REPLY_BYTES (1024u * 1024)

/* Kept equal to SUPPORTED in src/cni/plugin.ts (the conformance tests compare the two plugins). */
static const char *const SUPPORTED[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
static const char VERSION_RESULT[] = "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n";
/* What the agent needs of the environment to answer as the Node plugin would. */
static const char *const FORWARDED_ENV[] = {"CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"};

enum { ERR_INVALID_ENV = 4, ERR_IO = 5, ERR_DECODE = 6, ERR_INVALID_CONFIG = 7, ERR_TRY_AGAIN = 11 };

struct buf {
  char *p;
  size_t n;
  size_t cap;
};

static long timeout_ms = DEFAULT_TIMEOUT_MS;
static long long deadline_ms;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining_ms(void) {
  long long left = deadline_ms - now_ms();
  return left < 0 ? 0 : (int)left;
}

/* Waits until fd is ready for events: 1, or 0 once the deadline has passed. */
static int ready(int fd, short events) {
  for (;;) {
    struct pollfd p = {fd, events, 0};
    int r = poll(&p, 1, remaining_ms());
    if (r < 0 && errno == EINTR) continue;
    return r != 0;
  }
}

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

static int buf_reserve(struct buf *b, size_t extra) {
  if (extra > ((size_t)-1) / 2 - b->n) return -1;
  if (b->n + extra <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->n + extra) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

static int buf_add(struct buf *b, const char *p, size_t n) {
  if (buf_reserve(b, n) < 0) return -1;
  memcpy(b->p + b->n, p, n);
  b->n += n;
  return 0;
}

static int buf_str(struct buf *b, const char *s) { return buf_add(b, s, strlen(s)); }

/* s as a JSON string, escaped as JSON.stringify does; bytes >= 0x80 pass through. */
static int buf_json_string(struct buf *b, const char *s) {
  if (buf_add(b, "\"", 1) < 0) return -1;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    char esc[8];
    const char *out = esc;
    size_t len = 2;
    esc[0] = '\\';
    switch (*c) {
      case '"': esc[1] = '"'; break;
      case '\\': esc[1] = '\\'; break;
      case '\b': esc[1] = 'b'; break;
      case '\f': esc[1] = 'f'; break;
      case '\n': esc[1] = 'n'; break;
      case '\r': esc[1] = 'r'; break;
      case '\t': esc[1] = 't'; break;
      default:
        if (*c < 0x20) {
          snprintf(esc, sizeof esc, "\\u%04x", *c);
          len = 6;
        } else {
          out = (const char *)c;
          len = 1;
        }
    }
    if (buf_add(b, out, len) < 0) return -1;
  }
  return buf_add(b, "\"", 1);
}

/* Prints a CNI error ({cniVersion, code, msg}, as the Node plugin does) and gives the exit status. */
static int cni_error(const char *version, int code, const char *msg) {
  struct buf b = {0};
  char head[64];
  snprintf(head, sizeof head, "{\"cniVersion\":\"%s\",\"code\":%d,\"msg\":", version, code);
  if (buf_str(&b, head) < 0 || buf_json_string(&b, msg) < 0 || buf_str(&b, "}\n") < 0) {
    write_all(1, "{\"cniVersion\":\"1.1.0\",\"code\":5,\"msg\":\"out of memory\"}\n", 54);
    return 1;
  }
  write_all(1, b.p, b.n);
  free(b.p);
  return 1;
}

/* Node's name for an errno (err.code), for messages that match the Node plugin's. */
static const char *errno_name(int e) {
  switch (e) {
    case ENOENT: return "ENOENT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOTDIR: return "ENOTDIR";
    case ELOOP: return "ELOOP";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EPROTOTYPE: return "EPROTOTYPE";
    case ECONNRESET: return "ECONNRESET";
    case EPIPE: return "EPIPE";
    case EAGAIN: return "EAGAIN";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENOMEM: return "ENOMEM";
    case ENOBUFS: return "ENOBUFS";
    case EBADF: return "EBADF";
    case EIO: return "EIO";
    default: return "EIO";
  }
}

/* The timeout in seconds as JavaScript prints ms / 1000. */
static void seconds_text(char *out, size_t cap) {
  long whole = timeout_ms / 1000;
  long frac = timeout_ms % 1000;
  if (!frac) {
    snprintf(out, cap, "%ld", whole);
    return;
  }
  char digits[8];
  snprintf(digits, sizeof digits, "%03ld", frac);
  for (int k = 2; k > 0 && digits[k] == '0'; k--) digits[k] = '\0';
  snprintf(out, cap, "%ld.%s", whole, digits);
}

static void parse_timeout(void) {
  const char *t = getenv("NFKUBE_CNI_IPAM_TIMEOUT_MS");
  if (!t || t[0] < '1' || t[0] > '9' || strlen(t) > 9) return;
  long v = 0;
  for (const char *c = t; *c; c++) {
    if (*c < '0' || *c > '9') return;
    v = v * 10 + (*c - '0');
  }
  timeout_ms = v;
}

/* Reads all of stdin into b. 0, or -1 with msg set. */
static int read_stdin(struct buf *b, char *msg, size_t cap, int *code) {
  for (;;) {
    if (!ready(0, POLLIN)) {
      char s[32];
      seconds_text(s, sizeof s);
      snprintf(msg, cap, "reading the network configuration from stdin: no end of input within %s s", s);
      *code = ERR_IO;
      return -1;
    }
    if (buf_reserve(b, 65536) < 0) {
      snprintf(msg, cap, "reading the network configuration from stdin: out of memory");
      *code = ERR_IO;
      return -1;
    }
    ssize_t n = read(0, b->p + b->n, 65536);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      snprintf(msg, cap, "reading the network configuration from stdin: %s: %s", errno_name(errno), strerror(errno));
      *code = ERR_IO;
      return -1;
    }
    if (n == 0) return 0;
    b->n += (size_t)n;
    if (b->n > MAX_CONFIG_BYTES) {
      snprintf(msg, cap, "network configuration on stdin is larger than %u bytes", MAX_CONFIG_BYTES);
      *code = ERR_DECODE;
      return -1;
    }
  }
}

/* The version errors are reported in: the configuration's if supported (absent means 0.3.0). */
static const char *reply_version(struct json_span conf) {
  struct json_span v;
  if (!json_member(conf, "cniVersion", &v) || json_kind(v) == 'n') return "0.3.0";
  char text[16];
  if (json_string(v, text, sizeof text) < 0) return "1.1.0";
  for (size_t k = 0; k < sizeof SUPPORTED / sizeof SUPPORTED[0]; k++)
    if (strcmp(text, SUPPORTED[k]) == 0) return SUPPORTED[k];
  return "1.1.0";
}

/* ipam.socket (JSON null or absent: the default). 0, or -1 with msg set. */
static int socket_path(struct json_span conf, char *path, size_t path_cap, char *msg, size_t cap) {
  struct json_span ipam;
  struct json_span sock;
  snprintf(path, path_cap, "%s", DEFAULT_SOCKET);
  if (!json_member(conf, "ipam", &ipam) || json_kind(ipam) != '{') return 0;
  if (!json_member(ipam, "socket", &sock) || json_kind(sock) == 'n') return 0;
  if (json_kind(sock) != '"') {
    snprintf(msg, cap, "ipam.socket must be a string");
    return -1;
  }
  char decoded[4096];
  long len = json_string(sock, decoded, sizeof decoded);
  if (len <= 0) {
    snprintf(msg, cap, "ipam.socket must be a non-empty path without NUL bytes, at most 4095 bytes");
    return -1;
  }
  if ((size_t)len >= path_cap) {
    snprintf(msg, cap, "ipam.socket %.120s... is %ld bytes; a unix socket path has at most %zu", decoded, len, path_cap - 1);
    return -1;
  }
  memcpy(path, decoded, (size_t)len + 1);
  return 0;
}

/* {"command":"EXEC","env":{...},"config":<stdin>}\n; the configuration is valid JSON, so its raw
 * CR and LF can only be whitespace: they become spaces to keep the request on one line. */
static int build_request(struct buf *req, const struct buf *conf) {
  if (buf_str(req, "{\"command\":\"EXEC\",\"env\":{") < 0) return -1;
  int first = 1;
  for (size_t k = 0; k < sizeof FORWARDED_ENV / sizeof FORWARDED_ENV[0]; k++) {
    const char *v = getenv(FORWARDED_ENV[k]);
    if (!v) continue;
    if ((!first && buf_add(req, ",", 1) < 0) || buf_json_string(req, FORWARDED_ENV[k]) < 0 || buf_add(req, ":", 1) < 0 || buf_json_string(req, v) < 0) return -1;
    first = 0;
  }
  if (buf_str(req, "},\"config\":") < 0) return -1;
  size_t at = req->n;
  if (buf_add(req, conf->p, conf->n) < 0) return -1;
  for (size_t i = at; i < req->n; i++)
    if (req->p[i] == '\n' || req->p[i] == '\r') req->p[i] = ' ';
  return buf_str(req, "}\n");
}

/* The agent did not answer within the deadline: closes fd, sets msg, gives -1. */
static int too_late(int fd, const char *path, char *msg, size_t cap) {
  char secs[32];
  seconds_text(secs, sizeof secs);
  close(fd);
  snprintf(msg, cap, "nfkube ipam agent at %s did not answer within %s s", path, secs);
  return -1;
}

/* The agent runs as this plugin's user (root): a socket another user put in its place would get
 * the whole request and choose the result. 0, or -1 with msg set. */
static int peer_is_ours(int fd, const char *path, char *msg, size_t cap) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
    snprintf(msg, cap, "nfkube ipam agent at %s: SO_PEERCRED %s; nothing was sent", path, errno_name(errno));
    return -1;
  }
  if (cred.uid != geteuid()) {
    snprintf(msg, cap, "nfkube ipam agent at %s runs as uid %u, not uid %u; nothing was sent", path, (unsigned)cred.uid, (unsigned)geteuid());
    return -1;
  }
  return 0;
}

/* Connects, checks the agent's uid, sends the request and reads the reply to EOF, all within the
 * deadline. 0; -1 with msg set (code 11: the agent is down, slow, or went away); -2 with msg set
 * when the socket is served by another user (code 5). */
static int exchange(const char *path, const struct buf *req, struct buf *reply, char *msg, size_t cap) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    snprintf(msg, cap, "nfkube ipam agent at %s: socket %s", path, errno_name(errno));
    return -1;
  }
  /* A unix socket connects at once or fails; EAGAIN (backlog full) is retried until the deadline. */
  while (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
    int e = errno;
    if (e == EINTR) continue;
    if (e == EAGAIN && remaining_ms() > 0) {
      poll(NULL, 0, remaining_ms() < 5 ? remaining_ms() : 5);
      continue;
    }
    if (e == EAGAIN) return too_late(fd, path, msg, cap);
    close(fd);
    if (e == ENOENT || e == ECONNREFUSED) snprintf(msg, cap, "nfkube ipam agent is not running (%s: %s); nothing was allocated", path, errno_name(e));
    else snprintf(msg, cap, "nfkube ipam agent at %s: connect %s %s", path, errno_name(e), path);
    return -1;
  }
  if (peer_is_ours(fd, path, msg, cap) < 0) {
    close(fd);
    return -2;
  }
  size_t sent = 0;
  int write_failed = 0;
  while (sent < req->n && !write_failed) {
    if (!ready(fd, POLLOUT)) return too_late(fd, path, msg, cap);
    ssize_t w = send(fd, req->p + sent, req->n - sent, MSG_NOSIGNAL);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    /* The agent may have answered already (a request it refuses as too large): read that. */
    if (w < 0) write_failed = errno;
    else sent += (size_t)w;
  }
  for (;;) {
    if (!ready(fd, POLLIN)) return too_late(fd, path, msg, cap);
    if (buf_reserve(reply, 16384) < 0) {
      close(fd);
      snprintf(msg, cap, "nfkube ipam agent at %s: out of memory", path);
      return -1;
    }
    ssize_t n = recv(fd, reply->p + reply->n, 16384, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      if (reply->n == 0 && write_failed) snprintf(msg, cap, "nfkube ipam agent at %s: write %s", path, errno_name(write_failed));
      else snprintf(msg, cap, "nfkube ipam agent at %s: read %s", path, errno_name(e));
      return -1;
    }
    if (n == 0) break;
    reply->n += (size_t)n;
    if (reply->n > MAX_REPLY_BYTES) {
      close(fd);
      snprintf(msg, cap, "nfkube ipam agent at %s answered more than %u bytes", path, MAX_REPLY_BYTES);
      return -1;
    }
  }
  close(fd);
  return 0;
}

/* Small non-negative integer token (an exit status or error code), else -1. */
static long small_int(struct json_span v) {
  size_t i = 0;
  while (i < v.n && (v.p[i] == ' ' || v.p[i] == '\t' || v.p[i] == '\n' || v.p[i] == '\r')) i++;
  long out = 0;
  size_t digits = 0;
  for (; i < v.n && v.p[i] >= '0' && v.p[i] <= '9'; i++, digits++) {
    if (digits >= 6) return -1;
    out = out * 10 + (v.p[i] - '0');
  }
  return digits ? out : -1;
}

/* The agent's answer: {"exit":N,"stdout":"..."} to print as is, or {"ok":false,code,msg} (a
 * request refused before it reached the CNI code) to print as a CNI error. */
static int answer(const char *path, const char *version, struct buf *reply) {
  char msg[512];
  const char *why;
  size_t at;
  if (json_validate(reply->p, reply->n, &why, &at) < 0) {
    snprintf(msg, sizeof msg, "nfkube ipam agent at %s closed the connection without an answer", path);
    return cni_error(version, ERR_TRY_AGAIN, msg);
  }
  struct json_span r = {reply->p, reply->n};
  struct json_span exit_v, out_v, ok_v, code_v, msg_v, details_v;
  if (json_member(r, "exit", &exit_v) && json_member(r, "stdout", &out_v) && json_kind(out_v) == '"') {
    long status = small_int(exit_v);
    char *out = malloc(MAX_REPLY_BYTES + 1);
    long len = out ? json_string(out_v, out, MAX_REPLY_BYTES + 1) : -1;
    if (status >= 0 && status <= 255 && len >= 0) {
      write_all(1, out, (size_t)len);
      free(out);
      return (int)status;
    }
    free(out);
  } else if (json_member(r, "ok", &ok_v) && json_kind(ok_v) == 'f' && json_member(r, "code", &code_v) && small_int(code_v) >= 0 && json_member(r, "msg", &msg_v) && json_kind(msg_v) == '"') {
    struct buf b = {0};
    char head[64];
    snprintf(head, sizeof head, "{\"cniVersion\":\"%s\",\"code\":%ld,\"msg\":", version, small_int(code_v));
    int failed = buf_str(&b, head) < 0 || buf_add(&b, msg_v.p, msg_v.n) < 0;
    if (!failed && json_member(r, "details", &details_v) && json_kind(details_v) == '"' && details_v.n > 2)
      failed = buf_str(&b, ",\"details\":") < 0 || buf_add(&b, details_v.p, details_v.n) < 0;
    if (!failed && buf_str(&b, "}\n") == 0) {
      write_all(1, b.p, b.n);
      free(b.p);
      return 1;
    }
    free(b.p);
  }
  snprintf(msg, sizeof msg, "nfkube ipam agent at %s gave an answer this plugin does not understand", path);
  return cni_error(version, ERR_TRY_AGAIN, msg);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const char *command = getenv("CNI_COMMAND");
  if (command && strcmp(command, "VERSION") == 0) {
    write_all(1, VERSION_RESULT, sizeof VERSION_RESULT - 1);
    return 0;
  }
  if (!command || !command[0]) return cni_error("1.1.0", ERR_INVALID_ENV, "CNI_COMMAND is not set");
  parse_timeout();
  deadline_ms = now_ms() + timeout_ms;

  char msg[512];
  int code = 0;
  struct buf conf = {0};
  if (read_stdin(&conf, msg, sizeof msg, &code) < 0) return cni_error("1.1.0", code, msg);
  const char *why;
  size_t at;
  if (json_validate(conf.p ? conf.p : "", conf.n, &why, &at) < 0) {
    snprintf(msg, sizeof msg, "network configuration on stdin is not JSON: %s at position %zu", why, at);
    return cni_error("1.1.0", ERR_DECODE, msg);
  }
  struct json_span doc = {conf.p, conf.n};
  if (json_kind(doc) != '{' && json_kind(doc) != '[') return cni_error("1.1.0", ERR_DECODE, "network configuration on stdin is not JSON: not an object");
  const char *version = reply_version(doc);
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  if (socket_path(doc, path, sizeof path, msg, sizeof msg) < 0) return cni_error(version, ERR_INVALID_CONFIG, msg);

  struct buf req = {0};
  if (build_request(&req, &conf) < 0) return cni_error(version, ERR_IO, "out of memory");
  free(conf.p);
  struct buf reply = {0};
  int exchanged = exchange(path, &req, &reply, msg, sizeof msg);
  if (exchanged < 0) return cni_error(version, exchanged == -2 ? ERR_IO : ERR_TRY_AGAIN, msg);
  return answer(path, version, &reply);
}
