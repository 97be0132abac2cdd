/** bitwise as nft reads it: arithmetic on a mark (`meta mark | 0x4000`), a shift or bit setting of
 * a host-order integer, or a mask the next comparison prints (a prefix, a flag test). */
import { readHostU32 } from '../values';
import { ExprPrinter } from './rule-text';

/** `meta mark | 0x4000`, `meta mark ^ 0x4000`, `meta mark & 0x4000`: nft's reading of a boolean
 * bitwise on a mark. */
function markArithmetic(text: string, mask: Buffer, xor: Buffer): string {
  const m = mask.readUInt32LE(0);
  const x = xor.readUInt32LE(0);
  const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;
  if (x === 0) return `${text} & ${hex(m)}`;
  if (m === 0xffffffff) return `${text} ^ ${hex(x)}`;
  if ((m & x) === 0 && ((m | x) >>> 0) === 0xffffffff) return `${text} | ${hex(x)}`;
  return `${text} & ${hex(m)} ^ ${hex(x)}`;
}

export const bitwise: ExprPrinter<'bitwise'> = (e, s) => {
  const src = s.peek(e.sreg);
  if (!src) return false;
  const shift = e.op === 'lshift' || e.op === 'rshift';
  if (src.kind === 'mark' && e.mask && e.xor && !shift) {
    s.load(e.dreg, { text: markArithmetic(s.take(e.sreg)!.text, e.mask, e.xor), kind: 'mark' });
    return true;
  }
  if (src.kind === 'integer' && e.len === 4 && shift && e.shift !== undefined) {
    s.load(e.dreg, { text: `${s.take(e.sreg)!.text} ${e.op === 'lshift' ? '<<' : '>>'} ${e.shift}`, kind: 'integer' });
    return true;
  }
  if (src.kind === 'integer' && e.len === 4 && e.mask?.length === 4 && e.xor?.length === 4 && !shift && (readHostU32(e.mask) & readHostU32(e.xor)) === 0) {
    // nft lists a boolean bitwise that sets bits of a host-order integer as `& (mask|xor) | xor`.
    s.load(e.dreg, { text: `${s.take(e.sreg)!.text} & ${(readHostU32(e.mask) | readHostU32(e.xor)) >>> 0} | ${readHostU32(e.xor)}`, kind: 'integer' });
    return true;
  }
  if (e.mask && !shift) {
    s.move(e.sreg, e.dreg);
    s.lastMask = { reg: e.dreg, mask: e.mask };
    return true;
  }
  return false;
};
