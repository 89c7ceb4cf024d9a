import { Writable } from 'node:stream';
import { pino, type Level, type Logger } from 'pino';

/** A pino logger at `level` whose JSON lines the test reads back, parsed, in `lines`. */
export const captureLog = (
  level: Level = 'info',
): { lines: Array<Record<string, unknown>>; logger: Logger } => {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      callback();
    },
  });
  return { lines, logger: pino({ level }, destination) };
};
