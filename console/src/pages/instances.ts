import { ApiError, call, type Session } from '../api';
import { askInPlace, h, messageOf, notice, show } from '../dom';
import type { Route } from '../main';

interface Plan {
  readonly flavor: string;
  readonly vcpu: number | null;
  readonly ram_mb: number | null;
  readonly disk_gb: number | null;
  readonly hourly_price: number | null;
}

interface InstanceSummary {
  readonly instance_id: number;
  readonly status: string;
  readonly ipv4: string | null;
  readonly project_name: string;
  readonly plan: Plan;
  readonly labels: Record<string, string>;
}

interface InstanceDetail extends InstanceSummary {
  readonly ssh_port: number;
  readonly root_user: string;
  readonly created_at: string | null;
  readonly activated_at: string | null;
  readonly failure?: { code: string; message: string };
}

/** Statuses that change by themselves: the page looks again until the instance settles. */
const CHANGING = new Set(['pending', 'provisioning', 'resizing', 'deleting']);
const POLL_MS = 3_000;

const ACTIONS: Record<string, { type: string; text: string }[]> = {
  active: [
    { type: 'power_off', text: 'Power off' },
    { type: 'reboot', text: 'Reboot' },
  ],
  stopped: [{ type: 'power_on', text: 'Power on' }],
};

const labelsText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([key, value]) => (value === '' ? key : `${key}=${value}`))
    .join(', ');

const statusBadge = (status: string) => h('span', { class: `badge badge-status badge-${status}` }, status);

/** Looks again after a while, while this page still shows the same thing. */
function pollWhile(hash: string, again: () => void): void {
  setTimeout(() => {
    if (location.hash === hash) again();
  }, POLL_MS);
}

/** The list: each instance with its status, flavor, IPv4 and labels, live while any of them is changing. */
async function instanceList(session: Session): Promise<void> {
  const instances = await call<InstanceSummary[]>('GET', 'instances');
  const withLabels = instances.some((instance) => Object.keys(instance.labels).length > 0);
  const headings = ['Name', 'Status', 'Flavor', 'IPv4', ...(withLabels ? ['Labels'] : [])];
  const rows = instances.map((instance) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, h('a', { href: `#/instances?id=${instance.instance_id}` }, instance.project_name)),
      h('td', {}, statusBadge(instance.status)),
      h('td', {}, instance.plan.flavor),
      h('td', {}, instance.ipv4 ?? '—'),
      withLabels ? h('td', {}, labelsText(instance.labels) || '—') : null,
    ),
  );
  show(
    h('h1', {}, 'Instances'),
    h('p', {}, 'Your servers. Create them with the API, the ', h('code', {}, 'vps'), ' command line or an AI agent over MCP.'),
    h(
      'div',
      { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': 'Instances table' },
      h(
        'table',
        {},
        h('caption', {}, 'Your instances'),
        h('thead', {}, h('tr', {}, ...headings.map((title) => h('th', { scope: 'col' }, title)))),
        h('tbody', {}, ...(rows.length ? rows : [h('tr', {}, h('td', { colspan: String(headings.length) }, 'No instances yet.'))])),
      ),
    ),
  );
  if (instances.some((instance) => CHANGING.has(instance.status))) pollWhile('#/instances', () => void instanceList(session));
}

/** After an action starts, the status it started from: the page looks again until it changes (for a few minutes). */
interface Watch {
  readonly from: string;
  readonly looksLeft: number;
}

/** One instance: its facts, its power actions, and delete behind a confirmation; live while it is changing. */
async function instanceDetail(session: Session, id: string, said?: HTMLElement, watch?: Watch): Promise<void> {
  const hash = `#/instances?id=${id}`;
  let instance: InstanceDetail;
  try {
    instance = await call<InstanceDetail>('GET', `instances/${encodeURIComponent(id)}`);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      show(h('h1', {}, 'Instance not found'), h('p', {}, h('a', { href: '#/instances' }, 'Back to your instances')));
      return;
    }
    throw error;
  }
  const status = h('div', { class: 'form-status' }, said ?? null);
  const again = (message?: HTMLElement, next?: Watch) => void instanceDetail(session, id, message, next);
  const act = (type: string, text: string) =>
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        onclick: (event) => {
          (event.currentTarget as HTMLButtonElement).disabled = true;
          call('POST', `instances/${instance.instance_id}/actions`, { type })
            .then(() => again(notice('success', `${text}: started.`), { from: instance.status, looksLeft: 60 }))
            .catch((error: unknown) => status.replaceChildren(notice('error', messageOf(error, `${text} failed`))));
        },
      },
      text,
    );
  const actions = h('div', { class: 'actions' });
  const deleteButton = () => h('button', { type: 'button', class: 'danger', onclick: askToDelete }, `Delete ${instance.project_name}`);
  function askToDelete() {
    askInPlace(actions, {
      question: `Delete “${instance.project_name}”? The server and its disk are destroyed; this cannot be undone.`,
      yes: 'Yes, delete',
      run: () =>
        call('DELETE', `instances/${instance.instance_id}`).then(() => {
          location.hash = '#/instances';
        }),
      restore: fillActions,
      failed: (error) => status.replaceChildren(notice('error', messageOf(error, 'Deleting failed'))),
    });
  }
  function fillActions() {
    actions.replaceChildren(...(ACTIONS[instance.status] ?? []).map((action) => act(action.type, action.text)), deleteButton());
  }
  fillActions();
  const facts: [string, Node | string][] = [
    ['Status', statusBadge(instance.status)],
    [
      'Flavor',
      `${instance.plan.flavor} (${instance.plan.vcpu ?? '?'} vCPU, ${instance.plan.ram_mb ?? '?'} MB, ${instance.plan.disk_gb ?? '?'} GB)`,
    ],
    ['IPv4', instance.ipv4 ?? '—'],
    ['SSH', instance.ipv4 ? h('code', {}, `ssh -p ${instance.ssh_port} ${instance.root_user}@${instance.ipv4}`) : '—'],
    ['Labels', labelsText(instance.labels) || '—'],
    ['Created', instance.created_at ?? '—'],
    ...(instance.failure ? ([['Failure', `${instance.failure.message} (${instance.failure.code})`]] as [string, string][]) : []),
  ];
  show(
    h('p', {}, h('a', { href: '#/instances' }, '← Instances')),
    h('h1', {}, instance.project_name),
    h('dl', { class: 'facts' }, ...facts.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value)])),
    h('section', { 'aria-labelledby': 'actions-heading' }, h('h2', { id: 'actions-heading' }, 'Actions'), actions, status),
  );
  const watching = watch !== undefined && watch.looksLeft > 0 && watch.from === instance.status;
  if (CHANGING.has(instance.status) || watching)
    pollWhile(hash, () => again(said, watching ? { from: watch.from, looksLeft: watch.looksLeft - 1 } : undefined));
}

/** `#/instances` lists them; `#/instances?id=N` shows one. */
export function instancesPage(session: Session, route: Route): Promise<void> {
  const id = route.params.get('id');
  return id === null ? instanceList(session) : instanceDetail(session, id);
}
