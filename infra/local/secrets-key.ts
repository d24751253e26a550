import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Bytes of the local raw AES-256 wrapping key that stands in for the KMS key on this machine. */
const KEY_BYTES = 32;

/**
 * Makes sure the local secrets key exists at `path` (readable by its owner only) and keeps an existing one: data
 * sealed under it in a kept data directory must still open after a restart.
 */
export function ensureSecretsKeyFile(path: string): string {
  if (!existsSync(path)) writeFileSync(path, randomBytes(KEY_BYTES), { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return path;
}

/** A fresh key for a runtime whose data lives only as long as it does; `remove` deletes it. */
export function temporarySecretsKeyFile(): { path: string; remove: () => void } {
  const directory = mkdtempSync(join(tmpdir(), 'vps-secrets-'));
  return { path: ensureSecretsKeyFile(join(directory, 'secrets.key')), remove: () => rmSync(directory, { recursive: true, force: true }) };
}
