import type { Reporter, TestModule } from 'vitest/node';

/** Ends every run with one plain line, `Tests: N passed, N failed, N skipped`, for tools that read closing lines. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const counts = { passed: 0, failed: 0, skipped: 0, pending: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) counts[test.result().state] += 1;
    }
    // A file that failed outside its tests (a hook, an import) counts once, whatever its tests say.
    const failedModules = testModules.filter(
      (module) => module.state() === 'failed' && ![...module.children.allTests()].some((test) => test.result().state === 'failed'),
    ).length;
    process.stdout.write(`\nTests: ${counts.passed} passed, ${counts.failed + failedModules} failed, ${counts.skipped} skipped\n`);
  }
}
