/** A pino logger whose lines are collected as parsed objects, for tests that read what was logged. */
import { Writable } from 'node:stream';
import pino, { Logger } from 'pino';

export function recordingLogger(level = 'debug'): { logger: Logger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}
