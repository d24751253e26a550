/** Faults are the point of a chaos run: the handlers' own error logs would bury its report. Imported first. */
process.env.POWERTOOLS_LOG_LEVEL ??= process.argv.includes('--verbose') ? 'WARN' : 'SILENT';
