/** The bench cluster (cluster.ts) as the Kubernetes objects a user has: full Pod, Namespace and
 * NetworkPolicy manifests with the fields a real API server returns (uid, ownerReferences,
 * containers with images, resources and probes, status conditions), about 4 KB of JSON per pod as
 * in the issue's reference directory; and writers for the manifest directory layouts
 * `agent --manifests` reads. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { LabelSelector, NamespaceInfo, NetworkPolicyInfo, PeerInfo, PodInfo, PolicyRuleInfo } from '../src/k8s/model';
import type { Cluster } from './cluster';

export type K8sObject = Record<string, unknown>;

/** How a directory holds the objects: one per file, many documents per file, or `kind: List`. */
export type Layout = 'yaml-per-object' | 'yaml-multi-doc' | 'yaml-list' | 'json-per-object' | 'json-list';
export const LAYOUTS: Layout[] = ['yaml-per-object', 'yaml-multi-doc', 'yaml-list', 'json-per-object', 'json-list'];

function uid(n: number): string {
  const h = (n * 2654435761) >>> 0;
  return `${h.toString(16).padStart(8, '0')}-4b1d-4c2a-9e5f-${n.toString(16).padStart(12, '0')}`;
}

const STAMP = '2026-11-30T08:15:42Z';

export function namespaceObject(ns: NamespaceInfo, n: number): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: ns.name,
      uid: uid(n),
      resourceVersion: String(1000 + n),
      creationTimestamp: STAMP,
      labels: { ...ns.labels, 'kubernetes.io/metadata.name': ns.name },
    },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
}

export function podObject(p: PodInfo, n: number): K8sObject {
  const hash = p.labels['pod-template-hash'] ?? 'abc';
  const app = p.labels.app ?? 'app';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: p.name,
      namespace: p.namespace,
      uid: uid(100_000 + n),
      resourceVersion: String(200_000 + n),
      creationTimestamp: STAMP,
      generateName: `${app}-${hash}-`,
      labels: p.labels,
      annotations: {
        'kubectl.kubernetes.io/restartedAt': STAMP,
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '9090',
      },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-${hash}`, uid: uid(900_000 + n), controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      nodeName: p.nodeName,
      hostNetwork: p.hostNetwork || undefined,
      serviceAccountName: 'default',
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
      terminationGracePeriodSeconds: 30,
      securityContext: { runAsNonRoot: true, runAsUser: 10001, fsGroup: 10001 },
      containers: [
        {
          name: app,
          image: `registry.example.com/team/${app}:1.24.3`,
          imagePullPolicy: 'IfNotPresent',
          args: ['--listen=:8080', '--metrics=:9090', '--log-format=json'],
          env: [
            { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
            { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } },
            { name: 'GOMAXPROCS', value: '2' },
          ],
          ports: p.ports.map((port) => ({ name: port.name, containerPort: port.containerPort, protocol: port.protocol })),
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } },
          readinessProbe: { httpGet: { path: '/healthz', port: 8080, scheme: 'HTTP' }, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 },
          livenessProbe: { httpGet: { path: '/livez', port: 8080, scheme: 'HTTP' }, initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 },
          volumeMounts: [{ name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
        },
      ],
      volumes: [
        {
          name: 'kube-api-access',
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
            ],
          },
        },
      ],
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
    },
    status: {
      phase: p.phase,
      hostIP: '198.18.255.1',
      podIP: p.ips[0],
      podIPs: p.ips.map((ip) => ({ ip })),
      startTime: STAMP,
      qosClass: 'Burstable',
      conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: STAMP })),
      containerStatuses: [
        {
          name: app,
          ready: true,
          started: true,
          restartCount: 0,
          image: `registry.example.com/team/${app}:1.24.3`,
          imageID: `registry.example.com/team/${app}@sha256:${'9f'.repeat(32)}`,
          containerID: `containerd://${'5c'.repeat(32)}`,
          state: { running: { startedAt: STAMP } },
          lastState: {},
        },
      ],
    },
  };
}

function selector(s: LabelSelector | undefined): K8sObject | undefined {
  return s ? { ...(s.matchLabels ? { matchLabels: s.matchLabels } : {}), ...(s.matchExpressions ? { matchExpressions: s.matchExpressions } : {}) } : undefined;
}

function peer(p: PeerInfo): K8sObject {
  return { ...(p.podSelector ? { podSelector: selector(p.podSelector) } : {}), ...(p.namespaceSelector ? { namespaceSelector: selector(p.namespaceSelector) } : {}), ...(p.ipBlock ? { ipBlock: p.ipBlock } : {}) };
}

function rule(r: PolicyRuleInfo, peersField: 'from' | 'to'): K8sObject {
  return { ...(r.ports ? { ports: r.ports } : {}), ...(r.peers ? { [peersField]: r.peers.map(peer) } : {}) };
}

