/** Every `nfkube` command, by name. Loaded lazily so a command never pays for another's
 * dependencies; `help`, completion and the config file's field check load them all. */
import type { Command } from './command';
import { knowEveryOption, type OptionTable } from './options';

export const COMMANDS: Record<string, () => Command> = {
  agent: () => require('./commands/agent').default,
  render: () => require('./commands/render').default,
  verify: () => require('./commands/verify').default,
  status: () => require('./commands/status').default,
  drops: () => require('./commands/drops').default,
  explain: () => require('./commands/explain').default,
  cleanup: () => require('./commands/cleanup').default,
  ipset: () => require('./commands/ipset').default,
  install: () => require('./commands/install').default,
  uninstall: () => require('./commands/uninstall').default,
  demo: () => require('./commands/demo').default,
  ipam: () => require('./commands/ipam').default,
  completion: () => require('./commands/completion').default,
  version: () => require('./commands/version').default,
};

/** Every option of every command, by name (the first table that declares it). */
export function allOptions(): OptionTable {
  const out: OptionTable = {};
  for (const load of Object.values(COMMANDS)) for (const [name, o] of Object.entries(load().options ?? {})) out[name] ??= o;
  return out;
}

knowEveryOption(allOptions);
