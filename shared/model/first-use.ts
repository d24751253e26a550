/**
 * A value made on its first use, then kept: schemas a function may never need are not built at its cold start.
 * Called with esbuild's pure annotation, so that a bundle that never uses the value leaves its code out.
 */
export function onFirstUse<T>(make: () => T): () => T {
  let made: { readonly value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}
