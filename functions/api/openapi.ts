import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { openApiDocumentRoute } from '../../shared/contracts/meta';
import { openApiDocument } from '../../shared/contracts/openapi';
import { json } from '../../shared/http/responses';

/** The OpenAPI 3.1.0 document; public, like the specification it describes. */
export const handler = route(openApiDocumentRoute, async (_deps: Deps) => json(200, openApiDocument()));
