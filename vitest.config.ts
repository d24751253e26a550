import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globals: true,
    reporters: ['default', './test/summary-reporter.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // The integration files mostly wait on timers and loopback I/O, so more files than cores run well side by side.
    maxWorkers: 4,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_TRACE_ENABLED: 'false' },
  },
});
