import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const root = join(__dirname, '..', '..', '..');

test("the README's library example runs as written", async () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const snippet = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(snippet, 'README has a ts example');
  const lines = snippet.replace(/from 'nfkube\/netfilter'/, `from ${JSON.stringify(join(root, 'dist', 'src', 'netfilter.js'))}`).split('\n');
  const imports = lines.filter((l) => l.startsWith('import '));
  const body = lines.filter((l) => !l.startsWith('import ')).join('\n');
  const source = `${imports.join('\n')}\nexport const main = async () => {\n${body}\n};\n`;
  const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText;
  const printed: string[] = [];
  const log = console.log;
  console.log = (...args: unknown[]) => void printed.push(args.join(' '));
  try {
    const exports: { main?: () => Promise<void> } = {};
    new Function('exports', 'require', js)(exports, require);
    await exports.main!();
  } finally {
    console.log = log;
  }
  const out = printed.join('\n');
  assert.match(out, /add rule inet demo in ip saddr @peers counter packets 0 bytes 0 accept/);
  assert.match(out, /table inet demo \{/);
  assert.match(out, /elements = \{ 198\.18\.0\.1 \}/);
});
