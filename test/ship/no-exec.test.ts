/** "No shelling out", proved two ways: under strace the only program executed is node itself, and
 * in a mount namespace where iptables, ip6tables, ipset, nft and iproute2 are absent from the
 * filesystem every command still works. Each run is inside a fresh network namespace. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withSandbox } from '../helpers/netns';

const root = join(__dirname, '..', '..', '..');
const nfkube = join(root, 'bin', 'nfkube');
const examples = join(root, 'examples');
const IPSET_INPUT = 'create nfk-web hash:ip family inet hashsize 1024 maxelem 65536\nadd nfk-web 198.18.0.7\n';

const COMMANDS: [string, string[], string?][] = [
  ['agent --once', ['agent', '--once', '--manifests', examples, '--node-name', 'node-1', '--log-level', 'warn']],
  ['verify', ['verify', '--manifests', examples, '--node-name', 'node-1']],
  ['ipset restore', ['ipset', 'restore', '--prefix', 'nfk-'], IPSET_INPUT],
  ['ipset save', ['ipset', 'save', '--prefix', 'nfk-']],
  ['cleanup', ['cleanup']],
];

test('under strace -f, the only execve of every command is node itself', async () => {
  await withSandbox(async (sb) => {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-strace-'));
    for (const [name, args, input] of COMMANDS) {
      const trace = join(dir, `${name.replace(/\W+/g, '-')}.trace`);
      sb.run('strace', ['-f', '-qq', '-e', 'trace=execve', '-o', trace, process.execPath, nfkube, ...args], input);
      const execs = readFileSync(trace, 'utf8').split('\n').filter((l) => /execve\(/.test(l));
      assert.equal(execs.length, 1, `${name} executed:\n${execs.join('\n')}`);
      assert.match(execs[0], new RegExp(`execve\\("${process.execPath.replace(/[/.]/g, '\\$&')}"`), name);
    }
  });
});

test('every command works where iptables, ipset, nft and iproute2 do not exist', async () => {
  await withSandbox(async (sb) => {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-nobin-'));
    writeFileSync(join(dir, 'ipsets'), IPSET_INPUT);
    const run = COMMANDS.filter(([name]) => name !== 'cleanup').map(([, args, input]) => `${JSON.stringify(process.execPath)} ${JSON.stringify(nfkube)} ${args.map((a) => JSON.stringify(a)).join(' ')}${input ? ` < ${JSON.stringify(join(dir, 'ipsets'))}` : ''}`);
    // A private mount namespace: the tools' directories become empty there, nowhere else.
    const script = [
      'set -e',
      'mount -t tmpfs nfkube-empty /usr/sbin',
      'mount --bind /dev/null /usr/bin/ip 2>/dev/null || true',
      'for t in iptables ip6tables iptables-nft iptables-legacy ipset nft; do ! command -v $t >/dev/null || { echo "$t still present"; exit 3; }; done',
      '[ ! -x /usr/bin/ip ] || { echo "ip still executable"; exit 3; }',
      ...run,
    ].join('\n');
    const out = execFileSync('nsenter', [`--net=${sb.netns.path}`, 'unshare', '--mount', '--propagation', 'private', 'sh', '-c', script], { encoding: 'utf8' });
    assert.match(out, /matches the desired state/);
    assert.match(out, /add nfk-web 198\.18\.0\.7/);
    // Independent check from outside that mount namespace, with the real tools.
    assert.match(sb.run('nft', ['list', 'table', 'inet', 'nfkube']), /chain forward_ingress/);
    assert.match(sb.run('ipset', ['list', 'nfk-web']), /198\.18\.0\.7/);
  });
});
