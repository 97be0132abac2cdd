/** What `nfkube agent` loads before it reads anything: the YAML parsers only when a YAML file or
 * a kubeconfig is read. `yaml` alone is 72 modules and ~45 ms of CPU at every start (a fifth of
 * the module loading of `agent --once --manifests` over JSON files). */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';

const DIST_SRC = join(__dirname, '..', '..', 'src');

/** The node_modules packages a new process has loaded after requiring `modules` (dist paths). */
function packagesLoadedBy(modules: string[]): string[] {
  const script = `${modules.map((m) => `require(${JSON.stringify(join(DIST_SRC, m))});`).join('')}
const pkgs = new Set(Object.keys(require.cache).map((k) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(k)?.[1]).filter(Boolean));
process.stdout.write(JSON.stringify([...pkgs].sort()));`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as string[];
}

describe('modules loaded at start', () => {
  test('the agent command and the node composition load no YAML parser', () => {
    const loaded = packagesLoadedBy(['cli/main.js', 'cli/commands/agent.js', 'node/run.js', 'k8s/manifest-source.js', 'k8s/informer-source.js']);
    assert.deepEqual(loaded.filter((p) => p === 'yaml' || p === 'js-yaml'), [], `loaded: ${loaded.join(', ')}`);
  });
});
