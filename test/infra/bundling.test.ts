import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { esbuildOptionsFor, startupOutputs } from '../../infra/bundling';
import { deployedFunctions } from '../../infra/deployed-functions';
import { REPO_ROOT } from '../../infra/constructs/api-function';

/**
 * Each function's budget in KiB of the code its cold start loads (its entry and the chunks that imports, without source
 * maps or the chunks loaded on first use): a function that outgrows it fails here.
 */
const budgets = JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/bundle-budgets.json'), 'utf8')) as Record<string, number>;

interface Bundled {
  /** KiB of code a cold start loads. */
  readonly kib: number;
  /** All its code, chunks loaded on first use too. */
  readonly code: string;
  /** The packages (or our own folders) whose code is in the bundle, and those in what a cold start loads. */
  readonly packages: ReadonlySet<string>;
  readonly startupPackages: ReadonlySet<string>;
}

const packagesOf = (inputs: string[]): Set<string> =>
  new Set(inputs.map((path) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? path));
const inputsOf = (metafile: Metafile, outputs: string[]) => outputs.flatMap((output) => Object.keys(metafile.outputs[output]!.inputs));

async function bundled(entry: string, access: Parameters<typeof esbuildOptionsFor>[1]): Promise<Bundled> {
  const outdir = join(REPO_ROOT, 'bench/out/budget');
  const { outputFiles = [], metafile } = await build({
    ...esbuildOptionsFor(join(REPO_ROOT, entry), access, outdir),
    write: false,
    metafile: true,
  });
  const code = outputFiles.filter((file) => file.path.endsWith('.mjs'));
  const startup = startupOutputs(metafile!);
  const startupCode = code.filter((file) => startup.some((output) => file.path === join(REPO_ROOT, output)));
  return {
    kib: startupCode.reduce((sum, file) => sum + file.contents.byteLength, 0) / 1024,
    code: code.map((file) => file.text).join('\n'),
    packages: packagesOf(inputsOf(metafile!, Object.keys(metafile!.outputs))),
    startupPackages: packagesOf(inputsOf(metafile!, startup)),
  };
}

