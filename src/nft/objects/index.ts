/** nf_tables objects in transactions: one codec per kind (table, chain, rule, set, element),
 * looked up by the operation's kind. Adding a kind of object is one file plus its line here. */
import { Operation, NftObjectKind } from '../types';
import { chain } from './chain';
import { MessageKind, ObjectCodec, Reference } from './codec';
import { element } from './element';
import { rule } from './rule';
import { set } from './set';
import { table } from './table';

export { BatchWriter, familyFromNumber, MessageKind, ObjectCodec, Reference } from './codec';
export { decodeTable, encodeTable, encodeTableRef } from './table';
export { decodeChain, encodeChain, encodeChainRef } from './chain';
export { decodeRule, encodeRule, encodeRuleRef, RuleEncodeOptions } from './rule';
export { decodeSet, encodeSet, encodeSetRef, setFlags } from './set';
export { checkElements, decodeSetElements, encodeSetElements, kernelElements, userElements } from './element';

/** Keyed by kind: a kind of operation without a codec does not compile. */
export const OBJECT_CODECS: { [K in NftObjectKind]: ObjectCodec<K> } = { table, chain, rule, set, element };

/** The codec of an operation's kind, typed for the operation as a whole. */
export function codecOf(op: Operation): ObjectCodec<NftObjectKind> {
  return OBJECT_CODECS[op.kind] as unknown as ObjectCodec<NftObjectKind>;
}

/** The message an operation's verb becomes. */
export function messageKind(op: Operation): MessageKind {
  return (codecOf(op).verbs as Record<string, MessageKind>)[op.verb];
}

/** The object an operation changes, e.g. `set inet nfkube pods_v4`. */
export function describeOperation(op: Operation): string {
  return codecOf(op).describe(op);
}

/** One transaction operation as an nft command. */
export function formatOperation(op: Operation): string {
  return codecOf(op).format(op);
}

/** The objects an operation needs to exist before it. */
export function operationReferences(op: Operation): Reference[] {
  return codecOf(op).references(op);
}
