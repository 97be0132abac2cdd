/** `nfkube`: the Kubernetes node agent as a library. An `Agent` hosts one component per owned
 * table (NetworkPolicy, the service proxy) over the shared sync pipeline, fed by a cluster source
 * (the API server's informers or a manifests directory). The netfilter library itself is
 * `nfkube/netfilter`; the CNI IPAM plugin is `nfkube/cni`. */

// The host: components -> desired state -> planner -> transaction -> read-back
export { Agent, AgentOptions, AgentObserver, SyncReport } from './pipeline/agent';
export { Component, SyncKind, TableRef } from './pipeline/component';
export { ChangeScope } from './pipeline/scope';
export { RulesetModel } from './ruleset/model';
// Where the agent programs: a netlink socket, in this or another network namespace; or any
// table store (AgentOptions.store), such as the in-memory one tests run on without root.
export { Netns } from './netlink/netns';
export { NetlinkSocket, SocketOptions } from './netlink/socket';
export { TableStore, GenerationRead } from './nft/table-store';
export { KernelTableStore } from './nft/kernel-store';
export { FakeTableStore, FakeFault, FakeEvent, ReceivedBatch } from './pipeline/fake-store';

// Cluster state: sources, what they deliver, the normalized objects
export { ClusterSnapshot, ClusterChange, ClusterSource, SourceHandlers, ChangeOf, ObjectKind, SourceError, POLICY_KINDS, PROXY_KINDS } from './k8s/source';
export { InformerSource, InformerSourceOptions, loadKubeConfig } from './k8s/informer-source';
export { ManifestSource, ManifestSourceOptions } from './k8s/manifest-source';
export { PodInfo, NamespaceInfo, NetworkPolicyInfo, LabelSelector } from './k8s/model';
export { ServiceInfo, EndpointSliceInfo, NodeInfo } from './k8s/service-model';

// NetworkPolicy: the component, audit mode, the drop log
export { PolicyComponent, PolicyComponentOptions, policyTable } from './policy/component';
export { PolicyModes, PolicyMode, DenyAction } from './policy/modes';
export { startDropLogging, DropLogging, DropLoggingOptions, DropRecord } from './policy/droplog';

// The service proxy
export { ProxyComponent, ProxyOptions } from './proxy/component';

// The node composition: the enabled features over one source and one pipeline, as `nfkube agent` runs them
export { runNode, NodeRunContext, NODE_OPTIONS } from './node/run';
export { FEATURES } from './node/features';
export { enabledFeatures, ownedTables } from './node/enabled';
export { desiredComponents, desiredTables } from './node/desired';
export { Feature, FeatureContext, FeatureRun, EnabledFeature, InputReport } from './pipeline/feature';
export { OptionInfo, OptionTable, OptionValues, ValuesOf } from './options/table';
