/** nfkube programs the kernel itself: nothing under src/ may start another program. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(__dirname, '..', '..', '..');
const srcDir = join(root, 'src');

// import ... from 'child_process', import('node:child_process'), require("child_process"),
// export ... from 'child_process', and `import x = require(...)`.
const CHILD_PROCESS = /(?:\bfrom\s*|\brequire\s*\(\s*|\bimport\s*\(\s*|\bimport\s+)(['"`])(?:node:)?child_process\1/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.(?:[cm]?[tj]s|tsx|jsx)$/.test(e.name) ? [path] : [];
  });
}

test('the detector recognises every way of loading child_process', () => {
  for (const line of [
    `import { spawn } from 'child_process';`,
    `import * as cp from "node:child_process";`,
    `import cp = require('child_process');`,
    `const cp = require( 'node:child_process' );`,
    'const cp = await import(`child_process`);',
    `export { execFile } from 'node:child_process';`,
    `import 'child_process';`,
  ]) {
    assert.match(line, CHILD_PROCESS, line);
  }
  assert.doesNotMatch(`// child_process is never used`, CHILD_PROCESS);
  assert.doesNotMatch(`import { x } from './child_process_free';`, CHILD_PROCESS);
});

test('no file under src/ imports child_process', () => {
  const files = sourceFiles(srcDir);
  assert.ok(files.length > 10, `found only ${files.length} source files under ${srcDir}`);
  const offenders = files.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (CHILD_PROCESS.test(line) ? [`${relative(root, file)}:${i + 1}: ${line.trim()}`] : [])),
  );
  assert.deepEqual(offenders, [], `src/ must not start programs:\n${offenders.join('\n')}`);
});
