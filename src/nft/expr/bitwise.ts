/** bitwise: dreg = (sreg & mask) ^ xor, or a shift of sreg by a constant (nft_bitwise.c). */
import { DecodeError } from '../../netlink/errors';
import * as C from '../constants';
import { BitwiseExpr } from '../types';
import { compact, dataWords, EnumMap, ExprCodec, u32 } from './codec';
import { decodeValue, encodeValue } from './data';

const BITWISE_OPS = new EnumMap<NonNullable<BitwiseExpr['op']>>('bitwise.op', {
  bool: C.NFT_BITWISE_MASK_XOR,
  lshift: C.NFT_BITWISE_LSHIFT,
  rshift: C.NFT_BITWISE_RSHIFT,
});

/** The shift amount travels as a 4-byte NFTA_DATA_VALUE in host byte order (the kernel reads it
 * as a u32 and rejects any other size). */
function shiftData(shift: number): Buffer {
  if (!Number.isInteger(shift) || shift < 0 || shift > 0xffffffff) throw new RangeError(`bitwise.shift: ${shift} is not a u32`);
  const b = Buffer.alloc(4);
  b.writeUInt32LE(shift);
  return b;
}

export const bitwise: ExprCodec<'bitwise'> = {
  attrs: [
    C.NFTA_BITWISE_SREG,
    C.NFTA_BITWISE_DREG,
    C.NFTA_BITWISE_LEN,
    C.NFTA_BITWISE_MASK,
    C.NFTA_BITWISE_XOR,
    C.NFTA_BITWISE_OP,
    C.NFTA_BITWISE_DATA,
  ],

  encode(w, e) {
    w.be32(C.NFTA_BITWISE_SREG, u32(e.sreg, 'bitwise.sreg')).be32(C.NFTA_BITWISE_DREG, u32(e.dreg, 'bitwise.dreg'));
    if (e.op !== undefined) w.be32(C.NFTA_BITWISE_OP, BITWISE_OPS.number(e.op));
    w.be32(C.NFTA_BITWISE_LEN, u32(e.len, 'bitwise.len'));
    if (e.mask !== undefined) encodeValue(w, C.NFTA_BITWISE_MASK, e.mask, 'bitwise.mask');
    if (e.xor !== undefined) encodeValue(w, C.NFTA_BITWISE_XOR, e.xor, 'bitwise.xor');
    if (e.shift !== undefined) encodeValue(w, C.NFTA_BITWISE_DATA, shiftData(e.shift), 'bitwise.shift');
  },

  decode(r) {
    const value = (type: number, name: string) => {
      const nest = r.nested(type);
      return nest && decodeValue(nest, `bitwise ${name}`);
    };
    const op = r.be32(C.NFTA_BITWISE_OP);
    const data = value(C.NFTA_BITWISE_DATA, 'NFTA_BITWISE_DATA');
    if (data && data.length !== 4) throw new DecodeError(`bitwise: NFTA_BITWISE_DATA has ${data.length} bytes, expected 4`);
    return compact({
      type: 'bitwise',
      sreg: r.required(r.be32(C.NFTA_BITWISE_SREG), C.NFTA_BITWISE_SREG),
      dreg: r.required(r.be32(C.NFTA_BITWISE_DREG), C.NFTA_BITWISE_DREG),
      len: r.required(r.be32(C.NFTA_BITWISE_LEN), C.NFTA_BITWISE_LEN),
      mask: value(C.NFTA_BITWISE_MASK, 'NFTA_BITWISE_MASK'),
      xor: value(C.NFTA_BITWISE_XOR, 'NFTA_BITWISE_XOR'),
      op: op === undefined ? undefined : BITWISE_OPS.name(op),
      shift: data?.readUInt32LE(0),
    });
  },

  describe(e) {
    const head = `reg ${e.dreg} = ( reg ${e.sreg} `;
    if (e.op === 'lshift' || e.op === 'rshift') {
      return `${head}${e.op === 'lshift' ? '<<' : '>>'} ${dataWords(e.shift === undefined ? undefined : shiftData(e.shift))}) `;
    }
    return `${head}& ${dataWords(e.mask)}) ^ ${dataWords(e.xor)}`;
  },
};
