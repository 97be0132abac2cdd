#!/usr/bin/env node
// npm's install step. Where the prebuilt addon for this platform loads (linux-x64 and
// linux-arm64 with glibc), nothing is compiled; elsewhere (another architecture, musl, an older
// glibc), or with NFKUBE_BUILD_FROM_SOURCE=1, node-gyp builds it from native/ as before, and with
// it the compiled CNI plugin, build/Release/nfkube-cni-ipam (its prebuilt twin sits next to the
// prebuilt addon; `nfkube install --cni` falls back to the Node plugin where neither exists).
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const prebuilt = join(root, 'prebuilds', `${process.platform}-${process.arch}`, 'nfnl.node');

function say(text) {
  process.stderr.write(`nfkube: ${text}\n`);
}

if (!process.env.NFKUBE_BUILD_FROM_SOURCE && existsSync(prebuilt)) {
  try {
    require(prebuilt);
    say(`using the prebuilt addon prebuilds/${process.platform}-${process.arch}/nfnl.node (no compiler needed)`);
    process.exit(0);
  } catch (err) {
    say(`the prebuilt addon does not load here (${err.message.split('\n')[0]}); building from source`);
  }
} else {
  say(process.env.NFKUBE_BUILD_FROM_SOURCE ? 'NFKUBE_BUILD_FROM_SOURCE is set; building from source' : `no prebuilt addon for ${process.platform}-${process.arch}; building from source`);
}
// npm names its bundled node-gyp; outside npm, node-gyp must be on PATH.
const gyp = process.env.npm_config_node_gyp;
execFileSync(gyp ? process.execPath : 'node-gyp', [...(gyp ? [gyp] : []), 'rebuild'], { cwd: root, stdio: 'inherit' });
