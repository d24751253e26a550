import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const create = (apiKey: string, key: string, body: unknown = { project_name: 'idem', flavor: 's-1vcpu-2gb' }) =>
  runtime.call('POST', '/api/v1/instances', { apiKey, body, headers: { 'idempotency-key': key } });

/** What a request that dies between its commit and settling its key leaves: its claim in progress, once lapsed. */
const dieHoldingClaim = (accountId: string, key: string) =>
  runtime.deps.dynamo.send(
    new UpdateCommand({
      TableName: runtime.tableNames.idempotency,
      Key: { idempotency_key: `${accountId}#${key}` },
      UpdateExpression: 'SET #status = :inProgress, #response = :none, locked_until = :lapsed',
      ExpressionAttributeNames: { '#status': 'status', '#response': 'response' },
      ExpressionAttributeValues: { ':inProgress': 'in_progress', ':none': null, ':lapsed': Math.floor(Date.now() / 1000) - 1 },
    }),
  );

const serversOf = (instanceId: number) =>
  runtime.simulator.state().droplets.filter((droplet) => droplet.tags.some((tag) => tag.endsWith(`-instance-${instanceId}`)));

describe('Idempotency-Key', () => {
  it('replays the first create response and creates nothing more, without using deploy quota', async () => {
    const { apiKey } = await runtime.newAccount();

    const first = await create(apiKey, 'create-1');
    const replays = [];
    for (let i = 0; i < 6; i++) replays.push(await create(apiKey, 'create-1'));
    const list = await runtime.call('GET', '/api/v1/instances', { apiKey });
    const others = [];
    for (let i = 0; i < 4; i++) others.push(await create(apiKey, `other-${i}`));
    const overQuota = await create(apiKey, 'other-5');

    expect(first.status).toBe(202);
    for (const replay of replays) {
      expect(replay.status).toBe(202);
      expect(replay.body).toEqual(first.body);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
    }
    expect(list.body).toHaveLength(1);
    expect(others.map((r) => r.status)).toEqual([202, 202, 202, 202]);
    expect([overQuota.status, overQuota.body.error]).toEqual([429, 'Rate limit exceeded']);
  });

  it('replays a create without its credentials once the instance is deleted, and keeps none of them for replays', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const first = await create(apiKey, 'gone');
    const whileLive = await create(apiKey, 'gone');
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${first.body.instance_id}`, { apiKey });

    const afterDelete = await create(apiKey, 'gone');

    expect(first.body.root_password).toEqual(expect.any(String));
    expect(first.body.ssh_key.private_key).toEqual(expect.any(String));
    expect(whileLive.body).toEqual(first.body);
    expect(deleted.status).toBe(200);
    expect(afterDelete.status).toBe(202);
    expect(afterDelete.headers.get('idempotent-replayed')).toBe('true');
    expect(afterDelete.body).toEqual({ ...first.body, root_password: null, ssh_key: { ...first.body.ssh_key, private_key: null } });
    const { Item } = await runtime.deps.dynamo.send(
      new GetCommand({ TableName: runtime.tableNames.idempotency, Key: { idempotency_key: `${accountId}#gone` }, ConsistentRead: true }),
    );
    expect(JSON.parse(Item?.response.body)).toMatchObject({ root_password: null, ssh_key: { private_key: null } });
  });

  it('answers 422 when the key comes back with a different body', async () => {
    const { apiKey } = await runtime.newAccount();
    await create(apiKey, 'k');

    const response = await create(apiKey, 'k', { project_name: 'other', flavor: 's-1vcpu-2gb' });

    expect(response.status).toBe(422);
    expect(response.body.error).toBe('Idempotency-Key was already used with a different request');
  });

  it('answers 409 while the first request with the key is still in flight', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.simulator.control.faults({ latency_ms: 1_500 });
    const instance = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'slow', flavor: 's-1vcpu-2gb' } });
    await runtime.simulator.control.faults({ latency_ms: 0 });
    await runtime.waitForStatus(apiKey, instance.body.instance_id, ['active']);
    await runtime.simulator.control.faults({ latency_ms: 1_000 });

    const path = `/api/v1/instances/${instance.body.instance_id}/actions`;
    const headers = { 'idempotency-key': 'reboot-1' };
    const [first, second] = await Promise.all([
      runtime.call('POST', path, { apiKey, body: { type: 'reboot' }, headers }),
      new Promise((resolve) => setTimeout(resolve, 300)).then(() =>
        runtime.call('POST', path, { apiKey, body: { type: 'reboot' }, headers }),
      ),
    ]);
    await runtime.simulator.control.faults({ latency_ms: 0 });

    expect(first.status).toBe(200);
    expect(second.status).toBe(409);
    expect(second.body).toEqual({
      error: 'lifecycle conflict',
      message: 'A request with this Idempotency-Key is still in progress',
      request_id: expect.any(String),
    });
    const replay = await runtime.call('POST', path, { apiKey, body: { type: 'reboot' }, headers });
    expect(replay.body).toEqual(first.body);
    await runtime.waitForJob(apiKey, first.body.job_id);
  });

  it('scopes keys to the account', async () => {
    const a = await runtime.newAccount();
    const b = await runtime.newAccount();

    const first = await create(a.apiKey, 'shared-key');
    const second = await create(b.apiKey, 'shared-key');

    expect(second.status).toBe(202);
    expect(second.body.instance_id).not.toBe(first.body.instance_id);
  });

  it('lets a request that failed on the server be retried under the same key', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);
    const path = `/api/v1/instances/${instance.instance_id}/actions`;
    const headers = { 'idempotency-key': 'retry-me' };
    await runtime.simulator.control.faults({ fail_next: 1, status: 422, match: 'POST /v2/droplets/' });

    const refused = await runtime.call('POST', path, { apiKey, body: { type: 'reboot' }, headers });
    const retried = await runtime.call('POST', path, { apiKey, body: { type: 'reboot' }, headers });

    expect(refused.status).toBe(502);
    expect(retried.status).toBe(200);
    await runtime.waitForJob(apiKey, retried.body.job_id);
  });

  it('resumes a lapsed claim whose create committed: answers that instance and creates no other', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const first = await create(apiKey, 'died');
    await dieHoldingClaim(accountId, 'died');

    const resumed = await create(apiKey, 'died');
    const again = await create(apiKey, 'died');
    const list = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(first.status).toBe(202);
    expect(resumed.status).toBe(202);
    expect(resumed.headers.get('idempotent-replayed')).toBe('true');
    const { instance_id, root_password, ssh_key, project_name, plan } = first.body;
    expect(resumed.body).toMatchObject({ instance_id, root_password, ssh_key, project_name, plan });
    expect(again.body).toEqual(resumed.body);
    expect(list.body.map((instance: { instance_id: number }) => instance.instance_id)).toEqual([instance_id]);
    await runtime.waitForStatus(apiKey, instance_id, ['active']);
    expect(serversOf(instance_id)).toHaveLength(1);
  });

  it('answers 422 to a different request taking over a lapsed claim whose create committed, and keeps the key its own', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const first = await create(apiKey, 'died-2');
    await dieHoldingClaim(accountId, 'died-2');

    const other = await create(apiKey, 'died-2', { project_name: 'other', flavor: 's-1vcpu-2gb' });
    const same = await create(apiKey, 'died-2');
    const list = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(other.status).toBe(422);
    expect(other.body.error).toBe('Idempotency-Key was already used with a different request');
    expect([same.status, same.body.instance_id]).toEqual([202, first.body.instance_id]);
    expect(list.body).toHaveLength(1);
  });

  it('processes a request taking over a lapsed claim that committed nothing afresh', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'idem', flavor: 's-1vcpu-1gb' },
      headers: { 'idempotency-key': 'refused' },
    });
    await dieHoldingClaim(accountId, 'refused');

    const created = await create(apiKey, 'refused');

    expect(created.status).toBe(202);
    expect(created.headers.get('idempotent-replayed')).toBeNull();
  });

  it('refuses a malformed key with 400', async () => {
    const { apiKey } = await runtime.newAccount();

    const response = await create(apiKey, 'x'.repeat(256));

    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(/^Idempotency-Key must be/);
  });
});
