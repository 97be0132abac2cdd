/** The test API server's custom resources and faults, through client-node as the agent uses them:
 * create -> 409 AlreadyExists, update with a stale resourceVersion -> 409, delete with a failed uid
 * precondition -> 409, and faults: 500 (nothing done), reset before (nothing done), reply dropped
 * after commit (done), delays. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiError, ClientNodeApi, loadKubeConfig } from '../../src/ipam/api';
import { TestApiServer } from '../helpers/apiserver';
import { startIpamApiServer } from './cluster';

let server: TestApiServer;
let api: ClientNodeApi;

before(async () => {
  server = await startIpamApiServer();
  api = new ClientNodeApi({ kubeConfig: loadKubeConfig(server.writeKubeconfig()), timeoutMs: 2_000 });
});
after(async () => server.close());

const block = (name: string, node = 'n') => ({ apiVersion: 'ipam.nfkube.io/v1alpha1', kind: 'IPBlock', metadata: { name }, spec: { pool: 'p', cidr: '198.18.0.0/26', node } });

test('custom resources: create, get, list, 409 AlreadyExists, 409 on a stale update, uid-checked delete', async () => {
  const created = await api.create('ipblocks', block('b1'));
  assert.ok(created.metadata.uid && created.metadata.resourceVersion);
  await assert.rejects(api.create('ipblocks', block('b1', 'other')), (e: unknown) => e instanceof ApiError && e.code === 409 && !e.unknownOutcome);
  assert.equal((await api.get('ipblocks', 'b1'))?.spec.node, 'n');
  assert.equal(await api.get('ipblocks', 'missing'), undefined);
  const updated = await api.replace('ipblocks', { ...created, spec: { ...created.spec, lendFrom: 10 } });
  await assert.rejects(api.replace('ipblocks', { ...created, spec: { ...created.spec, lendFrom: 5 } }), (e: unknown) => e instanceof ApiError && e.code === 409);
  assert.equal((await api.list('ipblocks')).find((b) => b.metadata.name === 'b1')?.spec.lendFrom, 10);
  await assert.rejects(api.remove('ipblocks', 'b1', 'not-the-uid'), (e: unknown) => e instanceof ApiError && e.code === 409);
  await api.remove('ipblocks', 'b1', updated.metadata.uid);
  assert.equal(await api.get('ipblocks', 'b1'), undefined);
  await api.remove('ipblocks', 'b1', updated.metadata.uid); // already gone: not an error
});

test('faults: a 500 or a reset before does nothing; a dropped reply after commit did it; delays delay', async () => {
  server.faults = (ctx) => (ctx.method === 'POST' ? { status: 500 } : undefined);
  await assert.rejects(api.create('ipblocks', block('f1')), (e: unknown) => e instanceof ApiError && e.code === 500 && e.unknownOutcome);
  assert.equal(server.objects('ipblocks').some((b) => b.metadata.name === 'f1'), false);
  server.faults = (ctx) => (ctx.method === 'POST' ? { resetBefore: true } : undefined);
  await assert.rejects(api.create('ipblocks', block('f2')), (e: unknown) => e instanceof ApiError && e.code === undefined && e.unknownOutcome);
  assert.equal(server.objects('ipblocks').some((b) => b.metadata.name === 'f2'), false);
  server.faults = (ctx) => (ctx.method === 'POST' ? { dropReply: true } : undefined);
  await assert.rejects(api.create('ipblocks', block('f3')), (e: unknown) => e instanceof ApiError && e.unknownOutcome);
  assert.equal(server.objects('ipblocks').some((b) => b.metadata.name === 'f3'), true, 'committed although the reply was lost');
  server.faults = (ctx) => (ctx.method === 'GET' ? { delayMs: 3_000 } : undefined);
  await assert.rejects(api.get('ipblocks', 'f3'), (e: unknown) => e instanceof ApiError && e.unknownOutcome && /no answer within 2000 ms/.test(e.message));
  server.faults = undefined;
  assert.ok((server.writes.get('POST ipblocks') ?? 0) >= 3);
});
