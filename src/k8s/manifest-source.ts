/** Cluster state from a directory of YAML/JSON manifests (`--manifests DIR`): Namespaces, Pods
 * (spec.nodeName, status.phase, status.podIP(s) stand in for what the kubelet would report) and
 * NetworkPolicies, and when asked Services, EndpointSlices and Nodes, in multi-document files or
 * `kind: List` documents.
 *
 * The directory is watched; a changed file is re-read at once (no debounce) and only the
 * differences its objects make are delivered. A file that does not parse (a syntax error, a YAML
 * alias bomb, nesting too deep, more than MAX_MANIFEST_BYTES) is reported and keeps its previous
 * objects (a half-written save must not drop policies); read for the first time, its intact
 * documents are served and each broken one that names a NetworkPolicy fails closed. A document
 * that parses but is malformed is reported with file, document index and field, and the last
 * good version of its object stays (a NetworkPolicy that cannot be understood fails closed
 * instead, see normalize.ts). A kind nfkube does not read is a warning naming file and kind.
 * When two files define the same object the first file by name wins.
 *
 * YAML documents in the subset yaml-block.ts takes are built only as far as define() and the
 * normalizers read them (FIELDS_READ; a kind this agent does not read, its kind alone): most of
 * a Pod manifest is parsed and checked, never built. */
