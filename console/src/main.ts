import './styles.css';
import { ApiError, currentSession, signOut, type Session } from './api';
import { h } from './dom';
import { confirmPage, forgotPage, resetPage, signInPage, signUpPage } from './pages/auth';
import { keysPage } from './pages/keys';
import { accountPage } from './pages/account';
import { billingPage } from './pages/billing';
import { instancesPage } from './pages/instances';
import type { NoticeCode } from './notices';

/**
 * Hash routes (`#/keys`): one static page serves them all, and tokens from e-mailed links stay in the fragment,
 * which never reaches a server or a Referer header.
 */
export interface Route {
  readonly page: string;
  readonly params: URLSearchParams;
}

function route(): Route {
  const [page = '', query = ''] = location.hash.replace(/^#\/?/, '').split('?');
  return { page, params: new URLSearchParams(query) };
}

/** Shows `page`, with one of the console's own notices when given. */
export function go(page: string, notice?: NoticeCode): void {
  const target = `#/${page}${notice ? `?notice=${notice}` : ''}`;
  if (location.hash === target) renderSafely();
  else location.hash = target;
}

const SIGNED_IN_PAGES: Record<string, (session: Session, route: Route) => Promise<void> | void> = {
  instances: instancesPage,
  keys: keysPage,
  billing: billingPage,
  account: accountPage,
};

const PAGE_TITLES: Record<string, string> = { instances: 'Instances', keys: 'API keys', billing: 'Billing', account: 'Account' };
const SIGNED_OUT_PAGES: Record<string, (route: Route) => Promise<void> | void> = {
  'sign-in': signInPage,
  'sign-up': signUpPage,
  confirm: confirmPage,
  forgot: forgotPage,
  reset: resetPage,
};

function navigation(session: Session | undefined, current: string) {
  const nav = document.getElementById('nav');
  if (!nav) return;
  const item = (page: string, text: string) =>
    h('li', {}, h('a', { href: `#/${page}`, 'aria-current': current === page ? 'page' : undefined }, text));
  nav.replaceChildren(
    session
      ? h(
          'ul',
          {},
          item('instances', 'Instances'),
          item('keys', 'API keys'),
          item('billing', 'Billing'),
          item('account', 'Account'),
          h(
            'li',
            {},
            h(
              'button',
              {
                type: 'button',
                class: 'link-button',
                onclick: () => void signOut().finally(() => go('sign-in', 'signed-out')),
              },
              'Sign out',
            ),
          ),
        )
      : h('ul', {}, item('sign-in', 'Sign in'), item('sign-up', 'Sign up')),
  );
}

async function render(): Promise<void> {
  const current = route();
  const signedOutPage = SIGNED_OUT_PAGES[current.page];
  const session = await currentSession();
  if (signedOutPage && current.page !== 'sign-in' && current.page !== 'sign-up') {
    navigation(session, current.page);
    return signedOutPage(current);
  }
  if (!session) {
    navigation(undefined, current.page === 'sign-up' ? 'sign-up' : 'sign-in');
    if (current.page === 'sign-up') return signUpPage(current);
    if (current.page !== 'sign-in' && current.page !== '') return go('sign-in', 'sign-in-required');
    return signInPage(current);
  }
  const signedInPage = SIGNED_IN_PAGES[current.page];
  if (!signedInPage) return go('keys');
  navigation(session, current.page);
  document.title = `${PAGE_TITLES[current.page] ?? 'Account'} · VPS console`;
  return signedInPage(session, current);
}

/** Anything a page could not handle: the page says so instead of staying blank. */
function renderSafely(): void {
  render().catch((error: unknown) => {
    const main = document.getElementById('main');
    if (!main || location.hash.startsWith('#/sign-in')) return;
    if (error instanceof ApiError && error.status === 429) {
      const wait = Number(error.body.retry_after ?? 60);
      main.replaceChildren(
        h('h1', {}, 'Too many requests'),
        h('p', {}, `Please wait about ${wait} second${wait === 1 ? '' : 's'}, then reload the page.`),
      );
    } else
      main.replaceChildren(h('h1', {}, 'Something went wrong'), h('p', {}, 'The service could not be reached. Please reload the page.'));
  });
}

window.addEventListener('hashchange', renderSafely);
renderSafely();
