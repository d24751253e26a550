import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
