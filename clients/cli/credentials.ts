import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import envPaths from 'env-paths';
import ipaddr from 'ipaddr.js';
import { UsageError } from './errors';

/** What the CLI needs to reach the service: a base URL and a Bearer key, and for key management a session. */
export interface Credentials {
  readonly apiUrl?: string;
  readonly apiKey?: string;
  readonly session?: string;
  readonly csrfToken?: string;
}

/** Credentials as resolved for one run: where they came from, for `whoami` and for the local service's notice. */
export interface ResolvedCredentials extends Credentials {
  /** The context whose values were used, if any. */
  readonly context?: string;
  /** The chosen context, when the run goes to another URL than the one its key and session are saved for. */
  readonly savedElsewhere?: { readonly context: string; readonly apiUrl: string; readonly key: boolean; readonly session: boolean };
  /** The local service's runtime file gave the URL or the key (its demo account). */
  readonly localDemo: boolean;
}

/** One saved account: `vps auth init`, `vps context create` and `vps login` write them. */
export interface Context {
  readonly api_url: string;
  readonly api_key?: string;
  readonly session?: string;
  readonly csrf_token?: string;
  readonly session_expires_at?: string;
}

/** The config file: named contexts and the one in use, and the private keys `--save-key` wrote. */
export interface Config {
  readonly current: string | null;
  readonly contexts: Readonly<Record<string, Context>>;
  /** The file each saved private key went to, by `<api_url> <instance_id>`, for `vps ssh`. */
  readonly saved_keys?: Readonly<Record<string, string>>;
}

const CONTEXT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** Mode 0600, in the user's configuration directory (`~/.config/vps/config.json` on Linux). */
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

function contextOf(value: unknown): Context | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const fields = value as Record<string, unknown>;
  const apiUrl = text(fields.api_url);
  if (!apiUrl) return undefined;
  const optional = (name: keyof Context) => (text(fields[name]) === undefined ? {} : { [name]: text(fields[name]) });
  return { api_url: apiUrl, ...optional('api_key'), ...optional('session'), ...optional('csrf_token'), ...optional('session_expires_at') };
}

/** The saved contexts; a file from before contexts (`{api_url, api_key}`) reads as the context `default`, in use. */
export async function readConfig(): Promise<Config> {
  const raw = await readJson(configFile());
  if (raw.contexts && typeof raw.contexts === 'object') {
    const contexts = Object.fromEntries(
      Object.entries(raw.contexts as Record<string, unknown>).flatMap(([name, value]) => {
        const context = contextOf(value);
        return context ? [[name, context]] : [];
      }),
    );
    const current = text(raw.current);
    const savedKeys = Object.entries(raw.saved_keys && typeof raw.saved_keys === 'object' ? raw.saved_keys : {}).filter(
      (entry): entry is [string, string] => text(entry[1]) !== undefined,
    );
    return {
      current: current !== undefined && current in contexts ? current : null,
      contexts,
      ...(savedKeys.length > 0 ? { saved_keys: Object.fromEntries(savedKeys) } : {}),
    };
  }
  const legacy = contextOf(raw);
  return legacy ? { current: 'default', contexts: { default: legacy } } : { current: null, contexts: {} };
}

/** Writes the config readable by the user alone. */
export async function writeConfig(config: Config): Promise<string> {
  const file = configFile();
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  // An existing file keeps its old mode through writeFile.
  await chmod(file, 0o600);
  return file;
}

export function checkedContextName(name: string): string {
  if (!CONTEXT_NAME.test(name)) throw new UsageError(`${name}: a context name is letters, digits, ".", "_" and "-" (at most 63)`);
  return name;
}

/** Saves `changes` into the context `name` (created if new), making it the one in use when none is or `use` says so. */
export async function saveContext(name: string, changes: Context, { use = false }: { use?: boolean } = {}): Promise<string> {
  const config = await readConfig();
  const previous = config.contexts[name];
  // A new URL is another service: what was saved for the old one does not go with it.
  const kept = previous && sameService(previous.api_url, changes.api_url) ? previous : undefined;
  return writeConfig({
    ...config,
    current: use || config.current === null ? name : config.current,
    contexts: { ...config.contexts, [name]: { ...kept, ...changes } },
  });
}

const savedKeyName = (apiUrl: string, instanceId: number) => `${apiUrl} ${instanceId}`;

/** Remembers where `--save-key` put an instance's private key, so that `vps ssh` finds it. */
export async function rememberSavedKey(apiUrl: string, instanceId: number, file: string): Promise<void> {
  const config = await readConfig();
  await writeConfig({ ...config, saved_keys: { ...config.saved_keys, [savedKeyName(apiUrl, instanceId)]: file } });
}

/** The file `--save-key` wrote for the instance, if it did. */
export async function savedKeyFile(apiUrl: string, instanceId: number): Promise<string | undefined> {
  return (await readConfig()).saved_keys?.[savedKeyName(apiUrl, instanceId)];
}

/** The context a run uses: `--context`, else VPS_CONTEXT, else the one in use. Naming one that does not exist is bad usage. */
function chosenContext(config: Config, flag: string | undefined): { name: string; context: Context } | undefined {
  const name = flag ?? text(process.env.VPS_CONTEXT) ?? config.current ?? undefined;
  if (name === undefined) return undefined;
  return { name, context: savedContext(config, name) };
}

/** The saved context `name`; naming one that does not exist is bad usage. */
export function savedContext(config: Config, name: string): Context {
  const context = config.contexts[name];
  if (!context) throw new UsageError(`no context named ${name} (see vps context list)`);
  return context;
}