describe('function bundles', () => {
  const functions = deployedFunctions();
  const bundles = new Map<string, Bundled>();

  beforeAll(async () => {
    for (const fn of functions) bundles.set(fn.name, await bundled(fn.entry, fn.access));
  }, 240_000);

  it('records a budget for every function of the stack, and for nothing else', () => {
    expect(Object.keys(budgets).sort()).toEqual(functions.map((fn) => fn.name).sort());
  });

  it.each(deployedFunctions().map((fn) => [fn.name]))('keeps %s within its budget', (name) => {
    expect(bundles.get(name)!.kib).toBeLessThanOrEqual(budgets[name]!);
  });

  it('holds the Encryption SDK and KMS only where secrets are sealed or opened', () => {
    const holding = functions.filter((fn) => bundles.get(fn.name)!.packages.has('@aws-crypto/encrypt-node')).map((fn) => fn.name);

    expect(holding.sort()).toEqual(
      functions
        .filter((fn) => fn.access.secrets?.length)
        .map((fn) => fn.name)
        .sort(),
    );
    expect(bundles.get('ListKeys')!.packages.has('@aws-sdk/client-kms')).toBe(false);
  });

  it.each([
    ['Step Functions', '@aws-sdk/client-sfn', 'ListKeys', 'InstanceAction'],
    ['SES', '@aws-sdk/client-sesv2', 'GetInstance', 'sendAuthMail'],
    ['EventBridge', '@aws-sdk/client-eventbridge', 'GetInstance', 'publishChanges'],
    ['SQS', '@aws-sdk/client-sqs', 'GetInstance', 'fanOut'],
    ['Secrets Manager', '@aws-sdk/client-secrets-manager', 'ListKeys', 'GetInstance'],
  ])('bundles the %s client only where the access declares its use', (_, pkg, without, withIt) => {
    expect(bundles.get(without)!.packages.has(pkg)).toBe(false);
    expect(bundles.get(withIt)!.packages.has(pkg)).toBe(true);
  });

  it.each([
    ['the Encryption SDK', '@aws-crypto/encrypt-node', 'GetInstance'],
    ['the Secrets Manager client', '@aws-sdk/client-secrets-manager', 'GetInstance'],
    ['the payment package', 'stripe', 'CreateTopUp'],
    ['the Step Functions client', '@aws-sdk/client-sfn', 'InstanceAction'],
  ])('loads %s on first use, outside what a cold start compiles', (_, pkg, holder) => {
    expect(bundles.get(holder)!.packages.has(pkg)).toBe(true);
    expect(functions.filter((fn) => bundles.get(fn.name)!.startupPackages.has(pkg)).map((fn) => fn.name)).toEqual([]);
  });

  it('bundles no credential chain beyond the environment’s credentials, in any function', () => {
    const chains = [
      '@aws-sdk/credential-provider-node',
      '@aws-sdk/credential-provider-ini',
      '@aws-sdk/credential-provider-sso',
      '@aws-sdk/nested-clients',
    ];

    expect(functions.filter((fn) => chains.some((pkg) => bundles.get(fn.name)!.packages.has(pkg))).map((fn) => fn.name)).toEqual([]);
  });

  it('holds the OpenAPI registry only in the document route', () => {
    const holding = functions.filter((fn) => bundles.get(fn.name)!.packages.has('@asteasolutions/zod-to-openapi')).map((fn) => fn.name);

    expect(holding).toEqual(['OpenApiDocument']);
  });

  it('imports node:http in no function: it is required on first use, so that its fetch implementation does not load at start', () => {
    expect(functions.filter((fn) => /from\s*"(node:)?http"/.test(bundles.get(fn.name)!.code)).map((fn) => fn.name)).toEqual([]);
    expect(bundles.get('deliverWebhooks')!.packages.has('shared/wiring/node-http.cjs')).toBe(true);
  });

  it('still gives code that imports node:http the module, through its stand-in', async () => {
    const outdir = join(REPO_ROOT, 'bench/out/budget/node-http-user');
    await build(esbuildOptionsFor(join(REPO_ROOT, 'test/fixtures/node-http-user.ts'), {}, outdir));

    const { httpExports } = (await import(pathToFileURL(join(outdir, 'index.mjs')).href)) as { httpExports: unknown };

    expect(httpExports).toEqual({ agent: 'function', request: 'function' });
  });

  it('loads whole, from its chunks, what a function loads on first use: a secret sealed and opened, the Secrets Manager client, Stripe', async () => {
    const outdir = join(REPO_ROOT, 'bench/out/budget/first-use-user');
    await build(
      esbuildOptionsFor(
        join(REPO_ROOT, 'test/fixtures/first-use-user.ts'),
        { secrets: ['seal', 'open'], upstream: true, payments: true },
        outdir,
      ),
    );
    const keyFile = join(mkdtempSync(join(tmpdir(), 'first-use-')), 'key');
    writeFileSync(keyFile, randomBytes(32));

    const { firstUses } = (await import(pathToFileURL(join(outdir, 'index.mjs')).href)) as {
      firstUses: (keyFile: string) => Promise<unknown>;
    };

    expect(await firstUses(keyFile)).toEqual({ opened: 'root password', secretsManager: 'function', stripe: 'function' });
  });

  it('keeps licence comments out of the code a function compiles', () => {
    expect(functions.filter((fn) => /\/\*![\s\S]*?\*\/|@license/.test(bundles.get(fn.name)!.code)).map((fn) => fn.name)).toEqual([]);
  });

  it('holds the payment provider’s adapter and package only where payments are declared', () => {
    const holding = functions.filter((fn) => bundles.get(fn.name)!.packages.has('shared/payments/stripe.ts')).map((fn) => fn.name);

    expect(holding.sort()).toEqual(
      functions
        .filter((fn) => fn.access.payments)
        .map((fn) => fn.name)
        .sort(),
    );
    expect(bundles.get('GetInstance')!.code).not.toContain('stripe');
    expect(bundles.get('CreateTopUp')!.code).toContain('api.stripe.com');
  });
});
