import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * One SHA-256 over the paths and contents of `entries` (files, or folders walked in full, skipping
 * `exclude`d names), relative to `root`: equal exactly when the tree is. The console's build records
 * it for its inputs, and `npm start` compares it to tell a stale build.
 */
export function treeHash(root: string, entries: readonly string[], exclude: readonly string[] = []): string {
  const files: string[] = [];
  const walk = (rel: string) => {
    const full = path.join(root, rel);
    if (statSync(full).isDirectory()) {
      for (const name of readdirSync(full).sort()) if (!exclude.includes(name)) walk(path.join(rel, name));
    } else files.push(rel);
  };
  for (const entry of entries) walk(entry);
  const hash = createHash('sha256');
  for (const rel of files.sort()) hash.update(rel.split(path.sep).join('/')).update('\0').update(readFileSync(path.join(root, rel))).update('\0');
  return hash.digest('hex');
}
