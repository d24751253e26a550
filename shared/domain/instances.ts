import { balanceAt } from '../model/burn';
import type { Deps, FoundKey } from './deps';
import { budgetSignal } from '../deadline';
import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import type { Account } from '../store/accounts';
import { nextSequenceValue } from '../store/counters';
import {
  getInstanceItem,
  getOwnedInstance,
  insertInstanceReservingCapacity,
  listOwnedInstances,
  listOwnedInstancesMatching,
  ownedBy,
  updateInstanceAtVersion,
} from '../store/instances';
import { CapacityExhaustedError } from '../model/capacity';
import { newInstance, type Instance } from '../model/instance';
import type { Job } from '../model/job';
import { committedInstanceOf } from '../store/idempotency';
import {
  LIST_PAGE_MAX,
  type CreateInstanceBody,
  type InstanceDetail,
  type InstanceSummary,
  type ListInstancesQuery,
  statusesIn,
} from '../schemas/instances';
import { labelsMatch, parseLabelSelector } from '../model/labels';
import { randomMixedBase62 } from '../model/crypto';
import { badRequest, instanceNotFound, serviceUnavailable } from '../model/errors';
import { judgeCreate } from '../model/create';
import { generateSshKey } from '../model/ssh-keys';
import { credentialsCloudConfig, SERVER_USER_DATA_MAX_BYTES, serverUserData } from '../model/user-data';
import { openInstanceSecrets, sealInstanceSecrets, sealUserData, type InstanceSecrets } from './instance-secrets';
import { upstreamForLiveReads } from './upstream';
import { prepareSecrets } from '../secrets';
import { toInstanceDetail, toInstanceSummary } from './views';

const ROOT_PASSWORD_LENGTH = 24;

/**
 * Every server we create carries the deployment's tag, so that servers left behind can be found and destroyed, and
 * one for its instance, which makes creation idempotent. Both name the stage, so that two stages sharing one
 * upstream account never adopt or destroy each other's servers.
 */
export const serviceTag = (deps: Deps) => `vps-${deps.config.stage}`;
export const upstreamTagOf = (deps: Deps, instanceId: number) => `${serviceTag(deps)}-instance-${instanceId}`;

/**
 * Accepts a deploy: validates, reserves capacity, records the instance and its job, and starts provisioning. A keyed
 * create records its Idempotency-Key (scoped) with the instance, in the same transaction, for `committedCreate`.
 */
export async function createInstance(
  deps: Deps,
  account: Account,
  body: CreateInstanceBody,
  idempotencyKey?: string,
): Promise<InstanceDetail> {
  const { plan, sshKey, keyName } = judgeCreate(
    { balance: balanceAt(account, deps.clock.now().getTime()), billedInstances: Object.keys(account.burning).length },
    body,
  );

  const budget = budgetSignal(deps);
  const instanceId = await nextSequenceValue(deps, 'instance_id', budget);
  const now = deps.clock.now().toISOString();
  const { private_key: generatedPrivateKey, ...publicKey } = sshKey ?? generateSshKey(keyName, `root@vps-${instanceId}`);
  const secrets: InstanceSecrets = { root_password: randomMixedBase62(ROOT_PASSWORD_LENGTH), private_key: generatedPrivateKey };
  if (body.user_data !== undefined) {
    const serverBytes = Buffer.byteLength(
      serverUserData(credentialsCloudConfig(instanceId, publicKey.public_key, secrets.root_password), body.user_data),
    );
    if (serverBytes > SERVER_USER_DATA_MAX_BYTES) {
      throw badRequest(
        `user_data is too large: with the server's own part (its credentials) it comes to ${serverBytes} bytes, and a server takes at most ${SERVER_USER_DATA_MAX_BYTES}`,
      );
    }
  }
  const { instance, job } = newInstance({
    instanceId,
    accountId: account.account_id,
    projectName: body.project_name,
    plan,
    sshKey: { ...publicKey, private_key: null },
    sealedSecrets: await sealInstanceSecrets(deps, { account_id: account.account_id, instance_id: instanceId }, secrets),
    sealedUserData:
      body.user_data === undefined
        ? undefined
        : await sealUserData(deps, { account_id: account.account_id, instance_id: instanceId }, body.user_data),
    labels: body.labels,
    domain: `vps-${instanceId}.${deps.config.instanceDomainSuffix}`,
    sshPort: deps.config.ssh.port,
    jobId: deps.ids.uuid(),
    now,
    idempotencyKey,
  });

  // The request was answered without waiting: it stops here, before it commits anything.
  budget?.throwIfAborted();
  try {
    await insertInstanceReservingCapacity(deps, instance, job);
  } catch (error) {
    if (error instanceof CapacityExhaustedError) {
      throw serviceUnavailable(error.pool === 'ipv4' ? 'IPv4 capacity exhausted' : 'Tier capacity exhausted');
    }
    throw error;
  }
  await startProvisioning(deps, instance, job);
  countMetric(metricNames.deploysAccepted);
  return toInstanceDetail(instance, secrets);
}

