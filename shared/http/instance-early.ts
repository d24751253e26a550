import { instanceBesideKey } from '../domain/instances';
import type { Instance } from '../model/instance';
import { instanceIdFrom } from '../schemas/instances';
import type { RouteOptions } from './route';

/** The early work of a route on the instance its path names (an action, a delete): the instance read beside the key. */
export const instanceInPathBesideKey: NonNullable<RouteOptions<Instance | undefined>['early']> = (deps, { pathParameters }, key) =>
  instanceBesideKey(deps, instanceIdFrom(pathParameters ?? {}), key);