import { closeSync, constants, fstatSync, openSync, readdirSync, readSync, statSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { Document } from 'yaml';
import { stamp } from '../observe/latency-trace';
import { FailClosedError, K8sObjectError, sourceErrorFrom } from './errors';
import type { NamespaceInfo } from './model';
import { describeObject, failClosedPolicy, FIELDS_READ, objectId, type ObjectKind } from './normalize';
import { normalizers } from './normalizers';
import { ClusterState, POLICY_KINDS, type ClusterSnapshot, type ClusterSource, type SourceHandlers } from './source';
import type { FieldsOf, FieldTree } from './yaml-block';
import { fastYamlDocuments } from './yaml-documents';
import { jsonListItems, splitJsonList } from './json-list';
import { editDistance } from '../edit-distance';

export interface ManifestSourceOptions extends SourceHandlers {
  dir: string;
  /** The kinds delivered (default POLICY_KINDS; add PROXY_KINDS for the service proxy). */
  kinds?: readonly ObjectKind[];
  /** The most bytes all files may hold together (default MAX_MANIFEST_TOTAL_BYTES). */
  maxTotalBytes?: number;
}

const MANIFEST_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
const API_VERSIONS: Record<ObjectKind, string> = {
  Pod: 'v1',
  Namespace: 'v1',
  NetworkPolicy: 'networking.k8s.io/v1',
  Service: 'v1',
  EndpointSlice: 'discovery.k8s.io/v1',
  Node: 'v1',
  ClusterNetworkPolicy: 'policy.networking.k8s.io/v1alpha2',
};
const DEFAULT_NAMESPACE = 'default';
/** Larger files are refused unread: parsing blocks the event loop, so a file this big would stall
 * every other update. YAML parses about a hundred times slower than JSON (4 MiB of Pods take
 * seconds): a cluster dump that large belongs in a .json file. */
export const MAX_MANIFEST_BYTES = { json: 32 * 1024 * 1024, yaml: 4 * 1024 * 1024 } as const;
/** Every file within its own bound, many of them still add up (60 YAML files of 3.5 MB held 2.4 GB):
 * the files read together may hold this much (`--manifests-max-bytes`). A 5k-pod cluster of
 * full manifests is 21 MB of YAML, 35 MB of JSON. */
export const MAX_MANIFEST_TOTAL_BYTES = 64 * 1024 * 1024;
/** A JSON List this long or longer is parsed item by item (json-list.ts): parsed whole, its raw
 * objects outlive V8's young generation (a 22 MB List of 5k Services x 50 endpoints held ~100 MB
 * of them until the next full GC). A shorter one (a namespace's `kubectl get -o json`) dies
 * young either way, and the split's scan costs up to as much as JSON.parse on indented text;
 * unless it has more than MAX_DEPTH brackets: then the whole parse's nesting scan visits every
 * character too, and the split (which bounds the nesting as it goes) is cheaper than both
 * (102 Lists of 55 objects: 213 against 245 ms). */
const SPLIT_LIST_MIN_BYTES = 1024 * 1024;
/** Aliases a YAML document may expand (billion-laughs documents expand exponentially). */
const MAX_ALIAS_COUNT = 100;
/** Nesting deeper than this is refused before parsing: both parsers slow down sharply on
 * pathological depth (a 4 MiB run of `[` keeps the YAML parser busy for minutes), and
 * Kubernetes objects nest a few dozen levels. */
const MAX_DEPTH = 1000;

interface Defined {
  kind: ObjectKind;
  key: string;
  object: unknown;
}

/** What define() reads of an object of a kind this agent does not read: its kind alone. */
const KIND_ONLY: FieldTree = Object.freeze({});

/** Where define() reports a bad object. */
type Reports = Pick<SourceHandlers, 'onError' | 'onWarning'>;

/** `Kind key`: one object's identity across files. */
type Ident = string;

export class ManifestSource implements ClusterSource {
  private readonly state: ClusterState;
  /** Objects each file defines (file names relative to dir). */
  private readonly files = new Map<string, Map<Ident, Defined>>();
  /** Files defining each object; the first by name is in force. */
  private readonly definers = new Map<Ident, Set<string>>();
  /** Bytes of each file whose objects are in force, and their sum. */
  private readonly fileBytes = new Map<string, number>();
  private totalBytes = 0;
  private readonly maxTotalBytes: number;
  private watcher?: FSWatcher;
  private readonly kinds: ReadonlySet<string>;
  private readonly dirPrefix: string;
  /** The fields of each object the YAML parser builds: what define() and the normalizers read. */
  private readonly fieldsOf: FieldsOf = (kind) => {
    if (kind.endsWith('List')) return undefined;
    if (!Object.hasOwn(API_VERSIONS, kind) || !this.kinds.has(kind)) return KIND_ONLY;
    return FIELDS_READ[kind as ObjectKind];
  };

  constructor(private readonly opts: ManifestSourceOptions) {
    this.state = new ClusterState(opts);
    this.dirPrefix = join(opts.dir, '/');
    this.kinds = new Set(opts.kinds ?? POLICY_KINDS);
    this.maxTotalBytes = opts.maxTotalBytes ?? MAX_MANIFEST_TOTAL_BYTES;
  }

  async start(): Promise<ClusterSnapshot> {
    if (!statSync(this.opts.dir).isDirectory()) throw new Error(`--manifests ${this.opts.dir}: not a directory`);
    // Watch before the first scan, so a change made during it is not missed.
    this.watcher = watch(this.opts.dir, (_event, name) => {
      stamp('data');
      if (name) this.rescan(name.toString());
      else this.rescanAll();
    });
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
    /** Names the directory entry says are regular files: no stat before their open. */
    const regular = new Set<string>();
    try {
      present = [];
      for (const entry of readdirSync(this.opts.dir, { withFileTypes: true })) {
        if (!isManifestName(entry.name)) continue;
        present.push(entry.name);
        if (entry.isFile()) regular.add(entry.name);
      }
      present.sort();
    } catch (err) {
      this.opts.onError(sourceErrorFrom(err, { file: this.opts.dir }));
      return;
    }
    const listed = new Set(present);
    for (const name of [...this.files.keys()]) if (!listed.has(name)) this.rescan(name);
    for (const name of present) this.rescan(name, regular.has(name));
  }

  /** Re-reads one file and delivers the differences it makes. `regular`: its directory entry,
   * just read, says it is a regular file. */
  rescan(name: string, regular = false): void {
    if (!isManifestName(name)) return;
    // Names come from readdir or the watch: one component, no normalising join needed.
    const path = `${this.dirPrefix}${name}`;
    let data: Buffer | undefined;
    const fileLimit = isJsonName(name) ? MAX_MANIFEST_BYTES.json : MAX_MANIFEST_BYTES.yaml;
    const others = this.totalBytes - (this.fileBytes.get(name) ?? 0);
    try {
      const read = readManifest(path, Math.min(fileLimit, this.maxTotalBytes - others), regular);
      if (typeof read === 'number') {
        const why = read > fileLimit ? `more than the ${fileLimit} this format may have` : `with the other files' ${others} more than the ${this.maxTotalBytes} all manifests may hold together (--manifests-max-bytes)`;
        this.opts.onError({ message: `${name}: ${read} bytes, ${why}; not read (its previous objects stay)`, file: name });
        return;
      }
      data = read?.data;
      this.countBytes(name, read?.bytes ?? 0);
    } catch (err) {
      // Gone: the file's objects go; any other failure keeps what we have (the next event retries).
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.opts.onError(sourceErrorFrom(err, { file: name }));
        return;
      }
      this.countBytes(name, 0);
    }
    const defs = data === undefined ? new Map<Ident, Defined>() : this.parseFile(name, data);
    stamp('parsed');
    if (defs) this.replaceFile(name, defs);
  }

  private countBytes(name: string, bytes: number): void {
    this.totalBytes += bytes - (this.fileBytes.get(name) ?? 0);
    if (bytes > 0) this.fileBytes.set(name, bytes);
    else this.fileBytes.delete(name);
  }

  /** The file's objects, or undefined when it does not parse and its previous objects stay. */
  private parseFile(file: string, data: Buffer): Map<Ident, Defined> | undefined {
    if (isJsonName(file) && (data.length >= SPLIT_LIST_MIN_BYTES || bracketsExceed(data, MAX_DEPTH))) {
      const list = splitJsonList(data, MAX_DEPTH);
      if (list) return this.parseJsonList(file, data, list.spans);
    }
    const text = data.toString('utf8');
    const { documents, broken } = this.parseDocuments(file, text);
    // A file read before keeps its last good objects; one read for the first time serves what
    // it can, and each broken document that names a NetworkPolicy fails closed.
    if (broken.length > 0 && this.files.has(file)) return undefined;

    const defs = new Map<Ident, Defined>();
    documents.forEach((doc, i) => {
      if (doc === null || doc === undefined) return;
      const kind = (doc as { kind?: unknown }).kind;
      if (typeof kind === 'string' && kind.endsWith('List')) {
        const items = (doc as { items?: unknown }).items;
        if (Array.isArray(items)) items.forEach((item, j) => this.define(defs, file, i, item, `items[${j}].`));
        else this.opts.onError(sourceErrorFrom(new K8sObjectError(kind, 'items', 'expected a list'), { file, document: i }));
      } else {
        this.define(defs, file, i, doc, '');
      }
    });
    for (const { index, doc } of broken) {
      const failed = brokenPolicy(doc);
      if (!failed) continue;
      const ident = `NetworkPolicy ${failed.key}`;
      if (defs.has(ident)) continue;
      const err = failClosedPolicy(failed, undefined, '(document)', 'cannot be parsed', false);
      this.opts.onError(sourceErrorFrom(err, { file, document: index }));
      defs.set(ident, { kind: 'NetworkPolicy', key: failed.key, object: err.replacement });
    }
    return defs;
  }

  /** A JSON List's objects, each item parsed and normalized before the next is parsed (its raw
   * object dies young). What define() reports waits until every item has parsed: a file with a
   * syntax error is reported once and defines nothing, as when it was parsed whole. */
  private parseJsonList(file: string, data: Buffer, spans: readonly number[]): Map<Ident, Defined> | undefined {
    const defs = new Map<Ident, Defined>();
    const held: (() => void)[] = [];
    const reports: Reports = {
      onError: (err) => held.push(() => this.opts.onError(err)),
      onWarning: (warning) => held.push(() => this.opts.onWarning?.(warning)),
    };
    const items = jsonListItems(data, spans);
    for (let j = 0; ; j++) {
      let next: IteratorResult<unknown>;
      try {
        next = items.next();
      } catch (err) {
        this.opts.onError(sourceErrorFrom(err, { file, document: 0 }));
        return this.files.has(file) ? undefined : new Map();
      }
      if (next.done) break;
      this.define(defs, file, 0, next.value, `items[${j}].`, reports);
    }
    for (const deliver of held) deliver();
    return defs;
  }

  /** Every document of a file as plain data; those that cannot be converted are reported (file
   * and document named) and listed as broken. Never throws, whatever the text. */
  private parseDocuments(file: string, text: string): { documents: unknown[]; broken: { index: number; doc?: Document }[] } {
    const documents: unknown[] = [];
    const broken: { index: number; doc?: Document }[] = [];
    const fail = (index: number, err: unknown, doc?: Document) => {
      broken.push({ index, doc });
      this.opts.onError(sourceErrorFrom(err, { file, document: index }));
    };
    const tooDeep = bracketDepthExceeded(text, MAX_DEPTH);
    if (tooDeep >= 0) {
      fail(0, new Error(`nested deeper than ${MAX_DEPTH} levels; not parsed`));
      // The lines before the nesting still tell which policies the file names, so that they
      // can fail closed.
      if (!isJsonName(file)) broken.push(...headDocuments(text.slice(0, text.lastIndexOf('\n', tooDeep) + 1)).map((doc, index) => ({ index, doc })));
      return { documents, broken };
    }
    if (isJsonName(file)) {
      try {
        documents.push(JSON.parse(text));
      } catch (err) {
        fail(0, err);
      }
      return { documents, broken };
    }
    // YAML: the fast parser first; the document model below for what it does not take as is.
    const fast = fastYamlDocuments(text, this.fieldsOf);
    if (fast) {
      documents.push(...fast);
      return { documents, broken };
    }
    let docs: Document[];
    try {
      const parsed = yaml().parseAllDocuments(text, { prettyErrors: true });
      docs = Array.isArray(parsed) ? parsed : [];
    } catch (err) {
      // The parser itself gave up (nesting deeper than the stack): nothing is known.
      fail(0, err);
      return { documents, broken };
    }
    docs.forEach((doc, i) => {
      if (doc.errors.length > 0) {
        broken.push({ index: i, doc });
        for (const err of doc.errors) this.opts.onError(sourceErrorFrom(err, { file, document: i }));
        return;
      }
      try {
        documents[i] = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
      } catch (err) {
        fail(i, err, doc);
      }
    });
    return { documents, broken };
  }

  /** Normalizes one object of a document into defs; a malformed one is reported and keeps its
   * previous definition from this file, if there was one. */
  private define(defs: Map<Ident, Defined>, file: string, document: number, raw: unknown, fieldPrefix: string, reports: Reports = this.opts): void {
    const report = (err: unknown) => {
      if (err instanceof K8sObjectError) err = new K8sObjectError(err.object, fieldPrefix + err.field, err.problem);
      reports.onError(sourceErrorFrom(err, { file, document }));
    };
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      report(new K8sObjectError('(document)', fieldPrefix.replace(/\.$/, '') || '(top level)', `expected an object, got ${Array.isArray(raw) ? 'a list' : typeof raw}`));
      return;
    }
    const { kind, apiVersion } = raw as { kind?: unknown; apiVersion?: unknown };
    if (typeof kind !== 'string') {
      report(new K8sObjectError('(document)', 'kind', 'missing'));
      return;
    }
    // Other kinds (Services, Deployments...) may share the directory: not ours, but a typo in a
    // kind must not pass in silence.
    if (!Object.hasOwn(API_VERSIONS, kind)) {
      const near = nearKind(kind);
      if (near) report(new K8sObjectError(`${kind} (document)`, 'kind', `unknown kind ${JSON.stringify(kind)}; did you mean ${near}? ignored`));
      else reports.onWarning?.({ ...sourceErrorFrom(new Error(`kind ${JSON.stringify(kind)} is not one nfkube reads (${Object.keys(API_VERSIONS).join(', ')}); ignored`), { file, document }), severity: 'warning' });
      return;
    }
    // A kind nfkube reads, but not this agent (Services without --proxy).
    if (!this.kinds.has(kind)) return;
    const k = kind as ObjectKind;
    let id: ReturnType<typeof objectId>;
    try {
      id = objectId(k, raw, { defaultNamespace: DEFAULT_NAMESPACE });
    } catch (err) {
      // A policy without a usable name still names its namespace: it fails closed there, under
      // a name no API object can have, until the file is fixed.
      const unnamed = k === 'NetworkPolicy' && err instanceof K8sObjectError ? unnamedPolicy(raw, `unnamed:${file}#${document}${fieldPrefix ? ':' + fieldPrefix.replace(/\.$/, '') : ''}`) : undefined;
      if (!unnamed) {
        report(err);
        return;
      }
      const failed = failClosedPolicy(unnamed, raw, (err as K8sObjectError).field, (err as K8sObjectError).problem, false);
      report(failed);
      defs.set(`NetworkPolicy ${unnamed.key}`, { kind: 'NetworkPolicy', key: unnamed.key, object: failed.replacement });
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
        const problem = `expected ${API_VERSIONS[k]}, got ${describeValue(apiVersion)}`;
        // A policy of another version cannot be understood, and must not be dropped either.
        if (k === 'NetworkPolicy') throw failClosedPolicy(id, raw, 'apiVersion', problem, false);
        throw new K8sObjectError(object, 'apiVersion', problem);
      }
      let normalized = normalizers[k](raw, { defaultNamespace: DEFAULT_NAMESPACE, onProblem: report });
      if (k === 'Namespace') normalized = withNameLabel(normalized as NamespaceInfo);
      defs.set(ident, { kind: k, key: id.key, object: normalized });
    } catch (err) {
      report(err);
      const previous = this.files.get(file)?.get(ident);
      if (err instanceof FailClosedError) defs.set(ident, { kind: k, key: id.key, object: err.replacement });
      else if (previous) defs.set(ident, previous);
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

/** Reused for every file that fits: one read into it, no buffer per file. It grows up to
 * SCRATCH_MAX_BYTES (what a namespace's `kubectl get -o yaml` takes); larger files are read
 * into a buffer of their own, so a long-running agent keeps no more than that. */
let scratch = Buffer.allocUnsafe(256 * 1024);
const SCRATCH_MAX_BYTES = 1024 * 1024;

/** The bytes of a regular file (a view of the scratch buffer when it fits: used before the next
 * read) and their count, its size when that is more than limit (not read), or undefined
 * when it is not a regular file. Only what stat (or the directory entry, when `regular`: a
 * scan of thousands of files then makes one system call fewer each) says is a regular file is
 * opened: opening a device a name links to can act on it (a watchdog arms, a terminal becomes
 * the agent's). Then
 * one open, fstat, read and close: opened non-blocking, so a FIFO swapped in meanwhile cannot
 * hang the agent, and sized by the descriptor, so the check and the read are one file. */
function readManifest(path: string, limit: number, regular: boolean): { data: Buffer; bytes: number } | number | undefined {
  if (!regular && !statSync(path, { throwIfNoEntry: false })?.isFile()) return undefined;
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return undefined;
    if (stat.size > limit) return stat.size;
    // One byte more than the size, to see a file that grew since the fstat (or whose size fstat
    // does not know, as in procfs): the rest is then read through the same descriptor, never
    // re-opened by path (what is there now may be a FIFO), and never past the limit.
    let buf = scratch;
    if (buf.length < stat.size + 1) {
      buf = Buffer.allocUnsafe(stat.size + 1);
      if (buf.length <= SCRATCH_MAX_BYTES) scratch = buf;
    }
    const n = readSync(fd, buf, 0, stat.size + 1, 0);
    if (n <= stat.size) return { data: buf.subarray(0, n), bytes: n };
    const chunks = [Buffer.from(buf.subarray(0, n))];
    let total = n;
    for (;;) {
      if (total > limit) return Math.max(total, fstatSync(fd).size);
      const chunk = Buffer.allocUnsafe(64 * 1024);
      const got = readSync(fd, chunk, 0, chunk.length, total);
      if (got === 0) return { data: Buffer.concat(chunks, total), bytes: total };
      chunks.push(chunk.subarray(0, got));
      total += got;
    }
  } finally {
    closeSync(fd);
  }
}

