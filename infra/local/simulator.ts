/**
 * A local DigitalOcean: the API v2 subset the upstream driver uses (`shared/upstream/digitalocean.ts`), answering
 * with bodies shaped as in DigitalOcean's OpenAPI description (test/fixtures/digitalocean-v2-droplets.openapi.json).
 *
 * Served: GET/POST /v2/droplets (GET honours tag_name, page, per_page), DELETE /v2/droplets?tag_name=T,
 * GET/DELETE /v2/droplets/{id}, POST /v2/droplets/{id}/actions (power_on, power_off, shutdown, reboot, resize),
 * GET /v2/droplets/{id}/actions (the droplet's actions, newest first, paged), GET /v2/actions/{id}, GET /v2/sizes. With a token set, /v2 calls without `Authorization: Bearer <token>` get 401.
 * Nothing runs on timers: a droplet is `new` until bootMs after its creation, then `active` with its public IPv4;
 * an action is `in-progress` for actionMs, then `completed` with its effect applied, as seen by the next call.
 *
 * With `ssh` set, each droplet's address is a loopback address of its own (127.0.113.x) with an SSH daemon on
 * `ssh.port`: it answers with an SSH identification line from sshDelayMs after the droplet comes up (boot, power-on,
 * reboot) while it runs, so `ssh -p <port> root@<ipv4>` reaches it (Linux routes all of 127.0.0.0/8 to loopback).
 *
 * Control endpoints (no auth; JSON bodies; 204 unless noted):
 *   POST /_sim/faults   any of:
 *                         {"fail_next": N, "status": 500, "match": "POST /v2/droplets"}  the next N /v2 calls whose
 *                           "METHOD /path" starts with match (default: any) answer status with DigitalOcean's error
 *                           body, 429 with Retry-After; replaces an earlier fail_next
 *                         {"fail_creates": true|false}  every POST /v2/droplets answers 422 while on
 *                         {"latency_ms": N, "latency_match": "POST /v2/droplets"}  every /v2 call (or those
 *                           whose "METHOD /path" starts with latency_match) waits N ms, then is carried out and
 *                           answered: a client that gave up meanwhile finds it done later, as on DigitalOcean
 *                         {"ssh_silent": true|false}  while on, no server's SSH answers
 *                         {"unlisted": [ID, …] | "all"}  listings (GET /v2/droplets) leave these droplets (or
 *                           every one) out, as an inconsistent listing does; they exist, and reads and deletes by id
 *                           find them
 *   POST /_sim/config   {"boot_ms": N, "action_ms": N, "ssh_delay_ms": N}  timings for droplets and actions started
 *                         from then on (ssh_delay_ms: how long after a server comes up its SSH answers)
 *   POST /_sim/droplets/{id}/power_off               the server shuts down from inside (status off)
 *   POST /_sim/droplets/{id}/power_on                the server is powered on out of band (status active)
 *   POST /_sim/droplets/{id}/resize  {"size": S}     the server is resized out of band (size and disk)
 *   POST /_sim/droplets/{id}/destroy                 the server is destroyed out of band
 *   POST /_sim/reset                                  forgets droplets, actions, faults and call counts; restores
 *                                                     the timings given at start
 *   GET  /_sim/state                                  200, SimulatorState: the droplets, the calls received per
 *                                                     "METHOD /path/template", and every droplet destroyed
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import * as z from 'zod';
import { SshListeners } from './ssh-listeners';

export interface SimulatorOptions {
  /** Default: a free port chosen by the kernel. */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** How long a new droplet stays `new`. Default 20 000 ms. */
  readonly bootMs?: number;
  /** How long an action stays `in-progress`. Default bootMs / 4. */
  readonly actionMs?: number;
  /** When set, /v2 calls must carry it (or one of them: several tokens of one account) as a Bearer token. */
  readonly token?: string | readonly string[];
  /** First three octets of the public addresses handed out. Default 203.0.113 (a documentation range). */
  readonly ipv4Base?: string;
  /**
   * The account's droplet limit. Default 250, DigitalOcean's; a benchmark fleet raises it (addresses past the first
   * /24 then come from the /24s after it, never reused).
   */
  readonly maxDroplets?: number;
  /**
   * Give each droplet an SSH daemon on its own loopback address (see SshListeners), listening on `port` (default: the
   * simulator's own port number, free on every other loopback address since it is taken on 127.0.0.1) and answering
   * `delayMs` after the droplet comes up (default bootMs / 4). Unset: droplets get documentation addresses, no SSH.
   */
  readonly ssh?: { readonly port?: number; readonly delayMs?: number };
}

type SimulatedDropletStatus = 'new' | 'active' | 'off';

