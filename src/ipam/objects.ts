/** The ipam.nfkube.io/v1alpha1 objects (IPPool, IPBlock, IPAddressClaim) as the API stores them,
 * and the label selector the pools use. */
import { compileSelector, matches } from '../k8s/selector';

// API objects are read as plain JSON and checked field by field where they are used.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type KObject = Record<string, any>;

export const GROUP = 'ipam.nfkube.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const PLURALS = { pools: 'ippools', blocks: 'ipblocks', claims: 'ipaddressclaims' } as const;
/** Label on blocks and claims naming the node that holds them (for label-selected lists). */
export const NODE_LABEL = 'ipam.nfkube.io/node';
export const POOL_LABEL = 'ipam.nfkube.io/pool';

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

/** metav1.LabelSelector semantics, as NetworkPolicy's selectors: a selector that does not
 * compile (an unknown operator, a malformed requirement) matches nothing (fail closed). */
export function matchesSelector(sel: LabelSelector, labels: Record<string, string>): boolean {
  const { selector, errors } = compileSelector(sel, 'spec.nodeSelector');
  return errors.length === 0 && matches(selector, labels);
}

/** One address handed out, as published in a block's status and kept in the node's record. */
export interface PodRef {
  namespace: string;
  name: string;
  uid?: string;
}

/** What an IPBlock says: which node holds it and from which ordinal it lends (if it does). */
export interface BlockObject {
  name: string;
  uid: string;
  resourceVersion: string;
  pool: string;
  cidr: string;
  node: string;
  /** Ordinals at or above this may be borrowed by other nodes; the owner never uses them again. */
  lendFrom?: number;
  /** ordinal -> holder, as last published by the owner (informational, lags by seconds). */
  allocations: Record<string, { handle: string; pod?: PodRef }>;
  created?: string;
}

export function readBlock(obj: KObject): BlockObject {
  const spec = obj.spec ?? {};
  return {
    name: obj.metadata?.name,
    uid: obj.metadata?.uid,
    resourceVersion: obj.metadata?.resourceVersion,
    pool: spec.pool,
    cidr: spec.cidr,
    node: spec.node,
    lendFrom: typeof spec.lendFrom === 'number' ? spec.lendFrom : undefined,
    allocations: obj.status?.allocations ?? {},
    created: obj.metadata?.creationTimestamp,
  };
}

export function blockManifest(b: { name: string; pool: string; cidr: string; node: string }): KObject {
  return {
    apiVersion: API_VERSION,
    kind: 'IPBlock',
    metadata: { name: b.name, labels: { [NODE_LABEL]: b.node, [POOL_LABEL]: b.pool } },
    spec: { pool: b.pool, cidr: b.cidr, node: b.node },
  };
}

export interface ClaimObject {
  name: string;
  uid: string;
  pool: string;
  address: string;
  node: string;
  block: string;
  blockUID: string;
  handle: string;
  pod?: PodRef;
  created?: string;
}

export function readClaim(obj: KObject): ClaimObject {
  const spec = obj.spec ?? {};
  return {
    name: obj.metadata?.name,
    uid: obj.metadata?.uid,
    pool: spec.pool,
    address: spec.address,
    node: spec.node,
    block: spec.block,
    blockUID: spec.blockUID,
    handle: spec.handle,
    pod: spec.pod,
    created: obj.metadata?.creationTimestamp,
  };
}

export function claimManifest(c: Omit<ClaimObject, 'uid' | 'created'>): KObject {
  const { name, ...spec } = c;
  return {
    apiVersion: API_VERSION,
    kind: 'IPAddressClaim',
    metadata: { name, labels: { [NODE_LABEL]: c.node, [POOL_LABEL]: c.pool } },
    spec,
  };
}
