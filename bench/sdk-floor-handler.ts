import { createHash, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { floorDynamo } from './floor-dynamo';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * The floors for a function that talks to DynamoDB, written with the AWS SDKs alone: no middy, no Powertools, no
 * zod, nothing of ours. Whatever a real function costs beyond them is ours.
 *
 * - Called without an API event (the cold-start floor): one GetItem.
 * - Called with GetInstance's event (the request floor): GetInstance's calls in GetInstance's order and rounds, as
 *   the benchmark records them (section 2): the key by its hash and the instance together; then the account, the
 *   general rate window and, for a settled server of the key's account, one take from an upstream request budget (a
 *   conditional write) together; then the upstream's live state of the server and, beside it, its sealed secrets opened
 *   with the Encryption SDK, as GetInstance reads them. It answers the stored record with both.
 */

const GENERAL_LIMIT = 60;
const WINDOW_MS = 60_000;

const answer = (statusCode: number, body: unknown) => ({
  statusCode,
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
});

async function getInstance(event: APIGatewayProxyEventV2) {
  const token = /^Bearer +(\S+)$/i.exec(event.headers.authorization ?? '')?.[1];
  if (!token) return answer(401, { error: 'Unauthorized' });
  const keyHash = createHash('sha256').update(token).digest('hex');
  const [{ Item: key }, { Item: instance }] = await Promise.all([
    floorDynamo().send(new GetCommand({ TableName: process.env.API_KEYS_TABLE, Key: { key_hash: keyHash }, ConsistentRead: true })),
    floorDynamo().send(
      new GetCommand({ TableName: process.env.INSTANCES_TABLE, Key: { instance_id: Number(event.pathParameters?.instance_id) } }),
    ),
  ]);
  if (!key?.is_active) return answer(401, { error: 'Unauthorized' });
  const accountId = key.account_id as string;
  const owned = instance && instance.account_id === accountId && instance.deleted_at === null ? instance : undefined;
  const live =
    owned !== undefined &&
    ['active', 'stopped'].includes(owned.status as string) &&
    owned.active_job_id === null &&
    typeof owned.upstream_id === 'number' &&
    process.env.UPSTREAM_BASE_URL !== undefined;

  const nowMs = Date.now();
  const [{ Item: account }, allowed] = await Promise.all([
    floorDynamo().send(new GetCommand({ TableName: process.env.ACCOUNTS_TABLE, Key: { account_id: accountId }, ConsistentRead: true })),
    floorDynamo()
      .send(
        new UpdateCommand({
          TableName: process.env.COUNTERS_TABLE,
          Key: { name: `rate#general#${accountId}` },
          UpdateExpression: 'SET #times = list_append(:entry, if_not_exists(#times, :empty)), #ttl = :ttl',
          ConditionExpression: `attribute_not_exists(#times) OR size(#times) < :limit OR #times[${GENERAL_LIMIT - 1}] < :cutoff`,
          ExpressionAttributeNames: { '#times': 'times', '#ttl': 'expires_at' },
          ExpressionAttributeValues: {
            ':entry': [nowMs * 1000 + randomInt(1000)],
            ':empty': [],
            ':limit': GENERAL_LIMIT,
            ':cutoff': (nowMs - WINDOW_MS + 1) * 1000,
            ':ttl': Math.ceil((nowMs + WINDOW_MS) / 1000) + 60,
          },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      )
      .then(
        () => true,
        (error: unknown) => {
          if (error instanceof ConditionalCheckFailedException) return false;
          throw error;
        },
      ),
    // One take from a request budget (its own item, so as not to collide with the service's): one conditional write.
    live
      ? floorDynamo().send(
          new UpdateCommand({
            TableName: process.env.COUNTERS_TABLE,
            Key: { name: 'bench#sdk-floor-budget' },
            UpdateExpression: 'SET tat = if_not_exists(tat, :now) + :interval',
            ConditionExpression: 'attribute_not_exists(tat) OR tat <= :latest',
            ExpressionAttributeValues: { ':now': nowMs, ':interval': 1, ':latest': nowMs + 1_000_000_000 },
          }),
        )
      : undefined,
  ]);
  if (!account?.confirmed || account.suspended) return answer(403, { error: 'Forbidden' });
  if (!allowed) return answer(429, { error: 'Rate limit exceeded' });
  if (!owned) return answer(404, { error: 'Instance not found' });

  // The live state and the sealed secrets together, as GetInstance reads them: the Encryption SDK's own packages
  // loaded on first use, a raw AES keyring on the local key file (a KMS keyring on AWS).
  const [liveStatus, secrets] = await Promise.all([
    live
      ? fetch(new URL(`/v2/droplets/${owned.upstream_id}`, process.env.UPSTREAM_BASE_URL), {
          headers: { authorization: `Bearer ${process.env.UPSTREAM_TOKEN}`, accept: 'application/json' },
          signal: AbortSignal.timeout(800),
        })
          .then((response) => response.json() as Promise<{ droplet?: { status?: string } }>)
          .then((server) => server.droplet?.status)
      : undefined,
    typeof owned.sealed_secrets === 'string' ? openSealed(owned.sealed_secrets) : null,
  ]);
  const { sealed_secrets: _sealed, ...shown } = owned;
  return answer(200, { ...shown, live_status: liveStatus, ...(secrets ? (JSON.parse(secrets) as object) : {}) });
}

async function openSealed(sealed: string): Promise<string> {
  const [{ buildDecrypt }, { CommitmentPolicy }, { RawAesKeyringNode, RawAesWrappingSuiteIdentifier }] = await Promise.all([
    import('@aws-crypto/decrypt-node'),
    import('@aws-crypto/material-management-node'),
    import('@aws-crypto/raw-aes-keyring-node'),
  ]);
  const keyring = new RawAesKeyringNode({
    keyNamespace: 'vps-provisioning-local',
    keyName: 'secrets',
    unencryptedMasterKey: new Uint8Array(readFileSync(process.env.SECRETS_KEY_FILE!)),
    wrappingSuite: RawAesWrappingSuiteIdentifier.AES256_GCM_IV12_TAG16_NO_PADDING,
  });
  const { decrypt } = buildDecrypt({ commitmentPolicy: CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT, maxEncryptedDataKeys: 1 });
  const { plaintext } = await decrypt(keyring, Buffer.from(sealed, 'base64'));
  return plaintext.toString('utf8');
}

export const handler = async (event?: APIGatewayProxyEventV2) => {
  if (event?.requestContext) return getInstance(event);
  await floorDynamo().send(new GetCommand({ TableName: process.env.ACCOUNTS_TABLE, Key: { account_id: 'floor' } }));
  return { statusCode: 200, body: 'ok' };
};
