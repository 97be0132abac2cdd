import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentMetrics, PolicyCounterRow } from '../../src/observe/metrics';
import { register as globalRegistry } from 'prom-client';

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

test('every documented metric is exposed, on a private registry', async () => {
  const m = new AgentMetrics();
  const { contentType, body } = await m.expose();
  assert.match(contentType, /^text\/plain/);
  for (const name of [
    'nfkube_sync_duration_seconds',
    'nfkube_kernel_messages_total',
    'nfkube_kernel_batches_total',
    'nfkube_transaction_failures_total',
    'nfkube_drift_repairs_total',
    'nfkube_pods',
    'nfkube_policies',
    'nfkube_sets',
    'nfkube_set_elements',
    'nfkube_event_queue_depth',
    'nfkube_last_successful_sync_timestamp_seconds',
    'nfkube_policy_packets_total',
    'nfkube_policy_bytes_total',
    'nfkube_policy_counter_read_failures_total',
    'nfkube_build_info',
    'nfkube_network_programming_duration_seconds',
    'nfkube_event_to_commit_duration_seconds',
    'process_resident_memory_bytes',
    'process_cpu_seconds_total',
    'nodejs_eventloop_lag_seconds',
  ]) {
    assert.match(body, new RegExp(`^# TYPE ${name} `, 'm'), name);
  }
  assert.equal(globalRegistry.getSingleMetric('nfkube_pods'), undefined, 'global registry untouched');
  // A second instance must not collide (a private registry per agent).
  assert.doesNotThrow(() => new AgentMetrics());
});

test('sync, batch, failure, drift, gauges and last-sync values appear as recorded', async () => {
  const m = new AgentMetrics({ processMetrics: false });
  m.observeSync('full', 0.2);
  m.observeSync('incremental', 0.004);
  m.observeSync('incremental', 0.006);
  m.recordBatch('nftables', ['NFT_MSG_NEWTABLE', 'NFT_MSG_NEWSETELEM', 'NFT_MSG_NEWSETELEM']);
  m.recordBatch('nftables', ['NFT_MSG_DELSETELEM']);
  m.recordBatch('ipset', ['IPSET_CMD_ADD']);
  m.recordTransactionFailure('ERESTART');
  m.recordTransactionFailure('ERESTART');
  m.recordDriftRepairs('rule', 3);
  m.recordDriftRepairs('element');
  m.setObjectCounts({ pods: 12, policies: 4, sets: 7, elements: 250 });
  m.setObjectCounts({ pods: 13 });
  m.setEventQueueDepth(5);
  m.recordSuccessfulSync(new Date(1_700_000_000_500));
  const body = (await m.expose()).body;
  assert.equal(sample(body, 'nfkube_sync_duration_seconds_count', 'kind="incremental"'), 2);
  assert.equal(sample(body, 'nfkube_sync_duration_seconds_count', 'kind="full"'), 1);
  assert.equal(sample(body, 'nfkube_sync_duration_seconds_bucket', 'le="0.005",kind="incremental"'), 1);
  assert.equal(sample(body, 'nfkube_kernel_batches_total', 'kind="nftables"'), 2);
  assert.equal(sample(body, 'nfkube_kernel_batches_total', 'kind="ipset"'), 1);
  assert.equal(sample(body, 'nfkube_kernel_messages_total', 'kind="NFT_MSG_NEWSETELEM"'), 2);
  assert.equal(sample(body, 'nfkube_kernel_messages_total', 'kind="NFT_MSG_DELSETELEM"'), 1);
  assert.equal(sample(body, 'nfkube_kernel_messages_total', 'kind="IPSET_CMD_ADD"'), 1);
  assert.equal(sample(body, 'nfkube_transaction_failures_total', 'errno="ERESTART"'), 2);
  assert.equal(sample(body, 'nfkube_drift_repairs_total', 'kind="rule"'), 3);
  assert.equal(sample(body, 'nfkube_drift_repairs_total', 'kind="element"'), 1);
  assert.equal(sample(body, 'nfkube_pods'), 13);
  assert.equal(sample(body, 'nfkube_policies'), 4);
  assert.equal(sample(body, 'nfkube_sets'), 7);
  assert.equal(sample(body, 'nfkube_set_elements'), 250);
  assert.equal(sample(body, 'nfkube_event_queue_depth'), 5);
  assert.equal(sample(body, 'nfkube_last_successful_sync_timestamp_seconds'), 1_700_000_000.5);
  assert.equal(m.lastSuccessfulSyncMs(), 1_700_000_000_500);
});

test('policy counters are read from the callback once per scrape and follow its rows', async () => {
  const m = new AgentMetrics({ processMetrics: false });
  let reads = 0;
  let rows: PolicyCounterRow[] = [
    { policy: 'shop/allow-web', direction: 'ingress', verdict: 'accept', packets: 10n, bytes: 1500n },
    { policy: 'shop/web-0', direction: 'ingress', verdict: 'drop', packets: 3, bytes: 180 },
  ];
  m.setPolicyCounterReader(async () => {
    reads++;
    return rows;
  });
  let body = (await m.expose()).body;
  assert.equal(reads, 1, 'packets and bytes share one kernel read');
  const allow = 'policy="shop/allow-web",direction="ingress",verdict="accept"';
  assert.equal(sample(body, 'nfkube_policy_packets_total', allow), 10);
  assert.equal(sample(body, 'nfkube_policy_bytes_total', allow), 1500);
  assert.equal(sample(body, 'nfkube_policy_packets_total', 'policy="shop/web-0",direction="ingress",verdict="drop"'), 3);

  rows = [{ policy: 'shop/allow-web', direction: 'ingress', verdict: 'accept', packets: 25n, bytes: 3000n }];
  body = (await m.expose()).body;
  assert.equal(reads, 2);
  assert.equal(sample(body, 'nfkube_policy_packets_total', allow), 25, 'kernel value, not a sum of reads');
  assert.equal(sample(body, 'nfkube_policy_bytes_total', 'policy="shop/web-0",direction="ingress",verdict="drop"'), undefined, 'a deleted rule disappears');
});

test('a failing kernel read empties the policy counters, counts the failure and reports it', async () => {
  const m = new AgentMetrics({ processMetrics: false });
  const errors: unknown[] = [];
  m.setPolicyCounterReader(async () => {
    throw new Error('EPERM reading table');
  }, (err) => errors.push(err));
  const body = (await m.expose()).body;
  assert.equal(sample(body, 'nfkube_policy_counter_read_failures_total'), 1);
  assert.doesNotMatch(body, /^nfkube_policy_packets_total\{/m);
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /EPERM/);
});
