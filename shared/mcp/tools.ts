import * as z from '../model/zod';
import { catalog, flavorIds } from '../model/flavors';
import { getBillingRoute } from '../contracts/billing';
import {
  createInstanceRoute,
  deleteInstanceRoute,
  getInstanceRoute,
  instanceActionRoute,
  listInstancesRoute,
  updateInstanceRoute,
} from '../contracts/instances';
import { billingSchema } from '../schemas/billing';
import {
  actionResultSchema,
  createInstanceBodySchema,
  deleteResultSchema,
  instanceDetailSchema,
  instanceSummarySchema,
  listInstancesQuerySchema,
  updateInstanceBodySchema,
} from '../schemas/instances';
import type { RouteAnswer } from './route-calls';
import { waitForInstance, waitInputSchema, waitResultSchema, type Waiting } from './wait';

/** The four hints every tool declares (MCP's ToolAnnotations); a test holds each tool to its profile. */
interface ToolHints {
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
  readonly idempotentHint: boolean;
  readonly openWorldHint: boolean;
}

/** What a tool's run may do: call a route as the caller, and wait on an instance. */
export type ToolIo = Waiting;

/** A tool's answer: its structured content, or the route's refusal. */
export type ToolOutcome =
  { readonly ok: true; readonly value: Record<string, unknown> } | { readonly ok: false; readonly answer: RouteAnswer };

export interface ToolDefinition {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly input: z.ZodObject;
  readonly output: z.ZodObject;
  readonly hints: ToolHints;
  run(args: Record<string, unknown>, io: ToolIo): Promise<ToolOutcome>;
}

const reading: ToolHints = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
/** Acts on a customer's server upstream, as `destructive` says, repeatable to no further effect as `idempotent` says. */
const acting = (destructive: boolean, idempotent: boolean): ToolHints => ({
  readOnlyHint: false,
  destructiveHint: destructive,
  idempotentHint: idempotent,
  openWorldHint: true,
});

const instanceId = z.number().int().positive().meta({ description: 'The instance id.' });
const idempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .optional()
  .meta({ description: 'Retry-safe: the same key and arguments within 24 h act once.' });
const LABELS_TEXT = 'key: value labels, Kubernetes syntax, at most 32.';
const flavor = z.enum(flavorIds).meta({ description: 'A flavor from list_flavors.' });

/** A listed server: what tells servers apart and reaches them; no secrets (those are in create and get only). */
const listedInstance = instanceSummarySchema
  .pick({ instance_id: true, status: true, project_name: true, ipv4: true, ssh_port: true, labels: true, created_at: true })
  .extend({ flavor: z.string() });
const listed = (summary: Record<string, unknown>) =>
  listedInstance.parse({ ...stripTo(listedInstance, summary), flavor: (summary.plan as { flavor: string }).flavor });

/** The answer's body when the route took the call, else its refusal. */
function answered(answer: RouteAnswer, shape: (body: Record<string, unknown>) => Record<string, unknown> = (body) => body): ToolOutcome {
  return answer.status >= 200 && answer.status < 300
    ? { ok: true, value: shape(answer.body as Record<string, unknown>) }
    : { ok: false, answer };
}

const pathOf = (args: Record<string, unknown>) => ({ instance_id: String(args.instance_id) });
const keyOf = (args: Record<string, unknown>) => (typeof args.idempotency_key === 'string' ? { idempotencyKey: args.idempotency_key } : {});

/** The page token of a list's `Link: <…page_token=T>; rel="next"`, when more may follow. */
function nextPageToken(answer: RouteAnswer): string | null {
  const link = answer.headers.Link ?? answer.headers.link;
  const target = link && /<([^>]+)>;\s*rel="next"/.exec(link)?.[1];
  return target ? new URL(target, 'http://link').searchParams.get('page_token') : null;
}

function powerTool(
  name: string,
  type: 'power_on' | 'power_off' | 'reboot',
  title: string,
  description: string,
  hints: ToolHints,
): ToolDefinition {
  return {
    name,
    title,
    description: `${description} Answers the job at once; follow it with wait_for_instance.`,
    input: z.object({ instance_id: instanceId, idempotency_key: idempotencyKey }),
    output: actionResultSchema,
    hints,
    run: async (args, io) =>
      answered(await io.call({ contract: instanceActionRoute, pathParameters: pathOf(args), body: { type }, ...keyOf(args) })),
  };
}

/** What a rename or relabel answers: no secrets. */
const renamed = instanceSummarySchema.pick({ instance_id: true, status: true, project_name: true, labels: true });

const billingShown = billingSchema.pick({
  balance_usd: true,
  billing_paused: true,
  burn_rate_usd_per_hour: true,
  runway_hours: true,
  exhausts_at: true,
});

/**
 * The tools, at most twelve: each calls the REST route of the same work (its key checks, limits, idempotency and
 * texts), with input and output schemas taken from that route's contract.
 */
