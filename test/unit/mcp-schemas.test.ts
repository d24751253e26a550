import * as z from 'zod';
import { compactJsonSchema } from '../../shared/mcp/listed-schema';

describe('compactJsonSchema', () => {
  const schema = z.strictObject({
    id: z.number().int().meta({ description: 'The id.' }),
    at: z.iso.datetime().nullable(),
    status: z.enum(['a', 'b']),
    labels: z.record(z.string(), z.string()),
    note: z.string().optional().meta({ description: 'A note.' }),
  });
  const json = z.toJSONSchema(schema) as Parameters<typeof compactJsonSchema>[0];

  it('keeps descriptions, enumerations and required fields of an input, dropping what restates JSON', () => {
    expect(compactJsonSchema(json, 'input')).toEqual({
      type: 'object',
      properties: {
        id: { type: 'integer', description: 'The id.' },
        at: { type: ['string', 'null'], format: 'date-time' },
        status: { type: 'string', enum: ['a', 'b'] },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        note: { type: 'string', description: 'A note.' },
      },
      required: ['id', 'at', 'status', 'labels'],
    });
  });

  it('keeps only the shape of an output', () => {
    expect(compactJsonSchema(json, 'output')).toEqual({
      type: 'object',
      properties: {
        id: { type: 'integer' },
        at: { type: ['string', 'null'] },
        status: { type: 'string' },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        note: { type: 'string' },
      },
    });
  });

  it('keeps a property named like a keyword', () => {
    const named = z.toJSONSchema(z.object({ required: z.string(), format: z.string() })) as Parameters<typeof compactJsonSchema>[0];

    expect(compactJsonSchema(named, 'output')).toEqual({
      type: 'object',
      properties: { required: { type: 'string' }, format: { type: 'string' } },
    });
  });

  it('leaves an anyOf that is not a nullable type as it is', () => {
    const union = z.toJSONSchema(z.union([z.string().min(1), z.null().meta({ description: 'none' })])) as Parameters<
      typeof compactJsonSchema
    >[0];

    expect(compactJsonSchema(union, 'input')).toEqual({
      anyOf: [
        { type: 'string', minLength: 1 },
        { type: 'null', description: 'none' },
      ],
    });
  });
});
