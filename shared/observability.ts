import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';

/** Log fields whose values are secrets, whatever object they appear in (compared lower-case). */
const SECRET_FIELDS = new Set([
  'root_password',
  'private_key',
  'full_key',
  'authorization',
  'cookie',
  'cookies',
  'set-cookie',
  'x-csrftoken',
  'csrf_token',
  'session',
  'api_key',
  'token',
  'upstream_token',
  'user_data',
  'password',
]);
const REDACTED = '[REDACTED]';
/** Secrets that can hide inside free text: our API keys and OpenSSH private key blocks. */
const SECRET_TEXT = [/svcmcp_[0-9A-Za-z]+/g, /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g];

export function redactText(text: string): string {
  return SECRET_TEXT.reduce((redacted, pattern) => redacted.replace(pattern, REDACTED), text);
}

/** JSON replacer for every log line: secret fields and secret-looking text never reach a log. */
export function redactingReplacer(key: string, value: unknown): unknown {
  if (SECRET_FIELDS.has(key.toLowerCase()) && value !== null && value !== undefined) return REDACTED;
  if (typeof value === 'string') return redactText(value);
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/** One structured JSON logger for every function; level from POWERTOOLS_LOG_LEVEL. */
export const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'vps-service', jsonReplacerFn: redactingReplacer });

/** X-Ray tracing of handlers and AWS SDK calls; inactive outside Lambda. */
export const tracer = new Tracer({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'vps-service' });

export const METRICS_NAMESPACE = 'VpsService';

/** CloudWatch EMF metrics; the dashboard and alarms in infra/ read exactly these names. */
export const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'vps-service' });

export const metricNames = {
  deploysAccepted: 'DeploysAccepted',
  provisionSucceeded: 'ProvisionSucceeded',
  provisionFailed: 'ProvisionFailed',
  provisionDuration: 'ProvisionDuration',
  rateLimited: 'RateLimited',
  upstreamErrors: 'UpstreamErrors',
  billingPauses: 'BillingPauses',
  reconcilerRepairs: 'ReconcilerRepairs',
  leakedServersDestroyed: 'LeakedServersDestroyed',
  meteredPeriods: 'MeteredPeriods',
} as const;
export type MetricName = (typeof metricNames)[keyof typeof metricNames];

export function countMetric(name: MetricName, value = 1): void {
  metrics.addMetric(name, MetricUnit.Count, value);
}

export function durationMetric(name: MetricName, milliseconds: number): void {
  metrics.addMetric(name, MetricUnit.Milliseconds, milliseconds);
}

/** Publishes what this invocation recorded; an invocation that recorded nothing writes nothing (not even a warning). */
export function publishMetrics(): void {
  if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
}
