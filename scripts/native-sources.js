// The digest of what the addon is built from (binding.gyp and native/), so a test can tell when
// the prebuilt binaries are older than the sources.
'use strict';
const { createHash } = require('node:crypto');
const { readdirSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

function sourcesDigest(root) {
  const hash = createHash('sha256');
  const files = ['binding.gyp', ...readdirSync(join(root, 'native')).sort().map((f) => join('native', f))];
  for (const f of files) {
    hash.update(`${f}\0`);
    hash.update(readFileSync(join(root, f)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

module.exports = { sourcesDigest };
