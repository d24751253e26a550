import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { QueryCommand, ScanCommand, type QueryCommandInput, type ScanCommandInput } from '@aws-sdk/lib-dynamodb';
import type * as z from 'zod';
import { dynamo } from '../aws';

/** Runs a conditional write; false when its condition did not hold (someone else got there first). */
export async function whenConditionHolds(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/** Every item of a query or scan, all pages, each parsed with the entity's schema. */
export async function readAll<T extends z.ZodType>(
  input: ({ kind: 'query' } & QueryCommandInput) | ({ kind: 'scan' } & ScanCommandInput),
  schema: T,
): Promise<z.output<T>[]> {
  const { kind, ...params } = input;
  const items: z.output<T>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const command = kind === 'query' ? new QueryCommand({ ...params, ExclusiveStartKey: startKey }) : new ScanCommand({ ...params, ExclusiveStartKey: startKey });
    const page = await dynamo().send(command);
    items.push(...(page.Items ?? []).map((item) => schema.parse(item)));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}
