import { openApiDocument } from '../../shared/schemas/openapi';
import { json } from '../../shared/http/responses';

/** The OpenAPI 3.1.0 document; public, like the specification it describes. */
export const handler = async () => json(200, openApiDocument());
