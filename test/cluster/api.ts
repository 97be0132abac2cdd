/** A small JSON client for the real kube-apiserver, as the tests (the admin, kubelet's status
 * writes) and the checks of RBAC (a ServiceAccount's token) talk to it: HTTPS over the control
 * plane's Unix socket relay, verified against the tier's CA. */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';

export type KObject = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export type Credentials = { cert: string; key: string } | { token: string };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: KObject | string,
    what: string,
  ) {
    super(`${what}: HTTP ${status}: ${typeof body === 'string' ? body : (body.message ?? JSON.stringify(body))}`);
    this.name = 'ApiError';
  }
}

export interface Response {
  status: number;
  body: KObject;
  warnings: string[];
}

/** Where a kind's objects live, e.g. `/api/v1/namespaces/x/pods`. */
export function collectionPath(apiVersion: string, plural: string, namespace?: string): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return namespace ? `${base}/namespaces/${namespace}/${plural}` : `${base}/${plural}`;
}

/** The plural resource of each kind the tests write; an unknown kind is a test bug. */
const PLURALS: Record<string, string> = {
  Namespace: 'namespaces',
  Pod: 'pods',
  Service: 'services',
  Node: 'nodes',
  ServiceAccount: 'serviceaccounts',
  NetworkPolicy: 'networkpolicies',
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
  Role: 'roles',
  RoleBinding: 'rolebindings',
  DaemonSet: 'daemonsets',
  CustomResourceDefinition: 'customresourcedefinitions',
  IPPool: 'ippools',
  IPBlock: 'ipblocks',
  IPAddressClaim: 'ipaddressclaims',
  ConfigMap: 'configmaps',
  ClusterNetworkPolicy: 'clusternetworkpolicies',
};

export function objectPath(o: KObject): string {
  const plural = PLURALS[o.kind];
  if (!plural) throw new Error(`no resource known for kind ${o.kind}`);
  return `${collectionPath(o.apiVersion, plural, o.metadata?.namespace)}/${o.metadata.name}`;
}

export class KubeApi {
  constructor(
    private readonly socketPath: string,
    private readonly ca: Buffer,
    private readonly credentials: Credentials,
  ) {}

  /** The same server as someone else. */
  as(credentials: Credentials): KubeApi {
    return new KubeApi(this.socketPath, this.ca, credentials);
  }

  /** One request; resolves with any status (the caller decides what is an error). */
  raw(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Response> {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const auth = 'token' in this.credentials
      ? { headers: { authorization: `Bearer ${this.credentials.token}` } }
      : { cert: readFileSync(this.credentials.cert), key: readFileSync(this.credentials.key), headers: {} };
    return new Promise((resolve, reject) => {
      const req = request(
        {
          socketPath: this.socketPath,
          host: 'localhost',
          servername: 'localhost',
          path,
          method,
          ca: this.ca,
          cert: auth.cert,
          key: auth.key,
          agent: false,
          timeout: 60_000,
          headers: { ...auth.headers, accept: 'application/json', ...(payload !== undefined ? { 'content-type': contentType } : {}) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            let parsed: KObject;
            try {
              parsed = text ? (JSON.parse(text) as KObject) : {};
            } catch {
              parsed = { message: text };
            }
            const warning = res.headers.warning;
            const warnings = warning === undefined ? [] : Array.isArray(warning) ? warning : [warning];
            resolve({ status: res.statusCode ?? 0, body: parsed, warnings });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 60 s`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  async call(method: string, path: string, body?: unknown, contentType?: string): Promise<KObject> {
    const res = await this.raw(method, path, body, contentType);
    if (res.status < 200 || res.status >= 300) throw new ApiError(res.status, res.body, `${method} ${path}`);
    return res.body;
  }

  get(path: string): Promise<KObject> {
    return this.call('GET', path);
  }

  create(o: KObject): Promise<KObject> {
    const path = objectPath(o);
    return this.call('POST', path.slice(0, path.lastIndexOf('/')), o);
  }

  /** Server-side apply, strict: an unknown or duplicate field is an error, not a warning. */
  async apply(o: KObject, fieldManager = 'nfkube-tests'): Promise<KObject> {
    const res = await this.applyRaw(o, fieldManager);
    if (res.status < 200 || res.status >= 300) throw new ApiError(res.status, res.body, `apply ${o.kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`);
    return res.body;
  }

  applyRaw(o: KObject, fieldManager: string): Promise<Response> {
    return this.raw('PATCH', `${objectPath(o)}?fieldManager=${fieldManager}&force=true&fieldValidation=Strict`, o, 'application/apply-patch+yaml');
  }

  /** A merge patch of the status subresource, as kubelet writes a pod's status. */
  patchStatus(o: KObject, status: KObject): Promise<KObject> {
    return this.call('PATCH', `${objectPath(o)}/status`, { status }, 'application/merge-patch+json');
  }

  /** Deletes; an object already gone is fine. */
  async delete(o: KObject, query = ''): Promise<void> {
    const res = await this.raw('DELETE', `${objectPath(o)}${query}`);
    if (res.status !== 404 && (res.status < 200 || res.status >= 300)) throw new ApiError(res.status, res.body, `DELETE ${objectPath(o)}`);
  }

  /** A ServiceAccount token from the TokenRequest API, optionally bound to an object. */
  async requestToken(namespace: string, serviceAccount: string, opts: { expirationSeconds?: number; boundPod?: KObject } = {}): Promise<string> {
    const spec: KObject = { audiences: [], expirationSeconds: opts.expirationSeconds ?? 3600 };
    if (opts.boundPod) spec.boundObjectRef = { apiVersion: 'v1', kind: 'Pod', name: opts.boundPod.metadata.name, uid: opts.boundPod.metadata.uid };
    const path = `${collectionPath('v1', 'serviceaccounts', namespace)}/${serviceAccount}/token`;
    const res = await this.call('POST', path, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec });
    return res.status.token as string;
  }
}

/** Polls `check` until it returns a value other than undefined; the deadline only bounds a hang
 * (it is far above what any healthy run needs), the failure names what was awaited. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, deadlineMs = 60_000, everyMs = 100): Promise<T> {
  const until = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? `: ${last instanceof Error ? last.message : String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