export interface SimulatedDroplet {
  readonly id: number;
  readonly name: string;
  readonly status: SimulatedDropletStatus;
  readonly sizeSlug: string;
  readonly diskGb: number;
  readonly ipv4: string | null;
  readonly tags: readonly string[];
  /** The cloud-init user data the droplet was created with. */
  readonly userData: string | null;
}

interface SimulatorState {
  readonly droplets: SimulatedDroplet[];
  /** Calls received per "METHOD /path/template", e.g. "GET /v2/droplets/{id}"; faulted and refused ones included. */
  readonly calls: Record<string, number>;
  /** Calls that got past authentication, per configured token, in the order the tokens were given. */
  readonly callsByToken: number[];
  /** Every droplet destroyed since start (or reset), in order: through the API, or out of band. */
  readonly destroyed: DestroyedDroplet[];
}

export interface DestroyedDroplet {
  readonly id: number;
  readonly tags: readonly string[];
  readonly via: 'api' | 'out-of-band';
  readonly at: number;
}

type FaultSettings = z.input<typeof faultsSchema>;
type OutOfBandChange = { readonly type: 'power_off' | 'power_on' | 'destroy' } | { readonly type: 'resize'; readonly size: string };
type TimingSettings = z.input<typeof configSchema>;

/** The control endpoints, typed; each call fails unless the simulator accepts it. */
interface SimulatorControl {
  faults(settings: FaultSettings): Promise<void>;
  config(settings: TimingSettings): Promise<void>;
  powerOff(dropletId: number): Promise<void>;
  /** Changes a droplet behind the service's back, as its owner could from DigitalOcean's console. */
  outOfBand(dropletId: number, change: OutOfBandChange): Promise<void>;
  reset(): Promise<void>;
}

export interface Simulator {
  readonly url: string;
  /** The port every droplet's SSH daemon listens on, when droplets have SSH. */
  readonly sshPort: number | undefined;
  readonly control: SimulatorControl;
  /** The same as GET /_sim/state. */
  state(): SimulatorState;
  close(): Promise<void>;
}

/** Where droplets' addresses come from when they have SSH: loopback addresses, each its own. */
const LOOPBACK_BASE = '127.0.113';
/** DigitalOcean's default droplet limit, which also keeps the handed-out addresses within one /24. */
const MAX_DROPLETS = 250;
/** Completed actions beyond this many are forgotten, oldest first. */
const MAX_ACTIONS = 5_000;
const MAX_BODY_BYTES = 1 << 20;
/** DigitalOcean's limit on user data. */
const MAX_USER_DATA_BYTES = 64 * 1024;
const DROPLET_NAME = /^[a-zA-Z0-9]?[a-z0-9A-Z.-]*[a-z0-9A-Z]$/;

interface Size {
  readonly slug: string;
  readonly vcpus: number;
  readonly memory: number;
  readonly disk: number;
  readonly transfer: number;
  readonly priceMonthly: number;
  readonly available: boolean;
}

const SIZES: readonly Size[] = [
  { slug: 's-1vcpu-1gb', vcpus: 1, memory: 1024, disk: 25, transfer: 1, priceMonthly: 6, available: false },
  { slug: 's-1vcpu-2gb', vcpus: 1, memory: 2048, disk: 30, transfer: 2, priceMonthly: 12, available: true },
  { slug: 's-2vcpu-2gb', vcpus: 2, memory: 2048, disk: 35, transfer: 3, priceMonthly: 18, available: true },
  { slug: 's-2vcpu-4gb', vcpus: 2, memory: 4096, disk: 40, transfer: 4, priceMonthly: 24, available: true },
  { slug: 's-4vcpu-8gb', vcpus: 4, memory: 8192, disk: 80, transfer: 5, priceMonthly: 48, available: true },
  { slug: 's-8vcpu-16gb', vcpus: 8, memory: 16384, disk: 160, transfer: 6, priceMonthly: 96, available: true },
  { slug: 's-16vcpu-32gb', vcpus: 16, memory: 32768, disk: 320, transfer: 8, priceMonthly: 192, available: true },
];

const REGIONS: Readonly<Record<string, string>> = {
  nyc3: 'New York 3',
  ams3: 'Amsterdam 3',
  fra1: 'Frankfurt 1',
  lon1: 'London 1',
  sfo3: 'San Francisco 3',
  sgp1: 'Singapore 1',
  tor1: 'Toronto 1',
  syd1: 'Sydney 1',
};

const IMAGES: Readonly<Record<string, { readonly id: number; readonly name: string }>> = {
  'ubuntu-24-04-x64': { id: 160_232_537, name: '24.04 (LTS) x64' },
};

interface Timings {
  bootMs: number;
  actionMs: number;
  /** From a droplet's coming up to its SSH answering. */
  sshDelayMs: number;
}

