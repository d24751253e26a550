import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform base62 string from the CSPRNG (rejection sampling keeps every character equally likely). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/**
 * A uniform base62 string with at least one digit, one lower-case and one upper-case letter (redrawn until it has):
 * the shape that log redaction recognises a bare password by (shared/observability.ts).
 */
export function randomMixedBase62(length: number): string {
  for (;;) {
    const candidate = randomBase62(length);
    if (/[0-9]/.test(candidate) && /[a-z]/.test(candidate) && /[A-Z]/.test(candidate)) return candidate;
  }
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** Equal-length hex or token comparison that takes the same time whatever the contents. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export function base62Of(bytes: Uint8Array, length: number): string {
  let value = BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
  let out = '';
  for (let i = 0; i < length; i++) {
    out = BASE62[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}
