import { randomBytes } from 'node:crypto';
import { csrfTokenFor } from '../../shared/domain/accounts';
import { generateApiKey, isWellFormedApiKey } from '../../shared/model/api-keys';
import { randomBase62, randomMixedBase62 } from '../../shared/model/crypto';
import { newSigningSecret } from '../../shared/model/webhook-signing';
import { fingerprintOf, generateSshKey, parsePublicKey } from '../../shared/model/ssh-keys';
import { logger, redactingReplacer, redactText } from '../../shared/observability';
import { credentialsCloudConfig } from '../../shared/model/user-data';
import { captureLogLines, captureStdoutLines } from '../support/stdout';
import { ED25519_FINGERPRINT, ED25519_PUBLIC_KEY, rsaPublicKeyLine } from '../fixtures/ssh-keys';

describe('API keys', () => {
  it('generates svcmcp_ keys whose checksum verifies, with a 12-character prefix and a SHA-256 hash', () => {
    const { fullKey, keyHash, keyPrefix } = generateApiKey();

    expect(fullKey).toMatch(/^svcmcp_[0-9A-Za-z]{38}$/);
    expect(isWellFormedApiKey(fullKey)).toBe(true);
    expect(keyPrefix).toBe(fullKey.slice(0, 12));
    expect(keyPrefix).toHaveLength(12);
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

describe('SSH keys validated whole', () => {
  const [type, blob] = ED25519_PUBLIC_KEY.split(' ');
  const injected = (separator: string) => `${type} ${blob} x${separator}${separator}command="touch /tmp/pwned" ${type} ${blob} y`;

  it.each([
    ['NEL (U+0085)', '\u0085'],
    ['LINE SEPARATOR (U+2028)', '\u2028'],
    ['PARAGRAPH SEPARATOR (U+2029)', '\u2029'],
    ['vertical tab', '\v'],
    ['form feed', '\f'],
    ['NUL', '\0'],
    ['line feed', '\n'],
    ['carriage return', '\r'],
    ['tab', '\t'],
    ['no-break space (U+00A0)', '\u00a0'],
  ])('refuses a key whose comment carries %s', (_, separator) => {
    expect(() => parsePublicKey(injected(separator), 'k')).toThrow(
      'Invalid ssh_public_key: only printable ASCII characters and spaces are allowed, on one line',
    );
  });

  it('refuses a blob that decodes to another key type than the line names', () => {
    expect(() => parsePublicKey(`ssh-rsa ${blob} me@laptop`, 'k')).toThrow(/^Invalid ssh_public_key: expected an OpenSSH public key line/);
  });

  it('keeps a printable comment, spaces included, and normalises runs of spaces', () => {
    expect(parsePublicKey(`${type}  ${blob}  me at laptop (2026)`, 'k').public_key).toBe(`${type} ${blob} me at laptop (2026)`);
  });

  it('writes the key and the password into user data as one double-quoted line each', () => {
    const key = parsePublicKey(`${type} ${blob} a "quoted" \\ comment # not a YAML comment`, 'k');
    const userData = credentialsCloudConfig(1, key.public_key, 'Pa55word"x');

    expect(userData.split('\n')).toEqual([
      '#cloud-config',
      'ssh_pwauth: true',
      'disable_root: false',
      'chpasswd:',
      '  expire: false',
      '  users:',
      '    - {name: root, password: "Pa55word\\"x", type: text}',
      'users:',
      '  - name: root',
      '    ssh_authorized_keys:',
      `      - "${type} ${blob} a \\"quoted\\" \\\\ comment # not a YAML comment"`,
      '',
    ]);
  });

  it('refuses to write user data from a stored key that is not printable ASCII', () => {
    const stored = { name: 'k', fingerprint: 'f', public_key: `${type} ${blob} x\u0085\u0085y`, private_key: null };

    expect(() => credentialsCloudConfig(9, stored.public_key, 'password')).toThrow(
      'instance 9 has credentials that cannot be written into user data safely',
    );
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

  const password = 'Xq3vR8mTz2LpW9sKd4NfB7cY';
  const token = 'Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zA7bC0dE3fG6';

  it.each([
    [
      'a JSON body held in a string',
      `{"project_name":"p","root_password":"${password}"}`,
      `{"project_name":"p","root_password":[REDACTED]}`,
    ],
    ['an escaped JSON body', `{\\"root_password\\":\\"${password}\\",\\"x\\":1}`, `{\\"root_password\\":[REDACTED],\\"x\\":1}`],
    ['a cookie header', `cookie: session=${token}; theme=dark`, `cookie: [REDACTED]; theme=dark`],
    ['a session named in free text', `opened session=${token} for acct_1`, `opened session=[REDACTED] for acct_1`],
    ['a CSRF header line', `X-CSRFToken: ${token}`, `X-CSRFToken: [REDACTED]`],
    ['a bare session or CSRF token', `token ${token} was refused`, `token [REDACTED] was refused`],
    ['a bare root password', `password is ${password}.`, `password is [REDACTED].`],
    ['a Bearer credential', `sent Bearer abc.def upstream`, `sent Bearer [REDACTED] upstream`],
    ['a cut-off private key', `-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA`, `[REDACTED]`],
  ])('redacts %s', (_, text, expected) => {
    expect(redactText(text)).toBe(expected);
  });

  it('keeps ordinary text: ids, hashes, names and messages', () => {
    const text =
      'instance 42 of acct_1YY6PYqTRoY4zdJsAbCd job 0b7e3c1a-7f7e-4c1e-9a53-1d2b3c4d5e6f hash ' +
      'ab'.repeat(32) +
      ' DependencyTransientError wh_AbCdEfGhIjKlMnOpQrSt skipped';

    expect(redactText(text)).toBe(text);
  });

  it('logs no secret at DEBUG, whether in fields, JSON-string bodies or free text', async () => {
    const previous = logger.getLevelName();
    logger.setLogLevel('DEBUG');
    const lines = await captureStdoutLines(async () => {
      logger.debug('event', {
        event: {
          body: JSON.stringify({
            root_password: password,
            ssh_key: { private_key: '-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n' },
          }),
        },
      });
      logger.debug(`cookie session=${token} and csrf ${token}`);
      logger.debug('response', { body: { root_password: password, full_key: 'svcmcp_abc' } });
    });
    logger.setLogLevel(previous as Parameters<typeof logger.setLogLevel>[0]);

    expect(lines).toHaveLength(3);
    for (const secret of [password, token, 'BEGIN OPENSSH PRIVATE KEY', 'svcmcp_abc']) expect(lines.join('\n')).not.toContain(secret);
  });

  /** Every kind of secret, made as the service makes it (or as its issuer does), each time afresh. */
  const secretKinds = (): [string, string][] => {
    const session = randomBase62(43);
    return [
      ['API key', generateApiKey().fullKey],
      ['session token', session],
      ['CSRF token', csrfTokenFor(session)],
      ['confirmation or reset token', randomBase62(43)],
      ['webhook signing secret', newSigningSecret()],
      ['root password', randomMixedBase62(24)],
      ['private key', generateSshKey('k', 'c').private_key ?? ''],
      ['DigitalOcean token', `dop_v1_${randomBytes(32).toString('hex')}`],
      ['Stripe-style secret key', `sk_live_${randomBase62(32)}`],
      ['Stripe-style restricted key', `rk_test_${randomBase62(32)}`],
      ['Stripe-style webhook secret', `whsec_${randomBase62(32)}`],
    ];
  };
  const levels = [
    ['DEBUG', 'debug'],
    ['INFO', 'info'],
    ['WARN', 'warn'],
    ['ERROR', 'error'],
    ['CRITICAL', 'critical'],
  ] as const;

  it.each(levels)('logs no kind of secret at %s, in a message, an innocent field or an error', async (level, method) => {
    const secrets = secretKinds();
    const previous = logger.getLevelName();
    logger.setLogLevel(level);
    const lines = await captureLogLines(async () => {
      for (const [kind, secret] of secrets) {
        logger[method](`${kind}: ${secret}`, { detail: `got ${secret}.`, error: new Error(`refused (${secret})`) });
      }
    });
    logger.setLogLevel(previous as Parameters<typeof logger.setLogLevel>[0]);

    expect(lines).toHaveLength(secrets.length);
    const leaks = secrets.flatMap(([kind, secret]) =>
      lines.filter((line) => secret.split('\n').some((part) => part.length > 8 && line.includes(part))).map(() => kind),
    );
    expect(leaks).toEqual([]);
  });

  it('redacts the signing secret that a webhook create answers with, by its field and by its prefix', () => {
    const secret = newSigningSecret();

    expect(redactingReplacer('secret', secret)).toBe('[REDACTED]');
    expect(redactText(`{"id":"wh_1","secret":"${secret}"}`)).toBe('{"id":"wh_1","secret":[REDACTED]}');
    expect(redactText(`signing with ${secret} now`)).toBe('signing with [REDACTED] now');
  });

  it('leaves ordinary fields alone', () => {
    expect(redactingReplacer('instance_id', 42)).toBe(42);
    expect(redactingReplacer('status', 'active')).toBe('active');
  });
});
