import type { Command, Option } from 'commander';

export const completionShells = ['bash', 'zsh', 'fish'] as const;
export type CompletionShell = (typeof completionShells)[number];

/** One level of the command tree: the words that follow its path. */
interface Level {
  /** The subcommands typed so far, space-separated ('' at the top). */
  readonly path: string;
  readonly command: Command;
  readonly subcommands: readonly Command[];
  readonly options: readonly Option[];
}

const visible = (command: Command) => command.commands.filter((sub) => sub.name() !== 'help');

function levels(program: Command): Level[] {
  const all: Level[] = [];
  const visit = (command: Command, path: string, inherited: readonly Option[]) => {
    const options = [...inherited, ...command.options.filter((option) => !option.hidden)];
    all.push({ path, command, subcommands: visible(command), options });
    for (const sub of visible(command)) visit(sub, path === '' ? sub.name() : `${path} ${sub.name()}`, options);
  };
  visit(program, '', []);
  return all;
}

const flagsOf = (option: Option) => [option.short, option.long].filter((flag): flag is string => flag !== undefined);

/** Options whose value is one of a list (`--flavor`, `-o`): completed with that list. */
function choiceOptions(program: Command): Map<string, readonly string[]> {
  const choices = new Map<string, readonly string[]>();
  for (const level of levels(program))
    for (const option of level.options) if (option.argChoices) for (const flag of flagsOf(option)) choices.set(flag, option.argChoices);
  return choices;
}

const quoted = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

function bashScript(program: Command): string {
  const name = program.name();
  const all = levels(program);
  const caseOf = (words: (level: Level) => string[]) =>
    all.map((level) => `    ${quoted(level.path)}) echo ${quoted(words(level).join(' '))} ;;`).join('\n');
  const choices = [...choiceOptions(program)].map(([flag, values]) => `    ${flag}) choices=${quoted(values.join(' '))} ;;`).join('\n');
  return `# ${name} completion for bash: source <(${name} completion bash)
_${name}_subcommands() {
  case "$1" in
${caseOf((level) => level.subcommands.map((sub) => sub.name()))}
  esac
}
_${name}_words() {
  case "$1" in
${caseOf((level) => [...level.subcommands.map((sub) => sub.name()), ...level.options.flatMap(flagsOf)])}
  esac
}
_${name}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" path="" word i choices=""
  case "$prev" in
${choices}
  esac
  if [[ -n "$choices" ]]; then
    COMPREPLY=($(compgen -W "$choices" -- "$cur"))
    return
  fi
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if [[ " $(_${name}_subcommands "$path") " == *" $word "* ]]; then path="\${path:+$path }$word"; fi
  done
  COMPREPLY=($(compgen -W "$(_${name}_words "$path")" -- "$cur"))
}
complete -o default -F _${name} ${name}
`;
}

function zshScript(program: Command): string {
  const name = program.name();
  return `# ${name} completion for zsh: source <(${name} completion zsh)
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bashScript(program).split('\n').slice(1).join('\n')}`;
}

function fishScript(program: Command): string {
  const name = program.name();
  const lines = [`# ${name} completion for fish: ${name} completion fish | source`, `complete -c ${name} -f`];
  const description = (text: string) => quoted(text.split('\n')[0]!.slice(0, 80));
  const choices = choiceOptions(program);
  const optionLine = (option: Option, condition: string) => {
    const flags = [option.short ? `-s ${option.short.slice(1)}` : '', option.long ? `-l ${option.long.slice(2)}` : ''].filter(Boolean);
    const values = option.long ? choices.get(option.long) : undefined;
    const takesValue = option.required || option.optional ? ' -r' : '';
    return `complete -c ${name}${condition ? ` -n ${quoted(condition)}` : ''} ${flags.join(' ')}${takesValue}${
      values ? ` -a ${quoted(values.join(' '))}` : ''
    } -d ${description(option.description)}`;
  };
  for (const level of levels(program)) {
    const last = level.path.split(' ').at(-1)!;
    const subcommandHere =
      level.path === ''
        ? '__fish_use_subcommand'
        : `__fish_seen_subcommand_from ${last}; and not __fish_seen_subcommand_from ${level.subcommands.map((sub) => sub.name()).join(' ')}`;
    for (const sub of level.subcommands)
      lines.push(`complete -c ${name} -n ${quoted(subcommandHere)} -a ${quoted(sub.name())} -d ${description(sub.description())}`);
    // The program's own options apply everywhere; a command's, once it is typed.
    const condition = level.path === '' ? '' : `__fish_seen_subcommand_from ${last}`;
    for (const option of level.command.options.filter((o) => !o.hidden)) lines.push(optionLine(option, condition));
  }
  return `${lines.join('\n')}\n`;
}

/** The completion script for `shell`, from the command tree itself, so that it never falls behind the commands. */
export function completionScript(program: Command, shell: CompletionShell): string {
  if (shell === 'bash') return bashScript(program);
  return shell === 'zsh' ? zshScript(program) : fishScript(program);
}
