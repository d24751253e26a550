import { open, seal } from '../../shared/secrets';
import { unitDeps } from '../support/unit-deps';
import { statSync } from 'node:fs';
import { temporarySecretsKeyFile } from '../../infra/local/secrets-key';

const keyFile = temporarySecretsKeyFile();
const deps = unitDeps({ SECRETS_KEY_FILE: keyFile.path });
afterAll(() => keyFile.remove());

describe('shared/secrets', () => {
  const context = { purpose: 'instance-secrets', account_id: 'acct_a', instance_id: '7' };

  it('opens what it sealed under the same context, and the sealed text holds no trace of the plaintext', async () => {
    const sealed = await seal(deps, 'hunter2-root-password', context);

    expect(Buffer.from(sealed, 'base64').toString('latin1')).not.toContain('hunter2');
    expect(await open(deps, sealed, context)).toBe('hunter2-root-password');
  });

  it.each([
    ['another instance', { ...context, instance_id: '8' }],
    ['another account', { ...context, account_id: 'acct_b' }],
    ['another purpose', { ...context, purpose: 'stored-response' }],
    ['a context with an extra entry', { ...context, extra: 'x' }],
  ])('refuses to open a secret sealed for one record as %s', async (_, other) => {
    const sealed = await seal(deps, 'hunter2-root-password', context);

    await expect(open(deps, sealed, other)).rejects.toThrow('sealed secret does not belong to this record');
  });

  it('keeps the local key file readable by its owner only', () => {
    expect(statSync(keyFile.path).mode & 0o777).toBe(0o600);
    expect(statSync(keyFile.path).size).toBe(32);
  });
});
