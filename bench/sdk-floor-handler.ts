import { createHash, randomInt } from 'node:crypto';
import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * The floors for a function that talks to DynamoDB, written with the AWS SDK alone: no middy, no Powertools, no
 * zod, nothing of ours. Whatever a real function costs beyond them is ours.
 *
 * - Called without an API event (the cold-start floor): one GetItem.
 * - Called with GetInstance's event (the request floor): GetInstance's calls in GetInstance's order, as the
 *   benchmark records them (section 2): the key by its hash; then the account and the general rate window together;
 *   then the instance, with the key and the account read again; then, for a settled server, one take from an
 *   upstream request budget (a conditional write) and the upstream's live state of the server, as GetInstance
 *   reads it. It answers the stored record; it opens no sealed secret.
 */
const newClient = () =>
  DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: process.env.AWS_REGION,
      ...(process.env.DYNAMODB_ENDPOINT
        ? { endpoint: process.env.DYNAMODB_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
        : {}),
    }),
  );
// Made on the first request, as the benchmark's server sets the environment only once the local runtime is up.
const clients: { dynamo?: ReturnType<typeof newClient> } = {};
const dynamo = () => (clients.dynamo ??= newClient());

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
  const keyRead = () =>
    dynamo().send(new GetCommand({ TableName: process.env.API_KEYS_TABLE, Key: { key_hash: keyHash }, ConsistentRead: true }));
  const { Item: key } = await keyRead();
  if (!key?.is_active) return answer(401, { error: 'Unauthorized' });
  const accountId = key.account_id as string;
  const accountRead = () =>
    dynamo().send(new GetCommand({ TableName: process.env.ACCOUNTS_TABLE, Key: { account_id: accountId }, ConsistentRead: true }));

  const nowMs = Date.now();
  const [{ Item: account }, allowed] = await Promise.all([
    accountRead(),
    dynamo()
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
  ]);
  if (!account?.confirmed || account.suspended) return answer(403, { error: 'Forbidden' });
  if (!allowed) return answer(429, { error: 'Rate limit exceeded' });

  const [{ Item: instance }, again, accountAgain] = await Promise.all([
    dynamo().send(
      new GetCommand({ TableName: process.env.INSTANCES_TABLE, Key: { instance_id: Number(event.pathParameters?.instance_id) } }),
    ),
    keyRead(),
    accountRead(),
  ]);
  if (!again.Item?.is_active || !accountAgain.Item) return answer(401, { error: 'Unauthorized' });
  if (!instance || instance.account_id !== accountId || instance.deleted_at !== null) return answer(404, { error: 'Instance not found' });

  const settled = ['active', 'stopped'].includes(instance.status as string) && instance.active_job_id === null;
  if (settled && typeof instance.upstream_id === 'number' && process.env.UPSTREAM_BASE_URL) {
    // One take from a request budget (its own item, so as not to collide with the service's): one conditional write.
    await dynamo().send(
      new UpdateCommand({
        TableName: process.env.COUNTERS_TABLE,
        Key: { name: 'bench#sdk-floor-budget' },
        UpdateExpression: 'SET tokens = if_not_exists(tokens, :full) - :one, #at = :now',
        ConditionExpression: 'attribute_not_exists(tokens) OR tokens >= :one',
        ExpressionAttributeNames: { '#at': 'at' },
        ExpressionAttributeValues: { ':full': 1_000_000_000, ':one': 1, ':now': Date.now() },
      }),
    );
    const live = await fetch(new URL(`/v2/droplets/${instance.upstream_id}`, process.env.UPSTREAM_BASE_URL), {
      headers: { authorization: `Bearer ${process.env.UPSTREAM_TOKEN}`, accept: 'application/json' },
      signal: AbortSignal.timeout(800),
    }).then((response) => response.json() as Promise<{ droplet?: { status?: string } }>);
    instance.live_status = live.droplet?.status;
  }
  const { sealed_secrets: _sealed, ...shown } = instance;
  return answer(200, shown);
}

export const handler = async (event?: APIGatewayProxyEventV2) => {
  if (event?.requestContext) return getInstance(event);
  await dynamo().send(new GetCommand({ TableName: process.env.ACCOUNTS_TABLE, Key: { account_id: 'floor' } }));
  return { statusCode: 200, body: 'ok' };
};
