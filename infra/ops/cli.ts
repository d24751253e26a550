import { parseArgs } from 'node:util';
import { resolveTarget } from './target';
import { escapeUnsafeCharacters } from '../../shared/model/text';

/**
 * `npm run --silent ops -- <command> [--json] [--stack NAME]`: operator commands against the local service or a
 * deployed stack. Exit codes: 0 done, 1 failed or refused, 2 wrong arguments (nothing changed).
 *
 * The service's logger writes to stdout and reads its level when loaded, so it is silenced before the commands
 * (and the domain modules behind them) are imported. shared/config reads its settings on first use, which comes
 * only after the target's environment is in place.
 */
if (!process.env.OPS_DEBUG) process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
const { commandOptions, prepareCommand, usage, UsageError } = await import('./commands');

const globalOptions = {
  json: { type: 'boolean' },
  stack: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Node's own argument errors span several lines; the CLI reports one. */
const oneLine = (message: string) => message.replace(/\s*\n\s*/g, ' ');

function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: { ...globalOptions, ...commandOptions }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

async function main(argv: string[]): Promise<number> {
  try {
    const { values, positionals } = parse(argv);
    const { json, stack, help, ...options } = values;
    if (help || positionals.length === 0 || positionals[0] === 'help') {
      console.log(usage());
      return 0;
    }
    const action = prepareCommand(positionals, options);
    Object.assign(process.env, await resolveTarget(stack));
    const output = await action();
    // JSON.stringify leaves C1 controls, separators and bidi overrides raw; as \u escapes the JSON means the same.
    console.log(json ? escapeUnsafeCharacters(JSON.stringify(output.json)) : output.text);
    return output.exitCode ?? 0;
  } catch (error) {
    if (process.env.OPS_DEBUG) console.error(error);
    console.error(`error: ${escapeUnsafeCharacters(oneLine(error instanceof Error ? error.message : String(error)))}`);
    return error instanceof UsageError ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
