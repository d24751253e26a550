import * as z from '../model/zod';
import { checkpointAccess, mergeAccess, requestGuardAccess } from '../access';
import { rateLimits } from '../model/rate-limits';
import {
  actionBodySchema,
  actionResultSchema,
  createInstanceBodySchema,
  deleteResultSchema,
  instanceDetailSchema,
  instanceSummarySchema,
  LIST_PAGE_MAX,
  listInstancesQuerySchema,
  planSchema,
  sshKeySchema,
  updateInstanceBodySchema,
} from '../schemas/instances';
import { jobViewSchema } from '../schemas/jobs';
import { bodyTooLarge, type BearerRoute } from './contract';
import { bearerErrors, header, ok, outcomeUnknown, rateLimitHeaders, replayedHeader, storedStateHeader } from './docs';

/** Named components: the document emits each once and refers to it. */
const Plan = planSchema.meta({ id: 'Plan' });
const SshKey = sshKeySchema.meta({ id: 'SshKey' });
const InstanceDetail = instanceDetailSchema.extend({ plan: Plan, ssh_key: SshKey }).meta({ id: 'InstanceDetail' });
const InstanceSummary = instanceSummarySchema.extend({ plan: Plan }).meta({ id: 'InstanceSummary' });
const Job = jobViewSchema.meta({ id: 'Job' });
const ActionResult = actionResultSchema.meta({ id: 'ActionResult' });
const DeleteResult = deleteResultSchema.meta({ id: 'DeleteResult' });

const CREATE_BODY_KIB = 256;

const instancePath = z.object({ instance_id: z.number().int().meta({ description: 'The instance id.' }) });
const tags = ['instances'];

/**
 * The texts the create and action routes answer, by status, as the interface gives them (with `<flavor>` for the
 * value sent); a test sends each refusal and finds its text here.
 */
const flavorRefusals = '`Invalid flavor: <flavor>`; `Flavor s-1vcpu-1gb is permanently unavailable`';
const createErrorTexts = {
  400: `${flavorRefusals}; otherwise invalid request (the text says which field and why).`,
  402: '`Insufficient balance to deploy: the balance must be above $3.00`.',
  403: '`Account suspended`; `Account not confirmed`; `Instance limit reached: an account can have 2,000 billed instances`.',
  503: '`IPv4 capacity exhausted`; `Tier capacity exhausted`.',
} as const;
const actionErrorTexts = {
  400: `\`Invalid action type\`; \`flavor is required for resize\`; ${flavorRefusals}; \`Already on this flavor\`; \`Cannot downgrade disk size\`; otherwise invalid request (the text says which field and why).`,
  402: '`Insufficient balance to power on`.',
  403: '`Account suspended`; `Account not confirmed`; `Instance is billing-paused` (power_on, reboot and resize; power_off is allowed).',
  503: '`Tier capacity exhausted` (the resize target’s tier).',
} as const;

export const createInstanceRoute = {
  name: 'CreateInstance',
  method: 'POST',
  path: '/api/v1/instances',
  entry: 'functions/api/create-instance.ts',
  auth: 'bearer',
  limits: ['general', 'deploy'],
  idempotent: true,
  credentials: true,
  // User data may take 64 KiB, and more once escaped in JSON.
  maxBodyKiB: CREATE_BODY_KIB,
  body: createInstanceBodySchema,
  access: {
    tables: {
      ...requestGuardAccess,
      // Reads what a create whose claim lapsed committed: the key's marker and its instance.
      instances: ['GetItem', 'PutItem', 'UpdateItem'],
      jobs: ['PutItem', 'UpdateItem'],
      counters: ['UpdateItem'],
      idempotency: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'],
    },
    startsWorkflows: ['provision'],
    // Seals the new credentials; opens an instance's credentials to replay its create (and a response kept sealed).
    secrets: ['seal', 'open'],
  },
  doc: {
    operationId: 'createInstance',
    summary: 'Deploy an Ubuntu 24.04 server; poll its detail until active or failed',
    description: `Accepts the deploy at once with status \`pending\` and the connection credentials (the root password, and the generated key pair unless \`ssh_public_key\` is given). Needs a balance above $3.00 and counts against the deploy limit (${rateLimits.deploy.limit} an hour) as well as the general one. Send an \`Idempotency-Key\` so that a retry never deploys twice.`,
    tags,
    responses: {
      202: ok('Accepted; status pending, with connection credentials.', InstanceDetail, { ...rateLimitHeaders(true), ...replayedHeader }),
      ...bearerErrors([401, 409, 422], { ...createErrorTexts, 413: `${bodyTooLarge(CREATE_BODY_KIB)}.` }),
      504: outcomeUnknown,
    },
  },
} as const satisfies BearerRoute;

