import type { Deps } from '../../shared/domain/deps';
import { issueApiKey, openAccount, openSession, usdToMicros } from '../../shared/domain/accounts';
import { deposit } from '../../shared/domain/billing';
import { getAccount } from '../../shared/store/accounts';

const DEMO_ACCOUNT_ID = 'acct_demo';

export interface DemoCredentials {
  readonly accountId: string;
  readonly apiKey: string;
  readonly session: string;
  readonly csrfToken: string;
}

/**
 * The demo account: confirmed, with a $50 deposit made once (kept data is reused on restart). Keys and sessions
 * are stored only as hashes, so each start issues a fresh pair to print.
 */
export async function seedDemoAccount(deps: Deps): Promise<DemoCredentials> {
  if (!(await getAccount(deps, DEMO_ACCOUNT_ID))) {
    await openAccount(deps, { accountId: DEMO_ACCOUNT_ID, email: 'demo@example.com', confirmed: true, suspended: false });
    await deposit(deps, DEMO_ACCOUNT_ID, usdToMicros('50'), 'deposit#demo-seed');
  }
  const { fullKey } = await issueApiKey(deps, DEMO_ACCOUNT_ID, 'Demo');
  const { session, csrfToken } = await openSession(deps, DEMO_ACCOUNT_ID);
  return { accountId: DEMO_ACCOUNT_ID, apiKey: fullKey, session, csrfToken };
}
