import { loadConfig, type Environment } from '../../shared/config';
import type { Deps } from '../../shared/domain/deps';
import { RuntimeState } from '../../shared/platform';

/** A dependency the unit tier does not reach: any use fails the test, naming it. */
function unreachable<T>(name: string): T {
  return new Proxy({} as object, {
    get: (_, property) => {
      throw new Error(`the unit tier reaches no ${name} (${String(property)} was asked for)`);
    },
  }) as T;
}

/** A runtime's dependencies configured from `env` alone: no AWS client, engine or transport is reachable. */
export function unitDeps(env: Environment = {}): Deps {
  return {
    config: loadConfig(env),
    dynamo: unreachable('DynamoDB'),
    sfn: unreachable('Step Functions'),
    state: new RuntimeState(),
    workflows: unreachable('workflow engine'),
    transports: unreachable('event transport'),
  };
}
