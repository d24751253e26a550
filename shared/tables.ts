/**
 * The DynamoDB tables, defined once: the CDK stack builds them and the local runtime creates them in
 * DynamoDB Local from these same definitions, so both always agree on keys and indexes. It lives with the runtime
 * code because functions read it too (each table's name variable, the TTL attribute).
 */
export type AttributeType = 'S' | 'N';

export interface KeyDefinition {
  readonly name: string;
  readonly type: AttributeType;
}

/**
 * What an index copies from its table besides the keys: only the attributes its queries read, so that no index
 * holds a second copy of anything else (and never a customer's secret).
 */
type IndexProjection = { readonly type: 'KEYS_ONLY' } | { readonly type: 'INCLUDE'; readonly attributes: readonly string[] };

interface IndexDefinition {
  readonly indexName: string;
  readonly partitionKey: KeyDefinition;
  readonly sortKey?: KeyDefinition;
  readonly projection: IndexProjection;
}

export interface TableDefinition {
  /** Environment variable through which functions learn the physical table name. */
  readonly envVar: string;
  readonly partitionKey: KeyDefinition;
  readonly sortKey?: KeyDefinition;
  readonly timeToLiveAttribute?: string;
  readonly globalSecondaryIndexes?: readonly IndexDefinition[];
  /** Publish every change (old and new images) on a change stream, from which service events are derived. */
  readonly stream?: boolean;
}

export const TTL_ATTRIBUTE = 'expires_at';

