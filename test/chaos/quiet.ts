/**
 * Faults are the point of a chaos run: the handlers' own error logs would bury its report. Imported first. A
 * `--verbose` run sets the level itself, whatever it inherited (the process running several seeds is quiet).
 */
if (process.argv.includes('--verbose')) process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
else process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
