import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Passwords are hashed with scrypt (node:crypto): N = 2^15, r = 8, p = 1, a 16-byte random salt and a 64-byte key,
 * OWASP's recommended minimum for scrypt. The stored form names its parameters (`scrypt$N$r$p$salt$hash`), so a
 * later change of parameters still verifies older hashes.
 */
const PARAMETERS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 64;
const SALT_BYTES = 16;

function derive(password: string, salt: Buffer, options: { N: number; r: number; p: number }): Promise<Buffer> {
  // 128 * N * r bytes of memory: 32 MiB at these parameters, which is exactly Node's default ceiling, so it is raised.
  const withMemory: ScryptOptions = { ...options, maxmem: 256 * options.N * options.r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_BYTES, withMemory, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMETERS);
  return ['scrypt', PARAMETERS.N, PARAMETERS.r, PARAMETERS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, expected] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !expected) return false;
  const key = await derive(password, Buffer.from(salt, 'base64'), { N: Number(n), r: Number(r), p: Number(p) });
  const wanted = Buffer.from(expected, 'base64');
  return key.length === wanted.length && timingSafeEqual(key, wanted);
}

/**
 * A hash of a random password no one knows, verified against when an address has no login, so that an unknown
 * address costs the same scrypt work as a wrong password.
 */
let decoy: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(32).toString('base64'));
  return decoy;
}