/**
 * The instance a create committed under this Idempotency-Key (scoped), as its create answers it, with its current
 * state and credentials; undefined when no create committed under it.
 */
export async function committedCreate(deps: Deps, idempotencyKey: string): Promise<InstanceDetail | undefined> {
  const instanceId = await committedInstanceOf(deps, idempotencyKey, Math.floor(deps.clock.now().getTime() / 1000));
  const item = instanceId === undefined ? undefined : await getInstanceItem(deps, instanceId);
  if (!item || item.idempotency_key !== idempotencyKey) return undefined;
  return toInstanceDetail(item, await openInstanceSecrets(deps, item));
}

/**
 * A create's answer as kept for Idempotency-Key replays: without the credentials, which live only in the instance
 * (sealed), so that they end with it.
 */
export function withoutCredentials(detail: InstanceDetail): InstanceDetail {
  return withSecrets(detail, null);
}

/**
 * A kept create answer with the credentials its instance has now: none once the instance failed or was deleted, as
 * its detail would show (a deleted one answers 404 there).
 */
export async function withCurrentCredentials(deps: Deps, detail: InstanceDetail, accountId: string): Promise<InstanceDetail> {
  const item = await getOwnedInstance(deps, detail.instance_id, accountId);
  return withSecrets(detail, item ? await openInstanceSecrets(deps, item) : null);
}

const withSecrets = (detail: InstanceDetail, secrets: InstanceSecrets | null): InstanceDetail => ({
  ...detail,
  root_password: secrets?.root_password ?? null,
  ssh_key: { ...detail.ssh_key, private_key: secrets?.private_key ?? null },
});

/**
 * Starts the provision workflow. A start that fails (Step Functions refusing, unreachable, or its answer lost) leaves
 * the instance committed and pending: the create is accepted all the same, and the reconciler starts the workflow
 * under the job's name, so a start that happened after all is not doubled.
 */
async function startProvisioning(deps: Deps, instance: Instance, job: Job): Promise<void> {
  try {
    await deps.workflows.start('provision', job, {});
  } catch (error) {
    logger.error('could not start provisioning; the reconciler starts it', { error, instance_id: instance.instance_id });
  }
}

/**
 * An instance as its detail shows it, and whether that shows the stored state where the live one was due: a settled
 * instance's power state is read upstream, and when that read could not be made (the live reads' share of the
 * upstream budget is spent, the upstream is held after a 429, or it did not answer in time) the answer says so.
 */
export interface InstanceReading {
  readonly detail: InstanceDetail;
  readonly stored: boolean;
}

/** The instance read beside the request's key (in its round): the key's account's own, or undefined. */
export async function instanceBesideKey(deps: Deps, instanceId: number | undefined, key: Promise<FoundKey>): Promise<Instance | undefined> {
  const [item, { apiKey }] = await Promise.all([instanceId === undefined ? undefined : getInstanceItem(deps, instanceId), key]);
  return ownedBy(item, apiKey.account_id);
}

/** GET detail with the instance read beside the key, and the live state read as soon as the key is known. */
export async function getInstanceDetailBesideKey(
  deps: Deps,
  instanceId: number | undefined,
  key: Promise<FoundKey>,
): Promise<InstanceReading> {
  // One await for both: a refused key must leave no promise of this request unhandled.
  const [item, { deps: request, apiKey }] = await Promise.all([instanceBesideKey(deps, instanceId, key), key]);
  return getInstanceDetail(request, apiKey.account_id, instanceId, Promise.resolve(item));
}

/** GET detail; `found` is the instance when it was read already (as the caller's own, or undefined). */
export async function getInstanceDetail(
  deps: Deps,
  accountId: string,
  instanceId: number | undefined,
  found?: Promise<Instance | undefined>,
): Promise<InstanceReading> {
  prepareSecrets(deps);
  const item = await (found ?? (instanceId === undefined ? undefined : getOwnedInstance(deps, instanceId, accountId)));
  if (!item) throw instanceNotFound();
  // The secrets open (a KMS call on AWS) while the live state is read upstream, not after it.
  const [current, secrets] = await Promise.all([withLivePowerState(deps, item), openInstanceSecrets(deps, item)]);
  return { detail: toInstanceDetail(current.item, secrets), stored: current.stored };
}

