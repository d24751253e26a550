import { encode } from 'gpt-tokenizer';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { vpsBin } from '../support/cli';
import { getAccountApiKey, revokeApiKey } from '../../shared/store/api-keys';
import { mcpClient, type Era } from '../support/mcp';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

type Structured = Record<string, any>;
const structured = (result: { structuredContent?: unknown }) => result.structuredContent as Structured;
const text = (result: { content?: unknown }) => (result.content as { type: string; text: string }[])[0]!.text;

describe('MCP server', () => {
  describe('tools/list', () => {
    it.each<Era>(['legacy', 'modern'])('lists twelve tools in at most 3,000 tokens (o200k_base) to a %s client', async (era) => {
      const { apiKey } = await runtime.newAccount();
      const client = await mcpClient(runtime, apiKey, { era });

      const listed = await client.listTools();

      expect(listed.tools.map((tool) => tool.name).sort()).toEqual([
        'create_instance',
        'delete_instance',
        'get_balance',
        'get_instance',
        'list_flavors',
        'list_instances',
        'power_off',
        'power_on',
        'reboot',
        'resize_instance',
        'update_instance',
        'wait_for_instance',
      ]);
      expect(encode(JSON.stringify(listed)).length).toBeLessThanOrEqual(3_000);
      for (const tool of listed.tools) {
        expect(tool.outputSchema, tool.name).toMatchObject({ type: 'object' });
        expect(tool.description, tool.name).toBeTruthy();
      }
    });

    it('declares every hint of every tool, as this table says (a change is a change of contract)', async () => {
      const { apiKey } = await runtime.newAccount();
      const client = await mcpClient(runtime, apiKey);

      const { tools } = await client.listTools();

      const profile = (readOnly: boolean, destructive: boolean, idempotent: boolean, openWorld: boolean) => ({
        readOnlyHint: readOnly,
        destructiveHint: destructive,
        idempotentHint: idempotent,
        openWorldHint: openWorld,
      });
      expect(Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations]))).toEqual({
        list_flavors: profile(true, false, true, false),
        get_balance: profile(true, false, true, false),
        create_instance: profile(false, false, false, true),
        list_instances: profile(true, false, true, false),
        get_instance: profile(true, false, true, false),
        wait_for_instance: profile(true, false, true, false),
        power_on: profile(false, false, true, true),
        power_off: profile(false, true, true, true),
        reboot: profile(false, true, false, true),
        resize_instance: profile(false, true, true, true),
        delete_instance: profile(false, true, true, true),
        update_instance: profile(false, false, true, false),
      });
    });
  });

  describe('from nothing to an SSH-ready server', () => {
    it.each([
      { era: 'legacy' as const, inProcess: false },
      { era: 'modern' as const, inProcess: false },
      { era: 'legacy' as const, inProcess: true },
    ])('takes create, wait and get ($era client, in process: $inProcess)', async ({ era, inProcess }) => {
      const { apiKey } = await runtime.newAccount();
      const client = await mcpClient(runtime, apiKey, { era, inProcess });

      const created = await client.callTool({ name: 'create_instance', arguments: { project_name: 'agent', flavor: 's-1vcpu-2gb' } });
      const id = structured(created).instance_id;
      const waited = await client.callTool({ name: 'wait_for_instance', arguments: { instance_id: id, timeout_s: 20 } });
      const got = await client.callTool({ name: 'get_instance', arguments: { instance_id: id } });

      expect(structured(created)).toMatchObject({ status: 'pending', project_name: 'agent' });
      expect(structured(created).root_password).toMatch(/\S{16,}/);
      expect(structured(waited)).toMatchObject({ instance_id: id, status: 'active', reached: true });
      expect(structured(waited)).not.toHaveProperty('root_password');
      expect(structured(got)).toMatchObject({ instance_id: id, status: 'active', root_password: structured(created).root_password });
      expect(structured(got).ssh_key.private_key).toContain('BEGIN OPENSSH PRIVATE KEY');
      expect(JSON.parse(text(got))).toEqual(structured(got));
    });

    it('sends progress while it waits, when the client asks for it', async () => {
      const { apiKey } = await runtime.newAccount();
      await runtime.simulator.control.config({ ssh_delay_ms: 2_500 });
      const client = await mcpClient(runtime, apiKey);
      const created = await client.callTool({ name: 'create_instance', arguments: { project_name: 'slow', flavor: 's-1vcpu-2gb' } });
      const progress: { progress: number; total?: number; message?: string }[] = [];

      const waited = await client.callTool(
        { name: 'wait_for_instance', arguments: { instance_id: structured(created).instance_id, timeout_s: 20 } },
        { onprogress: (update) => progress.push(update) },
      );
      await runtime.simulator.control.config({ ssh_delay_ms: 0 });

      expect(structured(waited)).toMatchObject({ status: 'active', reached: true });
      expect(progress.length).toBeGreaterThan(0);
      expect(progress[0]).toMatchObject({ total: 20, message: expect.stringMatching(/is (pending|provisioning)$/) });
    });

    it('lists servers without their secrets', async () => {
      const { apiKey } = await runtime.newAccount();
      const client = await mcpClient(runtime, apiKey);
      await client.callTool({ name: 'create_instance', arguments: { project_name: 'a', flavor: 's-1vcpu-2gb', labels: { env: 'prod' } } });

      const listed = await client.callTool({ name: 'list_instances', arguments: { label_selector: 'env=prod' } });

      expect(structured(listed).instances).toHaveLength(1);
      expect(structured(listed).instances[0]).toMatchObject({ project_name: 'a', flavor: 's-1vcpu-2gb', labels: { env: 'prod' } });
      expect(JSON.stringify(listed)).not.toMatch(/root_password|private_key/);
      expect(structured(listed).next_page_token).toBeNull();
    });
  });

  describe("errors carry the API's status and text", () => {
    it.each([
      { why: 'no Authorization header', headers: {}, text: 'Missing or malformed Authorization header' },
      { why: 'a key of another prefix', headers: { authorization: 'Bearer sk_live_abc' }, text: 'Invalid API key prefix' },
      { why: 'an unknown key', headers: { authorization: 'Bearer svcmcp_short' }, text: 'Invalid or revoked API key' },
    ])('answers 401 with WWW-Authenticate naming the resource metadata for $why', async ({ headers, text: error }) => {
      const response = await fetch(`${runtime.baseUrl}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });

      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: string }).error).toBe(error);
      const challenge = response.headers.get('www-authenticate') ?? '';
      const metadataUrl = /^Bearer resource_metadata="([^"]+)"$/.exec(challenge)?.[1];
      expect(metadataUrl).toMatch(/\/\.well-known\/oauth-protected-resource\/mcp$/);
      const metadata = await fetch(`${runtime.baseUrl}${new URL(metadataUrl!).pathname}`);
      expect(metadata.status).toBe(200);
      expect(await metadata.json()).toMatchObject({ resource: expect.stringMatching(/\/mcp$/), bearer_methods_supported: ['header'] });
    });

    it('refuses a key revoked between two calls of one client', async () => {
      const { accountId, apiKey, keyId } = await runtime.newAccount();
      const client = await mcpClient(runtime, apiKey);
      await client.listTools();
      const key = await getAccountApiKey(runtime.deps, accountId, keyId);
      await revokeApiKey(runtime.deps, key!, new Date().toISOString());

      const refused = await client.callTool({ name: 'list_flavors', arguments: {} }).catch((error: unknown) => error);

      expect(String(refused)).toContain('Invalid or revoked API key');
    });

    it('answers 402 with the text when the balance is too low to deploy', async () => {
      const { apiKey } = await runtime.newAccount({ depositUsd: '1' });
      const client = await mcpClient(runtime, apiKey);

      const refused = await client.callTool({ name: 'create_instance', arguments: { project_name: 'poor', flavor: 's-1vcpu-2gb' } });

      expect(refused.isError).toBe(true);
      expect(text(refused)).toBe('402 Insufficient balance to deploy: the balance must be above $3.00');
      expect(structured(refused)).toMatchObject({
        http_status: 402,
        error: 'Insufficient balance to deploy: the balance must be above $3.00',
      });
    });

    it("answers 404 for another account's instance, as for a missing one", async () => {
      const owner = await runtime.newAccount();
      const other = await runtime.newAccount();
      const created = await runtime.call('POST', '/api/v1/instances', {
        apiKey: owner.apiKey,
        body: { project_name: 'mine', flavor: 's-1vcpu-2gb' },
      });
      const client = await mcpClient(runtime, other.apiKey);

      const refused = await client.callTool({ name: 'get_instance', arguments: { instance_id: created.body.instance_id } });
      const deleted = await client.callTool({
        name: 'delete_instance',
        arguments: { instance_id: created.body.instance_id, confirm: true },
      });

      expect(text(refused)).toBe('404 Instance not found');
      expect(text(deleted)).toBe('404 Instance not found');
      expect((await runtime.call('GET', `/api/v1/instances/${created.body.instance_id}`, { apiKey: owner.apiKey })).status).toBe(200);
    });

    it('answers 409 with the explanation when the action does not fit the state', async () => {
      const { apiKey } = await runtime.newAccount();
      const active = await runtime.activeInstance(apiKey);
      const client = await mcpClient(runtime, apiKey);

      const refused = await client.callTool({ name: 'power_on', arguments: { instance_id: active.instance_id } });

      expect(text(refused)).toBe('409 lifecycle conflict: Cannot power on while the instance is active');
      expect(structured(refused)).toMatchObject({ http_status: 409, error: 'lifecycle conflict', status: 'active' });
    });

    it('refuses delete_instance without confirm: true, deleting nothing', async () => {
      const { apiKey } = await runtime.newAccount();
      const active = await runtime.activeInstance(apiKey);
      const client = await mcpClient(runtime, apiKey);

      const refused = await client.callTool({ name: 'delete_instance', arguments: { instance_id: active.instance_id } });

      expect(refused.isError).toBe(true);
      expect(text(refused)).toMatch(/confirm/);
      expect((await runtime.call('GET', `/api/v1/instances/${active.instance_id}`, { apiKey })).body.status).toBe('active');
    });
  });

  describe('limits and idempotency', () => {
    it('counts each tool call against the same window as the REST routes, and answers 429 with the wait', async () => {
      const { apiKey } = await runtime.newAccount();
      const client = await mcpClient(runtime, apiKey);
      const generalRemaining = (answer: { headers: Headers }) =>
        Number(/"general";r=(\d+)/.exec(answer.headers.get('ratelimit') ?? '')?.[1]);
      const remaining = generalRemaining(await runtime.call('GET', '/api/v1/instances', { apiKey }));
      for (let call = 0; call < 5; call += 1) await client.callTool({ name: 'list_instances', arguments: {} });
      const after = await runtime.call('GET', '/api/v1/instances', { apiKey });
      for (let call = 0; call < remaining - 6; call += 1) await runtime.call('GET', '/api/v1/instances', { apiKey });

      const refused = await client.callTool({ name: 'get_balance', arguments: {} });

      expect(remaining).toBe(59);
      expect(generalRemaining(after)).toBe(remaining - 6);
      expect(refused.isError).toBe(true);
      expect(text(refused)).toMatch(/^429 Rate limit exceeded \(retry after \d+ s\)$/);
      expect(structured(refused)).toMatchObject({ http_status: 429, error: 'Rate limit exceeded', retry_after: expect.any(Number) });
    });

    it('creates once for two calls with one idempotency_key, answering the same instance', async () => {
      const { apiKey } = await runtime.newAccount();
      const client = await mcpClient(runtime, apiKey);
      const args = { project_name: 'once', flavor: 's-1vcpu-2gb', idempotency_key: 'agent-create-1' };

      const first = await client.callTool({ name: 'create_instance', arguments: args });
      const second = await client.callTool({ name: 'create_instance', arguments: args });

      expect(structured(second).instance_id).toBe(structured(first).instance_id);
      expect(structured(second).root_password).toBe(structured(first).root_password);
      expect((await runtime.call('GET', '/api/v1/instances', { apiKey })).body).toHaveLength(1);
    });
  });

  it('is served on stdin and stdout by `vps mcp`, with the CLI credentials, progress included', { timeout: 60_000 }, async () => {
    const { apiKey } = await runtime.newAccount();
    const client = new Client({ name: 'desktop', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [vpsBin, 'mcp'],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', VPS_API_URL: runtime.baseUrl, VPS_API_KEY: apiKey },
      stderr: 'pipe',
    });
    await client.connect(transport);
    onTestFinished(() => client.close());

    const { tools } = await client.listTools();
    const created = await client.callTool({ name: 'create_instance', arguments: { project_name: 'desk', flavor: 's-1vcpu-2gb' } });
    const instanceId = structured(created).instance_id;
    const waited = await client.callTool({ name: 'wait_for_instance', arguments: { instance_id: instanceId } });
    const refused = await client.callTool({ name: 'power_on', arguments: { instance_id: instanceId } });
    // A wait for a state that is not coming reports how far it is before it gives up, however fast or busy the machine
    // (its first read has seconds to spare before the first pause): the progress passes through the bridge (a wait for
    // the provision could find it done at its first read, and say nothing).
    const progress: unknown[] = [];
    const pending = await client.callTool(
      { name: 'wait_for_instance', arguments: { instance_id: instanceId, until: 'stopped', timeout_s: 6 } },
      { onprogress: (update) => progress.push(update) },
    );

    expect(tools).toHaveLength(12);
    expect(structured(waited)).toMatchObject({ status: 'active', reached: true });
    expect(text(refused)).toBe('409 lifecycle conflict: Cannot power on while the instance is active');
    expect(structured(pending)).toMatchObject({ status: 'active', reached: false });
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]).toMatchObject({ total: 6, message: `${instanceId} is active` });
  });

  it('answers GET and DELETE on /mcp with 405: no sessions are kept', async () => {
    const { apiKey } = await runtime.newAccount();

    const answers = await Promise.all(
      ['GET', 'DELETE'].map((method) => fetch(`${runtime.baseUrl}/mcp`, { method, headers: { authorization: `Bearer ${apiKey}` } })),
    );

    expect(answers.map((answer) => answer.status)).toEqual([405, 405]);
    expect(answers.map((answer) => answer.headers.get('allow'))).toEqual(['POST', 'POST']);
  });

  it('takes a body of 256 KiB and answers a larger one with 413 and the JSON-RPC error the document gives', async () => {
    const { apiKey } = await runtime.newAccount();
    const headers = { accept: 'application/json, text/event-stream' };
    // Whitespace after the message is valid JSON: the body is the size asked for.
    const bodyOf = (bytes: number) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }).padEnd(bytes, ' ');

    const atLimit = await fetch(`${runtime.baseUrl}/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: bodyOf(256 * 1024),
    });
    // Checked against the OpenAPI document, as every answer of runtime.call is.
    const overLimit = await runtime.call('POST', '/mcp', { apiKey, headers, rawBody: bodyOf(256 * 1024 + 1) });

    expect([atLimit.status, overLimit.status]).toEqual([200, 413]);
    expect(overLimit.body).toEqual({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Payload Too Large: Request body must not exceed 262144 bytes' },
      id: null,
    });
  });
});
