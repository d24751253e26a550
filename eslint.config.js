// @ts-check
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** What no runtime code (shared/) may import. */
const runtimeImportPatterns = [
  { group: ['**/infra', '**/infra/**'], message: 'shared/ must not import infra/: move what both need into shared/.' },
  { group: ['aws-cdk-lib', 'aws-cdk-lib/**', 'constructs'], message: 'CDK belongs in infra/.' },
  {
    regex: '^zod(/.*)?$',
    allowTypeImports: true,
    message: 'Take zod from shared/model/zod.ts, which sets it up before any schema is made.',
  },
];

/** Packages that do I/O or belong to one runtime: never in the model. */
const sdkPackages = ['@aws-sdk/*', '@smithy/*', '@middy/*', '@aws-lambda-powertools/*', 'stripe', '@modelcontextprotocol/*'];

/** The platform modules at shared/'s root (the others there are entry helpers, above the domain). */
const platformFiles = [
  'access',
  'aws',
  'config',
  'deadline',
  'encryption-sdk',
  'metric-names',
  'observability',
  'platform',
  'request-guard',
  'retry',
  'secrets',
  'tables',
  'tracing',
  'workflow-names',
].map((name) => `shared/${name}.ts`);

/** A pattern refusing the folders of shared/ that sit above (or beside) `what`. */
const above = (what, folders) => ({
  group: folders.flatMap((folder) => [`**/${folder}`, `**/${folder}/**`]),
  message: `${what} must not import ${folders.join(', ')}: see the layers in eslint.config.js (docs/architecture.md).`,
});

/** The import rule for `files`: the runtime's patterns and these. */
const restrict = (files, patterns) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: [...runtimeImportPatterns, ...patterns] }] },
});

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', '.local/', 'bench/out/', 'clients/sdk/schema.ts', 'console/dist/', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { languageOptions: { globals: globals.node } },
  {
    rules: {
      // Unused names are an error, except those that say they are unused on purpose.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  // The layers of shared/, lowest first: model → platform (the root modules) → adapters (store, upstream, workflows,
  // events, mail, webhooks, payments) → domain (use cases) → http, contracts and the root entry helpers → functions/.
  // A module imports its own layer and those below it; the wire schemas (schemas/) import only the model. A later
  // block replaces the rule for its files, so each repeats the runtime's patterns (restrict() does).
  restrict(['shared/**', 'functions/**'], []),
  restrict(
    ['shared/model/**'],
    [
      {
        group: ['../*', '../**'],
        message: 'shared/model/ is the bottom layer: it imports only other model modules (./…), zod and node built-ins.',
      },
      { group: sdkPackages, message: 'shared/model/ is pure: no SDK, no I/O.' },
    ],
  ),
  restrict(platformFiles, [
    {
      group: ['./*/**', '!./model/**'],
      message: 'A platform module (config, clients, observability…) imports only the model and other platform modules.',
    },
  ]),
  restrict(['shared/store/**'], [above('store', ['domain', 'http', 'contracts', 'schemas', 'upstream', 'workflows', 'wiring'])]),
  restrict(['shared/upstream/**'], [above('upstream', ['domain', 'http', 'contracts', 'schemas', 'store', 'workflows', 'wiring'])]),
  restrict(['shared/workflows/**'], [above('workflows', ['domain', 'http', 'contracts', 'schemas', 'store', 'upstream', 'wiring'])]),
  restrict(
    ['shared/events/**', 'shared/mail/**', 'shared/webhooks/**', 'shared/payments/**'],
    [above('an adapter', ['domain', 'http', 'contracts', 'wiring'])],
  ),
  restrict(
    ['shared/schemas/**'],
    [
      {
        group: ['../*', '../**', '!../model', '!../model/**'],
        message: 'The wire schemas stand apart: they import only the model (and each other).',
      },
    ],
  ),
  restrict(['shared/domain/**'], [above('a use case', ['http', 'contracts', 'wiring'])]),
  {
    // Type-aware rules where promises pass between middlewares, handlers and workers: none may be left floating or
    // handed to a place that does not await it, and a switch over a union handles every member.
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: {
      // Tests read arbitrary JSON bodies and CloudFormation templates.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
