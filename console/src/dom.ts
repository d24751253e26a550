/** A tiny element builder: text only ever goes in as text, never as markup. */
type Child = Node | string | null | undefined | false;
type Attributes = Record<string, string | boolean | ((event: Event) => void) | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, value);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) element.append(child);
  return element;
}

/** Replaces the page's content and moves focus to its heading, so keyboard and screen-reader users land on it. */
export function show(...children: Child[]): void {
  const main = document.getElementById('main');
  if (!main) return;
  main.replaceChildren(...children.filter((child): child is Node | string => Boolean(child)));
  for (const table of main.querySelectorAll('table')) labelCells(table);
  const heading = main.querySelector('h1');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus();
  }
}

/** A status message region, read out by screen readers when it changes. */
export function notice(kind: 'info' | 'error' | 'success', ...children: Child[]): HTMLElement {
  return h('div', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, ...children);
}

export function field(label: string, input: HTMLInputElement, hint?: string): HTMLElement {
  const id = input.id || `field-${input.name}`;
  input.id = id;
  const hintId = hint ? `${id}-hint` : undefined;
  if (hintId) input.setAttribute('aria-describedby', hintId);
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, hint ? h('p', { class: 'hint', id: hintId }, hint) : null);
}

export const link = (href: string, text: string) => h('a', { href }, text);

/**
 * Gives each body cell its column's heading (`data-label`), which narrow screens show beside the value when the
 * table's rows reflow into cards, so no column (and no button) is ever off-screen.
 */
export function labelCells(table: HTMLTableElement): void {
  const headings = [...table.querySelectorAll('thead th')].map((th) => th.textContent ?? '');
  for (const row of table.querySelectorAll('tbody tr'))
    [...row.children].forEach((cell, column) => {
      if (headings[column] && !cell.hasAttribute('colspan')) cell.setAttribute('data-label', headings[column]);
    });
}

/** The message of a failed call, or `fallback` when it has none. */
export const messageOf = (error: unknown, fallback: string) => (error instanceof Error && error.message ? error.message : fallback);

/**
 * Asks in place before a change hard to take back: the question, a danger button that runs `run` (once), and Cancel,
 * which gives the place back to `restore`. A failure of `run` goes to `failed`.
 */
export function askInPlace(
  place: HTMLElement,
  {
    question,
    yes,
    run,
    restore,
    failed,
  }: { question: string; yes: string; run: () => Promise<unknown>; restore: () => void; failed: (error: unknown) => void },
): void {
  const no = h('button', { type: 'button', class: 'secondary', onclick: restore }, 'Cancel');
  const confirm = h(
    'button',
    {
      type: 'button',
      class: 'danger',
      onclick: () => {
        confirm.disabled = true;
        run().catch(failed);
      },
    },
    yes,
  );
  place.replaceChildren(h('span', { class: 'confirm-text' }, question), confirm, no);
  confirm.focus();
}
