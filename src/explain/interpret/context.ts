/** What the interpreter's per-kind evaluators share: the packet, its headers, the rule's
 * registers, the table's sets, and the one error for what cannot be evaluated. */
import type { ExprKind, ExprOf } from '../../nft/expr/codec';
import { registerOffset } from '../../nft/canonical';
import type { NftSet, SetElement, Verdict } from '../../nft/types';
import type { FlowPacket } from '../flow';
import type { PacketHeaders } from './packet';

/** Something the interpreter cannot evaluate without guessing. */
export class Unsupported extends Error {
  /** The rule holding what could not be evaluated, as nft prints it. */
  rule?: string;
}

export type RuleVerdict = Verdict | { kind: 'reject' };

/** false: the rule stops here (no match); true: go on; a verdict: the rule's verdict. */
export type ExprResult = boolean | RuleVerdict;

/** The registers of one rule's evaluation (NFT_REG32_00..15 after the four 16-byte ones). */
export class Registers {
  private readonly bytes = Buffer.alloc(80);

  store(dreg: number, data: Buffer): void {
    const at = registerOffset(dreg);
    // Loads zero-pad to the 32-bit word, as the kernel's nft_reg_store* do.
    this.bytes.fill(0, at, at + Math.ceil(data.length / 4) * 4);
    data.copy(this.bytes, at);
  }

  read(sreg: number, len: number): Buffer {
    const at = registerOffset(sreg);
    return this.bytes.subarray(at, at + len);
  }
}

export interface EvalContext {
  readonly packet: FlowPacket;
  readonly headers: PacketHeaders;
  readonly regs: Registers;
  set(name: string): { set: NftSet; elements: SetElement[] } | undefined;
}

export type ExprEvaluator<K extends ExprKind> = (e: ExprOf<K>, cx: EvalContext) => ExprResult;
