// @ts-check
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** What no runtime code (shared/) may import. */
const runtimeImportPatterns = [
  { group: ['**/infra', '**/infra/**'], message: 'shared/ must not import infra/: move what both need into shared/.' },
  { group: ['aws-cdk-lib', 'aws-cdk-lib/**', 'constructs'], message: 'CDK belongs in infra/.' },
];

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
  {
    // The runtime is bundled into every function: it must not reach into the deployment's code, nor CDK.
    files: ['shared/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: runtimeImportPatterns }] },
  },
  {
    // Stored items have schemas of their own, so that a change to the API is never a change to the data (and back):
    // the domain maps items to wire objects (shared/domain/views.ts). A later block replaces the rule, so it repeats
    // the runtime's patterns.
    files: ['shared/store/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...runtimeImportPatterns,
            {
              group: ['**/schemas', '**/schemas/**'],
              message:
                'shared/store/ must not import the wire schemas: give the item its own schema, shared enumerations live in shared/domain/.',
            },
          ],
        },
      ],
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
