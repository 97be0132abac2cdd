/** ClusterNetworkPolicy's tiers with real packets on the routed topology (namespaces x, y, z
 * labelled ns=<name>, pods a, b, c labelled pod=<name>, dual-stack): each case's manifests go to
 * `nfkube agent --once` in the node's namespace, then the whole matrix is probed, IPv4 and IPv6,
 * TCP and UDP. Expected reachability is written from the v1alpha2 semantics: Admin tier, then
 * NetworkPolicy for the pods it isolates, then Baseline tier, then allow. */
import type { PolicyCase } from './cases';
import { netpol, type K8sObject } from './manifests';
import { conformanceSuite } from './run-cases';

function cnp(name: string, tier: 'Admin' | 'Baseline', priority: number, subject: K8sObject, rules: { ingress?: K8sObject[]; egress?: K8sObject[] }): K8sObject {
  return { apiVersion: 'policy.networking.k8s.io/v1alpha2', kind: 'ClusterNetworkPolicy', metadata: { name }, spec: { tier, priority, subject, ...rules } };
}
const nsSubject = (name: string): K8sObject => ({ namespaces: { matchLabels: { ns: name } } });
const nsPeer = (name: string): K8sObject => ({ namespaces: { matchLabels: { ns: name } } });
const ALL_NAMESPACES: K8sObject = { namespaces: {} };

const CASES: PolicyCase[] = [
  {
    name: 'Admin Deny egress to a namespace on tcp/80 only',
    policies: [cnp('deny-x-to-y-80', 'Admin', 10, nsSubject('x'), { egress: [{ name: 'no-y-80', action: 'Deny', to: [nsPeer('y')], protocols: [{ tcp: { destinationPort: { number: 80 } } }] }] })],
    expect: (r) => {
      r.egress.isolate('x/*', { protocol: 'tcp', ports: [80] });
      r.egress.allow('x/*', ['x/*', 'z/*'], { protocol: 'tcp', ports: [80] });
    },
  },
  {
    name: 'Admin Accept wins over a NetworkPolicy that denies',
    policies: [
      netpol('y', 'deny-all-in', { podSelector: {}, policyTypes: ['Ingress'] }),
      cnp('accept-x-into-y', 'Admin', 5, nsSubject('y'), { ingress: [{ action: 'Accept', from: [nsPeer('x')] }] }),
    ],
    expect: (r) => {
      r.ingress.isolate('y/*');
      r.ingress.allow('x/*', 'y/*');
    },
  },
  {
    name: 'Admin Pass hands over to NetworkPolicy; an Admin Deny of a later priority is skipped, not for other traffic',
    policies: [
      netpol('y', 'from-x-80', { podSelector: {}, policyTypes: ['Ingress'], ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'x' } } }], ports: [{ protocol: 'TCP', port: 80 }] }] }),
      cnp('pass-x', 'Admin', 10, nsSubject('y'), { ingress: [{ action: 'Pass', from: [nsPeer('x')], protocols: [{ tcp: { destinationPort: { range: { start: 79, end: 80 } } } }] }] }),
      cnp('deny-all-into-y', 'Admin', 20, nsSubject('y'), { ingress: [{ action: 'Deny', from: [ALL_NAMESPACES] }] }),
    ],
    expect: (r) => {
      r.ingress.isolate('y/*');
      r.ingress.allow('x/*', 'y/*', { protocol: 'tcp', ports: [80] });
    },
  },
  {
    name: 'Baseline Deny applies only to pods NetworkPolicy does not isolate',
    policies: [
      netpol('z', 'from-x', { podSelector: {}, policyTypes: ['Ingress'], ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'x' } } }] }] }),
      cnp('default-isolation', 'Baseline', 100, ALL_NAMESPACES, { ingress: [{ name: 'deny-everything', action: 'Deny', from: [ALL_NAMESPACES] }] }),
    ],
    expect: (r) => {
      r.ingress.isolate('*');
      r.ingress.allow('x/*', 'z/*');
    },
  },
  {
    name: 'equal priorities: the policy whose name sorts first decides; a later priority comes after',
    policies: [
      cnp('b-deny-y', 'Admin', 5, nsSubject('z'), { ingress: [{ action: 'Deny', from: [nsPeer('y')] }] }),
      cnp('a-accept-y', 'Admin', 5, nsSubject('z'), { ingress: [{ action: 'Accept', from: [nsPeer('y')] }] }),
      cnp('c-deny-all', 'Admin', 6, nsSubject('z'), { ingress: [{ action: 'Deny', from: [ALL_NAMESPACES] }] }),
    ],
    expect: (r) => {
      r.ingress.isolate('z/*');
      r.ingress.allow('y/*', 'z/*');
    },
  },
  {
    name: 'networks peers (both families) and a named destination port',
    policies: [
      cnp('deny-y-a', 'Admin', 1, nsSubject('x'), { egress: [{ action: 'Deny', to: [{ networks: ['198.18.0.20/32', '2001:db8::20/128'] }] }] }),
      cnp('deny-named', 'Baseline', 1, nsSubject('z'), { ingress: [{ action: 'Deny', from: [nsPeer('x')], protocols: [{ destinationNamedPort: 'serve-81-tcp' }] }] }),
    ],
    expect: (r) => {
      r.egress.isolate('x/*');
      r.egress.allow('x/*', ['x/*', 'y/b', 'y/c', 'z/*']);
      r.ingress.isolate('z/*', { protocol: 'tcp', ports: [81] });
      r.ingress.allow(['y/*', 'z/*'], 'z/*', { protocol: 'tcp', ports: [81] });
    },
  },
  {
    name: 'Admin Pass skips to the Baseline tier when NetworkPolicy does not isolate',
    policies: [
      cnp('pass-all', 'Admin', 1, nsSubject('x'), { egress: [{ action: 'Pass', to: [nsPeer('y')] }] }),
      cnp('deny-all-admin', 'Admin', 2, nsSubject('x'), { egress: [{ action: 'Deny', to: [nsPeer('y')] }] }),
      cnp('baseline-deny-udp', 'Baseline', 1, nsSubject('x'), { egress: [{ action: 'Deny', to: [nsPeer('y')], protocols: [{ udp: {} }] }] }),
    ],
    expect: (r) => {
      r.egress.isolate('x/*', { protocol: 'udp' });
      r.egress.allow('x/*', ['x/*', 'z/*'], { protocol: 'udp' });
    },
  },
];

conformanceSuite('ClusterNetworkPolicy tiers (routed pods)', 'routed', CASES);
