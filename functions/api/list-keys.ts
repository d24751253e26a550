import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { listKeysRoute } from '../../shared/contracts/keys';
import { json } from '../../shared/http/responses';
import { listKeys } from '../../shared/domain/key-management';

export const handler = route(listKeysRoute, async (deps: Deps, { principal }) =>
  json(200, await listKeys(deps, principal.account.account_id)),
);
