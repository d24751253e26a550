import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { createInstanceRoute } from '../../shared/contracts/instances';
import { json, type ApiResponse } from '../../shared/http/responses';
import { committedCreate, createInstance, withCurrentCredentials, withoutCredentials } from '../../shared/domain/instances';
import { instanceDetailSchema, type InstanceDetail } from '../../shared/schemas/instances';

/** A 202's instance detail, changed; any other answer (a refusal) carries no credentials and stays as it is. */
async function withDetail(response: ApiResponse, change: (detail: InstanceDetail) => InstanceDetail | Promise<InstanceDetail>) {
  if (response.statusCode !== 202) return response;
  const detail = instanceDetailSchema.parse(JSON.parse(String(response.body)));
  return { ...response, body: JSON.stringify(await change(detail)) };
}

export const handler = route(
  createInstanceRoute,
  async (deps: Deps, { principal, body, idempotencyKey }) => json(202, await createInstance(deps, principal.account, body, idempotencyKey)),
  {
    resume: async (deps, idempotencyKey) => {
      const committed = await committedCreate(deps, idempotencyKey);
      return committed && json(202, committed);
    },
    credentials: {
      withheld: (response) => withDetail(response, withoutCredentials),
      restored: (deps, response, accountId) => withDetail(response, (detail) => withCurrentCredentials(deps, detail, accountId)),
    },
  },
);
