/** How the manifests source reads a file (one open, fstat, read and close into a reused buffer):
 * what is not a regular file is passed over without blocking, a symlink is followed, files of
 * every size up to the format's limit read whole (larger than the reused buffer, and larger
 * than the YAML limit for JSON), and a file that grows or shrinks between reads is read as it
 * is now. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { MAX_MANIFEST_BYTES, ManifestSource } from '../../src/k8s/manifest-source';
import { Recorder } from './recorder';

const T = { timeout: 60_000 };

function namespace(name: string, labels: Record<string, string> = {}): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

/** A List of n Namespaces, each with a label of `pad` characters: a file of roughly n * pad bytes. */
function namespaceList(prefix: string, n: number, pad: number): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'List', items: Array.from({ length: n }, (_, i) => namespace(`${prefix}-${i}`, { pad: 'x'.repeat(pad) })) };
}

describe('ManifestSource reading files', () => {
  test('a FIFO and a directory with manifest names are passed over, without blocking; a symlink is followed', T, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-read-'));
    try {
      execFileSync('mkfifo', [join(dir, 'pipe.yaml')]);
      mkdirSync(join(dir, 'sub.yaml'));
      const target = join(dir, 'target.txt');
      writeFileSync(target, stringify(namespace('linked')));
      symlinkSync(target, join(dir, 'link.yaml'));
      writeFileSync(join(dir, 'plain.yaml'), stringify(namespace('plain')));
      const rec = new Recorder();
      const source = new ManifestSource({ dir, ...rec });
      const snap = await source.start();
      await source.stop();
      assert.deepEqual([...snap.namespaces.keys()].sort(), ['linked', 'plain']);
      assert.deepEqual(rec.errors, []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('files larger than the reused buffer, and JSON larger than the YAML limit, are read whole', T, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-read-'));
    try {
      // About 600 KB of YAML (more than the 256 KiB buffer the source starts with) and 6 MB of
      // JSON (more than the YAML limit, read without the buffer).
      const yamlText = stringify(namespaceList('y', 600, 1000));
      const jsonText = JSON.stringify(namespaceList('j', 3000, 2000));
      assert.ok(yamlText.length > 256 * 1024 && yamlText.length < MAX_MANIFEST_BYTES.yaml);
      assert.ok(jsonText.length > MAX_MANIFEST_BYTES.yaml && jsonText.length < MAX_MANIFEST_BYTES.json);
      writeFileSync(join(dir, 'a-big.yaml'), yamlText);
      writeFileSync(join(dir, 'b-big.json'), jsonText);
      writeFileSync(join(dir, 'c-small.yaml'), stringify(namespace('small')));
      const rec = new Recorder();
      const source = new ManifestSource({ dir, ...rec });
      const snap = await source.start();
      assert.deepEqual(rec.errors, []);
      assert.equal(snap.namespaces.size, 600 + 3000 + 1);
      assert.equal(snap.namespaces.get('y-599')?.labels.pad, 'x'.repeat(1000));
      assert.equal(snap.namespaces.get('j-2999')?.labels.pad, 'x'.repeat(2000));

      // Rewritten smaller, then larger again: each read is the file as it is now.
      writeFileSync(join(dir, 'a-big.yaml'), stringify(namespace('y-0')));
      source.rescan('a-big.yaml');
      assert.equal(source.snapshot().namespaces.has('y-599'), false);
      assert.equal(source.snapshot().namespaces.has('y-0'), true);
      writeFileSync(join(dir, 'a-big.yaml'), yamlText);
      source.rescan('a-big.yaml');
      assert.equal(source.snapshot().namespaces.get('y-599')?.labels.pad, 'x'.repeat(1000));
      await source.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
