import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import envPaths from 'env-paths';
import { UsageError } from './errors';

/** What the CLI needs to reach the service: a base URL and a Bearer key, and for key management a session. */
export interface Credentials {
  readonly apiUrl?: string;
  readonly apiKey?: string;
  readonly session?: string;
  readonly csrfToken?: string;
}

/** Written by `vps auth init`, mode 0600, in the user's configuration directory. */
const configFile = () => join(envPaths('vps', { suffix: '' }).config, 'config.json');

/** What `npm start` writes for the local service; found from the repository this CLI lives in. */
const runtimeFile = () => process.env.VPS_RUNTIME_FILE || fileURLToPath(new URL('../../.local/runtime.json', import.meta.url));

async function readJson(file: string): Promise<Record<string, unknown>> {
  try {
    const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * Each value comes from the first source that has it: the flags, then VPS_* environment variables, then the config
 * file of `vps auth init`, then the local service's runtime file, so that after `npm start` nothing needs setting.
 */
export async function resolveCredentials(flags: Credentials): Promise<Credentials> {
  const config = await readJson(configFile());
  const runtime = await readJson(runtimeFile());
  const sources: Credentials[] = [
    flags,
    {
      apiUrl: process.env.VPS_API_URL,
      apiKey: process.env.VPS_API_KEY,
      session: process.env.VPS_SESSION,
      csrfToken: process.env.VPS_CSRF_TOKEN,
    },
    { apiUrl: text(config.api_url), apiKey: text(config.api_key) },
    { apiUrl: text(runtime.base_url), apiKey: text(runtime.api_key), session: text(runtime.session), csrfToken: text(runtime.csrf_token) },
  ];
  const first = (field: keyof Credentials) => sources.map((source) => text(source[field])).find((value) => value !== undefined);
  return { apiUrl: first('apiUrl'), apiKey: first('apiKey'), session: first('session'), csrfToken: first('csrfToken') };
}

export function requireApi(credentials: Credentials): { apiUrl: string; apiKey: string } {
  const { apiUrl, apiKey } = credentials;
  const hint =
    'pass --api-url and --api-key, set VPS_API_URL and VPS_API_KEY, run `vps auth init`, or start the local service with `npm start`';
  if (!apiUrl) throw new UsageError(`no API URL: ${hint}`);
  if (!apiKey) throw new UsageError(`no API key: ${hint}`);
  return { apiUrl, apiKey };
}

export function requireSession(credentials: Credentials): { apiUrl: string; session: string; csrfToken: string } {
  const { apiUrl, session, csrfToken } = credentials;
  if (!apiUrl) throw new UsageError('no API URL: pass --api-url or set VPS_API_URL');
  if (!session || !csrfToken)
    throw new UsageError(
      'key management needs a signed-in session: pass --session and --csrf-token, or set VPS_SESSION and VPS_CSRF_TOKEN',
    );
  return { apiUrl, session, csrfToken };
}

/** Saves the URL and key for later runs, readable by the user alone. */
export async function saveConfig(apiUrl: string, apiKey: string): Promise<string> {
  const file = configFile();
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, `${JSON.stringify({ api_url: apiUrl, api_key: apiKey }, null, 2)}\n`, { mode: 0o600 });
  // An existing file keeps its old mode through writeFile.
  await chmod(file, 0o600);
  return file;
}
