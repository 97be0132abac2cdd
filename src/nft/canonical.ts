/** Canonical forms for comparing what nfkube meant with what the kernel holds: the kernel echoes
 * defaults (flags 0, invert false) that a builder leaves out, and counters move with traffic. */
import * as C from './constants';
import { Expr, Rule } from './types';

const REGISTER_FIELDS = new Set(['sreg', 'dreg', 'regAddrMin', 'regAddrMax', 'regProtoMin', 'regProtoMax', 'setSreg', 'sregKey', 'sregData']);

/** The kernel addresses registers in 32-bit words and dumps a word that starts a 16-byte register
 * as NFT_REG_n (net/netfilter/nf_tables_api.c nft_dump_register): NFT_REG32_00 reads back as
 * NFT_REG_1. This maps either spelling to the one the kernel dumps. */
export function canonicalRegister(reg: number): number {
  if (reg < C.NFT_REG32_00) return reg;
  const word = reg - C.NFT_REG32_00 + 4;
  return word % 4 === 0 ? word / 4 : reg;
}

/** A register's byte offset in the kernel's register file (struct nft_regs): the verdict
 * register's 16 bytes, then NFT_REG_1..4, which are NFT_REG32_00..15. */
export function registerOffset(reg: number): number {
  return reg <= C.NFT_REG_4 ? reg * 16 : (reg - C.NFT_REG32_00) * 4 + 16;
}

/** Whether a field holds a default the kernel echoes and a builder leaves out, so counts as
 * absent: unset or false, a bitwise's `bool` op, a dynset's timeout and flags (dumped even when
 * none were given). One test for canonicalExpr, canonicalField and computeRuleKey alike. */
function isDefaultField(type: string, k: string, v: unknown): boolean {
  if (v === undefined || v === false) return true;
  if (type === 'bitwise') return k === 'op' && v === 'bool';
  if (type === 'dynset') return (k === 'timeoutMs' && v === 0n) || (k === 'flags' && v === 0);
  return false;
}

/** An expression with default-valued fields dropped, registers in dump form and counter values
 * ignored. */
export function canonicalExpr(e: Expr): Expr {
  if (e.type === 'counter') return { type: 'counter', packets: 0n, bytes: 0n };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (isDefaultField(e.type, k, v)) continue;
    out[k] = REGISTER_FIELDS.has(k) && typeof v === 'number' ? canonicalRegister(v) : v;
  }
  return out as unknown as Expr;
}

export function canonicalExprs(exprs: Expr[]): Expr[] {
  return mergeRanges(exprs).map(canonicalExpr);
}

/** Equivalent encodings in one form: nft writes a range match it parsed from text (`icmpv6 type
 * 133-136`) as `cmp gte` then `cmp lte` on one register, a builder as one `range eq`; both
 * become the range. nft also puts an in-place byteorder of a 1-byte value (`meta l4proto` keying
 * an interval concatenation) that converts no whole word, so changes nothing (nft_byteorder_eval
 * converts len / size words): it is left out. Returns the same array when there is nothing to
 * merge (the common case). */
export function mergeRanges(exprs: Expr[]): Expr[] {
  let out: Expr[] | undefined;
  for (let i = 0; i < exprs.length; i++) {
    const a = exprs[i];
    const b = exprs[i + 1];
    if (a.type === 'cmp' && a.op === 'gte' && b?.type === 'cmp' && b.op === 'lte' && canonicalRegister(a.sreg) === canonicalRegister(b.sreg) && Buffer.isBuffer(a.data) && Buffer.isBuffer(b.data) && a.data.length === b.data.length) {
      out ??= exprs.slice(0, i);
      out.push({ type: 'range', sreg: a.sreg, op: 'eq', from: a.data, to: b.data });
      i++;
    } else if (a.type === 'byteorder' && a.len < a.size && canonicalRegister(a.sreg) === canonicalRegister(a.dreg)) {
      out ??= exprs.slice(0, i);
    } else out?.push(a);
  }
  return out ?? exprs;
}

// Rendered rules are never mutated, so their keys are computed once.
const keys = new WeakMap<object, string>();

