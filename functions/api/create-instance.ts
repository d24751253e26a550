import { route } from '../../shared/http/route';
import { createInstanceRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { committedCreate, createInstance } from '../../shared/domain/instances';

export const handler = route(
  createInstanceRoute,
  async ({ principal, body, idempotencyKey }) => json(202, await createInstance(principal.account, body, idempotencyKey)),
  {
    resume: async (idempotencyKey) => {
      const committed = await committedCreate(idempotencyKey);
      return committed && json(202, committed);
    },
  },
);
