import { DEFAULT_FAILED_AUTH_LIMIT } from './model/rate-limits';
import { tables, type TableName } from './tables';
import { workflowEnvVars, type WorkflowName } from './workflow-names';

/**
 * Everything that differs between AWS and the local runtime, read from an environment once by the runtime's wiring
 * (process.env on AWS; the local runtime's own record) and carried in its Platform. Nothing else reads process.env.
 */
export interface Config {
  readonly stage: string;
  readonly region: string;
  /** Set locally to DynamoDB Local; unset on AWS. */
  readonly dynamodbEndpoint: string | undefined;
  /** Set locally to the local Step Functions endpoint; unset on AWS. */
  readonly sfnEndpoint: string | undefined;
  readonly tableNames: Readonly<Record<TableName, string>>;
  readonly stateMachineArns: Readonly<Record<WorkflowName, string>>;
  readonly upstream: {
    readonly baseUrl: string;
    /** A literal token (local runtime), or the Secrets Manager secret that holds it (AWS). */
    readonly token: string | undefined;
    readonly tokenSecretArn: string | undefined;
    readonly timeoutMs: number;
    /** Per-call budget for upstream calls made while a client waits. */
    readonly requestTimeoutMs: number;
    /** Time budget for the live-status read in GET detail. */
    readonly liveStatusTimeoutMs: number;
    /** Servers per page of an upstream listing (at most 200, DigitalOcean's largest). */
    readonly pageSize: number;
    /** Pages of `pageSize` servers the fleet sweep reads per reconciler run (a pass resumes where the last run stopped). */
    readonly sweepPagesPerRun: number;
    /**
     * The request budget shared by every function: calls an hour, and the most in a burst. DigitalOcean allows 5,000
     * an hour and 250 a minute per token; the defaults keep below both (a burst plus a minute's refill < 250).
     */
    readonly budgetPerHour: number;
    readonly budgetBurst: number;
  };
  readonly instanceDomainSuffix: string;
  /** Customers' secrets are sealed with the KMS key (AWS) or the raw AES key in a local file (local runtime). */
  readonly secrets: {
    readonly kmsKeyArn: string | undefined;
    readonly localKeyFile: string | undefined;
  };
  /** Origins (scheme://host[:port]) of the service's own web pages when they are served from another host. */
  readonly trustedOrigins: readonly string[];
  /**
   * The value CloudFront puts in the origin-verify header of every request it forwards (AWS, behind the edge
   * firewall): any request without it did not come through the edge and is refused. Unset locally: no check.
   */
  readonly edgeOriginSecret: string | undefined;
  /** Requests that fail authentication allowed per source address in any 60 seconds; the next get 429. */
  readonly failedAuthLimit: number;
  readonly provisionTimeoutSeconds: number;
  /** How a server is found reachable: an SSH identification line read on its address and port. */
  readonly ssh: {
    /** The port customers' servers answer SSH on (the instances' `ssh_port`). */
    readonly port: number;
    /** How long after the upstream reports a server running its SSH may take to answer before the work fails. */
    readonly waitSeconds: number;
    /** One probe's budget: the connect and the identification line. */
    readonly probeTimeoutMs: number;
  };
  /** Budget for one upstream action (power, resize phase) or for destroying a server. */
  readonly actionTimeoutSeconds: number;
  /**
   * How long after a call whose answer was lost the upstream may still carry it out (a request in flight): the
   * service looks again for this long before it takes the call as not done.
   */
  readonly unknownOutcomeWindowSeconds: number;
  /**
   * When a server the upstream answers 404 for is concluded gone: after this many reads by id, the first and the
   * last this many seconds apart, and a listing by the instance's tag that does not show it either.
   */
  /**
   * When a deleted instance's server is confirmed destroyed: after this many reads by id since the delete began that
   * did not find it, the first and the last this many seconds apart.
   */
  readonly destruction: {
    readonly reads: number;
    readonly windowSeconds: number;
  };
  readonly absence: {
    readonly reads: number;
    readonly windowSeconds: number;
    /**
     * More servers concluded gone than this within an hour, by any path (sweep, customer actions, settling), trip the
     * sweep's guard: losses stop until an operator resumes. A token answering 404 for every server fails no fleet.
     */
    readonly maxLossesPerHour: number;
  };
  /**
   * Our servers that no instance owns: powered off when found, destroyed only after the grace period (unless an
   * operator spares them), and never more in one reconciler run than the guard allows.
   */
  readonly orphans: {
    readonly graceSeconds: number;
    /** More destructions than this in one run stop the sweep's destroying and alarm instead. */
    readonly maxDestroyedPerRun: number;
    /** More servers newly found orphaned than this in one run stop the sweep's power-offs and destructions, and alarm. */
    readonly maxFoundPerRun: number;
  };
  readonly defaultIpv4PoolSize: number;
  readonly defaultTierCapacity: number;
  readonly events: {
    /** The EventBridge bus events are published to (AWS); unset locally, where the runtime's own bus takes them. */
    readonly busName: string | undefined;
    /** The SQS queue of webhook deliveries (AWS); unset locally, where an in-process queue takes them. */
    readonly deliveryQueueUrl: string | undefined;
  };
  readonly webhooks: {
    /** Local development only: http:// and loopback receivers are accepted. The stack never sets it. */
    readonly allowLoopback: boolean;
    /** The first retry's delay; each later one doubles, up to retryMaxDelayMs. */
    readonly retryBaseMs: number;
    readonly retryMaxDelayMs: number;
    /** How long one event is retried for. */
    readonly retryWindowMs: number;
    /** An endpoint failing this long without a single success is disabled. */
    readonly disableAfterMs: number;
    readonly timeoutMs: number;
  };
  readonly console: ConsoleConfig;
  readonly payments: PaymentsConfig;
}

