/** The state printing one rule carries from expression to expression, held in one place: what
 * each register holds, the registers loaded for the next match (a concatenation spans several),
 * the protocols matched so far, the last mask, constants kept for a later statement, and the text
 * printed so far. */
import { ExprKind, ExprOf } from '../expr/codec';
import { Expr } from '../types';
import { ValueKind } from './value-text';

/** What a register holds, as nft names it: `ip saddr`, `meta mark & 0x00004000`. */
export interface Loaded {
  text: string;
  kind: ValueKind;
  /** A map lookup's result: its data may fill the registers after this one (a concatenation). */
  mapResult?: boolean;
}

/** A protocol match nft writes only as a dependency of a field of that protocol, and leaves out
 * of its listing when such a field follows (`meta nfproto ipv4 ip saddr 1.2.3.4` lists as
 * `ip saddr 1.2.3.4`). */
type Dependency = 'll' | 'l3' | 'l4';

/** Prints one expression into the rule's text; false when the expression is not in a shape nft
 * prints, and the rule shows it in libnftnl's debug notation instead. */
export type ExprPrinter<K extends ExprKind> = (e: ExprOf<K>, s: RuleText) => boolean;

export class RuleText {
  private readonly regs = new Map<number, Loaded>();
  /** Registers loaded and not yet consumed, in order: the fields of the next match. */
  private readonly pending: number[] = [];
  private readonly out: { text: string; dependencyOf?: Dependency }[] = [];
  private index = -1;
  /** The network and transport protocols a match fixed: they name later loads (`tcp dport`). */
  l3?: 'ip' | 'ip6';
  l4?: string;
  /** The last masking bitwise, for the comparison after it: a prefix or a flag test. */
  lastMask?: { reg: number; mask: Buffer };
  /** Constants loaded by immediate, for the nat statement that reads them. */
  readonly constants = new Map<number, Buffer>();

  constructor(private readonly exprs: readonly Expr[]) {}

  /** Moves on to the next expression; undefined at the end of the rule. */
  next(): Expr | undefined {
    this.index++;
    return this.exprs[this.index];
  }

  /** The expressions after the current one, for a constant whose reader comes later. */
  after(): readonly Expr[] {
    return this.exprs.slice(this.index + 1);
  }

  peek(reg: number): Loaded | undefined {
    return this.regs.get(reg);
  }

  /** A value loaded as a field of the next match. */
  load(reg: number | undefined, l: Loaded): void {
    if (reg === undefined) return;
    this.regs.set(reg, l);
    this.pending.push(reg);
  }

  /** A value held as an operand of a later statement, not a field of a match. */
  hold(reg: number, l: Loaded): void {
    this.regs.set(reg, l);
  }

  /** Consumes the match starting at `sreg`: its value, or the concatenation of the fields loaded
   * from there on. */
  take(sreg: number): Loaded | undefined {
    const first = this.regs.get(sreg);
    if (!first) return undefined;
    const at = this.pending.indexOf(sreg);
    const chain = at < 0 ? [sreg] : this.pending.splice(at);
    const parts = chain.map((r) => this.regs.get(r)).filter((x): x is Loaded => !!x);
    for (const r of chain) this.regs.delete(r);
    return parts.length > 1 ? { text: parts.map((p) => p.text).join(' . '), kind: 'hex' } : first;
  }

  /** The value of `sreg` now in `dreg`, in the same place among the next match's fields. */
  move(sreg: number, dreg: number): void {
    const l = this.regs.get(sreg)!;
    this.regs.delete(sreg);
    const at = this.pending.indexOf(sreg);
    if (at >= 0) this.pending.splice(at, 1);
    this.load(dreg, l);
  }

  emit(text: string, dependencyOf?: Dependency): void {
    this.out.push({ text, dependencyOf });
  }

  /** The rule's text, without the protocol matches a printed field implies. */
  result(): string {
    const printedL3 = this.out.some((o) => /^ip6? [sd]addr/.test(o.text) || / ip6? [sd]addr/.test(o.text));
    const printedL4 = this.out.some((o) => /(^| )((tcp|udp|sctp) [sd]port|icmpv6 type)/.test(o.text));
    const printedLL = this.out.some((o) => /(^| )ether [sd]addr/.test(o.text));
    return this.out
      .filter((o) => !(o.dependencyOf === 'll' && printedLL) && !(o.dependencyOf === 'l3' && printedL3) && !(o.dependencyOf === 'l4' && printedL4))
      .map((o) => o.text)
      .join(' ');
  }
}
