/** The process logger: pino JSON lines on stderr, so stdout stays free for command output. */
import pino, { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function createLogger(level: string = 'info'): Logger {
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new Error(`--log-level: "${level}" is not one of ${LOG_LEVELS.join(', ')}`);
  // Level names ("level":"info"), as log pipelines expect, rather than pino's numbers.
  return pino({ level, base: { component: 'nfkube' }, formatters: { level: (label) => ({ level: label }) } }, pino.destination({ fd: 2, sync: true }));
}