interface PaymentsConfig {
  /** The provider's API base: Stripe's own when unset (AWS), the local simulator on this machine. */
  readonly apiBase: string | undefined;
  /** Literal secrets (the local runtime); on AWS both come from the secret `secretArn` names. */
  readonly secretKey: string | undefined;
  readonly webhookSecret: string | undefined;
  /** The Secrets Manager secret holding `{"secret_key", "webhook_secret"}` (AWS). */
  readonly secretArn: string | undefined;
  /** How far a webhook signature's timestamp may be from now, either way. */
  readonly signatureToleranceSeconds: number;
  /** How long a checkout page stays open (Stripe allows 30 minutes to 24 hours). */
  readonly checkoutMinutes: number;
  readonly timeoutMs: number;
}

interface ConsoleConfig {
  /** The console's address for links in e-mails; configured, never taken from a request (a forged Host would redirect them). */
  readonly url: string;
  /** Local runtime only: write each outgoing message as a file here instead of sending it through SES. */
  readonly mailDir: string | undefined;
  readonly mailFrom: string;
  /** The queue of console e-mails to prepare and send; the local runtime puts its own in place. */
  readonly mailQueueUrl: string | undefined;
  /** The Secure cookie attribute; off only on the local http runtime. */
  readonly secureCookies: boolean;
  /** Brute-force limits, per 15-minute window but for the daily allowance of e-mails per address. */
  readonly limits: {
    readonly perAddress: number;
    readonly failedSignInsPerEmailAndSource: number;
    /** From all sources together, but the address's known sources, which only their own share above binds. */
    readonly failedSignInsPerEmail: number;
    readonly mailsPerEmailAndSource: number;
    readonly mailsPerEmailPerDay: number;
    /** Sources the address has signed in from take from this allowance once the one above is used up. */
    readonly mailsPerEmailPerDayToKnownSources: number;
  };
}

/** The environment a runtime is configured from: process.env on AWS, a record of its own in the local runtime. */
export type Environment = Readonly<Record<string, string | undefined>>;