export function policyObject(p: NetworkPolicyInfo, n: number): K8sObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: p.name, namespace: p.namespace, uid: uid(500_000 + n), resourceVersion: String(500_000 + n), generation: 1, creationTimestamp: STAMP },
    spec: {
      podSelector: selector(p.podSelector),
      ...(p.policyTypes ? { policyTypes: p.policyTypes } : {}),
      ...(p.ingress ? { ingress: p.ingress.map((r) => rule(r, 'from')) } : {}),
      ...(p.egress ? { egress: p.egress.map((r) => rule(r, 'to')) } : {}),
    },
  };
}

/** Every object of the cluster, namespaces first. JSON round trip drops the undefined fields. */
export function clusterObjects(c: Cluster): K8sObject[] {
  const objs = [...c.namespaces.map(namespaceObject), ...c.pods.map(podObject), ...c.policies.map(policyObject)];
  return JSON.parse(JSON.stringify(objs)) as K8sObject[];
}

/** The fields an API server's managedFields entry lists for `value` (fieldsV1): every object key
 * as `f:key`, list items of objects by their `name` (else as one `.`), leaves as `{}`. */
function fieldsV1(value: unknown): K8sObject {
  if (Array.isArray(value)) {
    const out: K8sObject = {};
    for (const item of value) {
      const name = (item as { name?: unknown } | null)?.name;
      out[typeof name === 'string' ? `k:{"name":"${name}"}` : '.'] = { '.': {}, ...fieldsV1(item) };
    }
    return out;
  }
  if (typeof value !== 'object' || value === null) return {};
  const out: K8sObject = {};
  for (const [k, v] of Object.entries(value)) out[`f:${k}`] = fieldsV1(v);
  return out;
}

/** An object as a real API server returns it to a LIST or watch: managedFields of the three
 * writers a workload has (its controller, the scheduler's binding, the kubelet's status), and a
 * Pod's labels as charts and operators set them (14 in all). */
export function servedObject(o: K8sObject): K8sObject {
  const metadata = { ...(o.metadata as K8sObject) };
  const { status, ...rest } = o;
  const entry = (manager: string, operation: string, fields: unknown, subresource?: string) => ({
    manager,
    operation,
    apiVersion: o.apiVersion,
    time: STAMP,
    fieldsType: 'FieldsV1',
    fieldsV1: fieldsV1(fields),
    ...(subresource ? { subresource } : {}),
  });
  if (o.kind === 'Pod') {
    const labels = metadata.labels as Record<string, string>;
    const app = labels.app ?? 'app';
    metadata.labels = {
      ...labels,
      'app.kubernetes.io/name': app,
      'app.kubernetes.io/instance': `${app}-prod`,
      'app.kubernetes.io/version': '1.24.3',
      'app.kubernetes.io/component': labels.tier ?? 'server',
      'app.kubernetes.io/part-of': 'shop',
      'app.kubernetes.io/managed-by': 'Helm',
      'helm.sh/chart': `${app}-4.2.0`,
      version: 'v1',
      environment: 'production',
      'cost-center': 'cc-1042',
      owner: 'team-payments',
    };
  }
  metadata.managedFields = [
    entry(o.kind === 'Pod' ? 'kube-controller-manager' : 'kubectl-client-side-apply', 'Update', { metadata: { ...metadata, managedFields: undefined }, spec: (rest as { spec?: unknown }).spec }),
    ...(status ? [entry(o.kind === 'Pod' ? 'kubelet' : 'kube-controller-manager', 'Update', { status }, 'status')] : []),
  ];
  return JSON.parse(JSON.stringify({ ...rest, metadata, ...(status ? { status } : {}) })) as K8sObject;
}

function fileName(o: K8sObject): string {
  const m = o.metadata as { name: string; namespace?: string };
  return `${String(o.kind).toLowerCase()}-${m.namespace ? `${m.namespace}-` : ''}${m.name}`;
}

/** Writes objs into dir in the given layout; multi-document and List files group objects by
 * namespace (about 55 objects a file, as `kubectl get -o yaml` per namespace gives). */
export function writeLayout(dir: string, objs: K8sObject[], layout: Layout): { files: number; bytes: number } {
  mkdirSync(dir, { recursive: true });
  let files = 0;
  let bytes = 0;
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    files++;
    bytes += Buffer.byteLength(text);
  };
  if (layout === 'yaml-per-object' || layout === 'json-per-object') {
    for (const o of objs) write(`${fileName(o)}.${layout === 'yaml-per-object' ? 'yaml' : 'json'}`, layout === 'yaml-per-object' ? stringify(o) : JSON.stringify(o, null, 2));
    return { files, bytes };
  }
  const groups = new Map<string, K8sObject[]>();
  for (const o of objs) {
    const m = o.metadata as { name: string; namespace?: string };
    const group = m.namespace ?? 'cluster';
    const items = groups.get(group);
    if (items) items.push(o);
    else groups.set(group, [o]);
  }
  for (const [group, items] of groups) {
    if (layout === 'yaml-multi-doc') write(`${group}.yaml`, items.map((o) => stringify(o)).join('---\n'));
    else if (layout === 'yaml-list') write(`${group}.yaml`, stringify({ apiVersion: 'v1', kind: 'List', items }));
    else write(`${group}.json`, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }, null, 2));
  }
  return { files, bytes };
}
