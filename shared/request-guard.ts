import type { Platform, RequestGuard } from './platform';

/** The dependencies for a Bearer request's work: its writes and reads are guarded. */
export function guarded<D extends Platform>(deps: D, guard: RequestGuard): D {
  return { ...deps, invocation: { ...deps.invocation, guard } };
}

/** The guard of the request this work runs for; undefined outside a Bearer request (workflows, jobs, operators). */
export function currentGuard(deps: Platform): RequestGuard | undefined {
  return deps.invocation?.guard;
}

/** The dependencies for work done as no request's: the clean-up a refused request still owes (it must not be refused in turn). */
export function unguarded<D extends Platform>(deps: D): D {
  return { ...deps, invocation: { ...deps.invocation, guard: undefined } };
}
