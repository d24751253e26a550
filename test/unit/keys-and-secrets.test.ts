import { generateApiKey, isWellFormedApiKey, KEY_PREFIX_LENGTH } from '../../shared/domain/api-keys';
import { fingerprintOf, generateSshKey, parsePublicKey } from '../../shared/domain/ssh-keys';
import { redactingReplacer, redactText } from '../../shared/observability';
import { ED25519_FINGERPRINT, ED25519_PUBLIC_KEY, rsaPublicKeyLine } from '../fixtures/ssh-keys';

describe('API keys', () => {
  it('generates svcmcp_ keys whose checksum verifies, with a 12-character prefix and a SHA-256 hash', () => {
    const { fullKey, keyHash, keyPrefix } = generateApiKey();

    expect(fullKey).toMatch(/^svcmcp_[0-9A-Za-z]{38}$/);
    expect(isWellFormedApiKey(fullKey)).toBe(true);
    expect(keyPrefix).toBe(fullKey.slice(0, KEY_PREFIX_LENGTH));
    expect(keyHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a key with one character changed, without any lookup', () => {
    const { fullKey } = generateApiKey();
    const position = 10;
    const altered = fullKey.slice(0, position) + (fullKey[position] === 'a' ? 'b' : 'a') + fullKey.slice(position + 1);

    expect(isWellFormedApiKey(altered)).toBe(false);
  });
});

describe('SSH keys', () => {
  it('fingerprints a supplied key as ssh-keygen does', () => {
    expect(parsePublicKey(ED25519_PUBLIC_KEY, 'k').fingerprint).toBe(ED25519_FINGERPRINT);
  });

  it('accepts RSA keys of 2048 bits and more only', () => {
    expect(parsePublicKey(rsaPublicKeyLine(2048), 'k').private_key).toBeNull();
    expect(() => parsePublicKey(rsaPublicKeyLine(1024), 'k')).toThrow(/Invalid ssh_public_key/);
  });

  it('generates an ed25519 pair whose public key and fingerprint agree', () => {
    const key = generateSshKey('k', 'root@vps');
    const blob = Buffer.from(key.public_key.split(' ')[1] ?? '', 'base64');

    expect(key.fingerprint).toBe(fingerprintOf(blob));
    expect(key.private_key).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----\n[\s\S]+\n-----END OPENSSH PRIVATE KEY-----\n$/);
  });
});

describe('log redaction', () => {
  it.each(['root_password', 'private_key', 'full_key', 'Authorization', 'cookie', 'x-csrftoken'])('redacts the %s field', (field) => {
    expect(redactingReplacer(field, 'secret-value')).toBe('[REDACTED]');
  });

  it('redacts API keys and private key blocks inside free text', () => {
    const { fullKey } = generateApiKey();
    const text = `key ${fullKey} and -----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY----- end`;

    expect(redactText(text)).toBe('key [REDACTED] and [REDACTED] end');
  });

  it('leaves ordinary fields alone', () => {
    expect(redactingReplacer('instance_id', 42)).toBe(42);
    expect(redactingReplacer('status', 'active')).toBe('active');
  });
});
