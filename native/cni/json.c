#include "json.h"

#include <string.h>

struct cursor {
  const char *p;
  size_t n;
  size_t i;
  const char *why;
};

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static void skip_ws(struct cursor *c) {
  while (c->i < c->n && is_ws(c->p[c->i])) c->i++;
}

static int fail(struct cursor *c, const char *why) {
  c->why = why;
  return -1;
}

static int hex_value(char h) {
  if (h >= '0' && h <= '9') return h - '0';
  if (h >= 'a' && h <= 'f') return h - 'a' + 10;
  if (h >= 'A' && h <= 'F') return h - 'A' + 10;
  return -1;
}

/* At the opening quote; leaves the cursor after the closing one. */
static int scan_string(struct cursor *c) {
  c->i++;
  while (c->i < c->n) {
    unsigned char ch = (unsigned char)c->p[c->i];
    if (ch == '"') {
      c->i++;
      return 0;
    }
    if (ch < 0x20) return fail(c, "control character in string");
    if (ch != '\\') {
      c->i++;
      continue;
    }
    if (c->i + 1 >= c->n) break;
    char e = c->p[c->i + 1];
    if (e == 'u') {
      if (c->n - c->i < 6) break;
      for (size_t k = 2; k < 6; k++)
        if (hex_value(c->p[c->i + k]) < 0) return fail(c, "bad \\u escape in string");
      c->i += 6;
    } else if (e != '\0' && strchr("\"\\/bfnrt", e)) {
      c->i += 2;
    } else {
      return fail(c, "bad escape in string");
    }
  }
  return fail(c, "unterminated string");
}

static int scan_number(struct cursor *c) {
  if (c->i < c->n && c->p[c->i] == '-') c->i++;
  if (c->i >= c->n || !is_digit(c->p[c->i])) return fail(c, "bad number");
  if (c->p[c->i] == '0') c->i++;
  else
    while (c->i < c->n && is_digit(c->p[c->i])) c->i++;
  if (c->i < c->n && c->p[c->i] == '.') {
    c->i++;
    if (c->i >= c->n || !is_digit(c->p[c->i])) return fail(c, "bad number");
    while (c->i < c->n && is_digit(c->p[c->i])) c->i++;
  }
  if (c->i < c->n && (c->p[c->i] == 'e' || c->p[c->i] == 'E')) {
    c->i++;
    if (c->i < c->n && (c->p[c->i] == '+' || c->p[c->i] == '-')) c->i++;
    if (c->i >= c->n || !is_digit(c->p[c->i])) return fail(c, "bad number");
    while (c->i < c->n && is_digit(c->p[c->i])) c->i++;
  }
  return 0;
}

static int scan_literal(struct cursor *c, const char *word) {
  size_t len = strlen(word);
  if (c->n - c->i < len || memcmp(c->p + c->i, word, len) != 0) return fail(c, "unexpected token");
  c->i += len;
  return 0;
}

static int scan_value(struct cursor *c, int depth);

