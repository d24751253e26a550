import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { generateApiKey, isWellFormedApiKey } from '../../shared/model/api-keys';
import { isInFlight, isSwept } from '../../shared/model/convergence';
import { base62Of, constantTimeEqual, randomMixedBase62 } from '../../shared/model/crypto';
import {
  badRequest,
  Failure,
  forbidden,
  instanceNotFound,
  lifecycleConflict,
  namedError,
  outcomeUnknown,
  paymentRequired,
  rateLimitExceeded,
  revokedApiKey,
  serviceUnavailable,
} from '../../shared/model/errors';
import { flavorRefusal, hourlyMicros, orderablePlan } from '../../shared/model/flavors';
import { decoyPasswordHash, hashPassword, verifyPassword } from '../../shared/model/passwords';
import { readSlidingWindow } from '../../shared/model/rate-limits';
import { parsePublicKey } from '../../shared/model/ssh-keys';
import { escapeUnsafeCharacters, hasUnsafeCharacters } from '../../shared/model/text';
import { takeToken } from '../../shared/model/upstream-budget';
import { newSigningSecret, signedHeaders } from '../../shared/model/webhook-signing';
import { ecdsaPublicKeyLine, rsaPublicKeyLine } from '../fixtures/ssh-keys';

describe('failures', () => {
  it.each([
    [badRequest('Invalid flavor: x'), 'invalid_request', 'Invalid flavor: x'],
    [paymentRequired('Deposit required'), 'payment_required', 'Deposit required'],
    [forbidden('Account suspended'), 'forbidden', 'Account suspended'],
    [instanceNotFound(), 'not_found', 'Instance not found'],
    [revokedApiKey(), 'unauthenticated', 'Invalid or revoked API key'],
    [serviceUnavailable('Service unavailable'), 'unavailable', 'Service unavailable'],
  ])('%s is of kind %s with the text %j', (failure, kind, text) => {
    expect(failure).toBeInstanceOf(Failure);
    expect([failure.kind, failure.message]).toEqual([kind, text]);
  });

  it('explains a lifecycle conflict by the status, or by the action in progress', () => {
    expect(lifecycleConflict('active', 'power on').details).toEqual({
      status: 'active',
      message: 'Cannot power on while the instance is active',
    });
    expect(lifecycleConflict('active', 'resize', 'power_off').details).toEqual({
      status: 'active',
      running_action: 'power_off',
      message: 'Cannot resize while power off is in progress',
    });
  });

  it('carries Retry-After on a rate limit and on an unknown outcome', () => {
    expect(rateLimitExceeded(7)).toMatchObject({ kind: 'rate_limited', message: 'Rate limit exceeded', headers: { 'Retry-After': '7' } });
    expect(outcomeUnknown(12)).toMatchObject({ kind: 'outcome_unknown', message: 'Outcome unknown', headers: { 'Retry-After': '12' } });
  });

  it('names workflow errors by their class name, which Step Functions matches', () => {
    const StillFailing = namedError('StillFailing');

    expect(new StillFailing('x').name).toBe('StillFailing');
  });
});

describe('flavors', () => {
  it('refuses a retired flavor and an unknown one with the spec texts', () => {
    expect(flavorRefusal('s-1vcpu-1gb')).toBe('Flavor s-1vcpu-1gb is permanently unavailable');
    expect(() => orderablePlan('s-3vcpu')).toThrow('Invalid flavor: s-3vcpu');
  });

  it('prices an hour in whole micro-dollars, nothing for a plan without a price', () => {
    expect(hourlyMicros({ hourly_price: 0.01786 })).toBe(17_860);
    expect(hourlyMicros({ hourly_price: null })).toBe(0);
  });
});

describe('text', () => {
  it.each([
    ['plain name', false, 'plain name'],
    ['line\nbreak', true, 'line\\u000abreak'],
    ['right\u202eleft', true, 'right\\u202eleft'],
    ['lone \ud800 surrogate', true, 'lone \\ud800 surrogate'],
    ['emoji 🚀 pair', false, 'emoji 🚀 pair'],
  ])('%j: unsafe %s, escaped as %j', (text, unsafe, escaped) => {
    expect(hasUnsafeCharacters(text)).toBe(unsafe);
    expect(escapeUnsafeCharacters(text)).toBe(escaped);
  });
});

describe('webhook signing', () => {
  it('makes Standard Webhooks secrets and signatures that the reference verifier accepts', () => {
    const secret = newSigningSecret();
    const body = '{"type":"instance.status_changed"}';

    const headers = signedHeaders(secret, 'msg_1', Math.floor(Date.now() / 1000), body);

    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual({ type: 'instance.status_changed' });
  });
});

