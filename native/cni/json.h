/* A small, bounded JSON reader for the CNI plugin: validates a whole document (RFC 8259) without
 * building a tree, then answers "the raw text of member K of this object" and "this string value,
 * decoded". Every read is bounds-checked against the span it was given and nesting is capped, so
 * no input (hostile, truncated, binary) can make it read out of bounds or exhaust the stack. */
#ifndef NFKUBE_CNI_JSON_H
#define NFKUBE_CNI_JSON_H

#include <stddef.h>

/* Deeper documents are refused; a CNI configuration nests a handful of levels. */
#define JSON_MAX_DEPTH 256

struct json_span {
  const char *p;
  size_t n;
};

/* 0 when text[0..len) is exactly one JSON value (surrounding whitespace allowed); otherwise -1,
 * with *why a static description and *at the byte offset where it went wrong. */
int json_validate(const char *text, size_t len, const char **why, size_t *at);

/* The first non-whitespace byte of a validated value: '{', '[', '"', 't', 'f', 'n', or a number. */
char json_kind(struct json_span v);

/* Member `key` of the validated object `obj`: 1 and *out = the value's raw text, else 0. When a key
 * repeats, the last one counts (as JSON.parse does). */
int json_member(struct json_span obj, const char *key, struct json_span *out);

/* Decodes the validated string value `s` into buf (NUL-terminated). Returns its length, or -1 when
 * it is not a string, does not fit in cap - 1 bytes, contains U+0000, or a lone surrogate. */
long json_string(struct json_span s, char *buf, size_t cap);

#endif
