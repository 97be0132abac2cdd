/** @kubernetes/client-node, loaded once: the whole package, or only the part the informers use.
 *
 * The package's index loads its generated API: 22 MB of JavaScript (a class per model, a client
 * per API group), measured at 65 MB of RSS and 0.7 s of CPU, a third of the agent's peak memory
 * at 5k pods. The informers use KubeConfig (dist/config.js: server, TLS, auth; their LIST and
 * watch requests are nfkube's own, raw-list.ts and raw-watch.ts); Watch (dist/watch.js) comes
 * along so the lean client has the whole package's shape (bench/watch.bench.ts compares the two
 * watch clients). watch.js imports nothing generated; config.js imports the generated index only for makeApiClient's
 * createConfiguration and ServerConfiguration, which two small files define. loadInformerClient()
 * imports client-node's own config.js with that one import pointed at those files, its relative
 * imports resolved from config.js's directory and its bare ones by require.resolve from there (so
 * a dual package such as js-yaml comes in as its CommonJS build: the same functions, another
 * copy), and a few packages it rarely or never uses loaded on first use (LAZY_IMPORTS). When the
 * installed config.js no longer has that import, or anything in this fails, the whole package is
 * loaded: the same KubeConfig and Watch, only heavier. */
import { readFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

export type InformerClient = Pick<typeof import('@kubernetes/client-node'), 'KubeConfig' | 'Watch'>;

let loaded: InformerClient | undefined;
let lean = false;

/** Whether the client loaded so far is the informers' part alone (false: the whole package, or
 * nothing yet). */
export function informerClientIsLean(): boolean {
  return lean;
}

/** The client loaded so far; the whole package when loadInformerClient() has not run. */
export function clientNode(): InformerClient {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (loaded ??= require('@kubernetes/client-node') as InformerClient);
}

const GENERATED_IMPORT = "import { createConfiguration, ServerConfiguration, } from './gen/index.js';";

/** Imports that only some kubeconfigs use (a SOCKS proxy-url; oidc, azure or gcp auth-providers)
 * or that nfkube never calls (client-node's fetch-based requests: raw-list.ts and raw-watch.ts
 * use node:http): each becomes a small module that loads the package the first time it is used,
 * by require (the CommonJS build an import of it loads too) or, for an ES-only package whose
 * functions the importer only awaits, by import(). Measured at 5k pods they were two thirds of
 * the CPU of loading the informers' client (openid-client, oauth4webapi, jose, jsonpath-plus,
 * node-fetch, whatwg-url, tr46, socks). A stub returns undefined where the importer uses
 * something it does not provide: the import is then left as it is. */
const LAZY_IMPORTS: Record<string, (require: string, importer: string, resolve: (spec: string) => string) => string | undefined> = {
  "import { Headers } from 'node-fetch';": (req) => `${req} export class Headers { constructor(...a) { return new (require('node-fetch').Headers)(...a); } }`,
  "import fetch from 'node-fetch';": (req) => `${req} export default function fetch(...a) { return require('node-fetch')(...a); }`,
  'import fetch from "node-fetch";': (req) => `${req} export default function fetch(...a) { return require('node-fetch')(...a); }`,
  "import { SocksProxyAgent } from 'socks-proxy-agent';": (req) =>
    `${req} export class SocksProxyAgent { constructor(...a) { return new (require('socks-proxy-agent').SocksProxyAgent)(...a); } }`,
  "import * as jsonpath from 'jsonpath-plus';": (req, importer) =>
    usedMembers(importer, 'jsonpath').every((m) => m === 'JSONPath') ? `${req} export function JSONPath(...a) { return require('jsonpath-plus').JSONPath(...a); }` : undefined,
  "import * as oidc from 'openid-client';": (_req, importer, resolve) => {
    const used = usedMembers(importer, 'oidc');
    // Only functions every use of which awaits a promise: a stub's function returns one.
    const count = (re: string) => importer.split(new RegExp(re)).length - 1;
    if (!used.every((m) => ASYNC_OIDC.has(m) && count(`\\boidc\\.${m}\\b`) === count(`\\bawait oidc\\.${m}\\(`))) return undefined;
    const url = JSON.stringify(resolve('openid-client'));
    return used.map((m) => `export function ${m}(...a) { return import(${url}).then((m) => m.${m}(...a)); }`).join(' ');
  },
};

/** openid-client's functions that return a promise. */
const ASYNC_OIDC = new Set(['discovery', 'refreshTokenGrant']);

/** The members of namespace `ns` that source uses (`ns.name`). */
function usedMembers(source: string, ns: string): string[] {
  return [...new Set(Array.from(source.matchAll(new RegExp(`\\b${ns}\\.(\\w+)`, 'g')), (m) => m[1]))];
}

/** client-node's modules that hold a lazy import, or lead to one: imported rewritten. */
const REWRITTEN = new Set(['config.js', 'watch.js', 'oidc_auth.js', 'azure_auth.js', 'gcp_auth.js', 'gen/configuration.js', 'gen/servers.js', 'gen/http/http.js', 'gen/http/isomorphic-fetch.js']);

/** Lines left out of a rewritten module. gen/http/http.js re-exports the fetch-based HTTP library
 * for the generated API's index, which the informers' client does not load; the re-export
 * would load node-fetch, and the rewritten library imports http.js (a cycle of data: URLs). */
const DROPPED: Record<string, string> = { 'gen/http/http.js': "export * from './isomorphic-fetch.js';" };

/** A real dynamic import: TypeScript's CommonJS output would turn `import()` into require(). */
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

/** Quotes escaped too: the URL may stand inside a quoted import specifier. */
const dataUrl = (source: string) => `data:text/javascript,${encodeURIComponent(source).replace(/'/g, '%27')}`;

/** One of client-node's ES modules as a data: URL: the lazy imports above replaced, relative
 * imports resolved from its directory (those in REWRITTEN rewritten likewise), bare ones by
 * require.resolve from there. */
function rewritten(dist: string, file: string, source: string): string {
  const url = (f: string) => pathToFileURL(f).href;
  const fromFile = createRequire(file);
  const resolve = (spec: string) => url(fromFile.resolve(spec));
  const req = `import { createRequire, isBuiltin } from 'node:module'; const require = createRequire(${JSON.stringify(url(file))});`;
  let out = source;
  const dropped = DROPPED[relative(dist, file)];
  if (dropped) out = out.replace(dropped, '');
  for (const [line, stub] of Object.entries(LAZY_IMPORTS)) {
    if (!out.includes(line)) continue;
    const text = stub(req, source, resolve);
    if (text !== undefined) out = out.replace(line, () => line.replace(/(['"])[^'"]+\1;$/, () => `'${dataUrl(text)}';`));
  }
  out = out.replace(/^(import [^;]*? from )(['"])([^'"]+)\2;$/gm, (line, head: string, _q: string, spec: string) => {
    if (isBuiltin(spec) || spec.startsWith('file:') || spec.startsWith('data:')) return line;
    if (!spec.startsWith('.')) return `${head}'${resolve(spec)}';`;
    const target = join(dirname(file), spec);
    const rel = relative(dist, target);
    return `${head}'${REWRITTEN.has(rel) ? rewritten(dist, target, readFileSync(target, 'utf8')) : url(target)}';`;
  });
  return dataUrl(`${out}\n//# sourceURL=${url(file)}`);
}

/** Loads KubeConfig and Watch without the generated API, once; later clientNode() calls get them. */
export async function loadInformerClient(): Promise<InformerClient> {
  if (loaded) return loaded;
  try {
    const configPath = require.resolve('@kubernetes/client-node/dist/config.js');
    const dist = dirname(configPath);
    const source = readFileSync(configPath, 'utf8');
    if (source.split(GENERATED_IMPORT).length !== 2) return clientNode();
    const configSource = source.replace(GENERATED_IMPORT, "import { createConfiguration } from './gen/configuration.js';\nimport { ServerConfiguration } from './gen/servers.js';");
    const watchPath = join(dist, 'watch.js');
    const config = (await importModule(rewritten(dist, configPath, configSource))) as Pick<InformerClient, 'KubeConfig'>;
    const watch = (await importModule(rewritten(dist, watchPath, readFileSync(watchPath, 'utf8')))) as Pick<InformerClient, 'Watch'>;
    if (!loaded) {
      loaded = { KubeConfig: config.KubeConfig, Watch: watch.Watch };
      lean = true;
    }
  } catch {
    // The whole package instead: the same classes, only heavier.
  }
  return clientNode();
}
