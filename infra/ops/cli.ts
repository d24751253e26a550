import { promptLine } from '../../clients/cli/prompt';
import { Command as Program, CommanderError, Help } from 'commander';
import { resolveTarget } from './target';
import { escapeUnsafeCharacters } from '../../shared/model/text';

/**
 * `npm run --silent ops -- <command> [--json] [--stack NAME]`: operator commands against the local service or a
 * deployed stack. Exit codes: 0 done, 1 failed or refused, 2 wrong arguments (nothing changed).
 *
 * The service's logger writes to stdout and reads its level when loaded, so it is silenced before the commands
 * (and the domain modules behind them) are imported. A command runs with the service's dependencies built from the
 * target's environment, as a function's are on AWS.
 */
if (!process.env.OPS_DEBUG) process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
const { commandOptions, commands, prepareCommandWithQuestion, usage, usageOf, UsageError } = await import('./commands');
const { awsDeps } = await import('../../shared/wiring/aws');
type OptionName = keyof typeof commandOptions;

/** Node's and commander's own messages may span lines or carry their own prefix; the CLI reports one plain line. */
const oneLine = (message: string) => message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');

/** The program: one subcommand per command (`account deposit` is `deposit` under `account`), its arguments and options. */
function program(run: (name: string, args: string[], options: Record<string, unknown>) => Promise<void>): Program {
  const root: Program = new Program('ops')
    .option('--json', 'print one JSON object')
    .option('--stack <name>', 'a deployed stack instead of the local service')
    .option('--dry-run', 'check and say what the command would change; change nothing')
    .option('-y, --yes', 'do not ask before a change hard to take back')
    .configureHelp({
      // The root lists every command with its synopsis; a command's own help is commander's.
      formatHelp: (command, helper): string =>
        command === root ? `${usage()}\n` : Help.prototype.formatHelp.call(helper, command, helper),
    });
  const groups = new Map<string, Program>();
  for (const [name, definition] of commands) {
    const [group = '', verb] = name.split(' ');
    let parent = root;
    if (verb) {
      parent = groups.get(group) ?? root.command(group).description(`${group} commands`);
      groups.set(group, parent);
    }
    const command = parent
      .command(verb ?? group)
      .description(definition.summary)
      .usage(usageOf('', definition).trim() || '[options]');
    for (const argument of definition.args) command.argument(`<${argument}>`);
    for (const option of definition.options ?? []) {
      const spec: { value?: string } = commandOptions[option as OptionName];
      command.option(spec.value ? `--${option} <${spec.value.toLowerCase()}>` : `--${option}`);
    }
    command.action((...received: unknown[]) => {
      const invoked = received.at(-1) as Program;
      return run(name, invoked.args, invoked.opts());
    });
  }
  // Every subcommand (and the root) answers errors through exceptions, and prints nothing of its own on stderr.
  const quiet = (command: Program) => {
    command.exitOverride().configureOutput({ writeErr: () => undefined, outputError: () => undefined });
    command.allowExcessArguments(false);
    command.commands.forEach(quiet);
  };
  quiet(root);
  return root;
}

class NotConfirmedError extends Error {}

/**
 * On a terminal, asks and goes on only on "yes"; without one (a script, a pipe) there is no one to ask, and the
 * command runs as it always has, so automation keeps working.
 */
async function confirmedAtTerminal(question: string): Promise<boolean> {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return true;
  return /^y(es)?$/i.test(await promptLine(`${question} Type yes to go on: `));
}

/** A service that does not answer at all, said plainly (Node's own text is `connect ECONNREFUSED 127.0.0.1:…`). */
function unreachable(error: unknown, stack: string | undefined): Error | undefined {
  const codes = [error, (error as { cause?: unknown })?.cause].map((e) => (e as NodeJS.ErrnoException | undefined)?.code);
  if (!codes.some((code) => code === 'ECONNREFUSED' || code === 'ECONNRESET')) return undefined;
  return new Error(
    stack === undefined
      ? 'the local service is not running: start it with npm start (or name a deployed one with --stack NAME)'
      : `stack ${stack} does not answer`,
  );
}

async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const cli = program(async (name, args, options) => {
    const { action, question } = prepareCommandWithQuestion([...name.split(' '), ...args], options);
    const { json, stack, dryRun, yes } = cli.opts<{ json?: boolean; stack?: string; dryRun?: boolean; yes?: boolean }>();
    if (question && !dryRun && !yes && !(await confirmedAtTerminal(question)))
      throw new NotConfirmedError('not confirmed; nothing changed');
    const output = await action(awsDeps({ ...process.env, ...(await resolveTarget(stack)) }), { dryRun: dryRun === true }).catch(
      (error: unknown) => {
        throw unreachable(error, stack) ?? error;
      },
    );
    // JSON.stringify leaves C1 controls, separators and bidi overrides raw; as \u escapes the JSON means the same.
    console.log(json ? escapeUnsafeCharacters(JSON.stringify(output.json)) : output.text);
    exitCode = output.exitCode ?? 0;
  });
  try {
    if (argv.length === 0) argv = ['help'];
    await cli.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError && ['commander.helpDisplayed', 'commander.help', 'commander.version'].includes(error.code))
      return 0;
    if (process.env.OPS_DEBUG) console.error(error);
    console.error(`error: ${escapeUnsafeCharacters(oneLine(error instanceof Error ? error.message : String(error)))}`);
    return error instanceof UsageError || error instanceof CommanderError ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
