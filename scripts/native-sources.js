// The digest of what the addon and the compiled CNI plugin are built from (binding.gyp and native/), so a test can tell when
// the prebuilt binaries are older than the sources.
'use strict';
const { createHash } = require('node:crypto');
const { readdirSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

/** Files under dir (relative to root), sorted, subdirectories (native/cni/) included. */
function filesUnder(root, dir) {
  return readdirSync(join(root, dir), { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((e) => (e.isDirectory() ? filesUnder(root, join(dir, e.name)) : [join(dir, e.name)]));
}

function sourcesDigest(root) {
  const hash = createHash('sha256');
  const files = ['binding.gyp', ...filesUnder(root, 'native')];
  for (const f of files) {
    hash.update(`${f}\0`);
    hash.update(readFileSync(join(root, f)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

module.exports = { sourcesDigest };