interface Droplet {
  readonly id: number;
  readonly name: string;
  readonly region: string;
  readonly image: string;
  readonly tags: readonly string[];
  readonly features: readonly string[];
  readonly createdAt: number;
  /** Handed out at creation, shown once booted. */
  readonly ipv4: string;
  size: Size;
  diskGb: number;
  booted: boolean;
  poweredOn: boolean;
  /** From when its SSH answers, while it runs (ms since the epoch). */
  sshFrom: number;
  readonly userData: string | null;
}

interface Action {
  readonly id: number;
  readonly type: string;
  readonly dropletId: number;
  readonly region: string;
  readonly startedAt: number;
  readonly completesAt: number;
  completed: boolean;
  /** Applied when the action completes, `at` its completion time. */
  readonly effect: (droplet: Droplet, at: number) => void;
}

/** A refusal, answered with DigitalOcean's error body. */
class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly id: string,
    message: string,
  ) {
    super(message);
  }
}

const notFound = () => new ApiError(404, 'not_found', 'The resource you were accessing could not be found.');
const unprocessable = (message: string) => new ApiError(422, 'unprocessable_entity', message);

const createRequestSchema = z.object({
  name: z.string().max(255).regex(DROPLET_NAME),
  region: z.string().optional(),
  size: z.string(),
  image: z.union([z.string(), z.int()]),
  user_data: z.string().optional(),
  tags: z.array(z.string()).nullish(),
  ipv6: z.boolean().optional(),
  monitoring: z.boolean().optional(),
});
type CreateRequest = z.infer<typeof createRequestSchema>;

const actionRequestSchema = z.discriminatedUnion('type', [
  z.object({ type: z.enum(['power_on', 'power_off', 'shutdown', 'reboot']) }),
  z.object({ type: z.literal('resize'), size: z.string(), disk: z.boolean().optional() }),
]);
type ActionRequest = z.infer<typeof actionRequestSchema>;

const faultsSchema = z.strictObject({
  fail_next: z.int().min(0).max(1_000).optional(),
  status: z.int().min(400).max(599).optional(),
  match: z.string().max(200).optional(),
  fail_creates: z.boolean().optional(),
  latency_ms: z.int().min(0).max(60_000).optional(),
  latency_match: z.string().max(200).optional(),
  ssh_silent: z.boolean().optional(),
  unlisted: z.union([z.array(z.int()).max(1_000), z.literal('all')]).optional(),
});

const configSchema = z.strictObject({
  boot_ms: z.int().min(0).max(3_600_000).optional(),
  action_ms: z.int().min(0).max(3_600_000).optional(),
  ssh_delay_ms: z.int().min(0).max(3_600_000).optional(),
});

interface Faults {
  failNext: { remaining: number; status: number; match: string };
  failCreates: boolean;
  latency: { ms: number; match: string };
  sshSilent: boolean;
  unlisted: ReadonlySet<number> | 'all';
}

const noFaults = (): Faults => ({
  failNext: { remaining: 0, status: 500, match: '' },
  failCreates: false,
  latency: { ms: 0, match: '' },
  sshSilent: false,
  unlisted: new Set(),
});

/** The simulated account: droplets and actions, advanced lazily by `settle`. */
class Cloud {
  private readonly droplets = new Map<number, Droplet>();
  private readonly actions = new Map<number, Action>();
  readonly destroyed: DestroyedDroplet[] = [];
  private nextDropletId = 300_000_001;
  private nextActionId = 2_000_000_001;
  timings: Timings;

  private nextWideAddress = 0;

  constructor(
    private readonly initialTimings: Timings,
    readonly ipv4Base: string,
    private readonly maxDroplets: number,
    private readonly ssh: SshListeners | undefined,
  ) {
    this.timings = { ...initialTimings };
  }

  reset(): void {
    for (const droplet of this.droplets.values()) this.ssh?.close(droplet.ipv4);
    this.droplets.clear();
    this.actions.clear();
    this.destroyed.length = 0;
    this.timings = { ...this.initialTimings };
  }

  /** Completes every action whose time has come, applying its effect. */
  settle(now: number): void {
    for (const action of this.actions.values()) {
      if (action.completed || action.completesAt > now) continue;
      action.completed = true;
      const droplet = this.droplets.get(action.dropletId);
      if (droplet) action.effect(droplet, action.completesAt);
    }
  }

  list(tag: string | null): Droplet[] {
    return [...this.droplets.values()].filter((droplet) => tag === null || droplet.tags.includes(tag));
  }

  droplet(id: number): Droplet {
    const droplet = this.droplets.get(id);
    if (!droplet) throw notFound();
    return droplet;
  }

