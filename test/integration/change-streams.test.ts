import { randomBytes } from 'node:crypto';
import { CreateTableCommand, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { _Record } from '@aws-sdk/client-dynamodb-streams';
import { inject } from 'vitest';
import { startStreamPoller, type StreamBatchFailure } from '../../infra/local/stream-poller';
import { LOCAL_CREDENTIALS } from '../../shared/aws';
import { charge } from '../../shared/domain/billing';
import type { ServiceEvent } from '../../shared/schemas/events';
import { getLogin } from '../../shared/store/logins';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

describe('startStreamPoller', () => {
  const dynamodb = new DynamoDBClient({ endpoint: inject('dynamodbEndpoint'), region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
  afterAll(() => dynamodb.destroy());

  it('gives a record that cannot be handled up to the on-failure destination after 10 retries, and hands on the records after it', async () => {
    const table = `t${randomBytes(5).toString('hex')}-changes`;
    await dynamodb.send(
      new CreateTableCommand({
        TableName: table,
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
        StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
      }),
    );
    const keyOf = (record: _Record) => record.dynamodb?.Keys?.pk?.S;
    const handled: (string | undefined)[] = [];
    const failures: StreamBatchFailure[] = [];
    let poisonAloneAttempts = 0;
    let poisonSequenceNumber: string | undefined;
    let lastHandled: () => void = () => undefined;
    const allHandled = new Promise<void>((resolve) => (lastHandled = resolve));
    const poller = await startStreamPoller({
      endpoint: inject('dynamodbEndpoint'),
      tables: [table],
      intervalMs: 5,
      retryBaseMs: 5,
      onRecords: async (_table, records) => {
        const batch = records as _Record[];
        const poison = batch.find((record) => keyOf(record) === 'poison');
        if (poison) {
          poisonSequenceNumber = poison.dynamodb?.SequenceNumber;
          if (batch.length === 1) poisonAloneAttempts++;
          throw new Error('this record cannot be handled');
        }
        handled.push(...batch.map(keyOf));
        if (handled.includes('after')) lastHandled();
      },
      onFailure: async (failure) => void failures.push(failure),
    });

    try {
      for (const pk of ['before', 'poison', 'after'])
        await dynamodb.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk } } }));
      await allHandled;
    } finally {
      await poller.stop();
    }

    expect(handled).toEqual(['before', 'after']);
    expect(poisonAloneAttempts).toBe(11);
    expect(failures).toEqual([
      {
        table,
        shardId: expect.any(String),
        startSequenceNumber: poisonSequenceNumber,
        endSequenceNumber: poisonSequenceNumber,
        batchSize: 1,
        attempts: 11,
        error: 'this record cannot be handled',
      },
    ]);
  });
});

describe('account events of the local runtime', () => {
  it('publishes the billing pause of an account opened by a sign-up, whose empty map DynamoDB Local streams without a type', async () => {
    const email = `${randomBytes(4).toString('hex')}@example.com`;
    const signUp = await runtime.call('POST', '/api/v1/auth/sign-up', { body: { email, password: 'correct horse battery' } });
    await runtime.mailSettled();
    const accountId = (await getLogin(runtime.deps, email))?.account_id;
    const paused = new Promise<ServiceEvent>((resolve) =>
      runtime.events.subscribe((event) => {
        if (event.account_id === accountId && event.type === 'account.billing_paused') resolve(event);
      }),
    );

    await charge(runtime.deps, accountId!, 1_000_000, 'A charge that takes the balance below zero');

    expect(signUp.status).toBe(202);
    expect(await paused).toMatchObject({ type: 'account.billing_paused', account_id: accountId, data: { balance_usd: '-1.00' } });
  });
});
