/** The verdict of the table as read back from the kernel, for one packet: a small interpreter of
 * the nf_tables expressions nfkube's table uses (payload, meta, ct, cmp, range, bitwise, lookup
 * in plain, interval, concatenated and verdict-map sets, immediate, jump/goto/return, dynset
 * updates; one evaluator per kind, see ./interpret) run over the base chains of the hook in
 * priority order. It reads what the kernel holds, not what nfkube
 * meant, so it is independent of the renderer; an expression it cannot evaluate, or a header
 * field a flow does not define (ip ttl, length, tcp flags: only the protocol, the addresses and
 * the ports are known), is an error naming the rule, never a guess. The packet opens a
 * connection (ct state new), is not fragmented, and is within any rate limit. */
import { formatRule } from '../nft/format';
import type { HookName, NftSet, Rule, SetElement, TableContents } from '../nft/types';
import type { FlowPacket } from './flow';
import { EvalContext, evaluateExpr, packetHeaders, Registers, RuleVerdict, Unsupported } from './interpret';

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

type Outcome = { kind: 'accept' | 'drop' | 'reject'; rule: Rule } | { kind: 'return' };

class Evaluator {
  private readonly chains = new Map<string, Rule[]>();
  private readonly sets = new Map<string, { set: NftSet; elements: SetElement[] }>();
  private readonly cx: Omit<EvalContext, 'regs'>;
  path: string[] = [];

  constructor(t: TableContents, p: FlowPacket) {
    for (const c of t.chains) this.chains.set(c.name, []);
    for (const r of t.rules) this.chains.get(r.chain)?.push(r);
    for (const s of t.sets) this.sets.set(s.name, { set: s, elements: t.elements.get(s.name) ?? [] });
    const sets = this.sets;
    this.cx = { packet: p, headers: packetHeaders(p), set: (name) => sets.get(name) };
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
    const cx: EvalContext = { ...this.cx, regs: new Registers() };
    let verdict: RuleVerdict | undefined;
    for (const e of rule.exprs) {
      const r = evaluateExpr(e, cx);
      if (r === false) return undefined;
      if (r !== true) verdict = r;
    }
    return verdict ?? { kind: 'continue' };
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