  /** Whether the SSH daemon at `address` answers at `now`. */
  sshAnswers(address: string, now: number, silent: boolean): boolean {
    this.settle(now);
    const droplet = [...this.droplets.values()].find((candidate) => candidate.ipv4 === address);
    return !silent && droplet !== undefined && dropletStatus(droplet) === 'active' && now >= droplet.sshFrom;
  }

  /** The droplet comes up at `at`: its SSH answers once it has started. */
  comesUp(droplet: Droplet, at: number): void {
    droplet.poweredOn = true;
    droplet.sshFrom = at + this.timings.sshDelayMs;
  }

  action(id: number): Action {
    const action = this.actions.get(id);
    if (!action) throw notFound();
    return action;
  }

  /** The droplet's actions, newest first. */
  actionsOf(dropletId: number): Action[] {
    this.droplet(dropletId);
    return [...this.actions.values()].filter((action) => action.dropletId === dropletId).reverse();
  }

  create(request: CreateRequest, now: number): { droplet: Droplet; action: Action } {
    const region = request.region ?? 'nyc3';
    const size = SIZES.find((candidate) => candidate.slug === request.size);
    if (!Object.hasOwn(REGIONS, region)) throw unprocessable('Region is not available.');
    if (!size?.available) throw unprocessable('Size is not available in this region.');
    if (!Object.hasOwn(IMAGES, String(request.image))) {
      throw unprocessable('You specified an invalid image for Droplet creation.');
    }
    if (Buffer.byteLength(request.user_data ?? '') > MAX_USER_DATA_BYTES) throw unprocessable('User data is too long.');
    if (this.droplets.size >= this.maxDroplets) {
      throw unprocessable('creating this/these droplet(s) will exceed your droplet limit');
    }
    const droplet: Droplet = {
      id: this.nextDropletId++,
      name: request.name,
      region,
      image: String(request.image),
      tags: request.tags ?? [],
      features: [...(request.monitoring ? ['monitoring'] : []), ...(request.ipv6 ? ['ipv6'] : [])],
      createdAt: now,
      ipv4: this.freeIpv4(),
      size,
      diskGb: size.disk,
      booted: false,
      poweredOn: true,
      sshFrom: Number.POSITIVE_INFINITY,
      userData: request.user_data ?? null,
    };
    this.droplets.set(droplet.id, droplet);
    this.ssh?.open(droplet.ipv4);
    const action = this.record(droplet, 'create', now, this.timings.bootMs, (booted, at) => {
      booted.booted = true;
      this.comesUp(booted, at);
    });
    return { droplet, action };
  }

  startAction(dropletId: number, request: ActionRequest, now: number): Action {
    const droplet = this.droplet(dropletId);
    if (this.hasPendingAction(dropletId)) throw unprocessable('Droplet already has a pending event.');
    const effect = request.type === 'resize' ? resizeEffect(droplet, request) : this.powerEffect(request.type);
    return this.record(droplet, request.type, now, this.timings.actionMs, effect);
  }

  delete(ids: readonly number[], via: DestroyedDroplet['via'], now: number): void {
    for (const id of ids) {
      const droplet = this.droplets.get(id);
      if (!droplet) continue;
      this.droplets.delete(id);
      this.ssh?.close(droplet.ipv4);
      this.destroyed.push({ id, tags: droplet.tags, via, at: now });
    }
  }

  private powerEffect(type: 'power_on' | 'power_off' | 'shutdown' | 'reboot'): Action['effect'] {
    if (type === 'power_on' || type === 'reboot') return (droplet, at) => this.comesUp(droplet, at);
    return (droplet) => (droplet.poweredOn = false);
  }

  private hasPendingAction(dropletId: number): boolean {
    return [...this.actions.values()].some((action) => action.dropletId === dropletId && !action.completed);
  }

  private record(droplet: Droplet, type: string, now: number, durationMs: number, effect: Action['effect']): Action {
    const action: Action = {
      id: this.nextActionId++,
      type,
      dropletId: droplet.id,
      region: droplet.region,
      startedAt: now,
      completesAt: now + durationMs,
      completed: false,
      effect,
    };
    this.actions.set(action.id, action);
    this.forgetOldActions();
    return action;
  }

  private forgetOldActions(): void {
    for (const [id, action] of this.actions) {
      if (this.actions.size <= MAX_ACTIONS) return;
      if (action.completed) this.actions.delete(id);
    }
  }

