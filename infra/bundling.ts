import type { FunctionAccess } from '../shared/access';

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

/**
 * Packages a function leaves out of its bundle because it never loads them: the payment provider's (a quarter of a
 * megabyte that every function would otherwise compile at a cold start) is bundled only where payments are declared,
 * which is also the only place its secret may be read.
 */
export function externalModulesFor(access: FunctionAccess): string[] {
  return access.payments ? [] : ['stripe'];
}
