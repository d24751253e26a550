import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { floorDynamo } from './floor-dynamo';
import * as z from 'zod';

/**
 * The stack floor: the SDK floor's one GetItem (bench/sdk-floor-handler.ts) made through the libraries every
 * function of the service is built on, and nothing of ours: a middy handler, a Powertools logger and metrics, and
 * one zod schema that reads the item. What a function costs beyond it is its own code; what this costs beyond the
 * SDK floor is the price of those libraries at a cold start.
 */
// zod set up as the service sets it (shared/model/zod.ts), before the schema is made.
z.config({ jitless: true });
const logger = new Logger({ serviceName: 'stack-floor' });
const metrics = new Metrics({ namespace: 'StackFloor', serviceName: 'stack-floor' });
const itemSchema = z
  .object({ account_id: z.string(), email: z.string(), balance: z.number().int(), confirmed: z.boolean() })
  .partial()
  .optional();

export const handler = middy(async () => {
  const { Item } = await floorDynamo().send(new GetCommand({ TableName: process.env.ACCOUNTS_TABLE, Key: { account_id: 'floor' } }));
  const item = itemSchema.parse(Item);
  logger.info('served', { found: item !== undefined });
  metrics.addMetric('Served', MetricUnit.Count, 1);
  metrics.publishStoredMetrics();
  return { statusCode: 200, body: 'ok' };
});