function isManifestName(name: string): boolean {
  return !name.startsWith('.') && MANIFEST_EXTENSIONS.has(extensionOf(name));
}

/** The identity of a NetworkPolicy in a document that could not be converted, read from its
 * syntax tree without expanding anything: enough to fail it closed. */
function brokenPolicy(doc: Document | undefined): { kind: 'NetworkPolicy'; namespace: string; name: string; key: string } | undefined {
  if (!doc) return undefined;
  try {
    const at = (path: string[]): unknown => doc.getIn(path);
    const name = at(['metadata', 'name']);
    const ns = at(['metadata', 'namespace']) ?? DEFAULT_NAMESPACE;
    if (at(['kind']) !== 'NetworkPolicy' || typeof name !== 'string' || name === '' || typeof ns !== 'string' || ns === '') return undefined;
    return { kind: 'NetworkPolicy', namespace: ns, name, key: `${ns}/${name}` };
  } catch {
    return undefined;
  }
}

/** The documents of a (bounded) text, for what their syntax trees tell; never throws. */
function headDocuments(text: string): Document[] {
  try {
    const parsed = yaml().parseAllDocuments(text);
    return Array.isArray(parsed) ? parsed : [];
  } catch {
    return [];
  }
}

/** Where `[`/`{` outside double-quoted strings first nest deeper than `max`, or -1: one linear
 * pass, no allocation. Exact for JSON; for YAML flow collections a bound (a bracket inside a
 * plain or single-quoted scalar counts too, which only matters past a thousand unmatched ones). */
