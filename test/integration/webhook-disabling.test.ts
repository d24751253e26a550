import { startReceiver, eventually } from '../support/receiver';
import { useTestRuntime } from '../support/runtime';

// Shortened windows: an endpoint failing for 600 ms without a success is disabled (3 days in production).
const runtime = useTestRuntime({
  env: { WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_RETRY_MAX_DELAY_MS: '100', WEBHOOK_DISABLE_AFTER_MS: '600' },
});

describe('webhook disabling', () => {
  it('disables an endpoint that keeps failing, stops delivering to it, and publishes webhook.disabled', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const failing = await startReceiver();
    const watcher = await startReceiver();
    failing.answer = () => 503;
    const broken = (await runtime.call('POST', '/api/v1/webhooks', { apiKey, body: { url: failing.url, events: ['instance.created'] } }))
      .body;
    const watching = (await runtime.call('POST', '/api/v1/webhooks', { apiKey, body: { url: watcher.url, events: ['webhook.disabled'] } }))
      .body;
    watcher.secret = watching.secret;

    await runtime.call('POST', `/api/v1/webhooks/${broken.id}/test`, { apiKey });
    const notice = await eventually(() => watcher.received[0], 'the webhook.disabled event');
    const attemptsWhenDisabled = failing.received.length;
    await runtime.call('POST', `/api/v1/webhooks/${broken.id}/test`, { apiKey });
    await new Promise((resolve) => setTimeout(resolve, 500));

    expect(notice.verified).toBe(true);
    expect(notice.event).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'webhook.disabled',
      time: expect.any(String),
      account_id: accountId,
      instance_id: null,
      sequence: null,
      data: { webhook_id: broken.id, url: failing.url, reason: 'Every delivery failed for 3 days' },
    });
    expect(attemptsWhenDisabled).toBeGreaterThanOrEqual(2);
    expect(failing.received).toHaveLength(attemptsWhenDisabled);
    const listed = (await runtime.call('GET', '/api/v1/webhooks', { apiKey })).body;
    expect(listed.find((webhook: { id: string }) => webhook.id === broken.id)).toMatchObject({
      enabled: false,
      disabled_at: notice.event.time,
    });
    expect(listed.find((webhook: { id: string }) => webhook.id === watching.id)).toMatchObject({ enabled: true, disabled_at: null });
    expect(watcher.received).toHaveLength(1);
    await failing.close();
    await watcher.close();
  });
});
