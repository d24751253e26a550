/**
 * How every function is bundled, shared by the CDK construct (NodejsFunction) and the cold-start benchmark, so
 * that what is measured is what is deployed.
 */
export const bundleSettings = {
  format: 'esm',
  target: 'node24',
  mainFields: ['module', 'main'],
  // CommonJS dependencies bundled into an ES module still call require().
  banner: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  minify: true,
  sourcemap: true,
} as const;
