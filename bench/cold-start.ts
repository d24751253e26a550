import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { bundleSettings } from '../infra/bundling';
import { repositoryRoot } from '../infra/local/runtime';

const run = promisify(execFile);
const OUT = resolve(repositoryRoot, 'bench/out');

export interface ColdStart {
  readonly name: string;
  readonly bundleKb: number;
  /** Median import time of the bundle in a fresh process. */
  readonly importMs: number;
  /** Median time from process start to the first response (or to the import, without an event). */
  readonly servedAtMs: number;
  readonly status: number | null;
}

/** Bundles an entry exactly as the CDK construct does (same settings, same esbuild). */
export async function bundle(name: string, entry: string): Promise<string> {
  const outdir = join(OUT, name);
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  await build({
    entryPoints: [resolve(repositoryRoot, entry)],
    outfile: join(outdir, 'index.mjs'),
    bundle: true,
    platform: 'node',
    format: bundleSettings.format,
    target: bundleSettings.target,
    mainFields: [...bundleSettings.mainFields],
    banner: { js: bundleSettings.banner },
    minify: bundleSettings.minify,
    sourcemap: bundleSettings.sourcemap,
    logLevel: 'error',
  });
  return join(outdir, 'index.mjs');
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** Cold-starts the bundle `samples` times in fresh Node processes with the handlers' environment. */
export async function measureColdStart(
  name: string,
  bundlePath: string,
  env: Record<string, string>,
  event: (sample: number) => unknown,
  samples = 5,
): Promise<ColdStart> {
  const results: { importMs: number; servedAtMs: number; status: number | null }[] = [];
  for (let sample = 0; sample < samples; sample++) {
    const eventArgument = event(sample);
    const { stdout } = await run(
      process.execPath,
      [
        resolve(repositoryRoot, 'bench/cold-start-runner.mjs'),
        bundlePath,
        ...(eventArgument === undefined ? [] : [JSON.stringify(eventArgument)]),
      ],
      { env: { ...process.env, ...env, POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true' }, timeout: 30_000 },
    );
    results.push(JSON.parse(stdout));
  }
  return {
    name,
    bundleKb: Math.round(statSync(bundlePath).size / 1024),
    importMs: median(results.map((r) => r.importMs)),
    servedAtMs: median(results.map((r) => r.servedAtMs)),
    status: results.at(-1)?.status ?? null,
  };
}
