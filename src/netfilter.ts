/** `nfkube/netfilter`: build, commit and inspect netfilter state over netlink, in any network
 * namespace, with no userspace binary: nf_tables objects, expressions, transactions and
 * read-back, ipset, conntrack and nfnetlink_log. */

// Transport and sandboxes
export { Netns } from './netlink/netns';
export { NetlinkSocket, SocketOptions, TransactReply, Ack } from './netlink/socket';
export { NetlinkError, DecodeError, isNotFound, isAlreadyExists, isBusy, isGenerationMismatch } from './netlink/errors';
/** Which addon file loaded (the prebuilt for this platform, or a node-gyp build). */
export { addonPath } from './native/binding';

// nf_tables: objects, expressions, transactions, read-back, formatting
export * from './nft/types';
export * as nftBuild from './nft/build';
export { Transaction, commit, commitBatch, CommitLookups, CommitOptions, CommitResult, OperationEncodeError } from './nft/transaction';
export { NftTransport } from './nft/transport';
export { getGeneration } from './nft/generation';
export { TableStore, GenerationRead } from './nft/table-store';
export { KernelTableStore } from './nft/kernel-store';
export { listTable, listTables, listChains, listRules, listSets, listElements, readTable, consistentRead } from './nft/readback';
export { formatTable, formatRule, formatSet, formatElement } from './nft/format';
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

// conntrack
export { ConntrackClient, ConntrackTransport, DeleteResult } from './conntrack/client';
export { CtEntry, CtTuple } from './conntrack/codec';

// nfnetlink_log
export { NflogSubscription, NflogSubscriptionOptions, NflogStats } from './nflog/subscription';
export { decodePacket as decodeNflogPacket, NflogPacket } from './nflog/codec';
export { decodeHeaders, PacketHeaders } from './nflog/headers';
