import { openApiDocument } from '../../shared/schemas/openapi';
import { publicHandler } from '../../shared/http/edge-origin';
import { json } from '../../shared/http/responses';

/** The OpenAPI 3.1.0 document; public, like the specification it describes. */
export const handler = publicHandler(async () => json(200, openApiDocument()));