function bracketDepthExceeded(text: string, max: number): number {
  if (!bracketsExceed(text, max)) return -1;
  let depth = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    // Most characters outside strings (spaces, newlines, digits, `:` and `,`) are below `[`:
    // one comparison passes them.
    if (c < 0x5b) {
      if (c !== 0x22) continue;
      // A string is skipped by the native search for its closing quote (one not escaped by an
      // odd run of backslashes): a List file is mostly strings, and visiting each of their
      // characters cost more than JSON.parse of the file.
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i < 0) return -1;
        let b = i - 1;
        while (text.charCodeAt(b) === 0x5c) b--;
        if ((i - b) % 2 === 1) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return i;
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return -1;
}

/** More than max `[` and `{` in text: nesting deeper than max needs that many, and most files
 * have far fewer, counted by the native search without visiting every character. */
function bracketsExceed(text: string | Buffer, max: number): boolean {
  let brackets = 0;
  for (let i = text.indexOf('['); i >= 0 && brackets <= max; i = text.indexOf('[', i + 1)) brackets++;
  for (let i = text.indexOf('{'); i >= 0 && brackets <= max; i = text.indexOf('{', i + 1)) brackets++;
  return brackets > max;
}

function isJsonName(name: string): boolean {
  return extensionOf(name) === '.json';
}

