import { ApiError, call, type Session } from '../api';
import { askInPlace, field, h, labelCells, messageOf, notice, show } from '../dom';
import { go, type Route } from '../main';
import { depositExplanation, type AccountView } from './deposit';

interface KeyInfo {
  readonly id: number;
  readonly name: string;
  readonly key_prefix: string;
  readonly is_active: boolean;
  readonly created_at: string | null;
  readonly last_used_at: string | null;
}

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : 'Never');

/** A signed-in page's call: an ended session sends the person to sign in again. */
async function guarded<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) go('sign-in', 'session-ended');
    throw error;
  }
}

/**
 * The full key, shown once. Dismissing removes it from the page and drops the only reference to it; it is never
 * stored anywhere.
 */
function revealedKey(fullKey: string, name: string, onDismiss: () => void): HTMLElement {
  const copied = h('span', { role: 'status', class: 'hint' });
  const panel = h(
    'section',
    { class: 'notice notice-success reveal', 'aria-labelledby': 'reveal-heading' },
    h('h2', { id: 'reveal-heading' }, `Your new key “${name}”`),
    h(
      'p',
      {},
      h('strong', {}, 'Copy it now: it will not be shown again.'),
      ' Only its prefix is kept, so a lost key cannot be recovered — revoke it and create another.',
    ),
    h('pre', { class: 'full-key' }, h('code', { id: 'full-key' }, fullKey)),
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          onclick: () => {
            void navigator.clipboard
              .writeText(fullKey)
              .then(() => (copied.textContent = 'Copied.'))
              .catch(() => (copied.textContent = 'Copying failed: select the key and copy it by hand.'));
          },
        },
        'Copy key',
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () => {
            panel.remove();
            onDismiss();
          },
        },
        'I have saved it',
      ),
      copied,
    ),
  );
  return panel;
}

function keyRow(key: KeyInfo, onRevoked: (name: string) => void): HTMLTableRowElement {
  const actions = h('td', {});
  const status = key.is_active
    ? h('span', { class: 'badge badge-active' }, 'Active')
    : h('span', { class: 'badge badge-revoked' }, 'Revoked');
  const revokeButton = () =>
    h('button', { type: 'button', class: 'danger', 'aria-label': `Revoke key ${key.name}`, onclick: askToConfirm }, 'Revoke');
  function askToConfirm() {
    askInPlace(actions, {
      question: `Revoke “${key.name}”? Requests with it stop working at once.`,
      yes: 'Yes, revoke',
      run: () => guarded(() => call('DELETE', `keys/${key.id}`)).then(() => onRevoked(key.name)),
      restore: () => actions.replaceChildren(revokeButton()),
      failed: (error) => actions.append(notice('error', messageOf(error, 'Revoking failed'))),
    });
  }
  if (key.is_active) actions.append(revokeButton());
  return h(
    'tr',
    {},
    h('th', { scope: 'row' }, key.name),
    h('td', {}, h('code', {}, `${key.key_prefix}…`)),
    h('td', {}, when(key.created_at)),
    h('td', {}, when(key.last_used_at)),
    h('td', {}, status),
    actions,
  );
}

/** The keys page; `revoked` names a key just revoked, which the page confirms. */
export async function keysPage(_session: Session, _route?: Route, revoked?: string): Promise<void> {
  const [keys, account] = await guarded(() => Promise.all([call<KeyInfo[]>('GET', 'keys'), call<AccountView>('GET', 'account')]));
  const reload = (name: string) => void keysPage(_session, undefined, name);
  const name = h('input', { name: 'name', type: 'text', maxlength: '100', autocomplete: 'off', placeholder: 'Default' });
  const formStatus = h('div', { class: 'form-status' });
  const reveal = h('div', {});
  const create = h(
    'form',
    { class: 'inline-form' },
    field('Key name', name, 'For example the machine or tool that will use it.'),
    h('button', { type: 'submit' }, 'Create key'),
    formStatus,
  );
  create.addEventListener('submit', (event) => {
    event.preventDefault();
    formStatus.replaceChildren();
    const body = name.value.trim() ? { name: name.value.trim() } : undefined;
    void guarded(() => call<KeyInfo & { full_key: string }>('POST', 'keys', body))
      .then((created) => {
        name.value = '';
        // The list already shows the new key: dismissing only hides the full key and returns focus to the form (a
        // reload here would re-render the table under a revocation being confirmed).
        reveal.replaceChildren(revealedKey(created.full_key, created.name, () => name.focus()));
        table.replaceChildren(...tableParts([created, ...keys]));
        labelCells(table);
        reveal.querySelector<HTMLButtonElement>('button')?.focus();
      })
      .catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 402) {
          formStatus.replaceChildren(
            account.deposit_required
              ? notice('error', 'Deposit required: the box above explains how to make one.')
              : depositExplanation({ ...account, deposit_required: true }),
          );
        } else formStatus.replaceChildren(notice('error', error instanceof Error ? error.message : 'Creating the key failed'));
      });
  });
  const tableParts = (list: KeyInfo[]) => [
    h('caption', {}, 'Your API keys'),
    h(
      'thead',
      {},
      h('tr', {}, ...['Name', 'Prefix', 'Created', 'Last used', 'Status', 'Actions'].map((title) => h('th', { scope: 'col' }, title))),
    ),
    h(
      'tbody',
      {},
      ...(list.length
        ? [...list].sort((a, b) => b.id - a.id).map((key) => keyRow(key, reload))
        : [h('tr', {}, h('td', { colspan: '6' }, 'No keys yet.'))]),
    ),
  ];
  const table = h('table', {}, ...tableParts(keys));
  show(
    h('h1', {}, 'API keys'),
    h(
      'p',
      {},
      'Use a key as ',
      h('code', {}, 'Authorization: Bearer <key>'),
      ' on the instance endpoints. Revoked keys stop working at once.',
    ),
    account.deposit_required ? depositExplanation(account) : null,
    revoked === undefined ? null : notice('success', `Key “${revoked}” revoked: requests with it are refused from now on.`),
    reveal,
    h('section', { 'aria-labelledby': 'create-heading' }, h('h2', { id: 'create-heading' }, 'Create a key'), create),
    h(
      'section',
      { 'aria-labelledby': 'list-heading' },
      h('h2', { id: 'list-heading' }, 'Keys'),
      h('div', { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': 'Keys table' }, table),
    ),
  );
}