/** Whether a URL is this machine's: the only place the local service's demo key, or anything over plain http, may be sent. */
function isLoopback(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || (ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback');
}

/** Whether two API URLs name the same service (`https://api.example.com` and `https://api.example.com/` do). */
export function sameService(a: string, b: string): boolean {
  const service = (url: string) => URL.parse(url)?.href.replace(/\/+$/, '') ?? url;
  return service(a) === service(b);
}

/**
 * An API URL a key, a session or a password may be sent to: https, or plain http to this machine alone (the local
 * service), since over plain http anyone on the way reads them.
 */
export function checkedApiUrl(url: string): string {
  const parsed = URL.parse(url);
  if (parsed?.protocol === 'https:' || (parsed?.protocol === 'http:' && isLoopback(parsed))) return url;
  throw new UsageError(
    `${url}: an API URL is https://… (plain http:// only to this machine: localhost, 127.0.0.0/8 or ::1), so that keys and passwords are not sent in the clear`,
  );
}

/**
 * Each value comes from the first source that has it: the flags, then VPS_* environment variables, then the chosen
 * context, whose key and session are bound to its URL: they are used only when the run goes to that URL. Only when no
 * context is saved at all does the local service's runtime file (written by `npm start`) fill in, and only with a
 * loopback URL, so its demo key never goes anywhere else.
 */
export async function resolveCredentials(flags: Credentials & { context?: string }): Promise<ResolvedCredentials> {
  const config = await readConfig();
  const chosen = chosenContext(config, flags.context);
  const runtime = await readJson(runtimeFile());
  const runtimeUrl = URL.parse(text(runtime.base_url) ?? '');
  const demo: Credentials =
    Object.keys(config.contexts).length === 0 && runtimeUrl !== null && isLoopback(runtimeUrl)
      ? {
          apiUrl: text(runtime.base_url),
          apiKey: text(runtime.api_key),
          session: text(runtime.session),
          csrfToken: text(runtime.csrf_token),
        }
      : {};
  const typedUrl = text(flags.apiUrl) ?? text(process.env.VPS_API_URL);
  const contextApplies = chosen !== undefined && (typedUrl === undefined || sameService(typedUrl, chosen.context.api_url));
  const sources: Credentials[] = [
    flags,
    {
      apiKey: process.env.VPS_API_KEY,
      session: process.env.VPS_SESSION,
      csrfToken: process.env.VPS_CSRF_TOKEN,
    },
    contextApplies
      ? {
          apiUrl: chosen.context.api_url,
          apiKey: chosen.context.api_key,
          session: chosen.context.session,
          csrfToken: chosen.context.csrf_token,
        }
      : {},
  ];
  const first = (field: keyof Credentials) => sources.map((source) => text(source[field])).find((value) => value !== undefined);
  const urlGiven = typedUrl ?? first('apiUrl');
  const apiUrl = urlGiven === undefined ? demo.apiUrl : checkedApiUrl(urlGiven);
  // The demo account's key and session go only to the demo's own URL.
  const fromDemo = (field: keyof Credentials) => (apiUrl !== undefined && apiUrl === demo.apiUrl ? text(demo[field]) : undefined);
  const fields = ['apiKey', 'session', 'csrfToken'] as const;
  const [apiKey, session, csrfToken] = fields.map((field) => first(field) ?? fromDemo(field));
  return {
    apiUrl,
    apiKey,
    session,
    csrfToken,
    ...(chosen && contextApplies ? { context: chosen.name } : {}),
    ...(chosen && !contextApplies
      ? {
          savedElsewhere: {
            context: chosen.name,
            apiUrl: chosen.context.api_url,
            key: chosen.context.api_key !== undefined,
            session: chosen.context.session !== undefined,
          },
        }
      : {}),
    localDemo:
      apiUrl !== undefined &&
      apiUrl === demo.apiUrl &&
      (urlGiven === undefined || fields.some((field) => first(field) === undefined && fromDemo(field) !== undefined)),
  };
}

/** Says that the chosen context's key (or session) is not sent to `apiUrl`, when it has one saved for another URL. */
function savedElsewhere({ savedElsewhere: saved }: ResolvedCredentials, what: 'key' | 'session', apiUrl: string): string {
  return saved?.[what]
    ? `the ${what} of context ${saved.context} is saved for ${saved.apiUrl} and is sent nowhere else, not to ${apiUrl}; `
    : '';
}

export function requireApi(credentials: ResolvedCredentials): { apiUrl: string; apiKey: string } {
  const { apiUrl, apiKey } = credentials;
  const hint =
    'pass --api-url and --api-key, set VPS_API_URL and VPS_API_KEY, run `vps auth init`, or start the local service with `npm start`';
  if (!apiUrl) throw new UsageError(`no API URL: ${hint}`);
  const elsewhere = savedElsewhere(credentials, 'key', apiUrl);
  if (!apiKey) throw new UsageError(`no API key: ${elsewhere ? `${elsewhere}pass --api-key or set VPS_API_KEY` : hint}`);
  return { apiUrl, apiKey };
}

export function requireSession(credentials: ResolvedCredentials): { apiUrl: string; session: string; csrfToken: string } {
  const { apiUrl, session, csrfToken } = credentials;
  if (!apiUrl) throw new UsageError('no API URL: pass --api-url or set VPS_API_URL');
  if (!session || !csrfToken)
    throw new UsageError(
      `key management needs a signed-in session: ${savedElsewhere(credentials, 'session', apiUrl)}run \`vps login\`, pass --session and --csrf-token, or set VPS_SESSION and VPS_CSRF_TOKEN`,
    );
  return { apiUrl, session, csrfToken };
}
