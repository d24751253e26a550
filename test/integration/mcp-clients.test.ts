import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { repositoryRoot } from '../../infra/local/runtime';
import { freePort } from '../../infra/local/ports';
import { runNode } from '../support/child-process';

/**
 * Independent MCP clients against `npm start`'s service (started as `npm start -- --fast` starts it, its runtime file
 * in a directory of its own): the MCP Inspector's CLI mode, and the conformance suite's server scenarios that apply to
 * a server of tools only (the others call fixture tools, resources, prompts, completions or logging it does not have).
 */
const bin = (path: string) => resolve(repositoryRoot, 'node_modules', path);
const inspector = bin('@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const conformance = bin('@modelcontextprotocol/conformance/dist/index.js');

let service: ChildProcess;
let stdout = '';
let dir: string;
let runtime: { mcp_url: string; api_key: string };

/** Polls for the runtime file `npm start` writes once it is ready. */
async function readRuntimeFile(file: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as typeof runtime;
    } catch (error) {
      if (Date.now() > deadline || service.exitCode !== null) throw new Error(`the service did not start:\n${stdout}`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-clients-'));
  const port = await freePort();
  service = spawn(process.execPath, [bin('tsx/dist/cli.mjs'), 'infra/local/start.ts', '--fast', '--port', String(port)], {
    cwd: repositoryRoot,
    env: { ...process.env, VPS_RUNTIME_FILE: join(dir, 'runtime.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  service.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  service.stderr!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  runtime = await readRuntimeFile(join(dir, 'runtime.json'), 90_000);
}, 120_000);

afterAll(async () => {
  if (service.exitCode === null) {
    service.kill('SIGTERM');
    await once(service, 'exit');
  }
  rmSync(dir, { recursive: true, force: true });
});

/** The Inspector's CLI mode against the service, with the demo key: its JSON answer. */
async function inspect(...args: string[]) {
  const run = await runNode(
    [inspector, '--cli', runtime.mcp_url, '--transport', 'http', '--header', `Authorization: Bearer ${runtime.api_key}`, ...args],
    {
      env: { PATH: process.env.PATH ?? '', HOME: dir },
    },
  );
  return { code: run.code, answer: JSON.parse(run.stdout.slice(0, run.stdout.lastIndexOf('}') + 1) || 'null') as Record<string, any> };
}

describe('npm start', () => {
  it('prints the MCP URL beside the base URL', () => {
    expect(stdout).toMatch(/MCP URL +http:\/\/127\.0\.0\.1:\d+\/mcp /);
    expect(runtime.mcp_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  });
});

describe('the MCP Inspector (CLI mode)', () => {
  it('lists the twelve tools', { timeout: 60_000 }, async () => {
    const { code, answer } = await inspect('--method', 'tools/list');

    expect(code).toBe(0);
    expect(answer.tools).toHaveLength(12);
  });

  it('calls a tool and gets its structured answer, and an error with the API text', { timeout: 60_000 }, async () => {
    const flavors = await inspect('--method', 'tools/call', '--tool-name', 'list_flavors');
    const missing = await inspect('--method', 'tools/call', '--tool-name', 'get_instance', '--tool-arg', 'instance_id=999999');

    expect(flavors.answer.structuredContent.flavors.map((plan: { flavor: string }) => plan.flavor)).toContain('s-1vcpu-2gb');
    expect(missing.answer).toMatchObject({ isError: true, content: [{ type: 'text', text: '404 Instance not found' }] });
  });
});

describe('the MCP conformance suite', () => {
  let proxy: Server;
  let proxyUrl: string;

  // The suite sends no credentials: a loopback proxy adds the demo key to each of its requests.
  beforeAll(async () => {
    const target = new URL(runtime.mcp_url);
    proxy = createServer((incoming, outgoing) => {
      const forwarded = request(
        new URL(incoming.url ?? '/', target),
        { method: incoming.method, headers: { ...incoming.headers, authorization: `Bearer ${runtime.api_key}` } },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      forwarded.on('error', () => outgoing.destroy());
      incoming.pipe(forwarded);
    });
    proxy.listen(0, '127.0.0.1');
    await once(proxy, 'listening');
    const address = proxy.address();
    proxyUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/mcp`;
  });
  afterAll(() => new Promise((done) => proxy.close(done)));

  it.each([
    { scenario: 'server-initialize', checks: 1 },
    { scenario: 'ping', checks: 1 },
    { scenario: 'tools-list', checks: 1 },
    { scenario: 'dns-rebinding-protection', checks: 2 },
  ])('passes $scenario', { timeout: 60_000 }, async ({ scenario, checks }) => {
    const run = await runNode([conformance, 'server', '--url', proxyUrl, '--scenario', scenario], {
      env: { PATH: process.env.PATH ?? '', HOME: dir, NO_COLOR: '1' },
    });

    expect(run.stdout).toContain(`Passed: ${checks}/${checks}, 0 failed`);
  });
});
