import { resolve } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { importCycles, importGraph, upwardImports } from '../support/import-graph';

const root = resolve(import.meta.dirname, '../..');
/** The import rules need no types: this linter leaves the type-aware parser (and the typed rules) out, for speed. */
const importLinter = new ESLint({
  cwd: root,
  overrideConfig: {
    languageOptions: { parserOptions: { projectService: false } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'off',
      '@typescript-eslint/no-misused-promises': 'off',
      '@typescript-eslint/switch-exhaustiveness-check': 'off',
    },
  },
});
/** The repository's own configuration, types and all. */
const typedLinter = new ESLint({ cwd: root });

/** The import-boundary errors ESLint reports for `code` as if it were the file at `path`. */
async function boundaryErrors(path: string, code: string): Promise<string[]> {
  const [result] = await importLinter.lintText(code, { filePath: resolve(root, path) });
  return result!.messages.filter((message) => message.ruleId === 'no-restricted-imports').map((message) => message.message);
}

describe('the layers of shared/', () => {
  it('has no import that goes up a layer', () => {
    expect(upwardImports(importGraph(root))).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(importCycles(importGraph(root))).toEqual([]);
  });

  it.each([
    ['shared/model/planted.ts', "import { dynamo } from '../aws';"],
    ['shared/model/planted.ts', "import { getInstanceItem } from '../store/instances';"],
    ['shared/model/planted.ts', "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';"],
    ['shared/config.ts', "import { getAccount } from './store/accounts';"],
    ['shared/store/planted.ts', "import { createInstance } from '../domain/instances';"],
    ['shared/store/planted.ts', "import { instanceDetailSchema } from '../schemas/instances';"],
    ['shared/store/planted.ts', "import { DigitalOceanDriver } from '../upstream/digitalocean';"],
    ['shared/upstream/planted.ts', "import { getInstanceItem } from '../store/instances';"],
    ['shared/workflows/planted.ts', "import { getJob } from '../store/jobs';"],
    ['shared/schemas/planted.ts', "import { config } from '../config';"],
    ['shared/schemas/planted.ts', "import { route } from '../http/route';"],
    ['shared/domain/planted.ts', "import { route } from '../http/route';"],
    ['shared/store/planted.ts', "import { stack } from '../../infra/stack';"],
    ['shared/store/planted.ts', "import * as z from 'zod';"],
    ['functions/api/planted.ts', "import { object } from 'zod/mini';"],
  ])('refuses, in %s, %s', async (path, importLine) => {
    const errors = await boundaryErrors(path, `${importLine}\nexport const planted = 1;\n`);

    expect(errors).toHaveLength(1);
  });

  it.each([
    ['shared/model/planted.ts', "import { flavorOf } from './flavors';"],
    ['shared/config.ts', "import { RATE_LIMIT } from './model/rate-limits';"],
    ['shared/store/planted.ts', "import { instanceSchema } from '../model/instance';"],
    ['shared/store/planted.ts', "import { dynamo } from '../aws';"],
    ['shared/upstream/planted.ts', "import type { UpstreamServer } from '../model/server';"],
    ['shared/schemas/planted.ts', "import { flavorNames } from '../model/flavors';"],
    ['shared/domain/planted.ts', "import { getInstanceItem } from '../store/instances';"],
    ['shared/domain/planted.ts', "import { instanceDetailSchema } from '../schemas/instances';"],
    ['shared/http/planted.ts', "import { createInstance } from '../domain/instances';"],
    ['shared/store/planted.ts', "import * as z from '../model/zod';"],
    ['shared/store/planted.ts', "import type * as z from 'zod';"],
  ])('allows, in %s, %s', async (path, importLine) => {
    const errors = await boundaryErrors(path, `${importLine}\nexport const planted = 1;\n`);

    expect(errors).toEqual([]);
  });
});

describe('typed lint rules', () => {
  const ruleErrors = async (code: string) => {
    // Linted as a file of a one-file project (test/fixtures/typed-lint), so the check loads no other source.
    const [result] = await typedLinter.lintText(code, { filePath: resolve(root, 'test/fixtures/typed-lint/planted.ts') });
    return result!.messages.map((message) => message.ruleId);
  };

  it.each([
    ['a floating promise', 'export function run(work: () => Promise<void>) {\n  work();\n}\n', '@typescript-eslint/no-floating-promises'],
    [
      'a promise where a void callback is expected',
      "export function run(events: { on(name: string, listener: () => void): void }) {\n  events.on('x', async () => {});\n}\n",
      '@typescript-eslint/no-misused-promises',
    ],
    [
      'a switch that misses a member of its union',
      "export function name(kind: 'a' | 'b'): string {\n  switch (kind) {\n    case 'a':\n      return 'A';\n  }\n  return '';\n}\n",
      '@typescript-eslint/switch-exhaustiveness-check',
    ],
  ])('refuses %s', async (_, code, rule) => {
    expect(await ruleErrors(code)).toContain(rule);
  });
});
