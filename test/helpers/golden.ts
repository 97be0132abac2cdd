/** Golden bytes: written as hex with `#` comments, compared with a side-by-side listing of four
 * bytes a line (as libmnl's debug output lays messages out) when they differ, so a mismatch shows
 * which field moved instead of two long hex strings. */
import assert from 'node:assert/strict';

/** Hex with `#` comments and free spacing. */
export function golden(text: string): Buffer {
  const hex = text
    .split('\n')
    .map((line) => line.replace(/#.*/, ''))
    .join('')
    .replace(/\s+/g, '');
  assert.match(hex, /^([0-9a-f]{2})*$/i, 'golden text is whole bytes of hex');
  return Buffer.from(hex, 'hex');
}

/** Offset, actual and expected, four bytes a line; differing lines are marked with `!`. */
export function sideBySide(actual: Buffer, expected: Buffer): string {
  const word = (b: Buffer, at: number) => (at < b.length ? b.subarray(at, Math.min(at + 4, b.length)).toString('hex').padEnd(8) : '--------');
  const lines = ['  offset  actual    expected'];
  for (let at = 0; at < Math.max(actual.length, expected.length); at += 4) {
    const a = word(actual, at);
    const e = word(expected, at);
    lines.push(`${a === e ? ' ' : '!'} ${at.toString(16).padStart(6, '0')}  ${a}  ${e}`);
  }
  return lines.join('\n');
}

/** Equal bytes, or a failure naming the first differing offset with the side-by-side listing. */
export function assertBytes(actual: Buffer, expected: Buffer, what: string): void {
  if (actual.equals(expected)) return;
  let at = 0;
  while (at < actual.length && at < expected.length && actual[at] === expected[at]) at++;
  assert.fail(`${what}: bytes differ at offset 0x${at.toString(16)} (${actual.length} bytes, expected ${expected.length})\n${sideBySide(actual, expected)}`);
}
