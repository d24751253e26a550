import * as z from '../model/zod';
import { ACTIVE_KEYS_PER_ACCOUNT } from '../model/api-keys';
import { apiKeyInfoSchema, createdApiKeySchema, createKeyBodySchema, revokedKeySchema } from '../schemas/keys';
import type { SessionRoute } from './contract';
import { error, ok, sessionErrors, tooLarge } from './docs';

const ApiKeyInfo = apiKeyInfoSchema.meta({ id: 'ApiKeyInfo' });
const CreatedApiKey = createdApiKeySchema.meta({ id: 'CreatedApiKey' });
const tags = ['keys'];

export const listKeysRoute = {
  name: 'ListKeys',
  method: 'GET',
  path: '/api/v1/keys',
  entry: 'functions/api/list-keys.ts',
  auth: 'session',
  csrf: false,
  access: { tables: { apiKeys: ['Query'] } },
  doc: {
    operationId: 'listKeys',
    summary: "The caller's API keys, revoked ones included; never the full key",
    description:
      'Every API key of the signed-in account, revoked ones included, identified by `key_prefix`; the full key is never returned again.',
    tags,
    responses: { 200: ok('The keys.', z.array(ApiKeyInfo)), ...sessionErrors },
  },
} as const satisfies SessionRoute;

export const createKeyRoute = {
  name: 'CreateKey',
  method: 'POST',
  path: listKeysRoute.path,
  entry: 'functions/api/create-key.ts',
  auth: 'session',
  csrf: true,
  body: createKeyBodySchema,
  // One transaction: the account's count of active keys and the new key; and the id sequence.
  access: { tables: { apiKeys: ['PutItem'], counters: ['UpdateItem'] } },
  doc: {
    operationId: 'createKey',
    summary: 'Create a key; the full key is returned only here',
    description: `Creates an API key and returns it in full in \`full_key\`, this once. Needs a confirmed account that has deposited $1.00 or more at some time; an account holds at most ${ACTIVE_KEYS_PER_ACCOUNT} active keys (revoking one gives its place back).`,
    tags,
    responses: {
      201: ok('Created.', CreatedApiKey),
      400: error('Invalid request.'),
      ...sessionErrors,
      402: error('Deposit required.'),
      409: error(`Key limit reached (at most ${ACTIVE_KEYS_PER_ACCOUNT} active keys per account).`),
      413: error(tooLarge),
    },
  },
} as const satisfies SessionRoute;

export const revokeKeyRoute = {
  name: 'RevokeKey',
  method: 'DELETE',
  path: `${listKeysRoute.path}/{key_id}`,
  entry: 'functions/api/revoke-key.ts',
  auth: 'session',
  csrf: true,
  params: z.object({ key_id: z.number().int().meta({ description: 'The key id.' }) }),
  // The revocation and, in the same transaction, the account's count of active keys.
  access: { tables: { apiKeys: ['Query', 'UpdateItem'], counters: ['UpdateItem'] } },
  doc: {
    operationId: 'revokeKey',
    summary: 'Revoke a key, at once and for good',
    description: `Revokes the key at once and for good: the very next request with it is 401, and its place counts towards the limit of ${ACTIVE_KEYS_PER_ACCOUNT} active keys no more.`,
    tags,
    responses: { 200: ok('Revoked.', revokedKeySchema), ...sessionErrors, 404: error('Key not found.') },
  },
} as const satisfies SessionRoute;

export const keyRoutes = [listKeysRoute, createKeyRoute, revokeKeyRoute] as const;
