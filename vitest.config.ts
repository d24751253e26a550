import { defineConfig } from 'vitest/config';

/**
 * Four tiers, all run by `npm test`: unit (the model, use cases and pure helpers; no Java, no network), integration
 * (DynamoDB Local, the local runtime and the simulators over loopback), infra (CDK assertions) and browser (the
 * console in Chromium). `npm run test:unit` runs the first alone.
 */
export default defineConfig({
  test: {
    globals: true,
    reporters: ['default', './test/summary-reporter.ts'],
    // The integration files mostly wait on timers and loopback I/O, so more files than cores run well side by side.
    maxWorkers: 4,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_TRACE_ENABLED: 'false' },
    coverage: {
      provider: 'v8',
      include: ['shared/model/**/*.ts'],
      reporter: ['text-summary', 'text'],
      thresholds: { lines: 95, branches: 95 },
    },
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: { name: 'integration', include: ['test/integration/**/*.test.ts'], globalSetup: ['test/global-setup.ts'], pool: 'forks' },
      },
      { extends: true, test: { name: 'infra', include: ['test/infra/**/*.test.ts'], pool: 'forks' } },
      {
        extends: true,
        test: { name: 'browser', include: ['test/browser/**/*.test.ts'], globalSetup: ['test/global-setup.ts'], pool: 'forks' },
      },
    ],
  },
});
