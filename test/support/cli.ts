import { createServer, type IncomingMessage } from 'node:http';
import { once } from 'node:events';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { repositoryRoot } from '../../infra/local/runtime';
import { runNode, type ProcessRun } from './child-process';

export const vpsBin = resolve(repositoryRoot, 'clients/cli/bin/vps.mjs');

/** The environment of a clean machine: no VPS_* variables, an empty config directory, no local service file. */
export interface CliHome {
  readonly dir: string;
  readonly env: Record<string, string>;
  /** Writes a runtime file as `npm start` does, and points the CLI at it. */
  useRuntimeFile(values: Record<string, string>): Promise<string>;
  remove(): Promise<void>;
}

export async function cliHome(): Promise<CliHome> {
  const dir = await mkdtemp(join(tmpdir(), 'vps-cli-'));
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('VPS_'))) as Record<string, string>;
  const env: Record<string, string> = { ...inherited, XDG_CONFIG_HOME: join(dir, 'config'), VPS_RUNTIME_FILE: join(dir, 'runtime.json') };
  return {
    dir,
    env,
    async useRuntimeFile(values) {
      await writeFile(env.VPS_RUNTIME_FILE!, JSON.stringify(values), { mode: 0o600 });
      return env.VPS_RUNTIME_FILE!;
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Runs `vps` as a user would (the bin file on the project's Node), with stdout and stderr piped. */
export function runVps(
  home: CliHome,
  args: readonly string[],
  options: { env?: Record<string, string>; stdin?: string } = {},
): Promise<ProcessRun> {
  return runNode([vpsBin, ...args], {
    env: { ...home.env, ...options.env },
    ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
  });
}

/** A successful --json run: exactly one JSON document on stdout. */
export async function runVpsJson(home: CliHome, args: readonly string[], env: Record<string, string> = {}): Promise<any> {
  const run = await runVps(home, [...args, '--json'], { env });
  if (run.code !== 0) throw new Error(`vps ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

/** An `ssh` first on the PATH that prints the arguments it was given, one a line, and exits 7: the PATH to run with. */
export async function fakeSsh(home: CliHome): Promise<Record<string, string>> {
  const bin = join(home.dir, 'bin');
  await mkdir(bin, { recursive: true });
  await writeFile(join(bin, 'ssh'), '#!/bin/sh\nprintf "%s\\n" "$@"\nexit 7\n');
  await chmod(join(bin, 'ssh'), 0o755);
  return { PATH: `${bin}:${process.env.PATH ?? ''}` };
}

/** A request a fake service heard: what was asked, and the Authorization header it carried. */
interface HeardRequest {
  readonly call: string;
  readonly authorization: string | undefined;
}

/** An answer of a fake service: a status, a JSON body and any headers. */
interface FakeAnswer {
  readonly status?: number;
  readonly body: unknown;
  readonly headers?: Record<string, string | string[]>;
}

/**
 * A service on loopback that is not this one (another service, or a hostile one): it answers `METHOD /path` (no query)
 * from `answers`, anything else 200 `{}`, and records every request.
 */
export async function fakeService(answers: Record<string, FakeAnswer> = {}) {
  const heard: HeardRequest[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const call = `${request.method} ${request.url}`;
    heard.push({ call, authorization: request.headers.authorization });
    const answer = answers[call.split('?')[0]!] ?? { body: {} };
    response.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers });
    response.end(JSON.stringify(answer.body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return { url, heard, close: () => new Promise<void>((done) => server.close(() => done())) };
}
