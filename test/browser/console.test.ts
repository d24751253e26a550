import { existsSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { repositoryRoot } from '../../infra/local/runtime';
import { latestLink } from '../support/mailbox';
import { issueApiKey } from '../../shared/domain/accounts';
import { getLogin } from '../../shared/store/logins';
import { useTestRuntime } from '../support/runtime';

/**
 * The console in a real browser (Debian's Chromium driven by playwright-core) against the local runtime: a person's
 * whole way from sign-up to a working, then revoked, API key, with an accessibility check and screenshots of
 * every page at desktop and phone widths (under test/artifacts/).
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = resolve(repositoryRoot, 'test/artifacts');
const EMAIL = `browser.${Date.now()}@example.com`;
const PASSWORD = 'a long enough password';

let workDir: string;
let context: BrowserContext;
let page: Page;
let forgerServer: Server;
let forgerPort: number;
const runtime = useTestRuntime({ mailDir: resolve(tmpdir(), `console-browser-mail-${process.pid}`) });

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  workDir = await mkdtemp(join(tmpdir(), 'console-browser-'));
  context = await chromium.launchPersistentContext(join(workDir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  page = context.pages()[0] ?? (await context.newPage());
  // Another site on this machine, whose page tries to create a key with the visitor's session.
  forgerServer = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(
      `<!doctype html><html lang="en"><title>forger</title><form method="post" action="${runtime.baseUrl}/api/v1/keys" enctype="text/plain"><input name='{"name":"forged","x":"' value='"}'></form><script>document.forms[0].submit()</script></html>`,
    );
  });
  await new Promise<void>((ready) => forgerServer.listen(0, '127.0.0.1', ready));
  const address = forgerServer.address();
  forgerPort = typeof address === 'object' && address ? address.port : 0;
}, 120_000);

afterAll(async () => {
  await context?.close();
  // Nothing to close when the set-up stopped before the server was made.
  await new Promise<void>((done) => (forgerServer ? forgerServer.close(() => done()) : done()));
  if (workDir) await rm(workDir, { recursive: true, force: true });
  await rm(runtime.mailDir, { recursive: true, force: true });
});

/** Polls until the page settles: the browser and the service share two busy cores. */
const eventually = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 30_000, interval: 100 });

/**
 * No serious or critical accessibility violation, readable at 320 px wide (nothing wider than the screen but the
 * tables, which scroll in their own regions), and screenshots at 1280 and 375 px wide.
 */
