#!/usr/bin/env node
// Builds the prebuilt binaries shipped in the package: prebuilds/linux-<arch>/nfnl.node (the addon)
// and prebuilds/linux-<arch>/nfkube-cni-ipam (the compiled CNI plugin, static) for each architecture
// asked for (default: x64 and arm64), with node-gyp and, for another
// architecture, a cross compiler (arm64: apt-get install g++-aarch64-linux-gnu). Built on Debian
// 12, they need glibc >= 2.32 and the libstdc++ of GCC >= 11 (Debian 12, Ubuntu 22.04, RHEL 9 and
// later); linking libstdc++ statically would raise the glibc floor to the build host's own (2.36).
// Elsewhere the install script builds from source. N-API is ABI-stable: one binary
// per platform serves every Node.js >= 20. prebuilds/SOURCES.sha256 records the sources they
// were built from; the tests fail when it no longer matches native/ and binding.gyp.
'use strict';
const { execFileSync } = require('node:child_process');
const { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { sourcesDigest } = require('./native-sources');

const root = join(__dirname, '..');
const CROSS = {
  x64: { prefix: 'x86_64-linux-gnu-', gypArch: 'x64' },
  arm64: { prefix: 'aarch64-linux-gnu-', gypArch: 'arm64' },
};
const nodeGyp = process.env.npm_config_node_gyp || require.resolve('node-gyp/bin/node-gyp.js');

function build(arch) {
  const cross = CROSS[arch];
  if (!cross) throw new Error(`no toolchain known for linux-${arch}`);
  const native = arch === process.arch;
  const work = mkdtempSync(join(tmpdir(), `nfkube-prebuild-${arch}-`));
  try {
    cpSync(join(root, 'native'), join(work, 'native'), { recursive: true });
    copyFileSync(join(root, 'binding.gyp'), join(work, 'binding.gyp'));
    const env = {
      ...process.env,
      NODE_PATH: join(root, 'node_modules'), // binding.gyp asks node for node-addon-api's headers
      ...(native ? {} : { CC: `${cross.prefix}gcc`, CXX: `${cross.prefix}g++`, LINK: `${cross.prefix}g++`, AR: `${cross.prefix}ar` }),
    };
    execFileSync(process.execPath, [nodeGyp, 'rebuild', `--arch=${cross.gypArch}`], { cwd: work, env, stdio: 'inherit' });
    const out = join(root, 'prebuilds', `linux-${arch}`);
    mkdirSync(out, { recursive: true });
    const target = join(out, 'nfnl.node');
    copyFileSync(join(work, 'build', 'Release', 'nfnl.node'), target);
    execFileSync(native ? 'strip' : `${cross.prefix}strip`, ['--strip-unneeded', target]);
    process.stdout.write(`prebuilds/linux-${arch}/nfnl.node\n`);
    const plugin = join(out, 'nfkube-cni-ipam');
    copyFileSync(join(work, 'build', 'Release', 'nfkube-cni-ipam'), plugin);
    execFileSync(native ? 'strip' : `${cross.prefix}strip`, ['--strip-all', plugin]);
    process.stdout.write(`prebuilds/linux-${arch}/nfkube-cni-ipam\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const arches = process.argv.slice(2).length ? process.argv.slice(2) : ['x64', 'arm64'];
for (const arch of arches) build(arch);
writeFileSync(join(root, 'prebuilds', 'SOURCES.sha256'), `${sourcesDigest(root)}\n`);
