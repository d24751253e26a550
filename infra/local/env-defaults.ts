/**
 * Defaults for running the handlers on this machine, set before any of them is loaded (Powertools reads its
 * settings when its objects are built): quiet logs, no EMF metrics on stdout, no X-Ray. Import this first.
 */
const localDefaults: Record<string, string> = {
  POWERTOOLS_LOG_LEVEL: 'WARN',
  POWERTOOLS_METRICS_DISABLED: 'true',
  POWERTOOLS_TRACE_ENABLED: 'false',
};
for (const [name, value] of Object.entries(localDefaults)) process.env[name] ??= value;
