/** A kubeconfig can make @kubernetes/client-node execute a credential program (`exec:` plugins,
 * an auth provider's `cmd-path`) with the agent's privileges: the agent names each in a warning. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { credentialCommands, loadKubeConfig } from '../../src/k8s/informer-source';

const CLUSTER = `apiVersion: v1
kind: Config
clusters:
  - name: c
    cluster: {server: "https://198.18.0.1:6443", insecure-skip-tls-verify: true}
`;

function kubeconfig(user: string): string {
  return `${CLUSTER}contexts:
  - name: ctx
    context: {cluster: c, user: u}
current-context: ctx
users:
  - name: u
    user:
${user}`;
}

const EXEC = kubeconfig(`      exec:
        apiVersion: client.authentication.k8s.io/v1
        command: /usr/local/bin/aws-iam-authenticator
        args: [token, -i, cluster]
        interactiveMode: Never
`);
const CMD_PATH = kubeconfig(`      auth-provider:
        name: gcp
        config: {cmd-path: /usr/lib/google-cloud-sdk/bin/gcloud, cmd-args: config config-helper}
`);
const TOKEN = kubeconfig(`      token: abc
`);

function withFile<T>(text: string, fn: (path: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-kubeconfig-'));
  try {
    writeFileSync(join(dir, 'config'), text);
    return fn(join(dir, 'config'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('credential programs of the current user are found: exec plugins and auth-provider cmd-path; a token has none', () => {
  withFile(EXEC, (p) => assert.deepEqual(credentialCommands(loadKubeConfig(p)), [{ user: 'u', command: '/usr/local/bin/aws-iam-authenticator', via: 'exec' }]));
  withFile(CMD_PATH, (p) => assert.deepEqual(credentialCommands(loadKubeConfig(p)), [{ user: 'u', command: '/usr/lib/google-cloud-sdk/bin/gcloud', via: 'auth-provider cmd-path' }]));
  withFile(TOKEN, (p) => assert.deepEqual(credentialCommands(loadKubeConfig(p)), []));
});

test('the source logs one pino warning naming the program when it is created; none for a token', () => {
  const script = (path: string) => `
    const { InformerSource, loadKubeConfig } = require(${JSON.stringify(join(__dirname, '../../src/k8s/informer-source'))});
    new InformerSource({ kubeConfig: loadKubeConfig(${JSON.stringify(path)}), onChange() {}, onError() {} });`;
  const run = (text: string) => withFile(text, (p) => spawnSync(process.execPath, ['-e', script(p)], { encoding: 'utf8', timeout: 60_000 }));
  const r = run(EXEC);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stderr.trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines.length, 1);
  assert.equal(lines[0].level, 'warn');
  assert.equal(lines[0].command, '/usr/local/bin/aws-iam-authenticator');
  assert.match(lines[0].msg, /runs the credential program \/usr\/local\/bin\/aws-iam-authenticator \(exec\): @kubernetes\/client-node executes it with this agent's privileges/);
  const quiet = run(TOKEN);
  assert.equal(quiet.status, 0, quiet.stderr);
  assert.equal(quiet.stderr, '');
});