/**
 * Merges the upstream's live power state into a settled instance, so that a server shut down from inside shows
 * stopped (and is billed as such). The record follows when it changed. Any upstream trouble, a refused take from the
 * budget, or an answer slower than the short live-read budget, leaves the stored state as the answer, marked as
 * such: this read never fails the request.
 */
async function withLivePowerState(deps: Deps, item: Instance): Promise<{ item: Instance; stored: boolean }> {
  if (!['active', 'stopped'].includes(item.status) || item.active_job_id !== null || item.upstream_id === null) {
    return { item, stored: false };
  }
  try {
    const server = await (await upstreamForLiveReads(deps)).getServer(item.upstream_id);
    const live = server?.status === 'active' ? 'active' : server?.status === 'off' ? 'stopped' : item.status;
    if (live === item.status) return { item, stored: false };
    const changes =
      live === 'stopped'
        ? ({ status: 'stopped', paused_by: item.paused_by ?? 'user' } as const)
        : ({ status: 'active', paused_by: null } as const);
    // Conditional on the version read: an action accepted meanwhile wins, and this answer keeps the stored state.
    return (await updateInstanceAtVersion(deps, item, { changes }))
      ? { item: { ...item, ...changes }, stored: false }
      : { item, stored: false };
  } catch (error) {
    logger.warn('live status unavailable; answering from stored state', { error });
    countMetric(metricNames.storedStatusReads);
    return { item, stored: true };
  }
}

/** A page token names the last instance id of the page before; opaque to clients, checked on the way back. */
const encodePageToken = (lastId: number) => Buffer.from(`after:${lastId}`).toString('base64url');

function decodePageToken(token: string): number {
  const match = /^after:(\d{1,15})$/.exec(Buffer.from(token, 'base64url').toString());
  if (!match || encodePageToken(Number(match[1])) !== token) throw badRequest('Invalid page_token');
  return Number(match[1]);
}

export interface InstanceListPage {
  readonly instances: InstanceSummary[];
  /** Present when more instances may follow: pass it as `page_token` with the same `per_page`. */
  readonly nextPageToken?: string;
}

/** Whether a listing entry meets the list's filters (each given one must hold). */
function listFilter(query: ListInstancesQuery): ((entry: Pick<Instance, 'status' | 'project_name' | 'labels'>) => boolean) | undefined {
  const statuses = query.status === undefined ? undefined : statusesIn(query.status);
  const selector = query.label_selector === undefined ? undefined : parseLabelSelector(query.label_selector);
  if (statuses === undefined && selector === undefined && query.name === undefined) return undefined;
  return (entry) =>
    (statuses === undefined || statuses.includes(entry.status)) &&
    (query.name === undefined || entry.project_name === query.name) &&
    (selector === undefined || labelsMatch(entry.labels, selector));
}

/**
 * The caller's live instances by id: all of them, or one page when `per_page` or `page_token` is given; only those
 * meeting the filters (`status`, `name`, `label_selector`) when any is given.
 */
export async function listInstanceSummaries(deps: Deps, accountId: string, query: ListInstancesQuery = {}): Promise<InstanceListPage> {
  prepareSecrets(deps);
  const summaries = (items: Instance[]) =>
    Promise.all(items.map(async (item) => toInstanceSummary(item, await openInstanceSecrets(deps, item))));
  const paged = query.per_page !== undefined || query.page_token !== undefined;
  const page = paged
    ? { limit: query.per_page ?? LIST_PAGE_MAX, after: query.page_token === undefined ? undefined : decodePageToken(query.page_token) }
    : undefined;
  const filter = listFilter(query);
  if (filter) {
    const { items, lastId } = await listOwnedInstancesMatching(deps, accountId, filter, page);
    return { instances: await summaries(items), ...(lastId === undefined ? {} : { nextPageToken: encodePageToken(lastId) }) };
  }
  if (!page) return { instances: await summaries(await listOwnedInstances(deps, accountId)) };
  const { items, lastId } = await listOwnedInstances(deps, accountId, page);
  return { instances: await summaries(items), ...(lastId === undefined ? {} : { nextPageToken: encodePageToken(lastId) }) };
}
