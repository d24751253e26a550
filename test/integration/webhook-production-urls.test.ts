import { useTestRuntime } from '../support/runtime';

// As deployed: no http, no loopback.
const runtime = useTestRuntime({ env: { WEBHOOK_ALLOW_LOOPBACK: 'false' } });

describe('POST /api/v1/webhooks in production mode', () => {
  it.each([
    { url: 'https://localhost/hooks', error: 'url must not point to a loopback, private, link-local or reserved address' },
    { url: 'https://127.0.0.1/hooks', error: 'url must not point to a loopback, private, link-local or reserved address' },
    { url: 'https://[::1]/hooks', error: 'url must not point to a loopback, private, link-local or reserved address' },
    {
      url: 'https://[fd00:ec2::254]/latest/meta-data/',
      error: 'url must not point to a loopback, private, link-local or reserved address',
    },
    {
      url: 'https://169.254.169.254/latest/meta-data/',
      error: 'url must not point to a loopback, private, link-local or reserved address',
    },
    { url: 'https://100.64.1.1/hooks', error: 'url must not point to a loopback, private, link-local or reserved address' },
    { url: 'http://127.0.0.1:3000/hooks', error: 'url must be an absolute https URL' },
  ])('refuses $url with 400', async ({ url, error }) => {
    const { apiKey } = await runtime.newAccount();

    const refused = await runtime.call('POST', '/api/v1/webhooks', { apiKey, body: { url, events: ['instance.created'] } });

    expect([refused.status, refused.body.error]).toEqual([400, error]);
  });
});
