/** Typed equality of the values the engine compares: an event that changes nothing enforcement
 * reads costs nothing, and a recompiled policy equal to the one before is not reported. */

import type { LabelSelector, LabelSelectorRequirement, NetworkPolicyInfo, PeerInfo, PolicyPortInfo, PolicyRuleInfo } from '../../k8s/model';
import type { CompiledPolicy, CompiledRule, PeerRef, PolicyError, PortMatch, Target } from './ir';
import type { PodFacts } from './objects';

/** Equal label sets, in any key order. */
export function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const ak = Object.keys(a);
  if (ak.length !== Object.keys(b).length) return false;
  return ak.every((k) => Object.prototype.hasOwnProperty.call(b, k) && a[k] === b[k]);
}

export function sameStrings(a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export function sameTarget(a: Target, b: Target): boolean {
  return sameStrings(a.v4, b.v4) && sameStrings(a.v6, b.v6) && sameStrings(a.ingress, b.ingress) && sameStrings(a.egress, b.egress);
}

/** Equal in everything enforcement reads (so status heartbeats and the like cost nothing). */
export function samePodFacts(a: PodFacts, b: PodFacts): boolean {
  return (
    a.eligible === b.eligible &&
    a.local === b.local &&
    sameStrings(a.v4, b.v4) &&
    sameStrings(a.v6, b.v6) &&
    sameLabels(a.labels, b.labels) &&
    a.namedPorts.length === b.namedPorts.length &&
    a.namedPorts.every((p, i) => p.name === b.namedPorts[i].name && p.protocol === b.namedPorts[i].protocol && p.port === b.namedPorts[i].port)
  );
}

export function sameCompiledPolicy(a: CompiledPolicy, b: CompiledPolicy): boolean {
  return (
    a.id === b.id &&
    a.namespace === b.namespace &&
    a.name === b.name &&
    sameList(a.ingress, b.ingress, sameRule) &&
    sameList(a.egress, b.egress, sameRule) &&
    sameList(a.errors, b.errors, sameError)
  );
}

/** The same NetworkPolicy as given, field by field and in the order it was written (the order of
 * matchLabels decides the order of its errors). A value of a type the model does not allow, as
 * hostile input may hold, is equal only to itself: the policy is then compiled again. */
export function samePolicyInput(a: NetworkPolicyInfo, b: NetworkPolicyInfo): boolean {
  return (
    a.namespace === b.namespace &&
    a.name === b.name &&
    sameSelector(a.podSelector, b.podSelector) &&
    sameList(a.policyTypes, b.policyTypes, same) &&
    sameList(a.ingress, b.ingress, samePolicyRule) &&
    sameList(a.egress, b.egress, samePolicyRule) &&
    sameList(a.problems, b.problems, (x, y) => x.field === y.field && x.message === y.message)
  );
}

const same = (a: unknown, b: unknown): boolean => a === b;

/** Both absent, or lists of pairwise equal items. */
function sameList<T>(a: readonly T[] | undefined, b: readonly T[] | undefined, sameItem: (x: T, y: T) => boolean): boolean {
  if (a === b) return true;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!sameItem(a[i], b[i])) return false;
  return true;
}

/** An object, as the model says (a list or a primitive in its place is hostile input). */
function isObject<T>(v: T): v is T & object {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Both absent, or the same keys in the same order with the same values. */
function sameRecord(a: Readonly<Record<string, unknown>> | undefined, b: Readonly<Record<string, unknown>> | undefined): boolean {
  if (a === b) return true;
  if (!isObject(a) || !isObject(b)) return false;
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  return ak.length === bk.length && ak.every((k, i) => k === bk[i] && a[k] === b[k]);
}

function sameSelector(a: LabelSelector | undefined, b: LabelSelector | undefined): boolean {
  if (a === b) return true;
  if (!isObject(a) || !isObject(b)) return false;
  return sameRecord(a.matchLabels, b.matchLabels) && sameList(a.matchExpressions, b.matchExpressions, sameRequirement);
}

function sameRequirement(a: LabelSelectorRequirement, b: LabelSelectorRequirement): boolean {
  if (a === b) return true;
  if (!isObject(a) || !isObject(b)) return false;
  return a.key === b.key && a.operator === b.operator && sameList(a.values, b.values, same);
}

function samePolicyRule(a: PolicyRuleInfo, b: PolicyRuleInfo): boolean {
  if (a === b) return true;
  if (!isObject(a) || !isObject(b)) return false;
  return sameList(a.ports, b.ports, samePolicyPort) && sameList(a.peers, b.peers, samePeer);
}

function samePolicyPort(a: PolicyPortInfo, b: PolicyPortInfo): boolean {
  if (a === b) return true;
  if (!isObject(a) || !isObject(b)) return false;
  return a.protocol === b.protocol && a.port === b.port && a.endPort === b.endPort;
}

function samePeer(a: PeerInfo, b: PeerInfo): boolean {
  if (a === b) return true;
  if (!isObject(a) || !isObject(b)) return false;
  if (!sameSelector(a.podSelector, b.podSelector) || !sameSelector(a.namespaceSelector, b.namespaceSelector)) return false;
  if (a.ipBlock === b.ipBlock) return true;
  if (!isObject(a.ipBlock) || !isObject(b.ipBlock)) return false;
  return a.ipBlock.cidr === b.ipBlock.cidr && sameList(a.ipBlock.except, b.ipBlock.except, same);
}

function sameRule(a: CompiledRule, b: CompiledRule): boolean {
  return sameAnyOr(a.peers, b.peers, samePeerRef) && sameAnyOr(a.ports, b.ports, samePortMatch) && a.namedPorts === b.namedPorts;
}

function sameAnyOr<T>(a: 'any' | T[], b: 'any' | T[], sameItem: (x: T, y: T) => boolean): boolean {
  if (a === 'any' || b === 'any') return a === b;
  return sameList(a, b, sameItem);
}

function samePeerRef(a: PeerRef, b: PeerRef): boolean {
  return a.kind === b.kind && a.set === b.set;
}

function samePortMatch(a: PortMatch, b: PortMatch): boolean {
  return a.protocol === b.protocol && a.port === b.port && a.endPort === b.endPort;
}

function sameError(a: PolicyError, b: PolicyError): boolean {
  return a.policy === b.policy && a.field === b.field && a.message === b.message;
}
