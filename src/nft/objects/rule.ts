/** rule: a chain's list of expressions, with nft's comment in its user data (NFTA_RULE_*). */
import { AttrMap, AttrWriter } from '../../netlink/attr';
import { NLM_F_APPEND, NLM_F_CREATE, NLM_F_REPLACE } from '../../netlink/message';
import * as C from '../constants';
import { decodeExprListAttr, encodeExprList } from '../expr';
import { formatRule } from '../format';
import { checkRuleLookups, setsResolvedByLookups } from '../set-fit';
import { Rule } from '../types';
import { decodeComment, familyFromNumber, isRemoval, msg, ObjectCodec, Reference, tableReference, UDATA_RULE_COMMENT } from './codec';

// Rules of one policy entry, and combination chains' jumps to one policy, carry the same comment: a
// batch encodes each text once. Bounded, as comments name policies that come and go.
const COMMENT_CACHE_MAX = 4096;
const encodedComments = new Map<string, Uint8Array>();
const utf8 = new TextEncoder();

function encodeComment(comment: string): Uint8Array {
  let udata = encodedComments.get(comment);
  if (udata) return udata;
  // Type, length (set below), the text and its NUL, encoded in one pass.
  udata = utf8.encode(`\0\0${comment}\0`);
  const length = udata.length - 2;
  if (length > 255) throw new Error(`rule comment longer than 254 bytes: "${comment.slice(0, 40)}..."`);
  udata[0] = UDATA_RULE_COMMENT;
  udata[1] = length;
  if (encodedComments.size >= COMMENT_CACHE_MAX) encodedComments.clear();
  encodedComments.set(comment, udata);
  return udata;
}

export interface RuleEncodeOptions {
  /** NFTA_RULE_ID, to learn the handle from the echo. */
  id?: number;
  /** Leaves out the rule's handle (a new rule) or its position (a replacement, named by handle). */
  without?: 'handle' | 'position';
}

const NO_RULE_OPTIONS: RuleEncodeOptions = {};

export function encodeRule(w: AttrWriter, r: Rule, opts: RuleEncodeOptions = NO_RULE_OPTIONS): void {
  w.str(C.NFTA_RULE_TABLE, r.table).str(C.NFTA_RULE_CHAIN, r.chain);
  if (r.handle !== undefined && opts.without !== 'handle') w.be64(C.NFTA_RULE_HANDLE, r.handle);
  if (r.position !== undefined && opts.without !== 'position') w.be64(C.NFTA_RULE_POSITION, r.position);
  encodeExprList(w, C.NFTA_RULE_EXPRESSIONS, r.exprs);
  if (r.comment !== undefined) w.bytes(C.NFTA_RULE_USERDATA, encodeComment(r.comment));
  if (opts.id !== undefined) w.be32(C.NFTA_RULE_ID, opts.id);
}

export function encodeRuleRef(w: AttrWriter, r: { table: string; chain: string; handle: bigint }): void {
  w.str(C.NFTA_RULE_TABLE, r.table).str(C.NFTA_RULE_CHAIN, r.chain).be64(C.NFTA_RULE_HANDLE, r.handle);
}

export function decodeRule(family: number, payload: Buffer): Rule {
  const a = AttrMap.parse(payload, 'rule');
  const exprs = a.get(C.NFTA_RULE_EXPRESSIONS);
  const rule: Rule = {
    family: familyFromNumber(family),
    table: a.required(a.str(C.NFTA_RULE_TABLE), 'NFTA_RULE_TABLE'),
    chain: a.required(a.str(C.NFTA_RULE_CHAIN), 'NFTA_RULE_CHAIN'),
    handle: a.be64(C.NFTA_RULE_HANDLE),
    exprs: exprs ? decodeExprListAttr(exprs) : [],
  };
  const udata = a.bytes(C.NFTA_RULE_USERDATA);
  if (udata) {
    const comment = decodeComment(udata, UDATA_RULE_COMMENT);
    if (comment !== undefined) rule.comment = comment;
  }
  return rule;
}

const NEW_RULE: RuleEncodeOptions = { without: 'handle' };
const REPLACEMENT_RULE: RuleEncodeOptions = { without: 'position' };

export const rule: ObjectCodec<'rule'> = {
  verbs: {
    add: { type: msg(C.NFT_MSG_NEWRULE), flags: NLM_F_CREATE | NLM_F_APPEND, echo: true },
    insert: { type: msg(C.NFT_MSG_NEWRULE), flags: NLM_F_CREATE, echo: true },
    replace: { type: msg(C.NFT_MSG_NEWRULE), flags: NLM_F_REPLACE, echo: true },
    delete: { type: msg(C.NFT_MSG_DELRULE), flags: 0 },
    destroy: { type: msg(C.NFT_MSG_DESTROYRULE), flags: 0 },
  },

  family: (op) => op.rule.family,

  encode(w, op) {
    const r = op.rule;
    if (op.verb === 'add' || op.verb === 'insert') encodeRule(w, r, NEW_RULE);
    else if (r.handle === undefined) throw new Error('the rule has no handle');
    else if (op.verb === 'replace') encodeRule(w, r, REPLACEMENT_RULE);
    else encodeRuleRef(w, { table: r.table, chain: r.chain, handle: r.handle });
  },

  describe: (op) => `rule ${op.rule.family} ${op.rule.table} ${op.rule.chain}${op.rule.handle !== undefined ? ` handle ${op.rule.handle}` : ''}`,

  format(op) {
    const r = op.rule;
    const ref = `${r.family} ${r.table} ${r.chain}`;
    if (isRemoval(op.verb)) return `${op.verb} rule ${ref} handle ${r.handle}`;
    const where = op.verb === 'replace' ? ` handle ${r.handle}` : r.position !== undefined ? ` position ${r.position}` : '';
    return `${op.verb} rule ${ref}${where} ${formatRule({ ...r, handle: undefined })}`;
  },

  references(op) {
    const r = op.rule;
    const refs: Reference[] = [tableReference(r.family, r.table), { kind: 'chain', family: r.family, table: r.table, name: r.chain, role: 'its chain' }];
    for (const e of r.exprs) {
      if (e.type === 'lookup') refs.push({ kind: 'set', family: r.family, table: r.table, name: e.set, role: 'looked up' });
      if (e.type === 'immediate' && e.verdict && (e.verdict.kind === 'jump' || e.verdict.kind === 'goto')) {
        refs.push({ kind: 'chain', family: r.family, table: r.table, name: e.verdict.chain, role: `${e.verdict.kind} target` });
      }
    }
    return refs;
  },

  // Rules are named by handle, never referenced by other operations.
  defines: () => undefined,

  check(op, sets) {
    const r = op.rule;
    if (!isRemoval(op.verb)) checkRuleLookups(r.exprs, (name) => sets(r.family, r.table, name));
  },

  setsChecked(op) {
    const r = op.rule;
    if (isRemoval(op.verb)) return [];
    return setsResolvedByLookups(r.exprs).map((name) => ({ kind: 'set', family: r.family, table: r.table, name, role: 'looked up' }));
  },
};