/** path.extname of a file name (one component), lower-cased: the last `.` and what follows,
 * none for a name that only starts with one. Called twice for each of thousands of files: no
 * path parsing. */
function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot).toLowerCase() : '';
}

/** The identity to fail a nameless policy closed under, when its namespace can be told. */
function unnamedPolicy(raw: unknown, name: string): { kind: 'NetworkPolicy'; namespace: string; name: string; key: string } | undefined {
  const meta = (raw as { metadata?: unknown }).metadata;
  const given = typeof meta === 'object' && meta !== null ? (meta as { namespace?: unknown }).namespace : undefined;
  if (given !== undefined && given !== null && (typeof given !== 'string' || given === '')) return undefined;
  const namespace = typeof given === 'string' ? given : DEFAULT_NAMESPACE;
  return { kind: 'NetworkPolicy', namespace, name, key: `${namespace}/${name}` };
}

/** The kind nfkube reads that `kind` is a likely typo of (case, or at most two edits). */
function nearKind(kind: string): string | undefined {
  return Object.keys(API_VERSIONS).find((k) => k.toLowerCase() === kind.toLowerCase() || editDistance(k, kind) <= 2);
}


function describeValue(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

/** The API server labels every namespace with its own name; policies select on it. */
function withNameLabel(ns: NamespaceInfo): NamespaceInfo {
  return { name: ns.name, labels: { ...ns.labels, 'kubernetes.io/metadata.name': ns.name } };
}

/** `yaml`'s document model, loaded only when needed: most directories never take that path. */
function yaml(): typeof import('yaml') {
  return require('yaml') as typeof import('yaml');
}
