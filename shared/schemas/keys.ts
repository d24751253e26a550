import * as z from '../model/zod';
import { displayName } from './validation';
import { FULL_KEY_PATTERN, KEY_PREFIX_PATTERN } from '../model/api-keys';
import { timestampSchema } from './timestamps';

const KEY_NAME_MAX = 100;
export const DEFAULT_KEY_NAME = 'Default';

export const apiKeyInfoSchema = z.strictObject({
  id: z.number().int(),
  name: z.string(),
  key_prefix: z.string().regex(KEY_PREFIX_PATTERN),
  is_active: z.boolean(),
  created_at: timestampSchema.nullable(),
  last_used_at: timestampSchema.nullable(),
});
export type ApiKeyInfo = z.infer<typeof apiKeyInfoSchema>;

export const createdApiKeySchema = apiKeyInfoSchema.extend({ full_key: z.string().regex(FULL_KEY_PATTERN) });
export type CreatedApiKey = z.infer<typeof createdApiKeySchema>;

/** The body is optional; so is its one field. */
export const createKeyBodySchema = z.strictObject({ name: displayName(KEY_NAME_MAX).optional() }).optional();
export type CreateKeyBody = z.infer<typeof createKeyBodySchema>;

export const revokedKeySchema = z.strictObject({ ok: z.boolean(), id: z.number().int() });

const keyIdSchema = z
  .string()
  .regex(/^[1-9][0-9]{0,14}$/)
  .transform(Number);

/** The path's key id; anything that is not a positive integer cannot name a key, so it is a 404. */
export function keyIdFrom(pathParameters: Record<string, string | undefined>): number | undefined {
  const parsed = keyIdSchema.safeParse(pathParameters.key_id);
  return parsed.success ? parsed.data : undefined;
}