/** A stable text key for a rule body, for set-like comparison of rule lists. */
export function ruleKey(r: Pick<Rule, 'exprs' | 'comment'>): string {
  let k = keys.get(r);
  if (k === undefined) {
    k = computeRuleKey(r);
    keys.set(r, k);
  }
  return k;
}

/** A copy of `r` with `handle` (none when undefined) and the same body: its key, when already
 * computed, is carried over, so a committed model that learns handles need not key its rules
 * again. */
export function withHandle(r: Rule, handle: bigint | undefined): Rule {
  const out: Rule = { ...r };
  if (handle === undefined) delete out.handle;
  else out.handle = handle;
  const k = keys.get(r);
  if (k !== undefined) keys.set(out, k);
  return out;
}

/** Canonical equality of two rule bodies (what ruleKey compares), without building keys: the
 * kernel side of a verify is freshly decoded every time, so its keys would never be reused. */
export function sameRuleBody(a: Pick<Rule, 'exprs' | 'comment'>, b: Pick<Rule, 'exprs' | 'comment'>): boolean {
  if (a.exprs === b.exprs) return a.comment === b.comment;
  if (a.comment !== b.comment) return false;
  const ax = mergeRanges(a.exprs);
  const bx = mergeRanges(b.exprs);
  if (ax.length !== bx.length) return false;
  for (let i = 0; i < ax.length; i++) if (!sameExpr(ax[i], bx[i])) return false;
  return true;
}

function sameExpr(x: Expr, y: Expr): boolean {
  if (x.type !== y.type) return false;
  if (x.type === 'counter') return true;
  const xf = x as unknown as Record<string, unknown>;
  const yf = y as unknown as Record<string, unknown>;
  let present = 0;
  for (const k in xf) {
    const v = canonicalField(x.type, k, xf[k]);
    if (v === undefined) continue;
    present++;
    if (!sameValue(v, canonicalField(x.type, k, yf[k]))) return false;
  }
  for (const k in yf) if (canonicalField(y.type, k, yf[k]) !== undefined) present--;
  return present === 0;
}

/** A field's value as ruleKey sees it; undefined when the field counts as absent. */
function canonicalField(type: string, k: string, v: unknown): unknown {
  if (k === 'type' || isDefaultField(type, k, v)) return undefined;
  if (typeof v === 'number' && REGISTER_FIELDS.has(k)) return canonicalRegister(v);
  return v;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (Buffer.isBuffer(a)) return Buffer.isBuffer(b) && a.equals(b);
  if (typeof a === 'object' && typeof b === 'object' && !Buffer.isBuffer(b)) {
    const va = a as { kind?: unknown; chain?: unknown };
    const vb = b as { kind?: unknown; chain?: unknown };
    if (va.kind !== undefined) return va.kind === vb.kind && va.chain === vb.chain;
  }
  return String(a) === String(b) && typeof a === typeof b;
}

/** Fields in sorted order, so the key does not depend on the order a decoder or a builder set
 * them in; values as text (buffers in hex, verdicts as kind:chain). The canonical rules of
 * canonicalExpr are applied inline: this runs for every rule on every verify. */
function computeRuleKey(r: Pick<Rule, 'exprs' | 'comment'>): string {
  let key = r.comment === undefined ? '' : `#${r.comment}`;
  for (const e of mergeRanges(r.exprs)) {
    key += `|${e.type}`;
    if (e.type === 'counter') continue;
    const fields = e as unknown as Record<string, unknown>;
    for (const k of Object.keys(fields).sort()) {
      const v = fields[k];
      if (k === 'type' || isDefaultField(e.type, k, v)) continue;
      let text: string;
      if (typeof v === 'number') text = String(REGISTER_FIELDS.has(k) ? canonicalRegister(v) : v);
      else if (Buffer.isBuffer(v)) text = v.toString('hex');
      else if (v !== null && typeof v === 'object') {
        const verdict = v as { kind: string; chain?: string };
        text = verdict.chain === undefined ? verdict.kind : `${verdict.kind}:${verdict.chain}`;
      } else text = String(v);
      key += ` ${k}=${text}`;
    }
  }
  return key;
}
