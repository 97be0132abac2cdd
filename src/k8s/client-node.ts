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
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
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

/** Imports of config.js and watch.js that only some kubeconfigs use (a SOCKS proxy-url) or that
 * nfkube never calls (client-node's fetch-based requests: raw-list.ts and raw-watch.ts use
 * node:http): each becomes a small module that requires the package, the CommonJS build an
 * import of it loads too, the first time it is used. They were a fifth of the CPU of loading
 * the informers' client (socks, ip-address, whatwg-url, tr46). */
const LAZY_IMPORTS: Record<string, (require: string) => string> = {
  "import { Headers } from 'node-fetch';": (req) => `${req} export class Headers { constructor(...a) { return new (require('node-fetch').Headers)(...a); } }`,
  "import fetch from 'node-fetch';": (req) => `${req} export default function fetch(...a) { return require('node-fetch')(...a); }`,
  "import { SocksProxyAgent } from 'socks-proxy-agent';": (req) =>
    `${req} export class SocksProxyAgent { constructor(...a) { return new (require('socks-proxy-agent').SocksProxyAgent)(...a); } }`,
};

/** A real dynamic import: TypeScript's CommonJS output would turn `import()` into require(). */
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

/** Quotes escaped too: the URL may stand inside a quoted import specifier. */
const dataUrl = (source: string) => `data:text/javascript,${encodeURIComponent(source).replace(/'/g, '%27')}`;

/** One of client-node's ES modules as a data: URL: the lazy imports above replaced, relative
 * imports resolved from its directory, bare ones by require.resolve from there. */
function rewritten(file: string, source: string): string {
  const url = (f: string) => pathToFileURL(f).href;
  const fromFile = createRequire(file);
  const req = `import { createRequire } from 'node:module'; const require = createRequire(${JSON.stringify(url(file))});`;
  let out = source;
  for (const [line, stub] of Object.entries(LAZY_IMPORTS)) {
    if (out.includes(line)) out = out.replace(line, () => line.replace(/'[^']+';$/, () => `'${dataUrl(stub(req))}';`));
  }
  out = out.replace(/^(import [^;]*? from )'([^']+)';$/gm, (line, head: string, spec: string) => {
    if (spec.startsWith('node:') || spec.startsWith('file:') || spec.startsWith('data:')) return line;
    return `${head}'${url(spec.startsWith('.') ? join(dirname(file), spec) : fromFile.resolve(spec))}';`;
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
    const url = (file: string) => pathToFileURL(file).href;
    const configSource = source.replace(
      GENERATED_IMPORT,
      `import { createConfiguration } from '${url(join(dist, 'gen/configuration.js'))}'; import { ServerConfiguration } from '${url(join(dist, 'gen/servers.js'))}';`,
    );
    const watchPath = join(dist, 'watch.js');
    const config = (await importModule(rewritten(configPath, configSource))) as Pick<InformerClient, 'KubeConfig'>;
    const watch = (await importModule(rewritten(watchPath, readFileSync(watchPath, 'utf8')))) as Pick<InformerClient, 'Watch'>;
    if (!loaded) {
      loaded = { KubeConfig: config.KubeConfig, Watch: watch.Watch };
      lean = true;
    }
  } catch {
    // The whole package instead: the same classes, only heavier.
  }
  return clientNode();
}
