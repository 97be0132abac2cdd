/** chain: a list of rules, attached to a hook when it is a base chain (NFTA_CHAIN_*). */
import { AttrMap, AttrWriter } from '../../netlink/attr';
import { DecodeError } from '../../netlink/errors';
import * as C from '../constants';
import { Chain, ChainType, Family, HookName } from '../types';
import { definition, familyFromNumber, flushableVerbs, isCreation, ObjectCodec, tableReference } from './codec';

// linux/netfilter.h NF_INET_*, NF_NETDEV_*; linux/netfilter_arp.h NF_ARP_IN, NF_ARP_OUT, NF_ARP_FORWARD.
const INET_HOOKS: HookName[] = ['prerouting', 'input', 'forward', 'output', 'postrouting', 'ingress'];
const NETDEV_HOOKS: HookName[] = ['ingress', 'egress'];
const ARP_HOOKS: HookName[] = ['input', 'output', 'forward'];

function hooksOf(family: Family): HookName[] {
  return family === 'netdev' ? NETDEV_HOOKS : family === 'arp' ? ARP_HOOKS : INET_HOOKS;
}

function hookNumber(family: Family, hook: HookName): number {
  const n = hooksOf(family).indexOf(hook);
  if (n < 0) throw new Error(`hook ${hook} does not exist in family ${family}`);
  return n;
}

function hookName(family: Family, n: number): HookName {
  const h = hooksOf(family)[n];
  if (!h) throw new DecodeError(`unknown hook number ${n} in family ${family}`);
  return h;
}

export function encodeChain(w: AttrWriter, c: Chain): void {
  w.str(C.NFTA_CHAIN_TABLE, c.table).str(C.NFTA_CHAIN_NAME, c.name);
  if (c.base) {
    const base = c.base;
    const hook = w.beginNest(C.NFTA_CHAIN_HOOK);
    w.be32(C.NFTA_HOOK_HOOKNUM, hookNumber(c.family, base.hook));
    w.be32(C.NFTA_HOOK_PRIORITY, base.priority);
    if (base.device) w.str(C.NFTA_HOOK_DEV, base.device);
    w.endNest(hook);
    w.be32(C.NFTA_CHAIN_POLICY, base.policy === 'accept' ? C.NF_ACCEPT : C.NF_DROP);
    w.str(C.NFTA_CHAIN_TYPE, base.type);
  }
}

export function encodeChainRef(w: AttrWriter, c: { table: string; name: string }): void {
  w.str(C.NFTA_CHAIN_TABLE, c.table).str(C.NFTA_CHAIN_NAME, c.name);
}

export function decodeChain(family: number, payload: Buffer): Chain {
  const a = AttrMap.parse(payload, 'chain');
  const fam = familyFromNumber(family);
  const chain: Chain = {
    family: fam,
    table: a.required(a.str(C.NFTA_CHAIN_TABLE), 'NFTA_CHAIN_TABLE'),
    name: a.required(a.str(C.NFTA_CHAIN_NAME), 'NFTA_CHAIN_NAME'),
    handle: a.be64(C.NFTA_CHAIN_HANDLE),
    flags: a.be32(C.NFTA_CHAIN_FLAGS),
    use: a.be32(C.NFTA_CHAIN_USE),
  };
  const hook = a.nested(C.NFTA_CHAIN_HOOK);
  if (hook) {
    const policy = a.be32(C.NFTA_CHAIN_POLICY);
    chain.base = {
      hook: hookName(fam, hook.required(hook.be32(C.NFTA_HOOK_HOOKNUM), 'NFTA_HOOK_HOOKNUM')),
      priority: hook.required(hook.be32(C.NFTA_HOOK_PRIORITY), 'NFTA_HOOK_PRIORITY') | 0,
      type: (a.str(C.NFTA_CHAIN_TYPE) ?? 'filter') as ChainType,
      policy: policy === C.NF_DROP ? 'drop' : 'accept',
    };
    const dev = hook.str(C.NFTA_HOOK_DEV);
    if (dev !== undefined) chain.base.device = dev;
  }
  return chain;
}

export const chain: ObjectCodec<'chain'> = {
  // Flushing a chain deletes its rules.
  verbs: flushableVerbs(C.NFT_MSG_NEWCHAIN, C.NFT_MSG_DELCHAIN, C.NFT_MSG_DESTROYCHAIN, C.NFT_MSG_DELRULE),

  family: (op) => op.chain.family,

  encode(w, op) {
    if (isCreation(op.verb)) encodeChain(w, op.chain);
    else if (op.verb === 'flush') w.str(C.NFTA_RULE_TABLE, op.chain.table).str(C.NFTA_RULE_CHAIN, op.chain.name);
    else encodeChainRef(w, op.chain);
  },

  describe: (op) => `chain ${op.chain.family} ${op.chain.table} ${op.chain.name}`,

  format(op) {
    const c = op.chain;
    const ref = `${c.family} ${c.table} ${c.name}`;
    if (isCreation(op.verb) && c.base) {
      return `${op.verb} chain ${ref} { type ${c.base.type} hook ${c.base.hook} priority ${c.base.priority}; policy ${c.base.policy}; }`;
    }
    return `${op.verb} chain ${ref}`;
  },

  references(op) {
    const c = op.chain;
    const self = isCreation(op.verb) ? [] : [{ kind: 'chain' as const, family: c.family, table: c.table, name: c.name, role: 'the chain' }];
    return [tableReference(c.family, c.table), ...self];
  },

  defines: (op) => definition(op.verb, { kind: 'chain', family: op.chain.family, table: op.chain.table, name: op.chain.name }),
};
