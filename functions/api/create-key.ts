import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { createKeyRoute } from '../../shared/contracts/keys';
import { json } from '../../shared/http/responses';
import { createKey } from '../../shared/domain/key-management';

export const handler = route(createKeyRoute, async (deps: Deps, { principal, body }) =>
  json(201, await createKey(deps, principal.account, body)),
);