function integerOf(env: Environment, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`);
  return value;
}

/** Reads the configuration from an environment; every setting not given takes its default. */
export function loadConfig(env: Environment): Config {
  const integer = (name: string, fallback: number) => integerOf(env, name, fallback);
  const tableNames = Object.fromEntries(Object.entries(tables).map(([name, def]) => [name, env[def.envVar] ?? ''])) as Record<
    TableName,
    string
  >;
  const stateMachineArns = Object.fromEntries(Object.entries(workflowEnvVars).map(([name, envVar]) => [name, env[envVar] ?? ''])) as Record<
    WorkflowName,
    string
  >;
  return {
    stage: env.STAGE ?? 'local',
    region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    dynamodbEndpoint: env.DYNAMODB_ENDPOINT || undefined,
    sfnEndpoint: env.SFN_ENDPOINT || undefined,
    tableNames,
    stateMachineArns,
    upstream: {
      baseUrl: env.UPSTREAM_BASE_URL ?? 'https://api.digitalocean.com',
      token: env.UPSTREAM_TOKEN || undefined,
      tokenSecretArn: env.UPSTREAM_TOKEN_SECRET_ARN || undefined,
      timeoutMs: integer('UPSTREAM_TIMEOUT_MS', 10_000),
      requestTimeoutMs: integer('UPSTREAM_REQUEST_TIMEOUT_MS', 4_000),
      liveStatusTimeoutMs: integer('LIVE_STATUS_TIMEOUT_MS', 800),
      pageSize: integer('UPSTREAM_PAGE_SIZE', 200),
      sweepPagesPerRun: integer('SWEEP_PAGES_PER_RUN', 60),
      budgetPerHour: integer('UPSTREAM_BUDGET_PER_HOUR', 4_000),
      budgetBurst: integer('UPSTREAM_BUDGET_BURST', 150),
    },
    instanceDomainSuffix: env.INSTANCE_DOMAIN_SUFFIX ?? 'vps.example.net',
    secrets: {
      kmsKeyArn: env.SECRETS_KMS_KEY_ARN || undefined,
      localKeyFile: env.SECRETS_KEY_FILE || undefined,
    },
    trustedOrigins: (env.TRUSTED_ORIGINS ?? '')
      .split(',')
      .map((origin) => origin.trim())
      .filter(Boolean),
    edgeOriginSecret: env.EDGE_ORIGIN_SECRET || undefined,
    failedAuthLimit: integer('FAILED_AUTH_LIMIT', DEFAULT_FAILED_AUTH_LIMIT),
    provisionTimeoutSeconds: integer('PROVISION_TIMEOUT_SECONDS', 600),
    ssh: {
      port: integer('SSH_PORT', 22),
      waitSeconds: integer('SSH_WAIT_SECONDS', 300),
      probeTimeoutMs: integer('SSH_PROBE_TIMEOUT_MS', 3_000),
    },
    actionTimeoutSeconds: integer('ACTION_TIMEOUT_SECONDS', 900),
    unknownOutcomeWindowSeconds: integer('UNKNOWN_OUTCOME_WINDOW_SECONDS', 60),
    destruction: {
      reads: integer('DESTRUCTION_CONFIRM_READS', 3),
      windowSeconds: integer('DESTRUCTION_CONFIRM_WINDOW_SECONDS', 30),
    },
    absence: {
      reads: integer('ABSENCE_READS', 3),
      windowSeconds: integer('ABSENCE_WINDOW_SECONDS', 600),
      maxLossesPerHour: integer('MAX_SERVERS_LOST_PER_HOUR', 10),
    },
    orphans: {
      graceSeconds: integer('ORPHAN_GRACE_SECONDS', 6 * 3600),
      maxDestroyedPerRun: integer('SWEEP_MAX_DESTROYED_PER_RUN', 5),
      maxFoundPerRun: integer('SWEEP_MAX_ORPHANS_FOUND_PER_RUN', 10),
    },
    defaultIpv4PoolSize: integer('DEFAULT_IPV4_POOL_SIZE', 1000),
    defaultTierCapacity: integer('DEFAULT_TIER_CAPACITY', 200),
    events: {
      busName: env.EVENT_BUS_NAME || undefined,
      deliveryQueueUrl: env.WEBHOOK_QUEUE_URL || undefined,
    },
    webhooks: {
      allowLoopback: env.WEBHOOK_ALLOW_LOOPBACK === 'true',
      retryBaseMs: integer('WEBHOOK_RETRY_BASE_MS', 30_000),
      retryMaxDelayMs: integer('WEBHOOK_RETRY_MAX_DELAY_MS', 4 * 3_600_000),
      retryWindowMs: integer('WEBHOOK_RETRY_WINDOW_MS', 24 * 3_600_000),
      disableAfterMs: integer('WEBHOOK_DISABLE_AFTER_MS', 3 * 24 * 3_600_000),
      timeoutMs: integer('WEBHOOK_TIMEOUT_MS', 10_000),
    },
    console: {
      url: env.CONSOLE_URL ?? '',
      mailDir: env.MAIL_DIR || undefined,
      mailFrom: env.MAIL_FROM ?? '',
      mailQueueUrl: env.AUTH_MAIL_QUEUE_URL || undefined,
      secureCookies: env.INSECURE_COOKIES !== 'true',
      limits: {
        perAddress: integer('AUTH_LIMIT_PER_ADDRESS', 30),
        failedSignInsPerEmailAndSource: integer('AUTH_LIMIT_FAILED_SIGN_INS_PER_EMAIL_AND_SOURCE', 5),
        failedSignInsPerEmail: integer('AUTH_LIMIT_FAILED_SIGN_INS_PER_EMAIL', 10),
        mailsPerEmailAndSource: integer('AUTH_LIMIT_MAILS_PER_EMAIL_AND_SOURCE', 3),
        mailsPerEmailPerDay: integer('AUTH_LIMIT_MAILS_PER_EMAIL_PER_DAY', 20),
        mailsPerEmailPerDayToKnownSources: integer('AUTH_LIMIT_MAILS_PER_EMAIL_PER_DAY_TO_KNOWN_SOURCES', 10),
      },
    },
    payments: {
      apiBase: env.PAYMENTS_API_BASE || undefined,
      secretKey: env.STRIPE_SECRET_KEY || undefined,
      webhookSecret: env.STRIPE_WEBHOOK_SECRET || undefined,
      secretArn: env.PAYMENTS_SECRET_ARN || undefined,
      signatureToleranceSeconds: integer('PAYMENTS_SIGNATURE_TOLERANCE_SECONDS', 300),
      checkoutMinutes: integer('PAYMENTS_CHECKOUT_MINUTES', 60),
      timeoutMs: integer('PAYMENTS_TIMEOUT_MS', 8_000),
    },
  };
}
