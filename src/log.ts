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

const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\\]/g;
const SHORT_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f', '\\': '\\\\' };

/** `text` safe to print on a terminal: control characters (C0, DEL, C1) and the backslash escaped
 * as the JSON of the log lines (the drop log) writes them, so a name from a cluster object or
 * a foreign rule cannot move the cursor, clear the screen or fake a line. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => SHORT_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
