import type { Deps } from '../../domain/deps';
import { assertCameThroughEdge } from '../edge-origin';
import type { Middleware } from './state';

/** Refuses, before anything else runs, a request that did not come through the edge (when one is configured). */
export const edgeOrigin = (deps: Deps): Middleware => ({
  before: ({ event }) => {
    assertCameThroughEdge(deps, event);
  },
});
