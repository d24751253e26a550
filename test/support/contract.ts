import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../shared/contracts/openapi';

/**
 * Checks a response against the OpenAPI document the service serves: the operation must declare the status,
 * the body must match its schema, and every header it declares as required must be present. Paths the document does not
 * describe (the catch-all 404/405) are not checked.
 */
type Document = ReturnType<typeof openApiDocument>;
interface ResponseObject {
  content?: Record<string, { schema: unknown }>;
  headers?: Record<string, { required?: boolean }>;
}

const document: Document = openApiDocument();
const ajv = new Ajv2020({ strict: false, allErrors: true });
// Formats are part of the contract: a timestamp that is not an ISO 8601 date-time breaks it.
addFormats(ajv);
ajv.addSchema({ $id: 'openapi', components: document.components }, 'openapi');
const validators = new Map<string, ValidateFunction>();

/** `$ref`s in the document point into it; the validator knows the document as `openapi`. */
function rebased(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/'));
}

const operations = Object.entries(document.paths ?? {}).map(([template, item]) => ({
  pattern: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`),
  template,
  item: item as Record<string, { responses: Record<string, ResponseObject> }>,
}));

export function contractViolations(method: string, path: string, status: number, headers: Headers, body: unknown): string[] {
  const pathname = new URL(path, 'http://localhost').pathname;
  const operation = operations.find(({ pattern }) => pattern.test(pathname));
  const declared = operation?.item[method.toLowerCase()];
  if (!operation || !declared) return [];
  const response = declared.responses[String(status)];
  if (!response) return [`${method} ${operation.template}: status ${status} is not documented`];
  const problems = Object.entries(response.headers ?? {})
    .filter(([name, declaredHeader]) => declaredHeader.required && headers.get(name) === null)
    .map(([name]) => `${method} ${operation.template} ${status}: header ${name} is missing`);
  const schema = response.content?.['application/json']?.schema;
  if (schema) {
    const key = `${method} ${operation.template} ${status}`;
    let validate = validators.get(key);
    if (!validate) {
      validate = ajv.compile(rebased(schema) as object);
      validators.set(key, validate);
    }
    if (!validate(body)) problems.push(`${key}: body ${ajv.errorsText(validate.errors)}`);
  }
  return problems;
}
