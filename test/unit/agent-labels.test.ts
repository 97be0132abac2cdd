/** The rule-comment label codec (src/policy/render/labels.ts): what the renderer writes, the kernel
 * stores and the metrics bridge parses back must be the same text, whatever the names. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatLabel, LABEL_MAX_BYTES, parseLabel, RuleLabel, sanitizeLabelText, truncateUtf8, utf8Length } from '../../src/policy/render/labels';
import { AttrWriter } from '../../src/netlink/attr';
import { decodeRule, encodeRule } from '../../src/nft/objects';
import * as b from '../../src/nft/build';
import { mulberry32 } from '../helpers/prng';

/** What the kernel hands back for a rule with this comment: encode, then decode the payload. */
function viaKernelCodec(comment: string): string | undefined {
  const w = new AttrWriter();
  encodeRule(w, { family: 'inet', table: 't', chain: 'c', exprs: [b.counter(), b.accept()], comment });
  return decodeRule(1, w.finish()).comment;
}

const labels = (policy: string): RuleLabel[] => [
  { kind: 'accept', policy, direction: 'ingress', entry: 0 },
  { kind: 'accept', policy, direction: 'egress', entry: 12345 },
  { kind: 'jump', policy },
  { kind: 'deny', direction: 'egress' },
  { kind: 'audit', direction: 'ingress' },
];

test('ordinary names: the comments nfkube has always written, parsed back exactly', () => {
  assert.equal(formatLabel({ kind: 'accept', policy: 'x/web', direction: 'ingress', entry: 2 }), 'x/web ingress[2]');
  assert.equal(formatLabel({ kind: 'jump', policy: 'x/web' }), 'x/web');
  // Combination chains are shared by pods: the deny names its direction, the counter sets the pod.
  assert.equal(formatLabel({ kind: 'deny', direction: 'egress' }), 'default deny egress');
  for (const l of labels('x/web')) assert.deepEqual(parseLabel(formatLabel(l)), l);
  assert.equal(parseLabel('not one of ours'), undefined);
  assert.equal(parseLabel('x/web ingress[]'), undefined);
});

test('150 CJK characters: at most 128 bytes, still parseable, direction and entry intact', () => {
  const policy = `prod/${'日'.repeat(150)}`;
  for (const l of labels(policy)) {
    const text = formatLabel(l);
    assert.ok(utf8Length(text) <= LABEL_MAX_BYTES, `${utf8Length(text)} bytes`);
    assert.equal(viaKernelCodec(text), text, 'the kernel codec gives back what was written');
    const back = parseLabel(text)!;
    assert.equal(back.kind, l.kind);
    if (l.kind !== 'jump') assert.equal((back as { direction: string }).direction, l.direction);
    if (l.kind === 'accept') assert.equal((back as { entry: number }).entry, l.entry);
  }
  // Two long names that share their beginning stay distinct.
  assert.notEqual(formatLabel({ kind: 'jump', policy: `${policy}a` }), formatLabel({ kind: 'jump', policy: `${policy}b` }));
});

test('NUL, control characters, quotes, whitespace and lone surrogates are sanitised', () => {
  const nasty = 'ns/a\0b\u0001c"d\\e f\u3000g\u2028h\ud800i\udc00j\u007f';
  assert.equal(sanitizeLabelText(nasty), 'ns/a?b?c?d?e?f?g?h?i?j?');
  for (const l of labels(nasty)) {
    const text = formatLabel(l);
    assert.equal(viaKernelCodec(text), text);
    assert.deepEqual(parseLabel(text), { ...l, ...('policy' in l ? { policy: sanitizeLabelText(nasty) } : {}) });
  }
});

test('truncateUtf8 never splits a code point and counts bytes', () => {
  assert.equal(truncateUtf8('ab日𝔘', 3), 'ab');
  assert.equal(truncateUtf8('ab日𝔘', 5), 'ab日');
  assert.equal(truncateUtf8('ab日𝔘', 8), 'ab日');
  assert.equal(truncateUtf8('ab日𝔘', 9), 'ab日𝔘');
});

test('random names: every label fits, survives the kernel codec, and parses to its kind', () => {
  const rnd = mulberry32(11);
  const alphabet = ['a', '-', '.', '/', ' ', '\0', '"', '日', '𝔘', 'é', '\ud800', '\udfff', '\n', '…'];
  for (let i = 0; i < 3000; i++) {
    const len = Math.floor(rnd() * 300);
    let name = '';
    for (let j = 0; j < len; j++) name += alphabet[Math.floor(rnd() * alphabet.length)];
    for (const l of labels(`n/${name}`)) {
      const text = formatLabel(l);
      assert.ok(utf8Length(text) <= LABEL_MAX_BYTES);
      assert.equal(viaKernelCodec(text), text);
      assert.equal(parseLabel(text)?.kind, l.kind, JSON.stringify(text));
    }
  }
});

test('sanitizeLabelText: the printable-ASCII fast path agrees with the full replacement', () => {
  const full = (t: string) => t.replace(/[\p{Cc}\p{Cs}\s"\\]/gu, '?');
  const alphabet = ['a', 'Z', '0', '/', '-', '.', ' ', '"', '\\', '\t', '\n', '\x7f', '\x00', '\x85', '\u00a0', '\u2028', 'é', '☃', '\ud83d\ude00', '\ud800', '~', '!'];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < 2000; i++) {
    const t = Array.from({ length: Math.floor(next() * 12) }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
    assert.equal(sanitizeLabelText(t), full(t), JSON.stringify(t));
  }
  for (let c = 0; c < 0x100; c++) assert.equal(sanitizeLabelText(`a${String.fromCharCode(c)}b`), full(`a${String.fromCharCode(c)}b`), `char ${c}`);
});
