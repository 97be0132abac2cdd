/** A real Kubernetes control plane for the cluster tier: etcd, kube-apiserver (RBAC and Node
 * authorization, the default admission plugins plus NodeRestriction, certificates made by the
 * tier, ServiceAccount token signing) and kube-controller-manager (EndpointSlice, namespace,
 * ServiceAccount, token and garbage-collector controllers), built by
 * scripts/kube-control-plane.sh, all on loopback inside a network namespace made here. The test
 * process and the simulated nodes reach the apiserver through Unix-socket relays (relay.ts).
 * Everything (processes, namespace, files) is removed by close(), and at process exit when a test
 * failed before it could call close(). */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { KubeApi, waitFor, type Credentials } from './api';
import { makePki, type Pki } from './pki';

export const REPO_ROOT = resolve(__dirname, '..', '..', '..');

/** Fixed inside the control plane's own namespace, where nothing else listens. */
const ETCD_PORT = 2379;
const ETCD_PEER_PORT = 2380;
const APISERVER_PORT = 6443;
/** The apiserver's advertised address (the `kubernetes` Service's endpoint): loopback is not a
 * valid endpoint, so it lives on the namespace's lo as a /32. */
export const APISERVER_ADDRESS = '198.19.254.1';
export const SERVICE_CIDRS = ['198.19.128.0/20', '2001:db8:ffff:5::/112'];
export const KUBERNETES_SERVICE_IPS = ['198.19.128.1', '2001:db8:ffff:5::1'];
const CONTROLLERS = ['endpointslice-controller', 'namespace-controller', 'serviceaccount-controller', 'serviceaccount-token-controller', 'garbage-collector-controller'];

/** The directory holding etcd, kube-apiserver and kube-controller-manager: $NFKUBE_KUBE_BIN (what
 * `npm run test:cluster` sets), else what the build script prints (it builds on first use). */
