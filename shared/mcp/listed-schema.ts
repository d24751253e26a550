import type * as z from 'zod';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (node: Json | undefined): node is JsonObject => typeof node === 'object' && node !== null && !Array.isArray(node);

/** An input schema guides the model's arguments; an output schema only says the answer's shape. */
type Use = 'input' | 'output';

/**
 * A JSON Schema as a model reads it, in fewer tokens and with the same meaning for the values the service sends:
 * no `$schema`, no regular expression beside a `format` (a date-time's is 300 characters), no integer bounds that
 * only restate JavaScript's, no `propertyNames` of plain strings, no `additionalProperties: false` (the route refuses
 * unknown fields itself, with its text), and a nullable type as `["string", "null"]` rather than `anyOf`. An output
 * schema keeps only the shape: types and properties, without descriptions, enumerations, formats or `required`
 * (every field the answer names is there; the server checks its answers against the full schema).
 */
export function compactJsonSchema(node: Json, use: Use): Json {
  if (Array.isArray(node)) return node.map((item) => compactJsonSchema(item, use));
  if (!isObject(node)) return node;
  const nullable = Array.isArray(node.anyOf) && node.anyOf.length === 2 ? nullableOf(node.anyOf) : undefined;
  const source: JsonObject = nullable ? { ...nullable, ...withoutKey(node, 'anyOf') } : node;
  const compacted: JsonObject = {};
  for (const [key, value] of Object.entries(source)) {
    if (dropped(key, value, source, use)) continue;
    compacted[key] = key === 'properties' && isObject(value) ? propertiesOf(value, use) : compactJsonSchema(value, use);
  }
  return compacted;
}

function withoutKey(node: JsonObject, key: string): JsonObject {
  const { [key]: _, ...rest } = node;
  return rest;
}

/** `anyOf: [{type: T, …}, {type: "null"}]` as `{type: [T, "null"], …}`. */
function nullableOf([first, second]: Json[]): JsonObject | undefined {
  const [value, none] = isObject(second) && second.type === 'null' ? [first, second] : [second, first];
  if (!isObject(value) || !isObject(none) || none.type !== 'null' || Object.keys(none).length !== 1 || typeof value.type !== 'string')
    return undefined;
  return { ...value, type: [value.type, 'null'] };
}

/** Each property's schema (a property may be named like a keyword: `required`, `format`…). */
function propertiesOf(properties: JsonObject, use: Use): JsonObject {
  return Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, compactJsonSchema(schema, use)]));
}

function dropped(key: string, value: Json, node: JsonObject, use: Use): boolean {
  switch (key) {
    case '$schema':
      return true;
    case 'description':
    case 'enum':
    case 'const':
    case 'format':
    case 'required':
      return use === 'output';
    case 'pattern':
      return node.format !== undefined;
    case 'minimum':
      return value === Number.MIN_SAFE_INTEGER;
    case 'maximum':
      return value === Number.MAX_SAFE_INTEGER;
    case 'propertyNames':
      return isObject(value) && value.type === 'string' && Object.keys(value).length === 1;
    case 'additionalProperties':
      return value === false;
    default:
      return false;
  }
}

/**
 * The schema, validating as it does, listed in `tools/list` compacted (as an input schema where the SDK lists
 * inputs, as an output schema where it lists outputs).
 */
export function listedSchema<S extends z.ZodType>(schema: S): S {
  const standard = schema['~standard'];
  const jsonSchema = {
    input: (options: Parameters<typeof standard.jsonSchema.input>[0]) =>
      compactJsonSchema(standard.jsonSchema.input(options) as Json, 'input') as Record<string, unknown>,
    output: (options: Parameters<typeof standard.jsonSchema.output>[0]) =>
      compactJsonSchema(standard.jsonSchema.output(options) as Json, 'output') as Record<string, unknown>,
  };
  return new Proxy(schema, {
    get: (target, property, receiver) =>
      property === '~standard' ? { ...standard, jsonSchema } : (Reflect.get(target, property, receiver) as unknown),
  });
}
