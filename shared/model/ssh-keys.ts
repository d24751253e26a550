import { createHash, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { badRequest } from './errors';

export interface SshKey {
  readonly name: string;
  readonly fingerprint: string;
  readonly public_key: string;
  readonly private_key: string | null;
}

const ED25519 = 'ssh-ed25519';
const MAX_PUBLIC_KEY_LENGTH = 8192;
const MIN_RSA_BITS = 2048;

/** SSH wire-format string: uint32 length, then the bytes. */
function sshString(data: Buffer | string): Buffer {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

function uint32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

/** OpenSSH's `SHA256:` fingerprint of a public key blob (unpadded base64), as `ssh-keygen -l` prints it. */
export function isPrintableAscii(text: string): boolean {
  return PRINTABLE_ASCII.test(text);
}

export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** A fresh ed25519 key pair in OpenSSH formats (`openssh-key-v1` private key, unencrypted). */
export function generateSshKey(name: string, comment: string): SshKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pub = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  const seed = Buffer.from(privateKey.export({ format: 'jwk' }).d ?? '', 'base64url');
  const blob = Buffer.concat([sshString(ED25519), sshString(pub)]);

  const check = randomBytes(4);
  let secret = Buffer.concat([check, check, sshString(ED25519), sshString(pub), sshString(Buffer.concat([seed, pub])), sshString(comment)]);
  const padding = Buffer.from(Array.from({ length: (8 - (secret.length % 8)) % 8 }, (_, i) => i + 1));
  secret = Buffer.concat([secret, padding]);
  const body = Buffer.concat([
    Buffer.from('openssh-key-v1\0'),
    sshString('none'),
    sshString('none'),
    sshString(''),
    uint32(1),
    sshString(blob),
    sshString(secret),
  ]);
  const lines = body.toString('base64').match(/.{1,70}/g) ?? [];
  return {
    name,
    fingerprint: fingerprintOf(blob),
    public_key: `${ED25519} ${blob.toString('base64')} ${comment}`,
    private_key: ['-----BEGIN OPENSSH PRIVATE KEY-----', ...lines, '-----END OPENSSH PRIVATE KEY-----', ''].join('\n'),
  };
}

/** Reads consecutive SSH wire-format strings from a blob; undefined when the blob is truncated. */
function readSshStrings(blob: Buffer): Buffer[] | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset < blob.length) {
    if (offset + 4 > blob.length) return undefined;
    const length = blob.readUInt32BE(offset);
    offset += 4;
    if (offset + length > blob.length) return undefined;
    parts.push(blob.subarray(offset, offset + length));
    offset += length;
  }
  return parts;
}

const CURVES: Record<string, { curve: string; name: string; pointLength: number }> = {
  'ecdsa-sha2-nistp256': { curve: 'P-256', name: 'nistp256', pointLength: 65 },
  'ecdsa-sha2-nistp384': { curve: 'P-384', name: 'nistp384', pointLength: 97 },
  'ecdsa-sha2-nistp521': { curve: 'P-521', name: 'nistp521', pointLength: 133 },
};

/** Checks that the blob really is a usable key of its declared type; returns false otherwise. */
function isValidKeyBlob(type: string, fields: Buffer[]): boolean {
  if (type === ED25519) return fields.length === 2 && fields[1]?.length === 32;
  if (type === 'ssh-rsa') {
    const [, exponent, modulus] = fields;
    if (fields.length !== 3 || !exponent || !modulus) return false;
    try {
      const key = createPublicKey({
        key: { kty: 'RSA', e: exponent.toString('base64url'), n: modulus.toString('base64url') },
        format: 'jwk',
      });
      return (key.asymmetricKeyDetails?.modulusLength ?? 0) >= MIN_RSA_BITS;
    } catch {
      return false;
    }
  }
  const ecdsa = CURVES[type];
  if (ecdsa) {
    const [, curveName, point] = fields;
    if (fields.length !== 3 || curveName?.toString() !== ecdsa.name || point?.length !== ecdsa.pointLength) return false;
    const half = (point.length - 1) / 2;
    try {
      createPublicKey({
        key: {
          kty: 'EC',
          crv: ecdsa.curve,
          x: point.subarray(1, 1 + half).toString('base64url'),
          y: point.subarray(1 + half).toString('base64url'),
        },
        format: 'jwk',
      });
      return point[0] === 4;
    } catch {
      return false;
    }
  }
  return false;
}

/** Printable ASCII and spaces only: nothing that YAML, a shell or sshd could read as a line break or an escape. */
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/**
 * Validates a supplied public key line (`type base64 [comment]`), whole: printable ASCII only (the comment too), a
 * supported type whose blob decodes, names the same type and holds a real key (RSA at least 2048 bits). Returns the
 * normalised line and its fingerprint.
 */
export function parsePublicKey(line: string, name: string): SshKey {
  const invalid = () =>
    badRequest(
      'Invalid ssh_public_key: expected an OpenSSH public key line (ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa of 2048 bits or more)',
    );
  const trimmed = line.replace(/^ +| +$/g, '');
  if (trimmed.length > MAX_PUBLIC_KEY_LENGTH || !PRINTABLE_ASCII.test(trimmed)) {
    throw badRequest('Invalid ssh_public_key: only printable ASCII characters and spaces are allowed, on one line');
  }
  const [type, encoded, ...comment] = trimmed.split(/ +/);
  if (!type || !encoded || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw invalid();
  const blob = Buffer.from(encoded, 'base64');
  if (blob.toString('base64') !== encoded) throw invalid();
  const fields = readSshStrings(blob);
  if (!fields || fields[0]?.toString() !== type || !isValidKeyBlob(type, fields)) throw invalid();
  return {
    name,
    fingerprint: fingerprintOf(blob),
    public_key: [type, encoded, ...comment].join(' '),
    private_key: null,
  };
}
