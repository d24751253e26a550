import { execFile } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { esbuildOptionsFor, startupBytes } from '../infra/bundling';
import type { FunctionAccess } from '../shared/access';
import { repositoryRoot } from '../infra/local/runtime';

const run = promisify(execFile);
const OUT = resolve(repositoryRoot, 'bench/out');

export interface ColdStart {
  readonly name: string;
  /** The code its cold start loads (the bundle's entry and the chunks it imports, not those loaded on first use). */
  readonly bundleKb: number;
  /** Median import time of the bundle in a fresh process. */
  readonly importMs: number;
  /** Median time from process start to the first response (or to the import, without an event). */
  readonly servedAtMs: number;
  readonly status: number | null;
  /**
   * Against the floor it was measured next to (each sample right before or after one of the floor's): ratios of
   * `servedAtMs`, and the floor's own medians over those samples.
   */
  readonly paired?: Paired;
  /** Against the stack floor (bench/stack-floor-handler.ts), measured in the same turns. */
  readonly stackPaired?: Paired;
}

/** A bundle and how to call it: the event for each sample (undefined: import only). */
export interface ColdStartTarget {
  readonly name: string;
  readonly bundlePath: string;
  /** KiB of code its cold start loads. */
  readonly startupKb: number;
  readonly event: (sample: number) => unknown;
  /** Environment of its own, over the handlers' (Node's options, for one). */
  readonly env?: Record<string, string>;
}

/** A function's bundle, built exactly as the CDK construct builds it (same settings, same esbuild). */
export interface Bundle {
  readonly bundlePath: string;
  readonly startupKb: number;
}

/** Bundles an entry exactly as the CDK construct does (same settings, same esbuild). */
export async function bundle(name: string, entry: string, access: FunctionAccess = {}): Promise<Bundle> {
  const outdir = join(OUT, name);
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const { metafile } = await build({ ...esbuildOptionsFor(resolve(repositoryRoot, entry), access, outdir), metafile: true });
  return { bundlePath: join(outdir, 'index.mjs'), startupKb: startupBytes(metafile!) / 1024 };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

interface Sample {
  readonly importMs: number;
  readonly servedAtMs: number;
  readonly status: number | null;
}

/** One cold start: a fresh Node process that imports the bundle and serves the event once. */
async function coldStartOnce(target: ColdStartTarget, env: Record<string, string>, sample: number): Promise<Sample> {
  const eventArgument = target.event(sample);
  const { stdout } = await run(
    process.execPath,
    [
      resolve(repositoryRoot, 'bench/cold-start-runner.mjs'),
      target.bundlePath,
      ...(eventArgument === undefined ? [] : [JSON.stringify(eventArgument)]),
    ],
    {
      env: { ...process.env, ...env, ...target.env, POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true' },
      timeout: 30_000,
    },
  );
  const measured = JSON.parse(stdout) as Sample;
  // A function that fails its request has measured nothing worth reporting (a broken chunk answers fast).
  if (measured.status !== null && measured.status >= 500) throw new Error(`${target.name} answered ${measured.status} at a cold start`);
  return measured;
}

function summary(target: ColdStartTarget, samples: Sample[]): ColdStart {
  return {
    name: target.name,
    bundleKb: Math.round(target.startupKb),
    importMs: median(samples.map((r) => r.importMs)),
    servedAtMs: median(samples.map((r) => r.servedAtMs)),
    status: samples.at(-1)?.status ?? null,
  };
}

/** Cold-starts the bundle `samples` times in fresh Node processes with the handlers' environment. */
export async function measureColdStart(target: ColdStartTarget, env: Record<string, string>, samples = 5): Promise<ColdStart> {
  const results: Sample[] = [];
  for (let sample = 0; sample < samples; sample++) results.push(await coldStartOnce(target, env, sample));
  return summary(target, results);
}

interface Paired {
  readonly floor: string;
  /** The fastest of this function's samples ÷ the fastest of the floor's. */
  readonly ratio: number;
  /** The median of the per-pair ratios (noisier where other work shares the machine). */
  readonly medianPairRatio?: number;
  readonly floorServedAtMs: number;
  readonly floorImportMs: number;
}

const pairedWith = (floor: string, ours: Sample[], floors: Sample[]): Paired => ({
  floor,
  // Contention on a shared machine only ever adds time: the fastest of each is the least disturbed.
  ratio: Math.min(...ours.map((s) => s.servedAtMs)) / Math.min(...floors.map((s) => s.servedAtMs)),
  medianPairRatio: median(ours.map((s, i) => s.servedAtMs / floors[i]!.servedAtMs)),
  floorServedAtMs: median(floors.map((s) => s.servedAtMs)),
  floorImportMs: median(floors.map((s) => s.importMs)),
});

/**
 * Cold-starts the bundle and a floor in turns (floor first on even samples, last on odd ones), so that both see
 * the machine in the same state, rather than minutes apart on a busy machine; and the stack floor between them, when
 * one is given.
 */
export async function measureColdStartAgainst(
  target: ColdStartTarget,
  floor: ColdStartTarget,
  env: Record<string, string>,
  samples = 7,
  stackFloor?: ColdStartTarget,
): Promise<ColdStart> {
  const ours: Sample[] = [];
  const floors: Sample[] = [];
  const stacks: Sample[] = [];
  for (let sample = 0; sample < samples; sample++) {
    if (sample % 2 === 0) floors.push(await coldStartOnce(floor, env, sample));
    if (stackFloor) stacks.push(await coldStartOnce(stackFloor, env, sample));
    ours.push(await coldStartOnce(target, env, sample));
    if (sample % 2 === 1) floors.push(await coldStartOnce(floor, env, sample));
  }
  return {
    ...summary(target, ours),
    paired: pairedWith(floor.name, ours, floors),
    ...(stackFloor ? { stackPaired: pairedWith(stackFloor.name, ours, stacks) } : {}),
  };
}
