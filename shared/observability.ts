import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { METRICS_NAMESPACE, type MetricName } from './metric-names';
import { Tracer } from './tracing';

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
  'x-origin-verify',
  'password',
  'secret',
]);
const REDACTED = '[REDACTED]';
const fieldNames = [...SECRET_FIELDS].map((name) => name.replace(/[-_]/g, '[-_]')).join('|');
/**
 * Secrets that can hide inside free text, in the order they are replaced: OpenSSH private key blocks (a cut-off
 * one too); secrets known by their prefix, base64 bodies included (our API keys, webhook signing secrets `whsec_`,
 * DigitalOcean tokens `dop_v1_`, Stripe-style `sk_live_`/`rk_test_` keys); Bearer credentials; the value after a
 * secret field's name in JSON held in a string (`"root_password":"…"`, escaped or not), a header or a cookie
 * (`session=…`, `X-CSRFToken: …`); and token-shaped words: mixed-case base62 of exactly the length of our session,
 * CSRF and e-mailed link tokens (43), or of root passwords (24) with a digit too, as every one has and code names
 * like `DependencyTransientError` do not.
 */
const SECRET_TEXT: readonly [RegExp, string][] = [
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, REDACTED],
  [/(?:svcmcp_|(?<![0-9A-Za-z])(?:whsec_|do[opr]_v1_|[rs]k_(?:live|test)_))[0-9A-Za-z+/=_-]+/g, REDACTED],
  [/\bBearer\s+[^\s"',;]+/gi, `Bearer ${REDACTED}`],
  [
    new RegExp(
      `((?:\\\\?["'])?\\b(?:${fieldNames})\\b(?:\\\\?["'])?\\s*[:=]\\s*)(?!\\[REDACTED\\])(\\\\?"(?:[^"\\\\]|\\\\[^"])*\\\\?"|'[^']*'|[^\\s,;&}\\]]+)`,
      'gi',
    ),
    `$1${REDACTED}`,
  ],
  [
    /(?<![0-9A-Za-z])(?:(?=[0-9A-Za-z]*[a-z])(?=[0-9A-Za-z]*[A-Z])[0-9A-Za-z]{43}|(?=[0-9A-Za-z]*[0-9])(?=[0-9A-Za-z]*[a-z])(?=[0-9A-Za-z]*[A-Z])[0-9A-Za-z]{24})(?![0-9A-Za-z])/g,
    REDACTED,
  ],
];

export function redactText(text: string): string {
  return SECRET_TEXT.reduce((redacted, [pattern, replacement]) => redacted.replace(pattern, replacement), text);
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

/** X-Ray subsegments for handlers, AWS SDK calls and fetches (see tracing.ts); inactive outside Lambda. */
export const tracer = new Tracer({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'vps-service', redact: redactText });

/** CloudWatch EMF metrics, named in metric-names.ts, which the dashboard and alarms in infra/ read too. */
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'vps-service' });

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
