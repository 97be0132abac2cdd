/** The verdict of the table as read back from the kernel, for one packet: a small interpreter of
 * the nf_tables expressions nfkube's table uses (payload, meta, ct, cmp, range, bitwise, lookup
 * in plain, interval, concatenated and verdict-map sets, immediate, jump/goto/return, dynset
 * updates) run over the
 * base chains of the hook in priority order. It reads what the kernel holds, not what nfkube
 * meant, so it is independent of the renderer; an expression it cannot evaluate, or a header
 * field a flow does not define (ip ttl, length, tcp flags: only the protocol, the addresses and
 * the ports are known), is an error naming the rule, never a guess. The packet opens a
 * connection (ct state new), is not fragmented, and is within any rate limit. */
import * as C from '../nft/constants';
import { registerOffset } from '../nft/canonical';
import { formatRule } from '../nft/format';
import type { TableContents } from '../nft/types';
import type { Expr, HookName, NftSet, Rule, SetElement, Verdict } from '../nft/types';
import { ipAddr } from '../net/ip-bytes';
import { CT_STATE, IPPROTO } from '../net/protocols';
import type { FlowPacket } from './flow';

export interface KernelStep {
  /** The base chain. */
  base: string;
  verdict: 'accept' | 'drop' | 'reject';
  /** Chains entered from the base chain (jump/goto), in order. */
  path: string[];
  /** The rule that gave the verdict; undefined: the base chain's policy. */
  rule?: Rule;
}

export interface KernelVerdict {
  allowed: boolean;
  steps: KernelStep[];
}

const MAX_DEPTH = 16;

class Unsupported extends Error {
  /** The rule holding what could not be evaluated, as nft prints it. */
  rule?: string;
}

interface Headers {
  network: Buffer;
  transport: Buffer;
}

function headers(p: FlowPacket): Headers {
  const proto = IPPROTO[p.protocol];
  let network: Buffer;
  if (p.family === 'ipv4') {
    network = Buffer.alloc(20);
    network[0] = 0x45;
    network.writeUInt16BE(40, 2);
    network[8] = 64;
    network[9] = proto;
    ipAddr(p.src).copy(network, 12);
    ipAddr(p.dst).copy(network, 16);
  } else {
    network = Buffer.alloc(40);
    network[0] = 0x60;
    network.writeUInt16BE(20, 4);
    network[6] = proto;
    network[7] = 64;
    ipAddr(p.src).copy(network, 8);
    ipAddr(p.dst).copy(network, 24);
  }
  const transport = Buffer.alloc(20);
  transport.writeUInt16BE(p.sport, 0);
  transport.writeUInt16BE(p.dport, 2);
  return { network, transport };
}

/** The header bytes a flow defines, [start, end) per base and family: the protocol (next header)
 * and the addresses of the network header, the ports of the transport header. */
const KNOWN_BYTES: Record<'ipv4' | 'ipv6', Record<'network' | 'transport', [number, number][]>> = {
  ipv4: { network: [[9, 10], [12, 20]], transport: [[0, 4]] },
  ipv6: { network: [[6, 7], [8, 40]], transport: [[0, 4]] },
};

const PAYLOAD_FIELDS: Record<string, Record<string, string>> = {
  ipv4: { 0: 'ip version/hdrlength', 1: 'ip dscp/ecn', 2: 'ip length', 4: 'ip id', 6: 'ip frag-off', 8: 'ip ttl', 10: 'ip checksum' },
  ipv6: { 0: 'ip6 version/dscp', 1: 'ip6 flowlabel', 4: 'ip6 length', 7: 'ip6 hoplimit' },
  transport: { 4: 'tcp sequence', 8: 'tcp ackseq', 12: 'tcp doff/flags', 13: 'tcp flags', 14: 'tcp window', 16: 'tcp checksum', 18: 'tcp urgptr' },
};

function knownPayload(family: 'ipv4' | 'ipv6', base: 'network' | 'transport', offset: number, len: number): boolean {
  return KNOWN_BYTES[family][base].some(([start, end]) => offset >= start && offset + len <= end);
}

