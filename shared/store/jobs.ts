import { tableName, type Platform } from '../platform';
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from '../model/zod';
import { jobSchema, type Job, type JobFinish, type JobOutcome } from '../model/job';
import { batchGetAll, readAll, whenConditionHolds } from './dynamo-helpers';

/** The running-jobs index is spread over this many shards. */
const RUNNING_SHARDS = 8;
const runningShards = Array.from({ length: RUNNING_SHARDS }, (_, n) => `running#${n}`);
const runningShardOf = (jobId: string) => runningShards[parseInt(jobId.slice(0, 2), 16) % RUNNING_SHARDS] ?? runningShards[0]!;

/** A Put for a new job, to be written in the same transaction as the state change that starts it. */
export function newJobPut(deps: Platform, job: Job) {
  const item = jobSchema.parse(job);
  return {
    Put: {
      TableName: tableName(deps, 'jobs'),
      // A running job is in the running-jobs index until it ends.
      Item: item.status === 'running' ? { ...item, running_shard: runningShardOf(item.job_id) } : item,
      ConditionExpression: 'attribute_not_exists(job_id)',
    },
  };
}

export async function getJob(deps: Platform, jobId: string): Promise<Job | undefined> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'jobs'), Key: { job_id: jobId }, ConsistentRead: true }),
  );
  return Item ? jobSchema.parse(Item) : undefined;
}

/** An Update that ends a running job, to be written in the same transaction as the state change that ends it. */
export function finishJobUpdate(deps: Platform, { job_id, outcome, at }: JobFinish) {
  return {
    Update: {
      TableName: tableName(deps, 'jobs'),
      Key: { job_id },
      UpdateExpression: 'SET #status = :status, finished_at = :at, #error = :error, failure = :failure REMOVE running_shard',
      ConditionExpression: '#status = :running',
      ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
      ExpressionAttributeValues: {
        ':status': outcome.status,
        ':at': at,
        ':error': outcome.status === 'failed' ? outcome.failure.message : null,
        ':failure': outcome.status === 'failed' ? outcome.failure : null,
        ':running': 'running',
      },
    },
  };
}

/** Ends a running job once; a retried step that finds it already ended changes nothing. */
export async function finishJob(deps: Platform, jobId: string, outcome: JobOutcome, at: string): Promise<void> {
  await whenConditionHolds(deps.dynamo.send(new UpdateCommand(finishJobUpdate(deps, { job_id: jobId, outcome, at }).Update)));
}

/** Every running job of every instance (the reconciler makes sure each has a live execution), from the sparse index. */
export async function listAllRunningJobs(deps: Platform): Promise<Job[]> {
  const keys = (
    await Promise.all(
      runningShards.map((shard) =>
        readAll(
          deps,
          {
            kind: 'query',
            TableName: tableName(deps, 'jobs'),
            IndexName: 'running_by_shard',
            KeyConditionExpression: 'running_shard = :shard',
            ExpressionAttributeValues: { ':shard': shard },
          },
          z.object({ job_id: z.string() }),
        ),
      ),
    )
  ).flat();
  // Read by key, consistently: a job that has just ended is seen as ended.
  const jobs = await batchGetAll(deps, tableName(deps, 'jobs'), keys, jobSchema);
  return jobs.filter((job) => job.status === 'running');
}

/** The instance's jobs that are still running, oldest first. */
export async function listRunningJobs(deps: Platform, instanceId: number): Promise<Job[]> {
  return readAll(
    deps,
    {
      kind: 'query',
      TableName: tableName(deps, 'jobs'),
      IndexName: 'by_instance',
      KeyConditionExpression: 'instance_id = :instance',
      FilterExpression: '#status = :running',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':instance': instanceId, ':running': 'running' },
    },
    jobSchema,
  );
}

/** The instance's latest jobs, newest first (at most `limit`): keys from the index, the jobs read by key, consistently. */
export async function listInstanceJobs(deps: Platform, instanceId: number, limit: number): Promise<Job[]> {
  const { Items = [] } = await deps.dynamo.send(
    new QueryCommand({
      TableName: tableName(deps, 'jobs'),
      IndexName: 'by_instance',
      KeyConditionExpression: 'instance_id = :instance',
      ExpressionAttributeValues: { ':instance': instanceId },
      ProjectionExpression: 'job_id',
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  const keys = Items.map((item) => z.object({ job_id: z.string() }).parse(item));
  const jobs = await batchGetAll(deps, tableName(deps, 'jobs'), keys, jobSchema);
  return jobs.sort((a, b) => b.started_at.localeCompare(a.started_at) || b.job_id.localeCompare(a.job_id));
}

export async function insertJob(deps: Platform, job: Job): Promise<void> {
  await deps.dynamo.send(new PutCommand(newJobPut(deps, job).Put));
}
