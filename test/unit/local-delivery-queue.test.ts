import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalDeliveryQueue } from '../../infra/local/delivery-queue';
import type { DeliveryMessage } from '../../shared/events/ports';

const message = (id: string): DeliveryMessage => ({
  webhook_id: 'wh_1',
  event: {
    id,
    type: 'webhook.test',
    time: '2026-01-01T00:00:00.000Z',
    account_id: 'acct_a',
    instance_id: null,
    sequence: null,
    data: { webhook_id: 'wh_1' },
  },
  attempt: 1,
  first_attempt_at: '2026-01-01T00:00:00.000Z',
  not_before: '2026-01-01T00:00:00.000Z',
});

async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vps-queue-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the local delivery queue on a directory', () => {
  it('keeps a message a closed queue still held, and a new queue on the directory delivers it once it is due', async () => {
    const delivered: string[] = [];
    const first = new LocalDeliveryQueue(async (m) => void delivered.push(m.event.id), dir);
    await first.resume();
    await first.send(message('evt_a'), 100);
    await first.close();
    expect(delivered).toEqual([]);
    expect(await readdir(dir)).toHaveLength(1);
    // A write that a stop cut short.
    await writeFile(join(dir, 'cut-short.json.tmp'), '{"mess');

    await new Promise((resolve) => setTimeout(resolve, 150));
    const second = new LocalDeliveryQueue(async (m) => void delivered.push(m.event.id), dir);
    await second.resume();
    await until(async () => delivered.length === 1 && (await readdir(dir)).length === 0);
    await second.close();
    expect(delivered).toEqual(['evt_a']);
  });

  it('keeps a message whose delivery failed with its receive count, for redelivery', async () => {
    const queue = new LocalDeliveryQueue(() => Promise.reject(new Error('DynamoDB unavailable')), dir);
    await queue.resume();
    await queue.send(message('evt_b'), 0);
    const kept = async () => {
      const [name] = (await readdir(dir)).filter((file) => file.endsWith('.json'));
      return name ? JSON.parse(await readFile(join(dir, name), 'utf8')) : undefined;
    };
    await until(async () => (await kept())?.receives === 1);
    await queue.close();
    expect(await kept()).toMatchObject({ message: message('evt_b'), receives: 1, due: expect.any(Number) });
  });
});
