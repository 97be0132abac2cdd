#!/usr/bin/env node
// Records the version and the git commit at build time in dist/src/build-info.json, so that
// `nfkube --version` and nfkube_build_info never run git (or anything else) at run time.
'use strict';
const { execFileSync } = require('node:child_process');
const { mkdirSync, readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

function git(args) {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

const commit = process.env.NFKUBE_REVISION || git(['rev-parse', 'HEAD']);
const dirty = commit && !process.env.NFKUBE_REVISION && git(['status', '--porcelain', '--untracked-files=no']);
const revision = commit ? `${commit}${dirty ? '-dirty' : ''}` : 'unknown';
const out = join(root, 'dist', 'src');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'build-info.json'), `${JSON.stringify({ version, revision }, null, 2)}\n`);