  private freeIpv4(): string {
    if (this.droplets.size >= 253) {
      const [a = 0, b = 0, c = 0] = this.ipv4Base.split('.').map(Number);
      const n = this.nextWideAddress++;
      const third = c + 1 + Math.floor(n / 253);
      return `${a}.${(b + Math.floor(third / 256)) % 256}.${third % 256}.${2 + (n % 253)}`;
    }
    const used = new Set([...this.droplets.values()].map((droplet) => droplet.ipv4));
    let octet = 2;
    while (used.has(`${this.ipv4Base}.${octet}`)) octet++;
    return `${this.ipv4Base}.${octet}`;
  }
}

function dropletStatus(droplet: Droplet): SimulatedDropletStatus {
  if (!droplet.booted) return 'new';
  return droplet.poweredOn ? 'active' : 'off';
}

/** Checks a resize as DigitalOcean does when it is asked for, and answers what it does once completed. */
function resizeEffect(droplet: Droplet, request: { size: string; disk?: boolean | undefined }): Action['effect'] {
  const size = SIZES.find((candidate) => candidate.slug === request.size);
  if (!size?.available) throw unprocessable('Size is not available in this region.');
  if (dropletStatus(droplet) !== 'off') {
    throw unprocessable('Droplet is currently on. Please power it off to run this event.');
  }
  if (request.disk && size.disk < droplet.diskGb) throw unprocessable('The disk of a Droplet cannot be made smaller.');
  return (resized) => {
    resized.size = size;
    if (request.disk) resized.diskGb = size.disk;
  };
}

/** Seconds precision, as DigitalOcean writes its timestamps. */
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

const availableSizeSlugs = () => SIZES.filter((size) => size.available).map((size) => size.slug);

const regionJson = (slug: string) => ({
  name: REGIONS[slug] ?? slug,
  slug,
  features: ['backups', 'ipv6', 'metadata', 'install_agent', 'storage', 'image_transfer'],
  available: true,
  sizes: availableSizeSlugs(),
});

const sizeJson = (size: Size) => ({
  slug: size.slug,
  memory: size.memory,
  vcpus: size.vcpus,
  disk: size.disk,
  transfer: size.transfer,
  price_monthly: size.priceMonthly,
  price_hourly: Math.round((size.priceMonthly / 672) * 100_000) / 100_000,
  regions: size.available ? Object.keys(REGIONS) : [],
  available: size.available,
  description: 'Basic',
  disk_info: [{ type: 'local', size: { amount: size.disk, unit: 'gib' } }],
});

const imageJson = (slug: string) => ({
  id: IMAGES[slug]?.id ?? 0,
  name: IMAGES[slug]?.name ?? slug,
  type: 'base',
  distribution: 'Ubuntu',
  slug,
  public: true,
  regions: Object.keys(REGIONS),
  created_at: '2024-04-25T15:49:09Z',
  min_disk_size: 15,
  size_gigabytes: 2.48,
  description: 'Ubuntu 24.04 x64',
  tags: [],
  status: 'available',
  error_message: '',
});

function dropletJson(droplet: Droplet, ipv4Base: string) {
  const publicNetwork = {
    ip_address: droplet.ipv4,
    netmask: '255.255.255.0',
    gateway: `${ipv4Base}.1`,
    type: 'public',
  };
  return {
    id: droplet.id,
    name: droplet.name,
    memory: droplet.size.memory,
    vcpus: droplet.size.vcpus,
    disk: droplet.diskGb,
    disk_info: [{ type: 'local', size: { amount: droplet.diskGb, unit: 'gib' } }],
    locked: false,
    status: dropletStatus(droplet),
    kernel: null,
    created_at: iso(droplet.createdAt),
    features: droplet.features,
    backup_ids: [],
    next_backup_window: null,
    snapshot_ids: [],
    image: imageJson(droplet.image),
    volume_ids: [],
    size: sizeJson(droplet.size),
    size_slug: droplet.size.slug,
    networks: { v4: droplet.booted ? [publicNetwork] : [], v6: [] },
    region: regionJson(droplet.region),
    tags: droplet.tags,
    vpc_uuid: '5f8e3a2c-7b1d-4c6e-9a0f-3d2b1c4e5a6f',
  };
}

const actionJson = (action: Action) => ({
  id: action.id,
  status: action.completed ? 'completed' : 'in-progress',
  type: action.type,
  started_at: iso(action.startedAt),
  completed_at: action.completed ? iso(action.completesAt) : null,
  resource_id: action.dropletId,
  resource_type: 'droplet',
  region: regionJson(action.region),
  region_slug: action.region,
});

