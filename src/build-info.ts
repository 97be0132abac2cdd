/** What this build of nfkube is: the package version and the git commit it was built from, both
 * recorded at build time (scripts/build-info.js), so nothing is run to find them. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface BuildInfo {
  version: string;
  /** Commit hash, with `-dirty` when built from a modified tree; `unknown` outside git. */
  revision: string;
}

let info: BuildInfo | undefined;

export function buildInfo(): BuildInfo {
  if (!info) {
    try {
      const raw = JSON.parse(readFileSync(join(__dirname, 'build-info.json'), 'utf8')) as Partial<BuildInfo>;
      info = { version: String(raw.version ?? 'unknown'), revision: String(raw.revision ?? 'unknown') };
    } catch {
      info = { version: 'unknown', revision: 'unknown' };
    }
  }
  return info;
}

/** What `nfkube --version` prints. */
export function versionLine(): string {
  const { version, revision } = buildInfo();
  return `nfkube ${version} (commit ${revision}, node ${process.version})\n`;
}
