/** `nfkube completion bash|zsh`: a completion script generated from the command registry and
 * each command's option table, so it lists exactly what the commands accept. */
import { Command, RunContext } from '../command';
import { GLOBAL_OPTIONS, OptionTable, parseWithPositionals, usageText } from '../options';
import { UsageError } from '../../options/usage-error';

const options = {} as const satisfies OptionTable;
const usage = usageText('nfkube completion bash|zsh', options, 'Prints a completion script: `source <(nfkube completion bash)`, or in zsh `source <(nfkube completion zsh)`.');

/** Subcommands that are operands, not options. */
const OPERANDS: Record<string, string[]> = { ipam: ['show', 'check'], ipset: ['restore', 'save'], completion: ['bash', 'zsh'] };

/** Every command with the words it completes: its operands, then its flags. */
export function completionWords(commands: RunContext['commands']): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(commands).map(([name, load]) => {
      const table: OptionTable = { ...(load().options ?? {}), ...GLOBAL_OPTIONS };
      const flags = Object.entries(table).flatMap(([flag, o]) => [`--${flag}`, ...(o.short ? [`-${o.short}`] : [])]);
      return [name, [...(OPERANDS[name] ?? []), ...flags, '--help']];
    }),
  );
}

/** Words are option names and subcommands: letters, digits and dashes, safe in a shell word. */
export function bashScript(words: Record<string, string[]>): string {
  const cases = Object.entries(words).map(([name, w]) => `    ${name}) words="${w.join(' ')}" ;;`);
  return `# nfkube bash completion (nfkube completion bash)
_nfkube() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${Object.keys(words).join(' ')} help" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
${cases.join('\n')}
    *) words="" ;;
  esac
  case "$cur" in
    -*|'') COMPREPLY=($(compgen -W "$words" -- "$cur")) ;;
    *) COMPREPLY=($(compgen -f -- "$cur")) ;;
  esac
}
complete -o default -F _nfkube nfkube
`;
}

export function zshScript(words: Record<string, string[]>): string {
  const cases = Object.entries(words).map(([name, w]) => `    ${name}) compadd -- ${w.join(' ')} ;;`);
  return `#compdef nfkube
# nfkube zsh completion (nfkube completion zsh)
_nfkube() {
  if (( CURRENT == 2 )); then
    compadd -- ${Object.keys(words).join(' ')} help
    return
  fi
  case "$words[2]" in
${cases.join('\n')}
  esac
  _files
}
compdef _nfkube nfkube
`;
}

const command: Command = {
  summary: 'print a shell completion script generated from the option tables (bash | zsh)',
  usage,
  options,
  async run(args, ctx) {
    const { positionals } = parseWithPositionals(args, options, usage);
    const shell = positionals[0];
    if (positionals.length !== 1 || (shell !== 'bash' && shell !== 'zsh')) throw new UsageError(`expected bash or zsh${shell ? `, got ${JSON.stringify(shell)}` : ''} (see nfkube completion --help)`);
    process.stdout.write(shell === 'bash' ? bashScript(completionWords(ctx.commands)) : zshScript(completionWords(ctx.commands)));
    return 0;
  },
};

export default command;
