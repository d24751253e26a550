import type { Deps } from '../domain/deps';
import { awsDeps } from './aws';

/**
 * A function's handler: on AWS it runs with the dependencies its container builds once from its environment (a
 * Lambda container is one runtime); `forRuntime` gives the same handler over another runtime's dependencies, as the
 * local runtime and the tests run it.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any handler's signature
type Handler = (...args: any[]) => unknown;
export type EntryHandler<H extends Handler> = ((...args: Parameters<H>) => ReturnType<H>) & { readonly forRuntime: (deps: Deps) => H };

export function entryHandler<H extends Handler>(build: (deps: Deps) => H): EntryHandler<H> {
  const built = new WeakMap<Deps, H>();
  const forRuntime = (deps: Deps) => {
    let handler = built.get(deps);
    if (!handler) {
      handler = build(deps);
      built.set(deps, handler);
    }
    return handler;
  };
  let container: Deps | undefined;
  const onAws = (...args: Parameters<H>) => forRuntime((container ??= awsDeps(process.env)))(...args) as ReturnType<H>;
  return Object.assign(onAws, { forRuntime });
}
