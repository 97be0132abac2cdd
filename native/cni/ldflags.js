// Prints the link flags of the compiled CNI plugin for binding.gyp: -static when the C compiler
// node-gyp will use ($CC, else cc) can link a static program (Debian's libc6-dev can; Fedora needs
// glibc-static), else nothing and the plugin links glibc dynamically. Static is preferred: the
// DaemonSet's init container copies the binary onto hosts whose libc it cannot know.
'use strict';
const { spawnSync } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const dir = mkdtempSync(join(tmpdir(), 'nfkube-ldflags-'));
try {
  const cc = (process.env.CC || 'cc').split(' ').filter(Boolean);
  const r = spawnSync(cc[0], [...cc.slice(1), '-static', '-x', 'c', '-', '-o', join(dir, 'probe')], { input: 'int main(void) { return 0; }\n', stdio: ['pipe', 'ignore', 'ignore'], timeout: 60_000 });
  process.stdout.write(r.status === 0 ? '-static\n' : '\n');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
