/** SCTP services. This kernel may lack SCTP sockets (no sctp module), so what can be observed is
 * observed without them: the ruleset the proxy commits for an SCTP ClusterIP and NodePort, as
 * `nft` lists it (the oracle), and crafted SCTP INIT packets sent from the external client by a
 * raw socket (sctp-raw.py): the endpoint pod receives them at its own address and target port,
 * masqueraded, and the node's conntrack table shows the DNAT. IPv4 and IPv6. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { node, port, service, slice, snapshotOf } from './fixtures';
import { dual, ProxyAgent, startProxyAgent } from './packet-fixtures';
import { CLIENT_V4, CLIENT_V6, createServiceNet, NODE_V4, NODE_V6, POD_CIDRS, podV4, podV6, ServiceNet } from './service-net';

const T = { timeout: 60_000 };
const N1 = 'node-1';
// dist/test/proxy -> the checkout's test/proxy, where the script lives.
const SCRIPT = join(__dirname, '..', '..', '..', 'test', 'proxy', 'sctp-raw.py');
const SIG = 3868;
const NODE_PORT = 30868;

const SERVICES = [service('x', 'diameter', { type: 'NodePort', clusterIPs: dual(30), ports: [port('sig', 'SCTP', SIG, { targetPort: 'sig', nodePort: NODE_PORT })] })];
const ports = [{ name: 'sig', protocol: 'SCTP' as const, port: SIG }];
const SLICES = [
  slice('x', 'diameter-4', 'diameter', { ports, endpoints: [{ address: podV4(0), ready: true, serving: true, terminating: false, nodeName: N1 }] }),
  slice('x', 'diameter-6', 'diameter', { addressType: 'IPv6', ports, endpoints: [{ address: podV6(0), ready: true, serving: true, terminating: false, nodeName: N1 }] }),
];
const NODES = [node(N1, { addresses: [{ type: 'InternalIP', address: NODE_V4 }, { type: 'InternalIP', address: NODE_V6 }], podCIDRs: POD_CIDRS })];

describe('SCTP services', () => {
  let net: ServiceNet;
  let proxy: ProxyAgent | undefined;

  before(async () => {
    net = await createServiceNet(1, { tcp: [], udp: [] });
    proxy = await startProxyAgent(net.nodeNsPath, { nodeName: N1, clusterCIDRs: POD_CIDRS }, snapshotOf(SERVICES, SLICES, NODES));
  });

  after(async () => {
    await proxy?.stop();
    net?.close();
  });

  /** Sends one INIT from the client to dst:dport and returns what the pod received
   * (`SRC SPORT DPORT`), or `timeout`. */
  async function sendToPod(fam: 'v4' | 'v6', dst: string, dport: number, sport: number): Promise<string> {
    const receiver = spawn('nsenter', [`--net=${net.pods[0].nsPath}`, 'python3', SCRIPT, 'recv', fam, '3'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const lines = createInterface({ input: receiver.stdout })[Symbol.asyncIterator]();
    try {
      assert.equal((await lines.next()).value, 'ready');
      net.runInClient(['python3', SCRIPT, 'send', dst, String(dport), String(sport)]);
      return (await lines.next()).value as string;
    } finally {
      receiver.kill('SIGKILL');
    }
  }

  test('the ruleset for an SCTP ClusterIP and NodePort, as nft lists it', T, () => {
    const table = net.run(['nft', 'list', 'table', 'inet', 'nfkube-proxy']);
    const name = 'x/diameter/sctp/sig';
    assert.match(table, new RegExp(`198\\.19\\.0\\.30 \\. sctp \\. ${SIG} : goto service-v4-${name}`), table);
    assert.match(table, new RegExp(`2001:db8:f::1e \\. sctp \\. ${SIG} : goto service-v6-${name}`), table);
    assert.match(table, new RegExp(`sctp \\. ${NODE_PORT} : goto external-v4-${name}`), table);
    assert.match(table, new RegExp(`sctp \\. ${NODE_PORT} : goto external-v6-${name}`), table);
    // The endpoint address and port are drawn from the block's map (src/proxy/render.ts).
    for (const [fam, nat, pod] of [['v4', 'ip', podV4(0)], ['v6', 'ip6', podV6(0)]] as const) {
      const draw = 'numgen random mod 65536 offset \\d+';
      const dnat = new RegExp(`meta l4proto sctp dnat ${nat} to ${draw} map @endpoint-draws-${fam}-(\\d+)\\n`).exec(table);
      assert.ok(dnat, table);
      const escaped = pod.replace(/\./g, '\\.');
      assert.match(table, new RegExp(`map endpoint-draws-${fam}-${dnat[1]} \\{[^}]*elements = \\{ \\d+-\\d+ : ${escaped} \\. ${SIG} \\}`), table);
    }
  });

  for (const fam of ['v4', 'v6'] as const) {
    const nodeIP = fam === 'v4' ? NODE_V4 : NODE_V6;
    const client = fam === 'v4' ? CLIENT_V4 : CLIENT_V6;
    const pod = fam === 'v4' ? podV4(0) : podV6(0);
    const vip = dual(30)[fam === 'v4' ? 0 : 1];

    for (const [what, dst, dport, sport] of [['ClusterIP', vip, SIG, 40001], ['NodePort', nodeIP, NODE_PORT, 40002]] as const) {
      test(`${fam}: an SCTP INIT to the ${what} reaches the endpoint, DNATed and masqueraded (conntrack shows it)`, T, async () => {
        const got = await sendToPod(fam, dst, dport, sport);
        // From outside the cluster: masqueraded (the source port may be remapped, fully random).
        assert.match(got, new RegExp(`^${nodeIP} \\d+ ${SIG}$`), got);
        const entries = net.run(['conntrack', '-L', '-p', 'sctp', '--orig-src', client, '--orig-dst', dst]);
        const entry = entries.split('\n').find((l) => l.includes(`sport=${sport} dport=${dport} `));
        assert.ok(entry, entries);
        assert.match(entry, new RegExp(`src=${pod} dst=${nodeIP} sport=${SIG} `), entry);
      });
    }
  }

  test("without the proxy's table the same INIT never reaches the pod (the DNAT above is the proxy's)", T, async () => {
    await proxy?.stop();
    proxy = undefined;
    net.run(['nft', 'delete', 'table', 'inet', 'nfkube-proxy']);
    assert.equal(await sendToPod('v4', dual(30)[0], SIG, 40003), 'timeout');
  });
});