/* At '{' or '['; leaves the cursor after the matching close. */
static int scan_container(struct cursor *c, int depth) {
  char close = c->p[c->i] == '{' ? '}' : ']';
  if (depth >= JSON_MAX_DEPTH) return fail(c, "nested too deeply");
  c->i++;
  skip_ws(c);
  if (c->i < c->n && c->p[c->i] == close) {
    c->i++;
    return 0;
  }
  for (;;) {
    if (close == '}') {
      skip_ws(c);
      if (c->i >= c->n) return fail(c, "unexpected end");
      if (c->p[c->i] != '"') return fail(c, "expected a property name");
      if (scan_string(c) < 0) return -1;
      skip_ws(c);
      if (c->i >= c->n) return fail(c, "unexpected end");
      if (c->p[c->i] != ':') return fail(c, "expected ':'");
      c->i++;
    }
    if (scan_value(c, depth + 1) < 0) return -1;
    skip_ws(c);
    if (c->i >= c->n) return fail(c, "unexpected end");
    if (c->p[c->i] == close) {
      c->i++;
      return 0;
    }
    if (c->p[c->i] != ',') return fail(c, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    c->i++;
  }
}

static int scan_value(struct cursor *c, int depth) {
  skip_ws(c);
  if (c->i >= c->n) return fail(c, "unexpected end");
  switch (c->p[c->i]) {
    case '{':
    case '[':
      return scan_container(c, depth);
    case '"':
      return scan_string(c);
    case 't':
      return scan_literal(c, "true");
    case 'f':
      return scan_literal(c, "false");
    case 'n':
      return scan_literal(c, "null");
    default:
      return scan_number(c);
  }
}

int json_validate(const char *text, size_t len, const char **why, size_t *at) {
  struct cursor c = {text, len, 0, NULL};
  if (scan_value(&c, 0) == 0) {
    skip_ws(&c);
    if (c.i == c.n) return 0;
    c.why = "unexpected data after the value";
  }
  *why = c.why;
  *at = c.i;
  return -1;
}

char json_kind(struct json_span v) {
  size_t i = 0;
  while (i < v.n && is_ws(v.p[i])) i++;
  return i < v.n ? v.p[i] : '\0';
}

int json_member(struct json_span obj, const char *key, struct json_span *out) {
  struct cursor c = {obj.p, obj.n, 0, NULL};
  skip_ws(&c);
  if (c.i >= c.n || c.p[c.i] != '{') return 0;
  c.i++;
  size_t key_len = strlen(key);
  int found = 0;
  for (;;) {
    skip_ws(&c);
    if (c.i >= c.n || c.p[c.i] != '"') return found;
    size_t name_start = c.i;
    if (scan_string(&c) < 0) return found;
    char name[64];
    struct json_span name_span = {c.p + name_start, c.i - name_start};
    long name_len = json_string(name_span, name, sizeof name);
    skip_ws(&c);
    if (c.i >= c.n || c.p[c.i] != ':') return found;
    c.i++;
    skip_ws(&c);
    size_t value_start = c.i;
    if (scan_value(&c, 1) < 0) return found;
    if (name_len == (long)key_len && memcmp(name, key, key_len) == 0) {
      out->p = c.p + value_start;
      out->n = c.i - value_start;
      found = 1;
    }
    skip_ws(&c);
    if (c.i >= c.n || c.p[c.i] != ',') return found;
    c.i++;
  }
}

/* Appends code point cp as UTF-8; -1 when it does not fit. */
static int put_utf8(char *buf, size_t cap, size_t *len, unsigned long cp) {
  unsigned char tmp[4];
  size_t k;
  if (cp < 0x80) {
    tmp[0] = (unsigned char)cp;
    k = 1;
  } else if (cp < 0x800) {
    tmp[0] = (unsigned char)(0xC0 | (cp >> 6));
    tmp[1] = (unsigned char)(0x80 | (cp & 0x3F));
    k = 2;
  } else if (cp < 0x10000) {
    tmp[0] = (unsigned char)(0xE0 | (cp >> 12));
    tmp[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    tmp[2] = (unsigned char)(0x80 | (cp & 0x3F));
    k = 3;
  } else {
    tmp[0] = (unsigned char)(0xF0 | (cp >> 18));
    tmp[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    tmp[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    tmp[3] = (unsigned char)(0x80 | (cp & 0x3F));
    k = 4;
  }
  if (cap - *len <= k) return -1;
  memcpy(buf + *len, tmp, k);
  *len += k;
  return 0;
}

static long hex4(const char *p) {
  long v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hex_value(p[k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

long json_string(struct json_span s, char *buf, size_t cap) {
  size_t i = 0;
  size_t len = 0;
  while (i < s.n && is_ws(s.p[i])) i++;
  if (cap == 0 || i >= s.n || s.p[i] != '"') return -1;
  i++;
  while (i < s.n) {
    char ch = s.p[i];
    if (ch == '"') {
      buf[len] = '\0';
      return (long)len;
    }
    if ((unsigned char)ch < 0x20) return -1;
    if (ch != '\\') {
      if (cap - len <= 1) return -1;
      buf[len++] = ch;
      i++;
      continue;
    }
    if (i + 1 >= s.n) return -1;
    char e = s.p[i + 1];
    if (e == 'u') {
      if (s.n - i < 6) return -1;
      long cp = hex4(s.p + i + 2);
      if (cp < 0) return -1;
      i += 6;
      if (cp >= 0xDC00 && cp <= 0xDFFF) return -1;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (s.n - i < 6 || s.p[i] != '\\' || s.p[i + 1] != 'u') return -1;
        long lo = hex4(s.p + i + 2);
        if (lo < 0xDC00 || lo > 0xDFFF) return -1;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        i += 6;
      }
      if (cp == 0) return -1;
      if (put_utf8(buf, cap, &len, (unsigned long)cp) < 0) return -1;
      continue;
    }
    char out;
    switch (e) {
      case '"': out = '"'; break;
      case '\\': out = '\\'; break;
      case '/': out = '/'; break;
      case 'b': out = '\b'; break;
      case 'f': out = '\f'; break;
      case 'n': out = '\n'; break;
      case 'r': out = '\r'; break;
      case 't': out = '\t'; break;
      default: return -1;
    }
    if (cap - len <= 1) return -1;
    buf[len++] = out;
    i += 2;
  }
  return -1;
}
