/** The log format of the process, and the text format's line: kept apart from pino so the CLI
 * runner can choose it without loading pino. */

export const LOG_FORMATS = ['json', 'text'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

let processFormat: LogFormat | undefined;

export function processLogFormat(): LogFormat | undefined {
  return processFormat;
}

/** The format every logger of this process writes (set once by the CLI runner). */
export function setLogFormat(format: LogFormat): void {
  processFormat = format;
}

/** --log-format, else $NFKUBE_LOG_FORMAT, else text on a terminal and `otherwise` elsewhere. */
export function chooseLogFormat(given: string | undefined, otherwise: LogFormat, isTTY = process.stderr.isTTY === true): LogFormat {
  const f = given ?? (process.env.NFKUBE_LOG_FORMAT || undefined);
  if (f === undefined) return isTTY ? 'text' : otherwise;
  if (!(LOG_FORMATS as readonly string[]).includes(f)) throw new Error(`--log-format: "${f}" is not json or text`);
  return f as LogFormat;
}

/** Keys every entry has, or that the text line shows in its own place. */
const SHOWN_APART = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'component']);

/** One pino JSON line as `HH:MM:SS.mmm LEVEL message key=value ...`. */
export function textLine(json: string): string {
  let e: Record<string, unknown>;
  try {
    e = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = typeof e.time === 'number' ? new Date(e.time).toISOString().slice(11, 23) : '';
  const fields = Object.entries(e)
    .filter(([k, v]) => !SHOWN_APART.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/[\s"=]/.test(v) ? v : JSON.stringify(v)}`);
  return `${[time, String(e.level ?? '').toUpperCase().padEnd(5), e.msg ?? '', ...fields].filter((x) => x !== '').join(' ')}\n`;
}