describe('passwords', () => {
  it('verifies the password it hashed, and nothing else', async () => {
    const stored = await hashPassword('correct horse battery staple');

    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$/);
    await expect(verifyPassword('correct horse battery staple', stored)).resolves.toBe(true);
    await expect(verifyPassword('correct horse battery stapler', stored)).resolves.toBe(false);
  });

  it('refuses a stored form it does not know', async () => {
    await expect(verifyPassword('anything', 'md5$abc')).resolves.toBe(false);
    await expect(verifyPassword('anything', '')).resolves.toBe(false);
  });

  it('keeps one decoy hash for unknown addresses, which no password verifies', async () => {
    const decoy = await decoyPasswordHash();

    expect(await decoyPasswordHash()).toBe(decoy);
    await expect(verifyPassword('', decoy)).resolves.toBe(false);
  });
});

describe('tokens and keys', () => {
  it('draws mixed base62 with a digit, a lower-case and an upper-case letter even when short', () => {
    for (let draw = 0; draw < 50; draw++) expect(randomMixedBase62(3)).toMatch(/^(?=.*[0-9])(?=.*[a-z])(?=.*[A-Z])[0-9A-Za-z]{3}$/);
  });

  it('writes no bytes as zeros, and compares unequal lengths as different', () => {
    expect(base62Of(new Uint8Array(), 4)).toBe('0000');
    expect(constantTimeEqual('abc', 'abcd')).toBe(false);
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
  });

  it('recognises its own keys, and refuses them cut short or with a wrong checksum', () => {
    const { fullKey } = generateApiKey();
    const last = fullKey.at(-1) === 'A' ? 'B' : 'A';

    expect(isWellFormedApiKey(fullKey)).toBe(true);
    expect(isWellFormedApiKey(fullKey.slice(0, -1))).toBe(false);
    expect(isWellFormedApiKey(fullKey.slice(0, -1) + last)).toBe(false);
  });
});

describe('convergence predicates', () => {
  it.each([
    [{ status: 'provisioning', active_job_id: null }, true],
    [{ status: 'active', active_job_id: 'job-1' }, true],
    [{ status: 'stopped', active_job_id: null }, false],
    [{ status: 'failed', active_job_id: 'job-1' }, false],
  ] as const)('takes %j as in flight: %s', (instance, inFlight) => {
    expect(isInFlight(instance)).toBe(inFlight);
  });

  it.each([
    [{ status: 'active', upstream_id: 7 }, true],
    [{ status: 'quarantined', upstream_id: 7 }, true],
    [{ status: 'active', upstream_id: null }, false],
    [{ status: 'failed', upstream_id: 7 }, false],
  ] as const)('sweeps %j: %s', (instance, swept) => {
    expect(isSwept(instance)).toBe(swept);
  });
});

describe('windows and budgets', () => {
  it('reports a full window as resetting after the whole window when nothing was counted', () => {
    expect(readSlidingWindow([], 1_000_000, 60, 60)).toEqual({ remaining: 60, resetSeconds: 60 });
  });

  it('lets a workflow take a token during a 429 hold, but not a live read', () => {
    const held = { tat: 0, holdUntil: 5_000 };
    const settings = { capacity: 10, refillPerSecond: 1 };

    expect(takeToken(held, 1_000, 'workflow', settings).granted).toBe(true);
    expect(takeToken(held, 1_000, 'live', settings).granted).toBe(false);
  });
});

describe('SSH public keys', () => {
  it.each(['P-256', 'P-384', 'P-521'] as const)('accepts an ECDSA key on %s', (curve) => {
    const line = ecdsaPublicKeyLine(curve);

    expect(parsePublicKey(line, 'laptop')).toMatchObject({ name: 'laptop', public_key: line, private_key: null });
  });

  it.each([
    ['a compressed point', (point: Buffer) => Buffer.concat([Buffer.from([2]), point.subarray(1)])],
    ['a point off the curve', (point: Buffer) => Buffer.concat([point.subarray(0, -1), Buffer.from([(point.at(-1)! + 1) % 256])])],
    ['a point of the wrong length', (point: Buffer) => point.subarray(0, -2)],
  ])('refuses an ECDSA key with %s', (_, breakPoint) => {
    expect(() => parsePublicKey(ecdsaPublicKeyLine('P-256', breakPoint), 'laptop')).toThrow(/^Invalid ssh_public_key: expected/);
  });

  it('refuses an RSA key under 2048 bits', () => {
    expect(() => parsePublicKey(rsaPublicKeyLine(1024), 'old')).toThrow(/^Invalid ssh_public_key: expected/);
  });
});
