import { ApiError, call, signIn } from '../api';
import { field, h, link, notice, show } from '../dom';
import { go, type Route } from '../main';
import { noticeText } from '../notices';

/** Sign-up, confirmation, sign-in and password reset: the pages a person sees before being signed in. */
const PASSWORD_HINT = 'At least 10 characters.';

function input(name: string, type: string, autocomplete: string, extra: Record<string, string> = {}): HTMLInputElement {
  return h('input', { name, type, autocomplete, required: true, ...extra });
}

/** A form whose submission calls `submit`; errors show in its alert region and its button is disabled meanwhile. */
function form(label: string, fields: HTMLElement[], submit: () => Promise<void>): HTMLFormElement {
  const status = h('div', { class: 'form-status' });
  const button = h('button', { type: 'submit' }, label);
  const element = h('form', { novalidate: false }, ...fields, button, status);
  element.addEventListener('submit', (event) => {
    event.preventDefault();
    button.disabled = true;
    status.replaceChildren();
    submit()
      .catch((error: unknown) => status.replaceChildren(notice('error', explain(error))))
      .finally(() => {
        button.disabled = false;
      });
  });
  return element;
}

function explain(error: unknown): string {
  if (error instanceof ApiError && error.status === 429) {
    const wait = Math.ceil(Number(error.body.retry_after ?? 60) / 60);
    return `Too many attempts. Please wait about ${wait} minute${wait === 1 ? '' : 's'} and try again.`;
  }
  if (error instanceof ApiError) return error.message;
  return 'The service could not be reached. Please try again.';
}

const mailboxNote = () =>
  h(
    'p',
    { class: 'hint' },
    'Running the service locally? Messages are written as files to ',
    h('code', {}, '.local/mail/'),
    ' and each one’s path is printed where ',
    h('code', {}, 'npm start'),
    ' runs.',
  );

function noticeOf(route: Route) {
  const text = noticeText(route.params);
  return text ? notice('info', text) : null;
}

export function signInPage(route: Route): void {
  document.title = 'Sign in · VPS console';
  const email = input('email', 'email', 'username');
  const password = input('password', 'password', 'current-password');
  show(
    h('h1', {}, 'Sign in'),
    noticeOf(route),
    form('Sign in', [field('E-mail address', email), field('Password', password)], async () => {
      await signIn(email.value.trim(), password.value);
      password.value = '';
      go('keys');
    }),
    h('p', {}, 'New here? ', link('#/sign-up', 'Create an account'), '. ', link('#/forgot', 'Forgot your password?')),
  );
}

export function signUpPage(route: Route): void {
  document.title = 'Sign up · VPS console';
  const email = input('email', 'email', 'email');
  const password = input('password', 'password', 'new-password', { minlength: '10' });
  show(
    h('h1', {}, 'Create an account'),
    noticeOf(route),
    form('Sign up', [field('E-mail address', email), field('Password', password, PASSWORD_HINT)], async () => {
      const answer = await call<{ message: string }>('POST', 'auth/sign-up', { email: email.value.trim(), password: password.value });
      password.value = '';
      show(
        h('h1', {}, 'Check your mailbox'),
        notice('success', answer.message),
        h('p', {}, 'Open the link in the message to confirm your address, then sign in.'),
        mailboxNote(),
      );
    }),
    h('p', {}, 'Already have an account? ', link('#/sign-in', 'Sign in'), '.'),
  );
}

export function confirmPage(route: Route): void {
  document.title = 'Confirm your address · VPS console';
  const token = route.params.get('token') ?? '';
  // The token has done its work once read: keep it out of the address bar and history.
  history.replaceState(null, '', '#/confirm');
  const password = input('password', 'password', 'current-password');
  show(
    h('h1', {}, 'Confirm your address'),
    // The link alone proves only the mailbox: anyone may have signed up with this address and sent it.
    h('p', {}, 'Enter the password you chose when you signed up to finish confirming your e-mail address.'),
    form('Confirm', [field('Password chosen at sign-up', password)], async () => {
      await call('POST', 'auth/confirm', { token, password: password.value });
      password.value = '';
      show(
        h('h1', {}, 'Address confirmed'),
        notice('success', 'Your e-mail address is confirmed.'),
        h('p', {}, link('#/sign-in', 'Sign in'), ' to create your first API key.'),
      );
    }),
    h('p', {}, 'Links work once and for 24 hours. ', link('#/sign-up', 'Sign up again'), ' with the same address for a new one.'),
  );
}

export function forgotPage(): void {
  document.title = 'Forgot password · VPS console';
  const email = input('email', 'email', 'email');
  show(
    h('h1', {}, 'Reset your password'),
    h('p', {}, 'We will e-mail you a link to choose a new password. It works once, within an hour.'),
    form('Send the link', [field('E-mail address', email)], async () => {
      const answer = await call<{ message: string }>('POST', 'auth/forgot-password', { email: email.value.trim() });
      show(h('h1', {}, 'Check your mailbox'), notice('success', answer.message), mailboxNote());
    }),
    h('p', {}, link('#/sign-in', 'Back to sign in')),
  );
}

export function resetPage(route: Route): void {
  document.title = 'Choose a new password · VPS console';
  const token = route.params.get('token') ?? '';
  history.replaceState(null, '', '#/reset');
  const password = input('password', 'password', 'new-password', { minlength: '10' });
  show(
    h('h1', {}, 'Choose a new password'),
    h('p', {}, 'Every place where you are signed in will be signed out.'),
    form('Set the password', [field('New password', password, PASSWORD_HINT)], async () => {
      await call('POST', 'auth/reset-password', { token, password: password.value });
      password.value = '';
      go('sign-in', 'password-changed');
    }),
  );
}
