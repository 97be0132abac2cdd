/** nfkube as a library: build, commit and inspect netfilter state over netlink, in any network
 * namespace, with no userspace binary. */

// Transport and sandboxes
export { Netns } from './netlink/netns';
export { NetlinkSocket, SocketOptions, TransactReply, Ack } from './netlink/socket';
export { NetlinkError, DecodeError, isNotFound, isAlreadyExists, isBusy, isGenerationMismatch } from './netlink/errors';

// nf_tables: objects, expressions, transactions, read-back, formatting
export * from './nft/types';
export * as nftBuild from './nft/build';
export { Transaction, commit, CommitOptions, CommitResult, OperationEncodeError } from './nft/transaction';
export { getGeneration, NftTransport } from './nft/generation';
export { listTable, listTables, listChains, listRules, listSets, listElements, readTable, consistentRead } from './nft/readback';
export { formatTable, formatRule, formatRuleBody, formatSet, formatElement } from './nft/format';
export { formatOperation } from './nft/objects';
export { describeExpr, encodeExprList, decodeExprList } from './nft/expr';
export { canonicalExpr, canonicalExprs, ruleKey } from './nft/canonical';
export { SetTypeError, checkElements } from './nft/check';
// Set flags for NftSet.flags (default 0: a plain set or map).
export { NFT_SET_CONSTANT, NFT_SET_INTERVAL, NFT_SET_TIMEOUT, NFT_SET_EVAL } from './nft/constants';
export { ipv4, ipv6, ipAddr, cidrRange } from './net/ip-bytes';
export { concatKey, be16, be32 } from './nft/values';

// Desired-vs-kernel comparison
export { RulesetModel, modelFromKernel, modelToContents } from './ruleset/model';
export { diffRulesets, diffTransaction, formatDiff, isEmptyDiff, RuleSetDiff } from './ruleset/diff';

// ipset
export * as ipset from './ipset';

// NetworkPolicy
export { compileFull } from './policy/engine/compile';
export { PolicyEngine } from './policy/engine/engine';
export { Renderer } from './policy/render/render';
export { PolicyComponent } from './policy/component';

// The pipeline: components -> desired state -> planner -> transaction -> read-back
export { Agent, AgentOptions, AgentObserver, SyncReport } from './pipeline/agent';
export { Component, SyncKind, TableRef } from './pipeline/component';
export { ChangeScope } from './pipeline/scope';
export { plan, Plan } from './pipeline/plan';
export { RenderError } from './policy/render/render';
export { formatLabel, parseLabel, RuleLabel } from './policy/render/labels';

// Drop logs (nfnetlink_log), audit mode, explain
export { NflogSubscription } from './nflog/subscription';
export { decodePacket as decodeNflogPacket, NflogPacket } from './nflog/codec';
export { decodeHeaders, PacketHeaders } from './nflog/headers';
export { PolicyModes } from './policy/modes';
export { explainFlow, formatExplanation } from './explain/explain';