export function controlPlaneBinaries(): string {
  const fromEnv = process.env.NFKUBE_KUBE_BIN;
  if (fromEnv) return fromEnv;
  const out = execFileSync(join(REPO_ROOT, 'scripts', 'kube-control-plane.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').pop()!;
}

function ip(args: string[]): void {
  try {
    execFileSync('ip', args, { stdio: 'pipe' });
  } catch (err) {
    throw new Error(`ip ${args.join(' ')}: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`);
  }
}

/** A kubeconfig for `server` with the tier's CA and the given credentials; `tokenFile` makes the
 * client read the token from a file, as a rotated projected token is. */
export function kubeconfigText(server: string, caFile: string, user: Credentials | { tokenFile: string }): string {
  const userLines = 'token' in user ? [`    token: ${user.token}`]
    : 'tokenFile' in user ? [`    tokenFile: ${user.tokenFile}`]
    : [`    client-certificate: ${user.cert}`, `    client-key: ${user.key}`];
  return ['apiVersion: v1', 'kind: Config', 'clusters:', '- name: tier', '  cluster:', `    server: ${server}`, `    certificate-authority: ${caFile}`,
    'users:', '- name: tier', '  user:', ...userLines, 'contexts:', '- name: tier', '  context:', '    cluster: tier', '    user: tier',
    'current-context: tier', ''].join('\n');
}

/** Every request a ServiceAccount makes, at Metadata level: who, what, and the answer's code. */
const AUDIT_POLICY = ['apiVersion: audit.k8s.io/v1', 'kind: Policy', 'omitStages: [RequestReceived]', 'rules:',
  '- level: Metadata', '  userGroups: ["system:serviceaccounts"]', '- level: None', ''].join('\n');

export interface AuditEvent {
  user: { username: string };
  verb: string;
  requestURI: string;
  stage: string;
  requestReceivedTimestamp: string;
  responseStatus?: { code: number; message?: string };
}

interface Managed {
  name: string;
  args: string[];
  child?: ChildProcess;
  exited?: Promise<void>;
}

export class ControlPlane {
  readonly netns = `nfk-${randomBytes(3).toString('hex')}-cp`;
  readonly dir = mkdtempSync(join(tmpdir(), 'nfkube-cluster-'));
  /** The apiserver and etcd as Unix sockets, from any namespace. */
  readonly apiSocket = join(this.dir, 'apiserver.sock');
  readonly etcdSocket = join(this.dir, 'etcd.sock');
  /** One JSON line per request of a ServiceAccount (the apiserver's audit log). */
  readonly auditLog = join(this.dir, 'audit.log');
  readonly pki: Pki;
  readonly admin: KubeApi;
  private readonly bin: string;
  private readonly etcd: Managed;
  private readonly apiserver: Managed;
  private readonly controllerManager: Managed;
  private readonly relays: ChildProcess[] = [];
  private netnsMade = false;
  private readonly onExit = (): void => this.destroy();

  private constructor(bin: string) {
    this.bin = bin;
    process.once('exit', this.onExit);
    mkdirSync(join(this.dir, 'pki'));
    this.pki = makePki(join(this.dir, 'pki'), {
      dns: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
      ips: ['127.0.0.1', APISERVER_ADDRESS, ...KUBERNETES_SERVICE_IPS],
    });
    this.admin = new KubeApi(this.apiSocket, readFileSync(this.pki.caCert), this.pki.admin);
    const p = this.pki;
    this.etcd = {
      name: 'etcd',
      args: [join(bin, 'etcd'), '--name=cp', `--data-dir=${join(this.dir, 'etcd')}`, `--listen-client-urls=http://127.0.0.1:${ETCD_PORT}`,
        `--advertise-client-urls=http://127.0.0.1:${ETCD_PORT}`, `--listen-peer-urls=http://127.0.0.1:${ETCD_PEER_PORT}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${ETCD_PEER_PORT}`, `--initial-cluster=cp=http://127.0.0.1:${ETCD_PEER_PORT}`,
        '--log-level=warn', '--unsafe-no-fsync'],
    };
    this.apiserver = {
      name: 'kube-apiserver',
      args: [join(bin, 'kube-apiserver'), `--etcd-servers=http://127.0.0.1:${ETCD_PORT}`, '--bind-address=0.0.0.0', `--secure-port=${APISERVER_PORT}`,
        `--advertise-address=${APISERVER_ADDRESS}`, `--tls-cert-file=${p.servingCert}`, `--tls-private-key-file=${p.servingKey}`,
        `--client-ca-file=${p.caCert}`, '--authorization-mode=Node,RBAC', '--enable-admission-plugins=NodeRestriction',
        `--service-account-issuer=https://kubernetes.default.svc.cluster.local`, `--service-account-key-file=${p.serviceAccountPub}`,
        `--service-account-signing-key-file=${p.serviceAccountKey}`, `--service-cluster-ip-range=${SERVICE_CIDRS.join(',')}`,
        `--audit-policy-file=${this.writeFile('audit-policy.yaml', AUDIT_POLICY)}`, `--audit-log-path=${this.auditLog}`, '--audit-log-mode=blocking',
        '--profiling=false', '--v=1'],
    };
    this.controllerManager = {
      name: 'kube-controller-manager',
      args: [join(bin, 'kube-controller-manager'), `--kubeconfig=${this.writeFile('controller-manager.kubeconfig',
        kubeconfigText(`https://127.0.0.1:${APISERVER_PORT}`, p.caCert, p.controllerManager))}`,
        `--controllers=${CONTROLLERS.join(',')}`, `--service-account-private-key-file=${p.serviceAccountKey}`, `--root-ca-file=${p.caCert}`,
        '--use-service-account-credentials=true', '--leader-elect=false', '--bind-address=127.0.0.1', '--secure-port=10257', '--profiling=false', '--v=1'],
    };
  }

  /** Builds (once) and starts the whole control plane; on failure removes what was made. */
  static async start(): Promise<ControlPlane> {
    const cp = new ControlPlane(controlPlaneBinaries());
    try {
      ip(['netns', 'add', cp.netns]);
      cp.netnsMade = true;
      ip(['-n', cp.netns, 'link', 'set', 'lo', 'up']);
      ip(['-n', cp.netns, 'addr', 'add', `${APISERVER_ADDRESS}/32`, 'dev', 'lo']);
      cp.relays.push(await cp.startRelay(cp.netnsPath, [`unix:${cp.apiSocket}=tcp:127.0.0.1:${APISERVER_PORT}`, `unix:${cp.etcdSocket}=tcp:127.0.0.1:${ETCD_PORT}`]));
      await cp.startEtcd();
      await cp.startApiserver();
      cp.launch(cp.controllerManager);
      // The ServiceAccount controller's first work: proof the controller manager runs.
      await waitFor('kube-controller-manager to create the default ServiceAccount', async () => {
        if (!cp.running(cp.controllerManager)) throw new Error(`kube-controller-manager exited:\n${cp.logTail('kube-controller-manager')}`);
        return (await cp.admin.raw('GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200 || undefined;
      }, 120_000, 250);
      return cp;
    } catch (err) {
      await cp.close();
      throw err;
    }
  }

  get netnsPath(): string {
    return `/var/run/netns/${this.netns}`;
  }

  writeFile(name: string, text: string): string {
    const path = join(this.dir, name);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  }

  /** A relay inside namespace `netnsPath`, forwarding each `FROM=TO` pair (relay.ts). */
  async startRelay(netnsPath: string, pairs: string[]): Promise<ChildProcess> {
    const child = spawn('nsenter', [`--net=${netnsPath}`, process.execPath, join(__dirname, 'relay.js'), ...pairs], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (c) => (stderr += c));
    const ready = await new Promise<boolean>((res) => {
      createInterface({ input: child.stdout! }).once('line', (l) => res(l === 'ready'));
      child.once('exit', () => res(false));
    });
    if (!ready) throw new Error(`relay ${pairs.join(' ')} did not start: ${stderr.trim()}`);
    return child;
  }

  /** The apiserver on 127.0.0.1:6443 inside a simulated node's namespace. */
  async relayInto(netnsPath: string): Promise<string> {
    this.relays.push(await this.startRelay(netnsPath, [`tcp:127.0.0.1:${APISERVER_PORT}=unix:${this.apiSocket}`]));
    return `https://127.0.0.1:${APISERVER_PORT}`;
  }

  /** A kubeconfig file for a process in a namespace given `relayInto`. */
  kubeconfig(name: string, user: Credentials | { tokenFile: string }): string {
    return this.writeFile(`${name}.kubeconfig`, kubeconfigText(`https://127.0.0.1:${APISERVER_PORT}`, this.pki.caCert, user));
  }

  private launch(m: Managed): void {
    const log = openSync(join(this.dir, `${m.name}.log`), 'a');
    const child = spawn('nsenter', [`--net=${this.netnsPath}`, ...m.args], { stdio: ['ignore', log, log] });
    closeSync(log);
    m.child = child;
    m.exited = new Promise((res) => child.once('exit', () => res()));
  }

  /** The end of a component's log, for failure messages. */
  logTail(name: string, lines = 20): string {
    const path = join(this.dir, `${name}.log`);
    return existsSync(path) ? readFileSync(path, 'utf8').trim().split('\n').slice(-lines).join('\n') : '(no log)';
  }

  private async stopProcess(m: Managed): Promise<void> {
    if (!m.child || m.child.exitCode !== null || m.child.signalCode !== null) return;
    m.child.kill('SIGTERM');
    const killer = setTimeout(() => m.child?.kill('SIGKILL'), 10_000);
    await m.exited;
    clearTimeout(killer);
  }

  private running(m: Managed): boolean {
    return !!m.child && m.child.exitCode === null && m.child.signalCode === null;
  }

  async startEtcd(): Promise<void> {
    this.launch(this.etcd);
    await waitFor('etcd to serve', async () => {
      if (!this.running(this.etcd)) throw new Error(`etcd exited:\n${this.logTail('etcd')}`);
      return (await this.etcdCall('/v3/maintenance/status', {})).header ? true : undefined;
    }, 60_000, 200);
  }

  async stopEtcd(): Promise<void> {
    await this.stopProcess(this.etcd);
  }

  async startApiserver(): Promise<void> {
    this.launch(this.apiserver);
    await waitFor('kube-apiserver /readyz', async () => {
      if (!this.running(this.apiserver)) throw new Error(`kube-apiserver exited:\n${this.logTail('kube-apiserver')}`);
      const res = await this.admin.raw('GET', '/readyz');
      return res.status === 200 ? true : undefined;
    }, 180_000, 250);
  }

  async stopApiserver(): Promise<void> {
    await this.stopProcess(this.apiserver);
  }

  /** Abrupt death, as of a crashed apiserver. */
  async killApiserver(): Promise<void> {
    this.apiserver.child?.kill('SIGKILL');
    await this.apiserver.exited;
  }

  /** The process ids of etcd, kube-apiserver and kube-controller-manager while they run. */
  pids(): number[] {
    return [this.etcd, this.apiserver, this.controllerManager].filter((m) => this.running(m)).map((m) => m.child!.pid!);
  }

  /** The audited requests of one user so far. */
  auditEvents(username: string): AuditEvent[] {
    if (!existsSync(this.auditLog)) return [];
    return readFileSync(this.auditLog, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as AuditEvent).filter((e) => e.user?.username === username);
  }

  /** The requests of one user the apiserver refused (401, 403), as `verb URI: message`. */
  refusedRequests(username: string): string[] {
    return this.auditEvents(username).filter((e) => [401, 403].includes(e.responseStatus?.code ?? 0)).map((e) => `${e.verb} ${e.requestURI}: ${e.responseStatus?.message ?? ''}`);
  }

  /** etcd's gRPC gateway (JSON) through the relay. */
  etcdCall(path: string, body: unknown): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
    return new Promise((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = httpRequest({ socketPath: this.etcdSocket, path, method: 'POST', headers: { 'content-type': 'application/json' }, timeout: 10_000 },
        (res: IncomingMessage) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text)) : reject(new Error(`etcd ${path}: HTTP ${res.statusCode}: ${text}`))));
        });
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error(`etcd ${path}: no answer`)));
      req.end(payload);
    });
  }

  /** Compacts etcd's history up to now (physically): watches from before it get 410 Gone. */
  async compactEtcd(): Promise<number> {
    const status = await this.etcdCall('/v3/maintenance/status', {});
    const revision = Number(status.header.revision);
    await this.etcdCall('/v3/kv/compaction', { revision: String(revision), physical: true });
    return revision;
  }

  /** Stops everything and removes the namespace and files; safe to call twice. */
  async close(): Promise<void> {
    await this.stopProcess(this.controllerManager);
    await this.stopProcess(this.apiserver);
    await this.stopProcess(this.etcd);
    this.destroy();
  }

  /** The synchronous part of close(), also run at process exit. */
  private destroy(): void {
    for (const m of [this.controllerManager, this.apiserver, this.etcd]) if (this.running(m)) m.child!.kill('SIGKILL');
    for (const r of this.relays.splice(0)) r.kill('SIGKILL');
    if (this.netnsMade) {
      try {
        execFileSync('ip', ['netns', 'del', this.netns], { stdio: 'ignore' });
      } catch {
        // Already gone.
      }
      this.netnsMade = false;
    }
    if (!process.env.NFKUBE_CLUSTER_KEEP) rmSync(this.dir, { recursive: true, force: true });
    process.removeListener('exit', this.onExit);
  }
}
