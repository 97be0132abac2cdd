#!/usr/bin/env node
/* Reports the names of src/nft/constants.ts that nothing uses, so the file keeps only what nfkube
 * needs. A kernel enum (a `// enum nft_...` block) is kept whole when any of its names is used:
 * attribute names are also looked up by prefix for error messages (attrName), and message types
 * for the per-kind batch counts. A #define outside an enum is kept only when used itself.
 *
 *   node scripts/nft-constants-usage.js           lists what is unused; exit status 1 if anything is
 *   node scripts/nft-constants-usage.js --write   removes it */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const file = path.join(root, 'src', 'nft', 'constants.ts');

function sources(dir, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) sources(p, out);
    else if (e.name.endsWith('.ts') && p !== file) out.push(p);
  }
  return out;
}

const used = new Set();
for (const dir of ['src', 'test', 'bench']) {
  if (!fs.existsSync(path.join(root, dir))) continue;
  for (const p of sources(path.join(root, dir))) for (const word of fs.readFileSync(p, 'utf8').match(/\b[A-Z][A-Z0-9_]+\b/g) ?? []) used.add(word);
}

const lines = fs.readFileSync(file, 'utf8').split('\n');
/** Groups of lines: an enum block from its `// enum` line to the next, or one line outside. */
const groups = [];
let current;
for (const line of lines) {
  if (/^\/\/ enum /.test(line)) groups.push((current = { enum: line.slice(8), lines: [line] }));
  else if (current) current.lines.push(line);
  else groups.push({ lines: [line] });
}
const namesOf = (g) => g.lines.map((l) => /^export const (\w+) =/.exec(l)?.[1]).filter(Boolean);

const unused = groups.filter((g) => {
  const names = namesOf(g);
  return names.length > 0 && !names.some((n) => used.has(n));
});
for (const g of unused) console.log(g.enum ? `enum ${g.enum}: ${namesOf(g).join(' ')}` : namesOf(g).join(' '));

if (process.argv.includes('--write')) {
  const drop = new Set(unused);
  fs.writeFileSync(file, `${groups.filter((g) => !drop.has(g)).flatMap((g) => g.lines).join('\n').trimEnd()}\n`);
  console.log(`removed ${unused.reduce((n, g) => n + namesOf(g).length, 0)} names`);
} else if (unused.length) {
  process.exitCode = 1;
}
