/** What a feature of the node (NetworkPolicy, the service proxy, IPAM, the drop log) declares, so
 * the node composition (src/node/) can run any set of them without knowing one: its options, the
 * Kubernetes kinds it reads, the component that owns its table, what it consumes of the change
 * stream, what it serves, and its start and stop. Adding a feature is its own folder plus one line
 * in src/node/features.ts. */
import type { Logger } from 'pino';
import type { ClusterChange, ClusterSnapshot, ObjectKind } from '../k8s/source';
import type { Netns } from '../netlink/netns';
import type { NetlinkSocket } from '../netlink/socket';
import type { AgentMetrics } from '../observe/metrics';
import type { DropFeed } from '../observe/server';
import type { OptionTable, OptionValues } from '../options/table';
import type { Agent, AgentObserver } from './agent';
import type { Component, TableRef } from './component';

/** What the node hands a feature it runs. */
export interface FeatureContext {
  values: OptionValues;
  nodeName: string;
  logger: Logger;
  /** `agent --once`: sync, settle and exit; nothing is served. */
  once: boolean;
  /** The socket the pipeline commits with. */
  socket: NetlinkSocket;
  /** The network namespace the node programs (default: the process's own). */
  netns?: Netns | string;
  /** The node's metrics registry: present when the agent keeps running, or when a feature's
   * `needsMetrics` asks for it with --once. */
  metrics?: AgentMetrics;
  /** Closes a resource when the node stops, however it stops; the last registered first. */
  defer(close: () => unknown): void;
}

/** Where the desired-state commands (render, verify, explain) send what a feature finds wrong
 * with the input while it builds its table. */
export interface InputReport {
  /** A problem the source may already have reported: `object` and `field` tell them apart. */
  problem(p: { object: string; field?: string; message: string }): void;
}

/** A feature running in the node. */
export interface FeatureRun {
  /** The table it owns, kept by the pipeline. */
  component?: Component;
  /** The options that shape its table, recorded in the table (cli/table-record.ts). */
  record?: string;
  /** Sees the initial state before the first sync, and each change before the pipeline does. */
  load?(snapshot: ClusterSnapshot): void;
  apply?(change: ClusterChange): void;
  /** Wraps the pipeline's observer with the feature's own metrics. */
  observe?(observer: AgentObserver | undefined): AgentObserver | undefined;
  /** After the first sync is committed. */
  started?(agent: Agent): Promise<void>;
  /** With --once, what must finish before the process exits (e.g. conntrack cleanup). */
  settle?(): Promise<void>;
  /** The recent drops for the node's /drops. */
  drops?: DropFeed;
  /** Once the node serves /metrics: a second socket for reads at scrape time. */
  serving?(metrics: AgentMetrics, counterSocket: NetlinkSocket): void;
}

export interface Feature<Settings = unknown> {
  /** 'policy', 'proxy', 'ipam', 'droplog': names logs and the table records. */
  readonly name: string;
  /** Its options in the agent's table, in --help order. */
  readonly options: OptionTable;
  /** Its settings from the parsed values, undefined when it is off; throws naming the flag when
   * the values contradict each other. */
  settings(values: OptionValues): Settings | undefined;
  /** What it reads from the cluster when on. */
  readonly kinds: readonly ObjectKind[];
  /** The table it owns as the values name it, on or off: cleanup and uninstall delete it. */
  ownedTable?(values: OptionValues): TableRef;
  /** Its component for a snapshot, without I/O: the desired-state commands start() it as the
   * agent does. */
  component?(settings: Settings, nodeName: string, report: InputReport, values: OptionValues): Component;
  /** What to warn about in the initial state (e.g. no pod on this node: a wrong --node-name). */
  snapshotWarnings?(snapshot: ClusterSnapshot, nodeName: string): string[];
  /** With --once, whether it needs the metrics registry (its own metrics or consumers). */
  needsMetrics?(settings: Settings): boolean;
  /** Reads the API itself with the whole client: the node then skips loading the informers' part. */
  readonly loadsApiClient?: boolean;
  /** Starts it for the node, before the source is read. */
  open(settings: Settings, ctx: FeatureContext): Promise<FeatureRun>;
  /** When it is the only feature on: runs it until SIGTERM/SIGINT, without the pipeline. */
  runAlone?(settings: Settings, ctx: Pick<FeatureContext, 'values' | 'nodeName' | 'logger'>): Promise<number>;
}

/** A feature with its settings, once enabled. */
export interface EnabledFeature<Settings = unknown> {
  feature: Feature<Settings>;
  settings: Settings;
}
