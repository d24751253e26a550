import { DEFAULT_ROUTE, routes, type RouteDefinition } from '../routes';

const patternCache = new Map<string, RegExp>();

/** The regular expression of an API Gateway path template (`{name}` matches one segment). */
function patternOf(path: string): RegExp {
  let pattern = patternCache.get(path);
  if (!pattern) {
    const source = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{(\w+)\\?\}/g, '(?<$1>[^/]+)');
    pattern = new RegExp(`^${source}$`);
    patternCache.set(path, pattern);
  }
  return pattern;
}

export interface RouteMatch {
  readonly route: RouteDefinition;
  readonly pathParameters: Record<string, string>;
}

/** Routes whose path template matches, whatever their method. */
export function routesForPath(path: string, table: readonly RouteDefinition[] = routes): RouteMatch[] {
  return table
    .filter((route) => route.path !== DEFAULT_ROUTE)
    .flatMap((route) => {
      const match = patternOf(route.path).exec(path);
      return match ? [{ route, pathParameters: { ...match.groups } }] : [];
    });
}
