import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { finishJob, insertJob, listAllRunningJobs } from '../../shared/store/jobs';
import { type Job } from '../../shared/model/job';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const job = (status: Job['status']): Job => ({
  job_id: randomUUID(),
  type: status === 'running' ? 'power_off' : 'reconcile',
  instance_id: 1,
  account_id: 'acct_running',
  status,
  started_at: new Date().toISOString(),
  finished_at: status === 'running' ? null : new Date().toISOString(),
  error: status === 'failed' ? 'The server no longer exists upstream' : null,
  failure: status === 'failed' ? { code: 'server_lost', message: 'The server no longer exists upstream' } : null,
});

/** Every job id the sparse running-jobs index holds, over all its shards. */
async function indexed(): Promise<string[]> {
  const ids: string[] = [];
  for (let shard = 0; shard < 8; shard++) {
    const { Items = [] } = await runtime.deps.dynamo.send(
      new QueryCommand({
        TableName: runtime.tableNames.jobs,
        IndexName: 'running_by_shard',
        KeyConditionExpression: 'running_shard = :shard',
        ExpressionAttributeValues: { ':shard': `running#${shard}` },
      }),
    );
    ids.push(...Items.map((item) => String(item.job_id)));
  }
  return ids;
}

describe('running jobs', () => {
  it('are listed from a sparse index that a job leaves when it ends, and that an ended job never enters', async () => {
    const running = job('running');
    const ending = job('running');
    const recordedEnded = job('failed');
    await Promise.all([insertJob(runtime.deps, running), insertJob(runtime.deps, ending), insertJob(runtime.deps, recordedEnded)]);

    await finishJob(runtime.deps, ending.job_id, { status: 'succeeded' }, new Date().toISOString());

    const listed = (await listAllRunningJobs(runtime.deps)).map((j) => j.job_id);
    const inIndex = await indexed();
    expect([listed.includes(running.job_id), listed.includes(ending.job_id), listed.includes(recordedEnded.job_id)]).toEqual([
      true,
      false,
      false,
    ]);
    expect([inIndex.includes(running.job_id), inIndex.includes(ending.job_id), inIndex.includes(recordedEnded.job_id)]).toEqual([
      true,
      false,
      false,
    ]);
  });
});
