/** The process logger, on stderr so stdout stays free for command output: JSON lines for log
 * pipelines, or one readable line per entry for a person (`--log-format text`, the default when
 * stderr is a terminal). */
import { writeSync } from 'node:fs';
import { LogFormat, processLogFormat, textLine } from './log-format';
import pino, { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function createLogger(level: string = 'info', format: LogFormat = processLogFormat() ?? 'json'): Logger {
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new Error(`--log-level: "${level}" is not one of ${LOG_LEVELS.join(', ')}`);
  // Level names ("level":"info"), as log pipelines expect, rather than pino's numbers.
  const options = { level, base: { component: 'nfkube' }, formatters: { level: (label: string) => ({ level: label }) } };
  return pino(options, format === 'json' ? pino.destination({ fd: 2, sync: true }) : { write: (line: string) => void writeSync(2, textLine(line)) });
}