interface Reply {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

interface Call {
  /** The `{id}` path parameter, 0 for paths without one. */
  readonly id: number;
  readonly url: URL;
  readonly body: unknown;
  readonly now: number;
}

interface Route {
  readonly method: string;
  readonly template: string;
  readonly pattern: RegExp;
  readonly handle: (call: Call) => Reply;
}

function route(method: string, template: string, handle: Route['handle']): Route {
  return { method, template, pattern: new RegExp(`^${template.replace(/\{\w+\}/g, '(\\d+)')}/?$`), handle };
}

function findRoute(routes: readonly Route[], method: string, pathname: string) {
  for (const candidate of routes) {
    const match = candidate.pattern.exec(pathname);
    if (match && candidate.method === method) return { route: candidate, id: Number(match[1] ?? 0) };
  }
  return undefined;
}

function parse<T>(schema: z.ZodType<T>, body: unknown, status = 422): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const message = `${issue?.path.join('.') || 'body'}: ${issue?.message}`;
  throw new ApiError(status, status === 422 ? 'unprocessable_entity' : 'bad_request', message);
}

/** One page of `items` with DigitalOcean's `links` and `meta`; links point at this simulator. */
function paginate<T>(items: readonly T[], url: URL, selfUrl: string) {
  const perPage = Math.min(200, Math.max(1, Number.parseInt(url.searchParams.get('per_page') ?? '', 10) || 20));
  const page = Math.max(1, Number.parseInt(url.searchParams.get('page') ?? '', 10) || 1);
  const lastPage = Math.max(1, Math.ceil(items.length / perPage));
  const link = (target: number) => {
    const query = new URLSearchParams(url.searchParams);
    query.set('page', String(target));
    query.set('per_page', String(perPage));
    return `${selfUrl}${url.pathname}?${query}`;
  };
  const pages: Record<string, string> = {};
  if (page > 1) Object.assign(pages, { first: link(1), prev: link(Math.min(page - 1, lastPage)) });
  if (page < lastPage) Object.assign(pages, { next: link(page + 1), last: link(lastPage) });
  return { items: items.slice((page - 1) * perPage, page * perPage), links: { pages }, meta: { total: items.length } };
}

function apiRoutes(cloud: Cloud, faults: Faults, selfUrl: string): Route[] {
  return [
    route('GET', '/v2/droplets', ({ url }) => {
      const unlisted = faults.unlisted;
      const listed = cloud.list(url.searchParams.get('tag_name')).filter((d) => unlisted !== 'all' && !unlisted.has(d.id));
      const { items, links, meta } = paginate(listed, url, selfUrl);
      return { status: 200, body: { droplets: items.map((d) => dropletJson(d, cloud.ipv4Base)), links, meta } };
    }),
    route('POST', '/v2/droplets', ({ body, now }) => {
      if (faults.failCreates) throw unprocessable('Droplet creation failed (fault injected by the simulator).');
      const { droplet, action } = cloud.create(parse(createRequestSchema, body), now);
      const actionLink = { id: action.id, rel: 'create', href: `${selfUrl}/v2/actions/${action.id}` };
      return { status: 202, body: { droplet: dropletJson(droplet, cloud.ipv4Base), links: { actions: [actionLink] } } };
    }),
    route('DELETE', '/v2/droplets', ({ url, now }) => {
      const tag = url.searchParams.get('tag_name');
      if (!tag) throw new ApiError(400, 'bad_request', 'tag_name is required.');
      cloud.delete(
        cloud.list(tag).map((droplet) => droplet.id),
        'api',
        now,
      );
      return { status: 204 };
    }),
    route('GET', '/v2/droplets/{id}', ({ id }) => ({
      status: 200,
      body: { droplet: dropletJson(cloud.droplet(id), cloud.ipv4Base) },
    })),
    route('DELETE', '/v2/droplets/{id}', ({ id, now }) => {
      cloud.delete([cloud.droplet(id).id], 'api', now);
      return { status: 204 };
    }),
    route('POST', '/v2/droplets/{id}/actions', ({ id, body, now }) => ({
      status: 201,
      body: { action: actionJson(cloud.startAction(id, parse(actionRequestSchema, body), now)) },
    })),
    route('GET', '/v2/droplets/{id}/actions', ({ id, url }) => {
      const { items, links, meta } = paginate(cloud.actionsOf(id), url, selfUrl);
      return { status: 200, body: { actions: items.map(actionJson), links, meta } };
    }),
    route('GET', '/v2/actions/{id}', ({ id }) => ({ status: 200, body: { action: actionJson(cloud.action(id)) } })),
    route('GET', '/v2/sizes', ({ url }) => {
      const { items, links, meta } = paginate(SIZES, url, selfUrl);
      return { status: 200, body: { sizes: items.map(sizeJson), links, meta } };
    }),
  ];
}

