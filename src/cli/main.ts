/** `nfkube` entry point: dispatches to one module per command. */
import { Command } from './command';

// Loaded lazily so a command never pays for another's dependencies.
const commands: Record<string, () => Command> = {
  agent: () => require('./commands/agent').default,
  render: () => require('./commands/render').default,
  verify: () => require('./commands/verify').default,
  cleanup: () => require('./commands/cleanup').default,
  ipset: () => require('./commands/ipset').default,
  install: () => require('./commands/install').default,
  demo: () => require('./commands/demo').default,
  explain: () => require('./commands/explain').default,
};

function help(): string {
  const lines = Object.entries(commands).map(([name, load]) => `  ${name.padEnd(10)} ${load().summary}`);
  return `usage: nfkube <command> [options]\n\ncommands:\n${lines.join('\n')}\n`;
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(help());
    return name ? 0 : 2;
  }
  const load = commands[name];
  if (!load) {
    process.stderr.write(`nfkube: unknown command "${name}"\n${help()}`);
    return 2;
  }
  const command = load();
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  return command.run(rest);
}