export const tools: readonly ToolDefinition[] = [
  {
    name: 'list_flavors',
    title: 'List flavors',
    description: 'Server sizes, with hourly USD prices.',
    input: z.object({}),
    output: z.object({
      flavors: z.array(
        z.object({ flavor: z.string(), vcpu: z.number(), ram_mb: z.number(), disk_gb: z.number(), hourly_price: z.number() }),
      ),
    }),
    hints: reading,
    run: async () => ({ ok: true, value: { flavors: [...catalog.values()].map((plan) => ({ ...plan })) } }),
  },
  {
    name: 'get_balance',
    title: 'Get balance',
    description: 'Prepaid balance, burn rate and runway. A deploy needs over $3.',
    input: z.object({}),
    output: billingShown,
    hints: reading,
    run: async (_, io) => answered(await io.call({ contract: getBillingRoute }), (body) => billingShown.parse(stripTo(billingShown, body))),
  },
  {
    name: 'create_instance',
    title: 'Create a server',
    description:
      'Deploys an Ubuntu 24.04 server, answering at once (pending). SECRET: the answer holds the root password and, without ssh_public_key, a generated private key. Then wait_for_instance.',
    input: createInstanceBodySchema.extend({
      flavor,
      user_data: createInstanceBodySchema.shape.user_data.meta({
        description: 'cloud-init user data (#cloud-config or a script), at most 64 KiB.',
      }),
      labels: createInstanceBodySchema.shape.labels.meta({ description: LABELS_TEXT }),
      idempotency_key: idempotencyKey,
    }),
    output: instanceDetailSchema,
    hints: acting(false, false),
    run: async ({ idempotency_key: _, ...body }, io) =>
      answered(await io.call({ contract: createInstanceRoute, body, ...keyOf({ idempotency_key: _ }) })),
  },
  {
    name: 'list_instances',
    title: 'List servers',
    description: 'Your servers (no secrets), optionally filtered.',
    input: listInstancesQuerySchema.pick({ status: true, name: true, label_selector: true, per_page: true, page_token: true }).extend({
      status: listInstancesQuerySchema.shape.status.meta({ description: 'active, or several: active,stopped' }),
      name: listInstancesQuerySchema.shape.name.meta({ description: 'Exact project_name.' }),
      label_selector: listInstancesQuerySchema.shape.label_selector.meta({ description: 'env=prod,tier!=db,gpu,!legacy' }),
      per_page: listInstancesQuerySchema.shape.per_page.meta({ description: 'Page size; without it, all.' }),
      page_token: listInstancesQuerySchema.shape.page_token.meta({ description: 'next_page_token of the page before.' }),
    }),
    output: z.object({ instances: z.array(listedInstance), next_page_token: z.string().nullable() }),
    hints: reading,
    run: async (args, io) => {
      const query = Object.fromEntries(Object.entries(args).map(([name, value]) => [name, String(value)]));
      const answer = await io.call({ contract: listInstancesRoute, query });
      return answered(answer, (body) => ({
        instances: (body as unknown as Record<string, unknown>[]).map(listed),
        next_page_token: nextPageToken(answer),
      }));
    },
  },
  {
    name: 'get_instance',
    title: 'Get a server',
    description: 'One server. SECRET: holds the root password and generated private key.',
    input: z.object({ instance_id: instanceId }),
    output: instanceDetailSchema,
    hints: reading,
    run: async (args, io) => answered(await io.call({ contract: getInstanceRoute, pathParameters: pathOf(args) })),
  },
  {
    name: 'wait_for_instance',
    title: 'Wait for a server',
    description:
      'Waits (at most timeout_s, 20 s) until the server is active (SSH answers), stopped or deleted, or fails. Call again while reached is false.',
    input: waitInputSchema,
    output: waitResultSchema,
    hints: reading,
    run: async (args, io) => waitForInstance(waitInputSchema.parse(args), io),
  },
  powerTool('power_on', 'power_on', 'Power on', 'Starts a stopped server.', acting(false, true)),
  powerTool('power_off', 'power_off', 'Power off', 'Stops a running server (billed at 25 % while stopped).', acting(true, true)),
  powerTool('reboot', 'reboot', 'Reboot', 'Reboots a running server.', acting(true, false)),
  {
    name: 'resize_instance',
    title: 'Resize a server',
    description: 'Moves a server to a larger flavor (the disk only grows); it is powered off meanwhile. Answers the job at once.',
    input: z.object({ instance_id: instanceId, flavor, idempotency_key: idempotencyKey }),
    output: actionResultSchema,
    hints: acting(true, true),
    run: async (args, io) =>
      answered(
        await io.call({
          contract: instanceActionRoute,
          pathParameters: pathOf(args),
          body: { type: 'resize', flavor: args.flavor },
          ...keyOf(args),
        }),
      ),
  },
  {
    name: 'delete_instance',
    title: 'Delete a server',
    description: 'Destroys a server and its data for good; billing stops. Needs confirm: true.',
    input: z.object({
      instance_id: instanceId,
      confirm: z.literal(true).meta({ description: 'Must be true: the server and its disk are destroyed.' }),
      idempotency_key: idempotencyKey,
    }),
    output: deleteResultSchema,
    hints: acting(true, true),
    run: async (args, io) => answered(await io.call({ contract: deleteInstanceRoute, pathParameters: pathOf(args), ...keyOf(args) })),
  },
  {
    name: 'update_instance',
    title: 'Rename or relabel',
    description: 'Sets project_name and/or merges labels (null removes one). The server itself is untouched.',
    input: z.strictObject({ instance_id: instanceId, ...updateInstanceBodySchema.shape, idempotency_key: idempotencyKey }),
    output: renamed,
    hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    run: async ({ instance_id, idempotency_key, ...body }, io) =>
      answered(
        await io.call({ contract: updateInstanceRoute, pathParameters: pathOf({ instance_id }), body, ...keyOf({ idempotency_key }) }),
        (detail) => renamed.parse(stripTo(renamed, detail)),
      ),
  },
];

/** The object's fields that the schema names. */
function stripTo(schema: z.ZodObject, body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.keys(schema.shape).map((name) => [name, body[name]]));
}