function controlRoutes(cloud: Cloud, faults: Faults, state: () => SimulatorState, forgetCalls: () => void): Route[] {
  return [
    route('POST', '/_sim/faults', ({ body }) => {
      const settings = parse(faultsSchema, body ?? {}, 400);
      if (settings.fail_next !== undefined) {
        faults.failNext = { remaining: settings.fail_next, status: settings.status ?? 500, match: settings.match ?? '' };
      }
      if (settings.fail_creates !== undefined) faults.failCreates = settings.fail_creates;
      if (settings.latency_ms !== undefined) faults.latency = { ms: settings.latency_ms, match: settings.latency_match ?? '' };
      if (settings.ssh_silent !== undefined) faults.sshSilent = settings.ssh_silent;
      if (settings.unlisted !== undefined) faults.unlisted = settings.unlisted === 'all' ? 'all' : new Set(settings.unlisted);
      return { status: 204 };
    }),
    route('POST', '/_sim/config', ({ body }) => {
      const settings = parse(configSchema, body ?? {}, 400);
      cloud.timings.bootMs = settings.boot_ms ?? cloud.timings.bootMs;
      cloud.timings.actionMs = settings.action_ms ?? cloud.timings.actionMs;
      cloud.timings.sshDelayMs = settings.ssh_delay_ms ?? cloud.timings.sshDelayMs;
      return { status: 204 };
    }),
    route('POST', '/_sim/droplets/{id}/power_off', ({ id }) => {
      cloud.droplet(id).poweredOn = false;
      return { status: 204 };
    }),
    route('POST', '/_sim/droplets/{id}/power_on', ({ id, now }) => {
      cloud.comesUp(cloud.droplet(id), now);
      return { status: 204 };
    }),
    route('POST', '/_sim/droplets/{id}/resize', ({ id, body }) => {
      const droplet = cloud.droplet(id);
      const { size: slug } = parse(z.strictObject({ size: z.string() }), body, 400);
      const size = SIZES.find((candidate) => candidate.slug === slug && candidate.available);
      if (!size) throw unprocessable('Size is not available in this region.');
      droplet.size = size;
      droplet.diskGb = Math.max(droplet.diskGb, size.disk);
      return { status: 204 };
    }),
    route('POST', '/_sim/droplets/{id}/destroy', ({ id, now }) => {
      cloud.delete([cloud.droplet(id).id], 'out-of-band', now);
      return { status: 204 };
    }),
    route('POST', '/_sim/reset', () => {
      cloud.reset();
      Object.assign(faults, noFaults());
      forgetCalls();
      return { status: 204 };
    }),
    route('GET', '/_sim/state', () => ({ status: 200, body: state() })),
  ];
}

const errorMessages: Readonly<Record<number, { id: string; message: string }>> = {
  429: { id: 'too_many_requests', message: 'API rate limit exceeded.' },
  500: { id: 'server_error', message: 'Unexpected server-side error' },
};

/** The reply for an injected failure, when the call matches the pending one. */
function injectedFailure(faults: Faults, method: string, pathname: string): Reply | undefined {
  const failNext = faults.failNext;
  if (failNext.remaining === 0 || !`${method} ${pathname}`.startsWith(failNext.match)) return undefined;
  failNext.remaining--;
  const known = errorMessages[failNext.status] ?? { id: 'simulated_error', message: 'Simulated failure.' };
  const error = new ApiError(failNext.status, known.id, known.message);
  return { ...errorReply(error), headers: failNext.status === 429 ? { 'retry-after': '1' } : {} };
}

function errorReply(error: ApiError): Reply {
  return { status: error.status, body: { id: error.id, message: error.message, request_id: randomUUID() } };
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'request_entity_too_large', 'The request body is too large.');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'bad_request', 'The request body is not valid JSON.');
  }
}

function send(response: ServerResponse, reply: Reply): void {
  const body = reply.body === undefined ? '' : JSON.stringify(reply.body);
  response.writeHead(reply.status, {
    // DigitalOcean labels even its empty 204 answers as JSON.
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    ...reply.headers,
  });
  response.end(body);
}

/** Control of a simulator at `url`, in this process or another. */
function simulatorControl(url: string): SimulatorControl {
  const post = async (path: string, body: unknown = {}) => {
    const response = await fetch(`${url}/_sim/${path}`, { method: 'POST', body: JSON.stringify(body) });
    if (response.status !== 204) throw new Error(`simulator ${path} answered ${response.status}: ${await response.text()}`);
  };
  return {
    faults: (settings) => post('faults', settings),
    config: (settings) => post('config', settings),
    powerOff: (dropletId) => post(`droplets/${dropletId}/power_off`),
    outOfBand: (dropletId, change) => post(`droplets/${dropletId}/${change.type}`, change.type === 'resize' ? { size: change.size } : {}),
    reset: () => post('reset'),
  };
}

