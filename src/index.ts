/** nfkube as a library: build, commit and inspect netfilter state over netlink, in any network
 * namespace, with no userspace binary. */

// Transport and sandboxes
export { Netns } from './netlink/netns';
export { NetlinkSocket, SocketOptions, TransactReply, Ack } from './netlink/socket';
export { NetlinkError, DecodeError, isNotFound, isAlreadyExists, isBusy, isGenerationMismatch } from './netlink/errors';

// nf_tables: objects, expressions, transactions, read-back, formatting
export * from './nft/types';
export * as nftBuild from './nft/build';
export { Transaction, Operation, commit, CommitOptions, CommitResult, getGeneration } from './nft/transaction';
export { listTable, listTables, listChains, listRules, listSets, listElements, readTable, consistentRead, TableContents } from './nft/readback';
export { formatTable, formatRule, formatRuleBody, formatSet, formatElement, formatOperation } from './nft/format';
export { describeExpr, encodeExprList, decodeExprList } from './nft/expr';
export { canonicalExpr, canonicalExprs, ruleKey } from './nft/canonical';
export { ipv4, ipv6, ipAddr, cidrRange, concatKey, be16, be32 } from './nft/values';

// Desired-vs-kernel comparison
export { RulesetModel, modelFromKernel, modelToContents } from './ruleset/model';
export { diffRulesets, diffTransaction, formatDiff, isEmptyDiff, RuleSetDiff } from './ruleset/diff';

// ipset
export * as ipset from './ipset';

// NetworkPolicy
export { compileFull } from './policy/compile';
export { PolicyEngine } from './policy/engine';
export { Renderer } from './agent/render';
export { PolicyComponent } from './agent/policy-component';

// The pipeline: components -> desired state -> planner -> transaction -> read-back
export { Agent, AgentOptions, AgentObserver, SyncReport } from './pipeline/agent';
export { Component, SyncKind, TableRef } from './pipeline/component';
export { ChangeScope } from './pipeline/scope';
export { plan, Plan } from './pipeline/plan';