/** The field a payload load reads, for the error: its nft name where it is a common one. */
function payloadField(family: 'ipv4' | 'ipv6', base: string, offset: number, len: number): string {
  const name = PAYLOAD_FIELDS[base === 'network' ? family : 'transport']?.[offset];
  return `${name ? `${name}, ` : ''}${base} header bytes ${offset}-${offset + len - 1}`;
}

type RuleVerdict = Verdict | { kind: 'reject' };
type Outcome = { kind: 'accept' | 'drop' | 'reject'; rule: Rule } | { kind: 'return' };

class Evaluator {
  private readonly chains = new Map<string, Rule[]>();
  private readonly sets = new Map<string, { set: NftSet; elements: SetElement[] }>();
  private readonly h: Headers;
  path: string[] = [];

  constructor(private readonly t: TableContents, private readonly p: FlowPacket) {
    for (const c of t.chains) this.chains.set(c.name, []);
    for (const r of t.rules) this.chains.get(r.chain)?.push(r);
    for (const s of t.sets) this.sets.set(s.name, { set: s, elements: t.elements.get(s.name) ?? [] });
    this.h = headers(p);
  }

  runChain(name: string, depth: number): Outcome {
    if (depth > MAX_DEPTH) throw new Unsupported(`chains nest deeper than ${MAX_DEPTH}`);
    const rules = this.chains.get(name);
    if (!rules) throw new Unsupported(`chain ${name} is referenced but not in the table`);
    for (const rule of rules) {
      let v: RuleVerdict | undefined;
      try {
        v = this.runRule(rule);
      } catch (err) {
        if (err instanceof Unsupported && !err.rule) err.rule = `${rule.chain}: ${formatRule(rule)}`;
        throw err;
      }
      if (v === undefined) continue;
      switch (v.kind) {
        case 'accept':
        case 'drop':
        case 'reject':
          return { kind: v.kind, rule };
        case 'continue':
          continue;
        case 'return':
          return { kind: 'return' };
        case 'jump': {
          this.path.push(v.chain);
          const o = this.runChain(v.chain, depth + 1);
          if (o.kind !== 'return') return o;
          continue;
        }
        case 'goto':
          this.path.push(v.chain);
          return this.runChain(v.chain, depth + 1);
        default:
          throw new Unsupported(`verdict ${v.kind} in ${formatRule(rule)}`);
      }
    }
    return { kind: 'return' };
  }

  /** The rule's verdict, `continue` when it matched without one, undefined when it did not match. */
  private runRule(rule: Rule): RuleVerdict | undefined {
    const regs = Buffer.alloc(80);
    let verdict: RuleVerdict | undefined;
    for (const e of rule.exprs) {
      const r = this.expr(e, regs);
      if (r === false) return undefined;
      if (r !== true) verdict = r;
    }
    return verdict ?? { kind: 'continue' };
  }

