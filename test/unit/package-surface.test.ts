/** The package as another project sees it: each entry point of package.json's `exports`, loaded
 * by its package name from a directory outside the checkout, holds what a user needs and none of
 * the internals; its types resolve, for TypeScript's node16 and node10 resolution alike; no other
 * path inside the package is reachable; the README's library example imports only what its entry
 * point exports (test/kernel/readme-example.test.ts runs it). */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ts from 'typescript';

const ROOT = join(__dirname, '..', '..', '..');

/** Each entry point: the names a user needs (values) and names that are internals. */
const ENTRIES: Record<string, { types: string; needed: string[]; internal: string[] }> = {
  nfkube: {
    types: 'dist/src/index.d.ts',
    needed: ['Agent', 'ChangeScope', 'Netns', 'NetlinkSocket', 'InformerSource', 'ManifestSource', 'loadKubeConfig', 'POLICY_KINDS', 'PROXY_KINDS', 'PolicyComponent', 'policyTable', 'PolicyModes', 'startDropLogging', 'ProxyComponent'],
    internal: ['Renderer', 'RenderError', 'formatRuleBody', 'formatLabel', 'parseLabel', 'plan', 'compileFull', 'PolicyEngine', 'Transaction', 'explainFlow'],
  },
  'nfkube/netfilter': {
    types: 'dist/src/netfilter.d.ts',
    needed: ['Netns', 'NetlinkSocket', 'NetlinkError', 'isGenerationMismatch', 'addonPath', 'Transaction', 'commit', 'getGeneration', 'listTable', 'readTable', 'consistentRead', 'formatTable', 'nftBuild', 'SetTypeError', 'modelFromKernel', 'diffRulesets', 'ipset', 'ConntrackClient', 'NflogSubscription', 'decodeNflogPacket', 'decodeHeaders'],
    internal: ['formatRuleBody', 'Renderer', 'Agent', 'PolicyComponent', 'ProxyComponent', 'native'],
  },
  'nfkube/cni': {
    types: 'dist/src/cni/index.d.ts',
    needed: ['main', 'cniCall', 'cniExec', 'CNI_ERR'],
    internal: ['containerIdProblem', 'ifnameProblem', 'Agent'],
  },
};

let app: string;
let load: NodeJS.Require;

before(() => {
  app = mkdtempSync(join(tmpdir(), 'nfkube-surface-'));
  mkdirSync(join(app, 'node_modules'));
  symlinkSync(ROOT, join(app, 'node_modules', 'nfkube'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  load = createRequire(join(app, 'index.js'));
});

after(() => rmSync(app, { recursive: true, force: true }));

test('each entry point, required by name, holds what a user needs and no internals', () => {
  for (const [name, { needed, internal }] of Object.entries(ENTRIES)) {
    const exported = load(name) as Record<string, unknown>;
    for (const n of needed) assert.notEqual(exported[n], undefined, `${name} exports ${n}`);
    for (const n of internal) assert.equal(n in exported, false, `${name} keeps ${n} inside`);
  }
  assert.equal((load('nfkube/package.json') as { name: string }).name, 'nfkube');
});

test('no other path inside the package is reachable by name', () => {
  for (const deep of ['nfkube/dist/src/policy/render/render.js', 'nfkube/dist/src/index.js', 'nfkube/src/netfilter']) {
    assert.throws(() => load.resolve(deep), (err: NodeJS.ErrnoException) => err.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED', deep);
  }
});

test('the types of each entry point resolve, with node16 and node10 resolution', () => {
  const from = join(app, 'index.ts');
  for (const [name, { types }] of Object.entries(ENTRIES)) {
    for (const moduleResolution of [ts.ModuleResolutionKind.Node16, ts.ModuleResolutionKind.Node10]) {
      const options = { moduleResolution, module: moduleResolution === ts.ModuleResolutionKind.Node16 ? ts.ModuleKind.Node16 : ts.ModuleKind.CommonJS };
      const resolved = ts.resolveModuleName(name, from, options, ts.sys).resolvedModule?.resolvedFileName;
      assert.ok(resolved && existsSync(resolved), `${name} (${ts.ModuleResolutionKind[moduleResolution]}) resolves to a declaration file: ${resolved}`);
      assert.equal(ts.sys.realpath!(resolved), ts.sys.realpath!(join(ROOT, types)), `${name} (${ts.ModuleResolutionKind[moduleResolution]})`);
    }
  }
});

test("a consumer type-checks against the entry points: the types to drive the agent are there, internals are not; the README's example imports resolve", () => {
  const consumer = join(app, 'consumer.ts');
  writeFileSync(
    consumer,
    [
      `import { Agent, AgentOptions, ClusterSnapshot, ClusterChange, ClusterSource, Component, RulesetModel, PolicyComponent, PolicyComponentOptions, ProxyComponent, ProxyOptions, ManifestSource, NetlinkSocket } from 'nfkube';`,
      `import { Transaction, NftSet, Rule, commit, CommitResult } from 'nfkube/netfilter';`,
      `import { IpamRequest, IpamReply, NetConf } from 'nfkube/cni';`,
      `export type Used = [Agent, AgentOptions, ClusterSnapshot, ClusterChange, ClusterSource, Component, RulesetModel, PolicyComponent, PolicyComponentOptions, ProxyComponent, ProxyOptions, ManifestSource, NetlinkSocket, Transaction, NftSet, Rule, typeof commit, CommitResult, IpamRequest, IpamReply, NetConf];`,
      `import { Renderer } from 'nfkube';`,
      `export type Internal = Renderer;`,
    ].join('\n'),
  );
  // The README's library example, its imports as written.
  const readmeImports = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/^import \{[^}]+\} from 'nfkube[^']*';$/gm)].map((m) => m[0]);
  assert.ok(readmeImports.length > 0, 'README has a library example');
  const readme = join(app, 'readme.ts');
  writeFileSync(readme, `${readmeImports.join('\n')}\n`);
  const program = ts.createProgram([consumer, readme], { module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16, strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')] });
  const problems = ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? `${d.file.fileName.slice(app.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : ''} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
  assert.equal(problems.length, 1, problems.join('\n'));
  assert.match(problems[0], /^consumer\.ts:5 .*Renderer/);
});
