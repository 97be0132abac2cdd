/** Many ClusterNetworkPolicies in one tier commit: the kernel refuses a chain path deeper than 16
 * (EMLINK), so the tier may not be a list of policy chains linked one to the next. 40 Admin and
 * 20 Baseline policies, with Pass rules among them, are committed by the node in a fresh netns,
 * read back equal to the desired table, and the kernel interpreter agrees with the model on flows
 * that only the last policies of each tier decide. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runNode } from '../../src/node/run';
import { compareTable, desiredComponents, policyOf } from '../../src/node/desired';
import { enabledFeatures, kindsOf } from '../../src/node/enabled';
import { ManifestSource } from '../../src/k8s/manifest-source';
import { listTable } from '../../src/nft/readback';
import { explainFlow } from '../../src/explain/explain';
import { explainTiers } from '../../src/explain/tier-verdict';
import type { FlowPacket } from '../../src/explain/flow';
import type { OptionValues } from '../../src/options/table';
import { withSandbox } from '../helpers/netns';
import { namespace, NODE, pod } from '../agent/fixtures';

const ADMIN = 40;
const BASELINE = 20;

function cnp(name: string, tier: 'Admin' | 'Baseline', priority: number, ingress: object[]) {
  return { apiVersion: 'policy.networking.k8s.io/v1alpha2', kind: 'ClusterNetworkPolicy', metadata: { name }, spec: { tier, priority, subject: { namespaces: {} }, ingress } };
}

const port = (n: number) => ({ destinationPort: { number: n } });

function manifests(): string {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-cnp-many-'));
  const objects: object[] = [namespace('a'), namespace('b'), pod('a', 'client', '198.18.1.2', { app: 'client' }), pod('b', 'server', '198.18.1.3', { app: 'server' })];
  // Admin policy i denies TCP port 1000+i; every tenth passes its port on to the next tiers first.
  for (let i = 0; i < ADMIN; i++) {
    const rules = [{ action: 'Deny', from: [{ namespaces: {} }], protocols: [{ tcp: port(1000 + i) }] }];
    if (i % 10 === 5) rules.unshift({ action: 'Pass', from: [{ namespaces: {} }], protocols: [{ tcp: port(3000 + i) }] } as never);
    objects.push(cnp(`admin-${String(i).padStart(2, '0')}`, 'Admin', i, rules));
  }
  // Baseline policy i denies TCP port 2000+i; the last one denies the ports Admin passed.
  for (let i = 0; i < BASELINE; i++) objects.push(cnp(`base-${String(i).padStart(2, '0')}`, 'Baseline', i, [{ action: 'Deny', from: [{ namespaces: {} }], protocols: [{ tcp: port(i === BASELINE - 1 ? 3035 : 2000 + i) }] }]));
  writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  return dir;
}

test(`${ADMIN} Admin and ${BASELINE} Baseline ClusterNetworkPolicies commit, read back as desired, and decide as the model says`, async () => {
  const dir = manifests();
  try {
    await withSandbox(async (sb) => {
      const values: OptionValues = { manifests: dir, once: true, 'node-name': NODE, 'log-level': 'silent', 'metrics-addr': '' };
      const closers: (() => unknown)[] = [];
      try {
        assert.equal(await runNode(values, { defer: (c) => closers.push(c), netns: sb.netns }), 0);
      } finally {
        for (const close of closers.reverse()) await close();
      }
      const enabled = enabledFeatures(values);
      const source = new ManifestSource({ dir, kinds: kindsOf(enabled), onChange: () => undefined, onError: (e) => assert.fail(e.message) });
      const snapshot = await source.start();
      await source.stop();
      const [component] = desiredComponents(enabled, snapshot, NODE, values);
      assert.equal((await compareTable(sb.socket, component.desired)).plan.action, 'noop');
      const policyChains = [...component.desired.chains.keys()].filter((n) => /^cnp_c[0-9a-f]+_in$/.test(n));
      assert.equal(policyChains.length, ADMIN + BASELINE);

      const policy = policyOf([component])!;
      const back = await listTable(sb.socket, 'inet', 'nfkube');
      const tiers = explainTiers(snapshot, NODE, policy.modes);
      const flow = (dport: number): FlowPacket => ({ family: 'ipv4', src: '198.18.1.2', dst: '198.18.1.3', protocol: 'tcp', dport, sport: 40000 });
      const cases: [number, boolean][] = [
        [1000 + ADMIN - 1, false], // the last Admin policy's Deny
        [2000 + BASELINE - 2, false], // a late Baseline Deny
        [3035, false], // passed by admin-35, denied by the last Baseline policy
        [3015, true], // passed by admin-15, no Baseline rule: default allow
        [999, true], // no rule at all
      ];
      for (const [dport, allowed] of cases) {
        const e = explainFlow(policy.state(), policy.modes, back, flow(dport), tiers);
        assert.ok(e.agree, `port ${dport}: model and kernel agree`);
        assert.equal(e.kernel?.allowed, allowed, `port ${dport}`);
      }
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
