import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repositoryRoot } from '../../infra/local/runtime';
import { cliHome, vpsBin, type CliHome } from '../support/cli';
import { useTestRuntime, writeRuntimeFile } from '../support/runtime';
import { getAccount } from '../../shared/store/accounts';

// Servers take a couple of seconds to boot here, so that the spinner is on screen long enough to be seen.
const runtime = useTestRuntime({ bootMs: 2_000 });
/** A tmux server of this file's own (its own socket), so that no other tmux is touched. */
const socket = `vps-cli-test-${randomBytes(4).toString('hex')}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
let home: CliHome;

beforeAll(async () => {
  home = await cliHome();
  const { apiKey } = await runtime.newAccount();
  const env = {
    VPS_API_URL: runtime.baseUrl,
    VPS_API_KEY: apiKey,
    XDG_CONFIG_HOME: home.env.XDG_CONFIG_HOME!,
    VPS_RUNTIME_FILE: home.env.VPS_RUNTIME_FILE!,
  };
  tmux(
    'new-session',
    '-d',
    '-s',
    'cli',
    '-x',
    '200',
    '-y',
    '60',
    '-c',
    repositoryRoot,
    ...Object.entries(env).flatMap(([name, value]) => ['-e', `${name}=${value}`]),
    'bash --norc --noprofile',
  );
});
afterAll(async () => {
  tmux('kill-server');
  await home.remove();
});

/* eslint-disable no-control-regex -- terminal escapes start with ESC */
const ansi = /\x1b\[/;
const stripAnsi = (text: string) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
/* eslint-enable no-control-regex */

/**
 * Types a command line into the terminal and collects every screen seen until it has ended, with its exit code;
 * when a screen shows `prompt`, types `answer` and Enter (once).
 */
async function typeAndWatch(commandLine: string, reply?: { prompt: string; answer: string }): Promise<{ frames: string[]; code: number }> {
  // A marker of this run's own, so that the end of an earlier one is never taken for it.
  const marker = `ended-${randomBytes(4).toString('hex')}`;
  tmux('send-keys', '-t', 'cli', `clear; ${commandLine}; echo "${marker}=$?"`, 'Enter');
  const frames: string[] = [];
  let replied = false;
  for (;;) {
    const frame = tmux('capture-pane', '-p', '-e', '-t', 'cli');
    frames.push(frame);
    const ended = new RegExp(`^${marker}=(\\d+)$`, 'm').exec(stripAnsi(frame));
    if (ended) return { frames, code: Number(ended[1]) };
    if (reply && !replied && stripAnsi(frame).includes(reply.prompt)) {
      tmux('send-keys', '-t', 'cli', reply.answer, 'Enter');
      replied = true;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const vps = `${process.execPath} ${vpsBin}`;

describe('vps in a terminal', () => {
  it('shows a spinner with each status and the seconds passed, then a coloured table', async () => {
    const { frames, code } = await typeAndWatch(`${vps} instances create --name tty --flavor s-1vcpu-2gb --wait`);

    const screens = frames.map(stripAnsi);
    const last = screens.at(-1)!;
    expect(code).toBe(0);
    expect(screens.some((screen) => /^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] instance \d+: (pending|provisioning) \(\d+s\)$/m.test(screen))).toBe(true);
    expect(last).toMatch(/^✔ instance \d+: active \(\d+s\)$/m);
    expect(last).toMatch(/^│ Status +│ active +│$/m);
    expect(last).toMatch(/^│ IPv4 +│ \d+\.\d+\.\d+\.\d+ +│$/m);
    expect(frames.at(-1)).toMatch(ansi);
  });

  it('waits to the end on a terminal that reports no width, with plain lines', { timeout: 120_000 }, async () => {
    // `script` and some CI runners give a pseudo-terminal of 0 columns: a spinner measuring its lines by it stalled.
    const { frames, code } = await typeAndWatch(
      `stty cols 0; timeout 60 ${vps} instances create --name narrow --flavor s-1vcpu-2gb --wait; status=$?; stty cols 200; (exit $status)`,
    );

    const last = stripAnsi(frames.at(-1)!);
    expect(code).toBe(0);
    expect(last).toMatch(/^instance \d+: active \(\d+s\)$/m);
  });

  it.each([
    { answer: 'no', code: 2, status: 200 },
    { answer: 'yes', code: 0, status: 404 },
  ])('asks before a delete on a terminal, and deletes only on yes (answer $answer)', async ({ answer, code, status }) => {
    const { apiKey } = await runtime.newAccount();
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'asked', flavor: 's-1vcpu-2gb' } });
    const id = created.body.instance_id;

    const run = await typeAndWatch(`VPS_API_KEY=${apiKey} ${vps} instances delete ${id}`, { prompt: 'Type yes to go on:', answer });

    expect(stripAnsi(run.frames.join('\n'))).toContain(`Delete instance ${id}? The server and its disk are destroyed. Type yes to go on:`);
    expect(run.code).toBe(code);
    expect((await runtime.call('GET', `/api/v1/instances/${id}`, { apiKey })).status).toBe(status);
  });

  it('writes no ANSI codes when the output is piped, progress included', async () => {
    const file = join(home.dir, 'piped.txt');

    const { code } = await typeAndWatch(
      `${vps} instances create --name piped --flavor s-1vcpu-2gb --wait 2>&1 | cat > ${file}; test "\${PIPESTATUS[0]}" = 0`,
    );

    const output = await readFile(file, 'utf8');
    expect(code).toBe(0);
    expect(output).not.toMatch(ansi);
    expect(output).toMatch(/^instance \d+: active \(\d+s\)$/m);
    expect(output).toMatch(/^Status +active$/m);
    expect(output).not.toMatch(/[│┌┐└┘─]/);
  });
});

describe('ops in a terminal', () => {
  it('asks before a charge: another answer changes nothing (exit 1), yes charges', { timeout: 120_000 }, async () => {
    const { accountId } = await runtime.newAccount({ depositUsd: '50' });
    const file = join(home.dir, 'ops-runtime.json');
    await writeRuntimeFile(runtime, file);
    const ops = `OPS_RUNTIME_FILE=${file} ${process.execPath} node_modules/tsx/dist/cli.mjs infra/ops/cli.ts`;
    const question = { prompt: 'Type yes to go on:' };

    const refused = await typeAndWatch(`${ops} account charge ${accountId} 5`, { ...question, answer: 'no' });
    const afterNo = (await getAccount(runtime.deps, accountId))?.balance;
    const charged = await typeAndWatch(`${ops} account charge ${accountId} 5`, { ...question, answer: 'yes' });
    const afterYes = (await getAccount(runtime.deps, accountId))?.balance;

    const refusedScreen = stripAnsi(refused.frames.at(-1)!).replace(/\n/g, '');
    expect(refusedScreen).toContain(`Charge ${accountId} $5? At a balance of zero its running servers are powered off. Type yes to go on:`);
    expect(refusedScreen).toContain('error: not confirmed; nothing changed');
    expect([refused.code, afterNo]).toEqual([1, 50_000_000]);
    expect([charged.code, afterYes]).toEqual([0, 45_000_000]);
  });
});
