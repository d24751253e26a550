import { rename, writeFile } from 'node:fs/promises';

/**
 * Replaces `path` with `content` in one step: a process that dies meanwhile leaves the old file or the new one, never
 * a part of either. Readable by its owner only, as it holds customers' events. Writes to one path must not overlap.
 */
export async function writeFileAtomically(path: string, content: string): Promise<void> {
  const temporary = `${path}.tmp`;
  await writeFile(temporary, content, { mode: 0o600 });
  await rename(temporary, path);
}