export const tables = {
  accounts: {
    envVar: 'ACCOUNTS_TABLE',
    partitionKey: { name: 'account_id', type: 'S' },
    // Billing paused and resumed, the runway's warnings and auto-recharge turning itself off are events.
    stream: true,
    globalSecondaryIndexes: [
      {
        // Sparse and time-ordered: only accounts whose servers are billed carry `review_shard`, with `review_at` the
        // next moment something must happen (the projected exhaustion, a runway warning, the daily statement), so the
        // minute sweep reads the few that are due; spread over shards, so no partition holds every account.
        indexName: 'review_by_shard',
        partitionKey: { name: 'review_shard', type: 'S' },
        sortKey: { name: 'review_at', type: 'S' },
        projection: { type: 'KEYS_ONLY' },
      },
    ],
  },
  apiKeys: {
    envVar: 'API_KEYS_TABLE',
    partitionKey: { name: 'key_hash', type: 'S' },
    globalSecondaryIndexes: [
      {
        indexName: 'by_account',
        partitionKey: { name: 'account_id', type: 'S' },
        sortKey: { name: 'id', type: 'N' },
        projection: { type: 'INCLUDE', attributes: ['name', 'key_prefix', 'is_active', 'created_at', 'last_used_at', 'revoked_at'] },
      },
    ],
  },
  sessions: {
    envVar: 'SESSIONS_TABLE',
    partitionKey: { name: 'session_hash', type: 'S' },
    timeToLiveAttribute: TTL_ATTRIBUTE,
    // Sign-out everywhere (a password reset) finds an account's sessions through it.
    globalSecondaryIndexes: [
      { indexName: 'by_account', partitionKey: { name: 'account_id', type: 'S' }, projection: { type: 'KEYS_ONLY' } },
    ],
  },
  /** Console sign-in: one item per e-mail address, so the address is unique by a conditional put. */
  logins: {
    envVar: 'LOGINS_TABLE',
    partitionKey: { name: 'email', type: 'S' },
  },
  /** Single-use e-mail links (confirmation, password reset), stored as hashes. */
  authTokens: {
    envVar: 'AUTH_TOKENS_TABLE',
    partitionKey: { name: 'token_hash', type: 'S' },
    timeToLiveAttribute: TTL_ATTRIBUTE,
  },
  instances: {
    envVar: 'INSTANCES_TABLE',
    partitionKey: { name: 'instance_id', type: 'N' },
    stream: true,
    globalSecondaryIndexes: [
      {
        // Sparse: only live instances carry `live_account_id` (removed at deletion), so a list reads what is live,
        // however many instances the account has deleted; sorted by id, so a page token is the last id listed.
        indexName: 'live_by_account',
        partitionKey: { name: 'live_account_id', type: 'S' },
        sortKey: { name: 'instance_id', type: 'N' },
        // The list reads the instances themselves by these keys, consistently.
        projection: { type: 'KEYS_ONLY' },
      },
      {
        // The same sparse list with what its filters read (status, name, labels): a filtered list reads these small
        // entries and then only the instances that match.
        indexName: 'live_listing_by_account',
        partitionKey: { name: 'live_account_id', type: 'S' },
        sortKey: { name: 'instance_id', type: 'N' },
        projection: { type: 'INCLUDE', attributes: ['status', 'project_name', 'labels'] },
      },
      {
        // Sparse: instances metered by the old per-period meter, until they move to their account's checkpoint (the
        // minute sweep moves them); nothing enters it any more.
        indexName: 'meter_by_shard',
        partitionKey: { name: 'meter_shard', type: 'S' },
        sortKey: { name: 'instance_id', type: 'N' },
        projection: { type: 'KEYS_ONLY' },
      },
      {
        // Sparse: only instances with a lifecycle under way carry `inflight_shard` (set and removed in the writes that
        // start and end it), so the reconciler reads what is in flight, not the fleet.
        indexName: 'inflight_by_shard',
        partitionKey: { name: 'inflight_shard', type: 'S' },
        sortKey: { name: 'instance_id', type: 'N' },
        projection: { type: 'KEYS_ONLY' },
      },
      {
        // Sparse: only instances with a server carry `sweep_shard`, sorted by when the fleet sweep last saw that server,
        // so the end of a pass reads just the instances whose server the listing did not show.
        indexName: 'sweep_by_shard',
        partitionKey: { name: 'sweep_shard', type: 'S' },
        sortKey: { name: 'sweep_seen_at', type: 'S' },
        projection: { type: 'KEYS_ONLY' },
      },
    ],
  },
  jobs: {
    envVar: 'JOBS_TABLE',
    partitionKey: { name: 'job_id', type: 'S' },
    stream: true,
    globalSecondaryIndexes: [
      {
        indexName: 'by_instance',
        partitionKey: { name: 'instance_id', type: 'N' },
        sortKey: { name: 'started_at', type: 'S' },
        projection: { type: 'INCLUDE', attributes: ['type', 'account_id', 'status', 'finished_at', 'error'] },
      },
      {
        // Sparse: only running jobs carry `running_shard` (removed when they end), so the reconciler reads the jobs in
        // flight, not every job ever run.
        indexName: 'running_by_shard',
        partitionKey: { name: 'running_shard', type: 'S' },
        sortKey: { name: 'job_id', type: 'S' },
        projection: { type: 'KEYS_ONLY' },
      },
    ],
  },
  ledger: {
    envVar: 'LEDGER_TABLE',
    partitionKey: { name: 'account_id', type: 'S' },
    sortKey: { name: 'entry_id', type: 'S' },
  },
  /** Card top-ups: one per checkout the customer opened (or auto-recharge charge), and what the provider said of it. */
  topUps: {
    envVar: 'TOP_UPS_TABLE',
    partitionKey: { name: 'top_up_id', type: 'S' },
    globalSecondaryIndexes: [
      {
        // The account's latest top-ups, newest first.
        indexName: 'by_account',
        partitionKey: { name: 'account_id', type: 'S' },
        sortKey: { name: 'created_at', type: 'S' },
        projection: { type: 'KEYS_ONLY' },
      },
      {
        // Sparse: only open top-ups carry `open_shard` (removed when paid, expired or failed), so the reconciler asks
        // the provider about those alone, oldest first.
        indexName: 'open_since',
        partitionKey: { name: 'open_shard', type: 'S' },
        sortKey: { name: 'created_at', type: 'S' },
        projection: { type: 'KEYS_ONLY' },
      },
    ],
  },
  idempotency: {
    envVar: 'IDEMPOTENCY_TABLE',
    partitionKey: { name: 'idempotency_key', type: 'S' },
    timeToLiveAttribute: TTL_ATTRIBUTE,
  },
  counters: {
    envVar: 'COUNTERS_TABLE',
    partitionKey: { name: 'name', type: 'S' },
    timeToLiveAttribute: TTL_ATTRIBUTE,
  },
  webhooks: {
    envVar: 'WEBHOOKS_TABLE',
    partitionKey: { name: 'webhook_id', type: 'S' },
    globalSecondaryIndexes: [
      {
        indexName: 'by_account',
        partitionKey: { name: 'account_id', type: 'S' },
        sortKey: { name: 'created_at', type: 'S' },
        projection: { type: 'INCLUDE', attributes: ['url', 'events', 'failing_since', 'disabled_at', 'disabled_reason'] },
      },
    ],
    // Disabling an endpoint is itself an event.
    stream: true,
  },
  webhookDeliveries: {
    envVar: 'WEBHOOK_DELIVERIES_TABLE',
    partitionKey: { name: 'webhook_id', type: 'S' },
    sortKey: { name: 'attempt_id', type: 'S' },
    timeToLiveAttribute: TTL_ATTRIBUTE,
  },
} as const satisfies Record<string, TableDefinition>;

export type TableName = keyof typeof tables;
export const tableNames = Object.keys(tables) as TableName[];