export const listInstancesRoute = {
  name: 'ListInstances',
  method: 'GET',
  path: '/api/v1/instances',
  entry: 'functions/api/list-instances.ts',
  auth: 'bearer',
  console: true,
  query: listInstancesQuerySchema,
  access: { tables: { instances: ['Query', 'BatchGetItem'] }, secrets: ['open'] },
  doc: {
    operationId: 'listInstances',
    summary: "The caller's instances, in summary form",
    description: `The caller's live instances by id, in summary form: no \`ssh_key\` and no \`activated_at\`. Without parameters the list holds every live instance. A response is at most 6 MB (about 12,000 summaries) and opens every listed instance's credentials, so beyond 1,000 live instances a client must page: \`per_page\` (1–${LIST_PAGE_MAX}), then follow the \`Link: <…>; rel="next"\` header until a page comes without one. Deleted instances cost a list nothing.`,
    tags,
    responses: {
      200: ok('The instances (one page of them when paging).', z.array(InstanceSummary), {
        ...rateLimitHeaders(true),
        Link: header('When paging and more instances may follow: `</api/v1/instances?per_page=N&page_token=T>; rel="next"`.', false),
      }),
      ...bearerErrors([400, 401, 403]),
    },
  },
} as const satisfies BearerRoute;

export const getInstanceRoute = {
  name: 'GetInstance',
  method: 'GET',
  path: '/api/v1/instances/{instance_id}',
  entry: 'functions/api/get-instance.ts',
  auth: 'bearer',
  console: true,
  params: instancePath,
  // Writes only to record a live power change it observed upstream.
  access: { tables: { ...requestGuardAccess, instances: ['GetItem', 'UpdateItem'] }, upstream: true, secrets: ['open'] },
  // Polled while a server boots, and each answer may read the live power state from the upstream, whose limit
  // (5,000 requests an hour per token) is shared with the workflows: a fifth of the stage's rate.
  throttle: { rateLimit: 100, burstLimit: 200 },
  doc: {
    operationId: 'getInstance',
    summary: 'One instance, with its live power state, SSH credentials and plan',
    description:
      "The detail form, with the power state read from the upstream server when it answers in time. Another account's instance is 404, like a missing one.",
    tags,
    responses: {
      200: ok('The instance.', InstanceDetail, { ...rateLimitHeaders(true), ...storedStateHeader }),
      ...bearerErrors([401, 403, 404]),
    },
  },
} as const satisfies BearerRoute;

export const deleteInstanceRoute = {
  name: 'DeleteInstance',
  method: 'DELETE',
  path: getInstanceRoute.path,
  entry: 'functions/api/delete-instance.ts',
  auth: 'bearer',
  console: true,
  params: instancePath,
  // The deletion ends the instance's billing: its last piece is booked on the account in the same write.
  access: mergeAccess(
    {
      tables: { ...requestGuardAccess, instances: ['GetItem', 'UpdateItem'], jobs: ['PutItem', 'UpdateItem'] },
      startsWorkflows: ['delete'],
    },
    checkpointAccess,
  ),
  doc: {
    operationId: 'deleteInstance',
    summary: 'Delete an instance: gone from the API at once, destroyed upstream asynchronously',
    description:
      'Removes the instance from the API at once (later reads are 404), releases its IPv4 address and destroys the upstream server asynchronously; follow `job_id` for progress.',
    tags,
    responses: { 200: ok('Deletion started.', DeleteResult, rateLimitHeaders(true)), ...bearerErrors([401, 403, 404]) },
  },
} as const satisfies BearerRoute;

export const updateInstanceRoute = {
  name: 'UpdateInstance',
  method: 'PATCH',
  path: getInstanceRoute.path,
  entry: 'functions/api/update-instance.ts',
  auth: 'bearer',
  idempotent: true,
  body: updateInstanceBodySchema,
  params: instancePath,
  access: {
    tables: {
      ...requestGuardAccess,
      instances: ['GetItem', 'UpdateItem'],
      idempotency: ['PutItem', 'UpdateItem', 'DeleteItem'],
    },
    secrets: ['open'],
  },
  doc: {
    operationId: 'updateInstance',
    summary: 'Rename an instance or change its labels',
    description:
      'Sets `project_name` and/or merges `labels` (JSON merge patch: a string sets a label, `null` removes it, labels not named stay). Changes nothing on the server and nothing billed; publishes `instance.updated`. Send an `Idempotency-Key` to make a retry safe.',
    tags,
    responses: {
      200: ok('The instance as updated.', InstanceDetail, { ...rateLimitHeaders(true), ...replayedHeader }),
      ...bearerErrors([400, 401, 403, 404, 409, 413, 422]),
    },
  },
} as const satisfies BearerRoute;