  /** false: the rule stops here (no match); true: go on; a verdict: the rule's verdict. */
  private expr(e: Expr, regs: Buffer): boolean | RuleVerdict {
    const store = (dreg: number, data: Buffer) => {
      // Loads zero-pad to the 32-bit word, as the kernel's nft_reg_store* do.
      regs.fill(0, registerOffset(dreg), registerOffset(dreg) + Math.ceil(data.length / 4) * 4);
      data.copy(regs, registerOffset(dreg));
    };
    const read = (sreg: number, len: number) => regs.subarray(registerOffset(sreg), registerOffset(sreg) + len);
    switch (e.type) {
      case 'payload': {
        if (e.dreg === undefined) throw new Unsupported('payload store');
        const from = e.base === 'network' ? this.h.network : e.base === 'transport' ? this.h.transport : undefined;
        if (!from) throw new Unsupported(`payload base ${e.base}`);
        if (!knownPayload(this.p.family, e.base as 'network' | 'transport', e.offset, e.len)) throw new Unsupported(`it matches ${payloadField(this.p.family, e.base, e.offset, e.len)}, which a flow of SRC, DST, port and protocol does not define`);
        store(e.dreg, from.subarray(e.offset, e.offset + e.len));
        return true;
      }
      case 'meta': {
        if (e.dreg === undefined) throw new Unsupported('meta set');
        if (e.key === C.NFT_META_NFPROTO) store(e.dreg, Buffer.from([this.p.family === 'ipv4' ? 2 : 10]));
        else if (e.key === C.NFT_META_L4PROTO) store(e.dreg, Buffer.from([IPPROTO[this.p.protocol]]));
        else throw new Unsupported(`meta key ${e.key}`);
        return true;
      }
      case 'ct': {
        if (e.key !== C.NFT_CT_STATE || e.dreg === undefined) throw new Unsupported(`ct key ${e.key}`);
        const state = Buffer.alloc(4);
        state.writeUInt32LE(CT_STATE.new);
        store(e.dreg, state);
        return true;
      }
      case 'bitwise': {
        if ((e.op ?? 'bool') !== 'bool' || !e.mask || !e.xor) throw new Unsupported(`bitwise ${e.op}`);
        const v = Buffer.from(read(e.sreg, e.len));
        for (let i = 0; i < e.len; i++) v[i] = (v[i] & e.mask[i]) ^ e.xor[i];
        store(e.dreg, v);
        return true;
      }
      case 'cmp': {
        const c = Buffer.compare(read(e.sreg, e.data.length), e.data);
        const ok = { eq: c === 0, neq: c !== 0, lt: c < 0, lte: c <= 0, gt: c > 0, gte: c >= 0 }[e.op];
        return ok;
      }
      case 'range': {
        const v = read(e.sreg, e.from.length);
        const inside = Buffer.compare(v, e.from) >= 0 && Buffer.compare(v, e.to) <= 0;
        return e.op === 'eq' ? inside : !inside;
      }
      case 'lookup': {
        const s = this.sets.get(e.set);
        if (!s) throw new Unsupported(`set ${e.set} is referenced but not in the table`);
        const found = s.elements.find((el) => {
          const v = read(e.sreg, el.key.length);
          return el.keyEnd ? Buffer.compare(v, el.key) >= 0 && Buffer.compare(v, el.keyEnd) <= 0 : v.equals(el.key);
        });
        if (e.dreg === undefined) return e.invert ? !found : !!found;
        if (!found) return false;
        if (e.dreg === C.NFT_REG_VERDICT) {
          if (!found.verdict) throw new Unsupported(`map ${e.set} has an element without a verdict`);
          return found.verdict;
        }
        if (!found.data) throw new Unsupported(`map ${e.set} has an element without data`);
        store(e.dreg, found.data);
        return true;
      }
      case 'immediate':
        if (e.dreg === C.NFT_REG_VERDICT && e.verdict) return e.verdict;
        if (e.data) store(e.dreg, e.data);
        return true;
      case 'counter':
      case 'log':
      case 'limit':
        return true;
      case 'dynset':
        // Adding or updating an element (a per-address counter) does not change the verdict.
        if (e.op !== 'delete' && !((e.flags ?? 0) & C.NFT_DYNSET_F_INV)) return true;
        throw new Unsupported(`dynset ${e.op}${(e.flags ?? 0) & C.NFT_DYNSET_F_INV ? ' (inverted)' : ''}`);
      case 'reject':
        return { kind: 'reject' };
      default:
        throw new Unsupported(`expression ${e.type}`);
    }
  }
}

/** Runs the packet through every base chain of `hook` in the table, lowest priority first; it is
 * allowed when none drops or rejects it. Throws an Error naming what could not be evaluated. */
export function evaluateKernel(t: TableContents, p: FlowPacket, hook: HookName = 'forward'): KernelVerdict {
  const bases = t.chains.filter((c) => c.base?.hook === hook).sort((a, b) => a.base!.priority - b.base!.priority);
  const steps: KernelStep[] = [];
  for (const base of bases) {
    const ev = new Evaluator(t, p);
    let o: Outcome;
    try {
      o = ev.runChain(base.name, 0);
    } catch (err) {
      if (err instanceof Unsupported) throw new Error(`cannot evaluate table ${t.table.family} ${t.table.name}, chain ${base.name}: ${err.message}${err.rule ? ` (rule ${err.rule})` : ''}`);
      throw err;
    }
    if (o.kind === 'return') {
      steps.push({ base: base.name, verdict: base.base!.policy, path: ev.path });
      if (base.base!.policy === 'drop') return { allowed: false, steps };
      continue;
    }
    steps.push({ base: base.name, verdict: o.kind, path: ev.path, rule: o.rule });
    if (o.kind !== 'accept') return { allowed: false, steps };
  }
  return { allowed: true, steps };
}