function snapshot(cloud: Cloud, calls: ReadonlyMap<string, number>, callsByToken: readonly number[]): SimulatorState {
  cloud.settle(Date.now());
  const droplets = cloud.list(null).map((droplet) => ({
    id: droplet.id,
    name: droplet.name,
    status: dropletStatus(droplet),
    sizeSlug: droplet.size.slug,
    diskGb: droplet.diskGb,
    ipv4: droplet.booted ? droplet.ipv4 : null,
    tags: droplet.tags,
    userData: droplet.userData,
  }));
  return { droplets, calls: Object.fromEntries(calls), callsByToken: [...callsByToken], destroyed: [...cloud.destroyed] };
}

/** Listens and answers the server's base URL. */
async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('simulator has no TCP address');
  return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const bootMs = options.bootMs ?? 20_000;
  const ipv4Base = options.ipv4Base ?? (options.ssh ? LOOPBACK_BASE : '203.0.113');
  if (!/^\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(ipv4Base)) throw new Error('ipv4Base must be three octets, e.g. 203.0.113');
  const faults = noFaults();
  const calls = new Map<string, number>();
  const closing = new AbortController();
  const server = createServer();
  const url = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');
  const ssh: SshListeners | undefined = options.ssh
    ? new SshListeners(options.ssh.port ?? Number(new URL(url).port), (address: string): boolean =>
        cloud.sshAnswers(address, Date.now(), faults.sshSilent),
      )
    : undefined;
  const cloud: Cloud = new Cloud(
    {
      bootMs,
      actionMs: Math.max(0, options.actionMs ?? Math.round(bootMs / 4)),
      sshDelayMs: Math.max(0, options.ssh?.delayMs ?? Math.round(bootMs / 4)),
    },
    ipv4Base,
    options.maxDroplets ?? MAX_DROPLETS,
    ssh,
  );
  const tokens = options.token === undefined ? [] : typeof options.token === 'string' ? [options.token] : [...options.token];
  const callsByToken = tokens.map(() => 0);
  const state = () => snapshot(cloud, calls, callsByToken);
  const apiTable = apiRoutes(cloud, faults, url);
  const controlTable = controlRoutes(cloud, faults, state, () => {
    calls.clear();
    callsByToken.fill(0);
  });

  /** Faults, authentication and routing for a /v2 call, in the order DigitalOcean's edge would meet them. */
  const answerApi = async (request: IncomingMessage, requestUrl: URL, body: unknown): Promise<Reply> => {
    const method = request.method ?? 'GET';
    const found = findRoute(apiTable, method, requestUrl.pathname);
    const key = `${method} ${found?.route.template ?? '(unmatched)'}`;
    calls.set(key, (calls.get(key) ?? 0) + 1);
    if (faults.latency.ms > 0 && `${method} ${requestUrl.pathname}`.startsWith(faults.latency.match)) {
      await delay(faults.latency.ms, undefined, { signal: closing.signal });
    }
    const failure = injectedFailure(faults, method, requestUrl.pathname);
    if (failure) return failure;
    if (tokens.length > 0) {
      const slot = tokens.findIndex((token) => request.headers.authorization === `Bearer ${token}`);
      if (slot < 0) return errorReply(new ApiError(401, 'unauthorized', 'Unable to authenticate you.'));
      callsByToken[slot] = (callsByToken[slot] ?? 0) + 1;
    }
    if (!found) throw notFound();
    const now = Date.now();
    cloud.settle(now);
    return found.route.handle({ id: found.id, url: requestUrl, body, now });
  };

  const answerControl = (request: IncomingMessage, requestUrl: URL, body: unknown): Reply => {
    const found = findRoute(controlTable, request.method ?? 'GET', requestUrl.pathname);
    if (!found) throw notFound();
    const now = Date.now();
    // What has completed by now happened before an out-of-band change made now.
    cloud.settle(now);
    return found.route.handle({ id: found.id, url: requestUrl, body, now });
  };

  const answer = async (request: IncomingMessage, response: ServerResponse) => {
    try {
      const requestUrl = new URL(request.url ?? '/', url);
      const body = await readJson(request);
      const isControl = requestUrl.pathname.startsWith('/_sim/');
      send(response, isControl ? answerControl(request, requestUrl, body) : await answerApi(request, requestUrl, body));
    } catch (error) {
      if (closing.signal.aborted || response.headersSent) return;
      const apiError = error instanceof ApiError ? error : new ApiError(500, 'server_error', 'Unexpected server-side error');
      send(response, errorReply(apiError));
    }
  };
  // Every failure is answered inside `answer`: nothing is left to reject.
  server.on('request', (request: IncomingMessage, response: ServerResponse) => void answer(request, response));

  return {
    url,
    sshPort: ssh?.port,
    control: simulatorControl(url),
    state,
    async close() {
      closing.abort();
      await ssh?.closeAll();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