async function checkPage(name: string) {
  const { violations } = await new AxeBuilder({ page }).analyze();
  const severe = violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
  expect(
    severe.map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.map((node) => node.target.join(' ')).join(', ')})`),
  ).toEqual([]);
  await page.setViewportSize({ width: 320, height: 900 });
  await eventually(() => page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(320);
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, `console-${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/**
 * The page at 375 px: the controls and cells that reach past the screen's edge (none may), how many cells of the
 * region carry their column's heading for the card layout, and every accessibility violation axe finds.
 */
async function atPhoneWidth(name: string, region: string) {
  await page.setViewportSize({ width: 375, height: 900 });
  const offScreen = await page.evaluate<string[]>(`[...document.querySelectorAll('main button, main a, main input, main td, main th')]
    .filter((element) => element.getBoundingClientRect().width > 0 && element.getBoundingClientRect().right > window.innerWidth + 0.5)
    .map((element) => element.outerHTML.slice(0, 80))`);
  const labelled = await page.getByRole('region', { name: region }).locator('td[data-label]').count();
  const { violations } = await new AxeBuilder({ page }).analyze();
  await page.screenshot({ path: join(ARTIFACTS, `console-${name}-cards-375.png`), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
  return { offScreen, labelled, violations: violations.map((violation) => violation.id) };
}

async function bearer(path: string, key: string) {
  const response = await fetch(`${runtime.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('the account console', () => {
  let fullKey: string;

  it('serves its page with the security headers', async () => {
    const response = await page.goto(runtime.consoleUrl);

    const headers = response?.headers() ?? {};
    expect(response?.status()).toBe(200);
    expect(headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['x-content-type-options']).toBe('nosniff');
    await eventually(() => page.locator('h1').textContent()).toBe('Sign in');
    await checkPage('sign-in');
  });

  it('asks for no /favicon.ico, its icon being inline', async () => {
    const asked: string[] = [];
    const listener = (request: { url(): string }) => void asked.push(new URL(request.url()).pathname);
    page.on('request', listener);

    await page.goto(runtime.consoleUrl);
    await eventually(() => page.locator('h1').textContent()).toBe('Sign in');
    page.off('request', listener);

    expect(asked).not.toContain('/favicon.ico');
    expect(await page.locator('link[rel="icon"]').getAttribute('href')).toMatch(/^data:image\/svg\+xml,/);
  });

  it('signs a person up and confirms the address through the mailed link and the password chosen at sign-up', async () => {
    await page.getByRole('link', { name: 'Create an account' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('Create an account');
    // The navigation marks the page shown as the current one.
    await eventually(() => page.locator('nav a[aria-current="page"]').textContent()).toBe('Sign up');
    await checkPage('sign-up');

    await page.getByLabel('E-mail address').fill(EMAIL);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Password').press('Enter');

    await eventually(() => page.locator('h1').textContent()).toBe('Check your mailbox');
    await checkPage('check-mailbox');
    const link = await latestLink(runtime.mailDir, EMAIL, 'Confirm your e-mail address');
    await page.goto(link.href);
    await eventually(() => page.locator('h1').textContent()).toBe('Confirm your address');
    expect(page.url()).toBe(`${runtime.consoleUrl}#/confirm`);
    await checkPage('confirm');

    await page.getByLabel('Password chosen at sign-up').fill('not the password chosen');
    await page.getByLabel('Password chosen at sign-up').press('Enter');
    await eventually(() => page.getByRole('alert').textContent()).toBe('This link belongs to a sign-up with a different password');
    await page.getByLabel('Password chosen at sign-up').fill(PASSWORD);
    await page.getByLabel('Password chosen at sign-up').press('Enter');

    await eventually(() => page.locator('h1').textContent()).toBe('Address confirmed');
    await checkPage('confirmed');
  });

  it('signs in with the keyboard and explains that a deposit is required', async () => {
    await page.getByRole('link', { name: 'Sign in' }).first().click();
    await page.getByLabel('E-mail address').fill(EMAIL);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');

    await eventually(() => page.locator('h1').textContent()).toBe('API keys');
    const explanation = page.getByRole('region', { name: 'Deposit required' });
    await eventually(() => explanation.textContent()).toContain('So far this account has deposited $0.00');
    expect(await explanation.getByRole('link', { name: 'Add funds' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Create key' }).click();
    await eventually(() => page.locator('.form-status').textContent()).toContain('Deposit required');
    await checkPage('keys-deposit-required');
  });

  it("adds funds by card: pays on the provider's page and sees the balance rise once the payment is confirmed", async () => {
    await page.getByRole('region', { name: 'Deposit required' }).getByRole('link', { name: 'Add funds' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('Billing');
    expect(await page.locator('#balance').textContent()).toBe('$0.00');
    await checkPage('billing');

    await page.getByRole('button', { name: '$10', exact: true }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('Pay $10.00');
    expect(page.url()).toContain(`${runtime.payments.url}/pay/cs_test_`);
    await page.getByRole('button', { name: 'Pay $10.00' }).click();

    await eventually(() => page.locator('h1').textContent()).toBe('Billing');
    await eventually(() => page.getByRole('status').filter({ hasText: 'Payment confirmed' }).count()).toBe(1);
    expect(await page.locator('#balance').textContent()).toBe('$10.00');
    expect(await page.getByRole('region', { name: 'Top-ups', exact: true }).textContent()).toContain('Paid');
    await checkPage('billing-paid');
  });

  it('creates a key once funded, shows it once, and the key answers 200 on a Bearer request', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('API keys');
    expect(await page.getByRole('region', { name: 'Deposit required' }).count()).toBe(0);

    await page.getByLabel('Key name').fill('laptop');
    await page.getByRole('button', { name: 'Create key' }).click();
    await eventually(() => page.locator('#full-key').count()).toBe(1);
    fullKey = (await page.locator('#full-key').textContent()) ?? '';
    await page.getByRole('button', { name: 'Copy key' }).click();
    await eventually(() => page.getByRole('status').filter({ hasText: 'Copied.' }).count()).toBe(1);
    const copied = await page.evaluate('navigator.clipboard.readText()');

    expect(fullKey).toMatch(/^svcmcp_[0-9A-Za-z]+$/);
    expect(copied).toBe(fullKey);
    expect(await page.getByText('Copy it now: it will not be shown again.').count()).toBe(1);
    await checkPage('key-created');
    expect((await bearer('/api/v1/instances', fullKey)).status).toBe(200);
  });

  it('forgets the full key once dismissed: not in the page, not in storage', async () => {
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await eventually(() => page.locator('#full-key').count()).toBe(0);

    const html = await page.content();
    const storage = await page.evaluate('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })');
    expect(html).not.toContain(fullKey);
    expect(html).toContain(fullKey.slice(0, 12));
    expect(storage).toBe('{}{}');
  });

  it('revokes the key after a confirmation, and the next request with it is 401', async () => {
    await page.getByRole('button', { name: 'Revoke key laptop' }).click();
    await page.getByRole('button', { name: 'Yes, revoke' }).click();

    await eventually(() => page.getByRole('row', { name: /laptop/ }).textContent()).toContain('Revoked');
    await eventually(() => page.getByRole('status').filter({ hasText: 'Key “laptop” revoked' }).textContent()).toBe(
      'Key “laptop” revoked: requests with it are refused from now on.',
    );
    const after = await bearer('/api/v1/instances', fullKey);
    expect(after.status).toBe(401);
    expect(after.body.error).toBe('Invalid or revoked API key');
  });

  it('shows the account: confirmation, balance, deposits, spending chart and ledger', async () => {
    await page.getByRole('link', { name: 'Account' }).click();

    await eventually(() => page.locator('h1').textContent()).toBe('Account');
    const facts = (await page.locator('dl.facts').textContent()) ?? '';
    expect(facts).toContain(EMAIL);
    expect(facts).toContain('Confirmed');
    expect(facts).toContain('Balance$10.00');
    expect(facts).toContain('Deposited in total$10.00');
    expect(await page.locator('.chart canvas').count()).toBe(1);
    expect(await page.getByRole('region', { name: 'Ledger entries' }).textContent()).toContain('Card top-up$10.00');
    await checkPage('account');
  });

  it.each([
    ['keys', 'API keys', 'Keys table'],
    ['account', 'Account', 'Ledger entries'],
  ])('shows the %s page at 375 px as cards, every control on the screen, with no accessibility violation', async (hash, title, region) => {
    await page.goto(`${runtime.consoleUrl}#/${hash}`);
    await eventually(() => page.locator('h1').textContent()).toBe(title);
    const { offScreen, labelled, violations } = await atPhoneWidth(hash, region);

    expect(offScreen).toEqual([]);
    expect(labelled).toBeGreaterThan(0);
    expect(violations).toEqual([]);
  });

  it.each([
    // Another site: the browser withholds the SameSite=Lax cookie from its POST.
    ['another site', 'localhost', 401, 'Missing session cookie'],
    // The same site on another port: the cookie goes along, and the Origin check refuses the request.
    ['another origin of the same site', '127.0.0.1', 403, 'CSRF validation failed'],
  ])('refuses a forged POST to /api/v1/keys from %s', async (_what, host, status, error) => {
    const forged = page.waitForResponse(
      (response) => response.url() === `${runtime.baseUrl}/api/v1/keys` && response.request().method() === 'POST',
    );

    await page.goto(`http://${host}:${forgerPort}/`);
    const response = await forged;

    expect(response.status()).toBe(status);
    expect(((await response.json()) as { error: string }).error).toBe(error);
    await page.goto(`${runtime.consoleUrl}#/keys`);
    await eventually(() => page.locator('h1').textContent()).toBe('API keys');
    expect(await page.getByRole('row', { name: /forged/ }).count()).toBe(0);
  });

  it('lists instances, powers one off, and deletes it after a confirmation, the status following live', { timeout: 180_000 }, async () => {
    const { fullKey: key } = await issueApiKey(runtime.deps, (await getLogin(runtime.deps, EMAIL))!.account_id, 'instances page');
    const created = await fetch(`${runtime.baseUrl}/api/v1/instances`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ project_name: 'web', flavor: 's-1vcpu-2gb', labels: { env: 'prod' } }),
    });
    const { instance_id: id } = (await created.json()) as { instance_id: number };

    await page.getByRole('link', { name: 'Instances' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('Instances');
    // The list follows the create to active by itself.
    await eventually(() => page.getByRole('row', { name: /web/ }).textContent()).toContain('active');
    expect(await page.getByRole('row', { name: /web/ }).textContent()).toContain('env=prod');
    await checkPage('instances');
    expect(await atPhoneWidth('instances', 'Instances table')).toEqual({ offScreen: [], labelled: 4, violations: [] });

    await page.getByRole('link', { name: 'web' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('web');
    expect(await page.locator('dl.facts').textContent()).toMatch(/ssh -p \d+ root@\d+\.\d+\.\d+\.\d+/);
    await checkPage('instance');
    await page.getByRole('button', { name: 'Power off' }).click();
    await eventually(() => page.locator('dl.facts').textContent()).toContain('stopped');
    await eventually(() => page.getByRole('button', { name: 'Power on' }).count()).toBe(1);

    await page.getByRole('button', { name: 'Delete web' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('Instances');
    await eventually(() => page.getByRole('region', { name: 'Instances table' }).textContent()).toContain('No instances yet.');
    expect((await bearer(`/api/v1/instances/${id}`, key)).status).toBe(404);
  });

  it('signs out on the server; the keys page then sends the person to sign in', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('Sign in');
    await eventually(() => page.getByRole('status').first().textContent()).toBe('You are signed out.');

    await page.goto(`${runtime.consoleUrl}#/keys`);

    await eventually(() => page.getByRole('status').first().textContent()).toBe('Please sign in to continue.');
    expect(await page.locator('h1').textContent()).toBe('Sign in');
  });

  it('shows notices only from its own codes, never text from the address', async () => {
    const forged = 'Your account is locked. Call +1 555 0100 to unlock it.';
    await page.goto(`${runtime.consoleUrl}#/sign-up`);
    await eventually(() => page.locator('h1').textContent()).toBe('Create an account');

    await page.goto(`${runtime.consoleUrl}#/sign-in?message=${encodeURIComponent(forged)}&notice=${encodeURIComponent(forged)}`);
    await eventually(() => page.locator('h1').textContent()).toBe('Sign in');

    expect(await page.getByText('Your account is locked', { exact: false }).count()).toBe(0);
    expect(await page.locator('.notice').count()).toBe(0);
    await page.goto(`${runtime.consoleUrl}#/sign-in?notice=signed-out`);
    await eventually(() => page.getByRole('status').first().textContent()).toBe('You are signed out.');
  });

  it('offers a password reset that is keyboard-usable and accessible', async () => {
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('Reset your password');
    await checkPage('forgot');
    await page.getByLabel('E-mail address').fill(EMAIL);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('Check your mailbox');
    const link = await latestLink(runtime.mailDir, EMAIL, 'Reset your password');

    await page.goto(link.href);
    await eventually(() => page.locator('h1').textContent()).toBe('Choose a new password');
    await checkPage('reset');
    await page.getByLabel('New password').fill('another long password');
    await page.getByRole('button', { name: 'Set the password' }).click();

    await eventually(() => page.getByRole('status').first().textContent()).toBe('Your password is changed. Please sign in with it.');
  });

  it('says how long to wait once the session is over its rate limit', async () => {
    await page.getByLabel('E-mail address').fill(EMAIL);
    await page.getByLabel('Password').fill('another long password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('API keys');

    const statuses = await page.evaluate<number[]>(
      'Promise.all(Array.from({ length: 60 }, () => fetch("/api/v1/account").then((response) => response.status)))',
    );
    await page.reload();

    expect(statuses).toContain(429);
    await eventually(() => page.locator('h1').textContent()).toBe('Too many requests');
    expect(await page.locator('main p').textContent()).toMatch(/^Please wait about \d+ seconds?, then reload the page\.$/);
  });
});
