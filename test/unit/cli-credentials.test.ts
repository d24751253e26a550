import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkedApiUrl, requireApi, resolveCredentials } from '../../clients/cli/credentials';

/** A clean machine whose config holds one context, `default`, with a key saved for https://api.example.com. */
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vps-credentials-'));
  await mkdir(join(dir, 'vps'));
  const context = { api_url: 'https://api.example.com', api_key: 'svcmcp_saved', session: 'session-saved', csrf_token: 'csrf-saved' };
  await writeFile(join(dir, 'vps', 'config.json'), JSON.stringify({ current: 'default', contexts: { default: context } }));
  for (const name of ['VPS_API_URL', 'VPS_API_KEY', 'VPS_SESSION', 'VPS_CSRF_TOKEN', 'VPS_CONTEXT']) vi.stubEnv(name, undefined);
  vi.stubEnv('XDG_CONFIG_HOME', dir);
  vi.stubEnv('VPS_RUNTIME_FILE', join(dir, 'no-runtime.json'));
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await rm(dir, { recursive: true, force: true });
});

describe('resolveCredentials', () => {
  it('uses the saved key and session for the URL they were saved for, however the URL is written', async () => {
    const credentials = await resolveCredentials({ apiUrl: 'https://API.example.com/' });

    expect(credentials).toEqual({
      apiUrl: 'https://API.example.com/',
      apiKey: 'svcmcp_saved',
      session: 'session-saved',
      csrfToken: 'csrf-saved',
      context: 'default',
      localDemo: false,
    });
  });

  it('leaves the saved key and session out when --api-url names another URL, and says why a key is missing', async () => {
    const credentials = await resolveCredentials({ apiUrl: 'https://elsewhere.example.net' });

    expect([credentials.apiKey, credentials.session, credentials.csrfToken, credentials.context]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(() => requireApi(credentials)).toThrow(
      'no API key: the key of context default is saved for https://api.example.com and is sent nowhere else, not to https://elsewhere.example.net; pass --api-key or set VPS_API_KEY',
    );
  });

  it('leaves the saved key out when VPS_API_URL names another URL, and takes VPS_API_KEY for it', async () => {
    vi.stubEnv('VPS_API_URL', 'https://elsewhere.example.net');
    const withoutKey = await resolveCredentials({});
    vi.stubEnv('VPS_API_KEY', 'svcmcp_given');
    const withKey = await resolveCredentials({});

    expect([withoutKey.apiUrl, withoutKey.apiKey]).toEqual(['https://elsewhere.example.net', undefined]);
    expect([withKey.apiUrl, withKey.apiKey]).toEqual(['https://elsewhere.example.net', 'svcmcp_given']);
  });
});

describe('checkedApiUrl', () => {
  it.each(['https://api.example.com', 'http://127.0.0.1:8080', 'http://127.8.9.10', 'http://localhost:8080', 'http://[::1]:8080'])(
    'accepts %s',
    (url) => {
      expect(checkedApiUrl(url)).toBe(url);
    },
  );

  it.each([
    'http://api.example.com',
    'http://192.0.2.10:8080',
    'http://[::ffff:c000:20a]',
    'http://localhost.example.com',
    'ftp://api.example.com',
    'api.example.com',
  ])('refuses %s', (url) => {
    expect(() => checkedApiUrl(url)).toThrow(
      `${url}: an API URL is https://… (plain http:// only to this machine: localhost, 127.0.0.0/8 or ::1), so that keys and passwords are not sent in the clear`,
    );
  });
});
