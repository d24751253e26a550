import { fileURLToPath } from 'node:url';
import type { BuildOptions, Metafile } from 'esbuild';
import type { FunctionAccess } from '../shared/access';

/**
 * How every function is bundled, shared by the CDK construct (infra/constructs/api-function.ts), the cold-start
 * benchmark and the bundle budgets, so that what is measured is what is deployed.
 */
const bundleSettings = {
  format: 'esm',
  target: 'node24',
  mainFields: ['module', 'main'],
  // CommonJS dependencies bundled into an ES module still call require().
  banner: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  minify: true,
  // Written next to each bundle, for reading a stack trace; not loaded at run time (see docs/benchmarks.md).
  sourcemap: true,
  // Licence comments are kept in the packages, not in each function's code to compile.
  legalComments: 'none',
} as const;

/**
 * Packages a function leaves out of its bundle because it never loads them: the payment provider's (a quarter of a
 * megabyte that every function would otherwise compile at a cold start) is bundled only where payments are declared,
 * which is also the only place its secret may be read.
 */
function externalModulesFor(access: FunctionAccess): string[] {
  return access.payments ? [] : ['stripe'];
}

/**
 * The bundle flags of a function (shared/bundle-flags.d.ts), from what it declares: a client or SDK that its access
 * does not use is left out of its bundle, as its grants leave it out of its role.
 */
function bundleFlagsFor(access: FunctionAccess): Record<string, string> {
  const flags = {
    __BUNDLES_WORKFLOWS__: Boolean(access.startsWorkflows?.length || access.stopsWorkflows?.length),
    __BUNDLES_MAIL__: Boolean(access.sendsMail),
    __BUNDLES_EVENTS__: Boolean(access.publishesEvents),
    __BUNDLES_QUEUES__: Boolean(access.webhookQueue || access.authMailQueue),
    __BUNDLES_SEALING__: Boolean(access.secrets?.length),
    __BUNDLES_PAYMENTS__: Boolean(access.payments),
    __BUNDLES_SECRETS_MANAGER__: Boolean(access.upstream || access.payments),
  };
  return Object.fromEntries(Object.entries(flags).map(([name, on]) => [name, String(on)]));
}

/**
 * Modules replaced in every bundle. The AWS SDK's default credential chain, by the environment's credentials: on
 * Lambda the function role's are there, and the rest of the chain (profiles, SSO, web identity, instance metadata:
 * about 90 KB of code each function would compile) is never used. `node:http`, by a module that requires it on
 * first use instead of importing it at load (see shared/wiring/node-http.cjs).
 */
const nodeHttp = fileURLToPath(new URL('../shared/wiring/node-http.cjs', import.meta.url));
const bundleAliases = {
  '@aws-sdk/credential-provider-node': fileURLToPath(new URL('../shared/wiring/lambda-credentials.ts', import.meta.url)),
  'node:http': nodeHttp,
  http: nodeHttp,
} as const;

/**
 * esbuild's options for a function's bundle in `outdir`: `index.mjs` and its chunks. What a function loads on first
 * use (a client, the Encryption SDK, the payment package) is a chunk of its own, read when first imported. Without
 * splitting, the bundler would wrap every module such a load shares with the rest (most of the AWS SDK) to start it
 * lazily, and could no longer leave out their unused code: GetInstance compiled 868 KB at a cold start instead of 486.
 */
export function esbuildOptionsFor(entry: string, access: FunctionAccess, outdir: string): BuildOptions {
  return {
    entryPoints: { index: entry },
    outdir,
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    platform: 'node',
    format: bundleSettings.format,
    target: bundleSettings.target,
    mainFields: [...bundleSettings.mainFields],
    banner: { js: bundleSettings.banner },
    minify: bundleSettings.minify,
    sourcemap: bundleSettings.sourcemap,
    legalComments: bundleSettings.legalComments,
    define: bundleFlagsFor(access),
    alias: bundleAliases,
    external: externalModulesFor(access),
    logLevel: 'error',
  };
}

/** The outputs of a function's bundle that a cold start loads: the entry and the chunks it imports, not those it imports on first use. */
export function startupOutputs(metafile: Metafile): string[] {
  const { outputs } = metafile;
  const loaded = new Set<string>();
  const load = (path: string) => {
    if (loaded.has(path)) return;
    loaded.add(path);
    for (const imported of outputs[path]!.imports) if (imported.kind === 'import-statement' && outputs[imported.path]) load(imported.path);
  };
  // The function's own entry: what it imports on first use is an entry point of the metafile too, in chunks/.
  const entry = Object.keys(outputs).find((path) => /(^|\/)index\.mjs$/.test(path) && !path.includes('/chunks/'));
  if (entry) load(entry);
  return [...loaded];
}

/** The bytes of code a function's cold start compiles (startupOutputs). */
export const startupBytes = (metafile: Metafile): number =>
  startupOutputs(metafile).reduce((sum, path) => sum + metafile.outputs[path]!.bytes, 0);
