/** Cluster state from a directory of YAML/JSON manifests (`--manifests DIR`): Namespaces, Pods
 * (spec.nodeName, status.phase, status.podIP(s) stand in for what the kubelet would report) and
 * NetworkPolicies, and when asked Services, EndpointSlices and Nodes, in multi-document files or
 * `kind: List` documents.
 *
 * The directory is watched; a changed file is re-read at once (no debounce) and only the
 * differences its objects make are delivered. A file that does not parse keeps its previous
 * objects (a half-written save must not drop policies); a document that parses but is malformed
 * is reported with file, document index and field, and the last good version of its object
 * stays. When two files define the same object the first file by name wins. */
import { existsSync, readdirSync, readFileSync, statSync, watch, type FSWatcher } from 'node:fs';
import { extname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { K8sObjectError, sourceErrorFrom } from './errors';
import type { NamespaceInfo } from './model';
import { describeObject, normalizers, objectId, type ObjectKind } from './normalize';
import { ClusterState, POLICY_KINDS, type ClusterSnapshot, type ClusterSource, type SourceHandlers } from './source';

export interface ManifestSourceOptions extends SourceHandlers {
  dir: string;
  /** The kinds delivered (default POLICY_KINDS; add PROXY_KINDS for the service proxy). */
  kinds?: readonly ObjectKind[];
}

const MANIFEST_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
const API_VERSIONS: Record<ObjectKind, string> = {
  Pod: 'v1',
  Namespace: 'v1',
  NetworkPolicy: 'networking.k8s.io/v1',
  Service: 'v1',
  EndpointSlice: 'discovery.k8s.io/v1',
  Node: 'v1',
};
const DEFAULT_NAMESPACE = 'default';

interface Defined {
  kind: ObjectKind;
  key: string;
  object: unknown;
}

/** `Kind key`: one object's identity across files. */
type Ident = string;

export class ManifestSource implements ClusterSource {
  private readonly state: ClusterState;
  /** Objects each file defines (file names relative to dir). */
  private readonly files = new Map<string, Map<Ident, Defined>>();
  /** Files defining each object; the first by name is in force. */
  private readonly definers = new Map<Ident, Set<string>>();
  private watcher?: FSWatcher;
  private readonly kinds: ReadonlySet<string>;

  constructor(private readonly opts: ManifestSourceOptions) {
    this.state = new ClusterState(opts);
    this.kinds = new Set(opts.kinds ?? POLICY_KINDS);
  }

  async start(): Promise<ClusterSnapshot> {
    if (!statSync(this.opts.dir).isDirectory()) throw new Error(`--manifests ${this.opts.dir}: not a directory`);
    // Watch before the first scan, so a change made during it is not missed.
    this.watcher = watch(this.opts.dir, (_event, name) => (name ? this.rescan(name.toString()) : this.rescanAll()));
    this.watcher.on('error', (err) => this.opts.onError(sourceErrorFrom(err, { file: this.opts.dir })));
    this.rescanAll();
    return this.state.goLive();
  }

  snapshot(): ClusterSnapshot {
    return this.state.snapshot();
  }

  async stop(): Promise<void> {
    this.watcher?.close();
    this.watcher = undefined;
  }

  /** Re-reads every file (and forgets files that are gone): a full resync. */
  rescanAll(): void {
    let present: string[];
    try {
      present = readdirSync(this.opts.dir).filter(isManifestName).sort();
    } catch (err) {
      this.opts.onError(sourceErrorFrom(err, { file: this.opts.dir }));
      return;
    }
    for (const name of [...this.files.keys()]) if (!present.includes(name)) this.rescan(name);
    for (const name of present) this.rescan(name);
  }

  /** Re-reads one file and delivers the differences it makes. */
  rescan(name: string): void {
    if (!isManifestName(name)) return;
    const path = join(this.opts.dir, name);
    let text: string | undefined;
    try {
      text = existsSync(path) && statSync(path).isFile() ? readFileSync(path, 'utf8') : undefined;
    } catch (err) {
      // Gone between the check and the read: the next event says so; keep what we have.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.opts.onError(sourceErrorFrom(err, { file: name }));
      return;
    }
    const defs = text === undefined ? new Map<Ident, Defined>() : this.parseFile(name, text);
    if (defs) this.replaceFile(name, defs);
  }

  /** The file's objects, or undefined when it does not parse (its previous objects stay). */
  private parseFile(file: string, text: string): Map<Ident, Defined> | undefined {
    const documents: unknown[] = [];
    if (extname(file).toLowerCase() === '.json') {
      try {
        documents.push(JSON.parse(text));
      } catch (err) {
        this.opts.onError(sourceErrorFrom(err, { file, document: 0 }));
        return undefined;
      }
    } else {
      const parsed = parseAllDocuments(text, { prettyErrors: true });
      const docs = Array.isArray(parsed) ? parsed : [];
      let broken = false;
      docs.forEach((doc, i) => {
        for (const err of doc.errors) {
          broken = true;
          this.opts.onError(sourceErrorFrom(err, { file, document: i }));
        }
      });
      if (broken) return undefined;
      for (const doc of docs) documents.push(doc.toJS({ maxAliasCount: 100 }));
    }

    const defs = new Map<Ident, Defined>();
    documents.forEach((doc, i) => {
      if (doc === null || doc === undefined) return;
      if (isList(doc)) {
        doc.items.forEach((item, j) => this.define(defs, file, i, item, `items[${j}].`));
      } else {
        this.define(defs, file, i, doc, '');
      }
    });
    return defs;
  }

  /** Normalizes one object of a document into defs; a malformed one is reported and keeps its
   * previous definition from this file, if there was one. */
  private define(defs: Map<Ident, Defined>, file: string, document: number, raw: unknown, fieldPrefix: string): void {
    const report = (err: unknown) => {
      if (err instanceof K8sObjectError) err = new K8sObjectError(err.object, fieldPrefix + err.field, err.problem);
      this.opts.onError(sourceErrorFrom(err, { file, document }));
    };
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      report(new K8sObjectError('(document)', fieldPrefix.replace(/\.$/, '') || '(document)', 'expected an object'));
      return;
    }
    const { kind, apiVersion } = raw as { kind?: unknown; apiVersion?: unknown };
    if (typeof kind !== 'string') {
      report(new K8sObjectError('(document)', 'kind', 'missing'));
      return;
    }
    // Other kinds (Services, Deployments...) may share the directory: they are not ours.
    if (!this.kinds.has(kind)) return;
    const k = kind as ObjectKind;
    let id: ReturnType<typeof objectId>;
    try {
      id = objectId(k, raw, { defaultNamespace: DEFAULT_NAMESPACE });
    } catch (err) {
      report(err);
      return;
    }
    const ident = `${k} ${id.key}`;
    const object = describeObject(k, id.key);
    if (defs.has(ident)) {
      report(new K8sObjectError(object, 'metadata.name', 'defined twice in this file; the first definition is used'));
      return;
    }
    try {
      if (apiVersion !== undefined && apiVersion !== API_VERSIONS[k]) {
        throw new K8sObjectError(object, 'apiVersion', `expected ${API_VERSIONS[k]}, got ${JSON.stringify(apiVersion)}`);
      }
      let normalized = normalizers[k](raw, { defaultNamespace: DEFAULT_NAMESPACE, onProblem: report });
      if (k === 'Namespace') normalized = withNameLabel(normalized as NamespaceInfo);
      defs.set(ident, { kind: k, key: id.key, object: normalized });
    } catch (err) {
      report(err);
      const previous = this.files.get(file)?.get(ident);
      if (previous) defs.set(ident, previous);
    }
  }

  private replaceFile(file: string, defs: Map<Ident, Defined>): void {
    const old = this.files.get(file) ?? new Map<Ident, Defined>();
    if (defs.size > 0) this.files.set(file, defs);
    else this.files.delete(file);
    const affected = new Map<Ident, Defined>([...old, ...defs]);
    for (const [ident, def] of affected) {
      const definers = this.definers.get(ident) ?? new Set<string>();
      if (defs.has(ident)) definers.add(file);
      else definers.delete(file);
      if (definers.size === 0) this.definers.delete(ident);
      else this.definers.set(ident, definers);
      if (defs.has(ident) && definers.size > 1) {
        const [winner] = [...definers].sort();
        this.opts.onError({
          message: `${file}: ${describeObject(def.kind, def.key)} is also defined in ${[...definers].filter((f) => f !== file).join(', ')}; the one in ${winner} is used`,
          object: describeObject(def.kind, def.key),
          file,
        });
      }
      const inForce = definers.size > 0 ? this.files.get([...definers].sort()[0])?.get(ident) : undefined;
      if (inForce) this.state.upsert(def.kind, def.key, inForce.object as never);
      else this.state.delete(def.kind, def.key);
    }
  }
}

function isManifestName(name: string): boolean {
  return !name.startsWith('.') && MANIFEST_EXTENSIONS.has(extname(name).toLowerCase());
}

function isList(doc: unknown): doc is { items: unknown[] } {
  const d = doc as { kind?: unknown; items?: unknown };
  return typeof d === 'object' && typeof d.kind === 'string' && d.kind.endsWith('List') && Array.isArray(d.items);
}

/** The API server labels every namespace with its own name; policies select on it. */
function withNameLabel(ns: NamespaceInfo): NamespaceInfo {
  return { name: ns.name, labels: { ...ns.labels, 'kubernetes.io/metadata.name': ns.name } };
}