export const instanceActionRoute = {
  name: 'InstanceAction',
  method: 'POST',
  path: `${getInstanceRoute.path}/actions`,
  entry: 'functions/api/instance-action.ts',
  auth: 'bearer',
  console: true,
  idempotent: true,
  body: actionBodySchema,
  params: instancePath,
  access: {
    tables: {
      ...requestGuardAccess,
      instances: ['GetItem', 'UpdateItem'],
      jobs: ['GetItem', 'PutItem', 'UpdateItem'],
      // Capacity; and, reading a server the upstream does not find, the sweep's guard and its hourly allowance of losses.
      counters: ['GetItem', 'UpdateItem'],
      idempotency: ['PutItem', 'UpdateItem', 'DeleteItem'],
    },
    startsWorkflows: ['power', 'resize'],
    upstream: true,
  },
  // Worst case about 19.6 s: auth, idempotency and the claim (1 s), a cold token read (1 s), one 4 s read of the
  // server, three 4 s starts with up to 0.6 s of backoff, then the workflow start and settling (1 s). An attempt that would not end
  // 1.5 s before the budget is not sent, so the claim is always withdrawn or handed to the workflow.
  timeoutSeconds: 20,
  doc: {
    operationId: 'instanceAction',
    summary: 'power_on, power_off, reboot or resize',
    description:
      'Starts `power_on`, `power_off`, `reboot` or `resize` (with `flavor`; the disk can only grow). One action runs at a time per instance; follow `job_id` until it ends. Send an `Idempotency-Key` so that a retry never acts twice.',
    tags,
    responses: {
      200: ok('Accepted; follow job_id.', ActionResult, { ...rateLimitHeaders(true), ...replayedHeader }),
      ...bearerErrors([401, 404, 409, 413, 422, 502], actionErrorTexts),
      504: outcomeUnknown,
    },
  },
} as const satisfies BearerRoute;

export const getJobRoute = {
  name: 'GetJob',
  method: 'GET',
  path: '/api/v1/jobs/{job_id}',
  entry: 'functions/api/get-job.ts',
  auth: 'bearer',
  params: z.object({ job_id: z.string().meta({ description: 'The job id, as returned by create, an action or delete.' }) }),
  access: { tables: { jobs: ['GetItem'] } },
  // Polled until a job ends; one GetItem after auth, so it may take most of the stage's rate on its own.
  throttle: { rateLimit: 300, burstLimit: 600 },
  doc: {
    operationId: 'getJob',
    summary: 'Progress of a provision, action or delete (the caller’s own jobs only)',
    description:
      "The status of a provision, action or delete: `running` until it ends `succeeded` or `failed` (with `error`). Only the caller's own jobs; anything else is 404.",
    tags: ['jobs'],
    responses: { 200: ok('The job.', Job, rateLimitHeaders(true)), ...bearerErrors([401, 403, 404]) },
  },
} as const satisfies BearerRoute;

export const listInstanceJobsRoute = {
  name: 'ListInstanceJobs',
  method: 'GET',
  path: `${getInstanceRoute.path}/jobs`,
  entry: 'functions/api/list-instance-jobs.ts',
  auth: 'bearer',
  params: instancePath,
  access: { tables: { instances: ['GetItem'], jobs: ['Query', 'BatchGetItem'] } },
  doc: {
    operationId: 'listInstanceJobs',
    summary: "An instance's latest jobs, newest first",
    description:
      "The latest 50 provisions, actions and deletes of one of the caller's instances, newest first, each as `GET /api/v1/jobs/{job_id}` shows it. Another account's instance is 404, like a missing or deleted one.",
    tags: ['jobs'],
    responses: { 200: ok('The jobs.', z.array(Job), rateLimitHeaders(true)), ...bearerErrors([401, 403, 404]) },
  },
} as const satisfies BearerRoute;

export const instanceRoutes = [
  listInstanceJobsRoute,
  createInstanceRoute,
  listInstancesRoute,
  getInstanceRoute,
  updateInstanceRoute,
  deleteInstanceRoute,
  instanceActionRoute,
  getJobRoute,
] as const;
