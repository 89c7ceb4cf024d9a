import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';
import { routeConsoleToLogger } from '../../src/cli/route-console.js';

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
});

const capture = (level: 'trace' | 'debug' | 'info') => {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      callback();
    },
  });
  restore = routeConsoleToLogger(createLogger({ level, destination }));
  return lines;
};

describe("the SDK's console output", () => {
  it('lands below the bridge lines: chatter at trace, warnings at debug, errors at warn, as component cursor-sdk', () => {
    const lines = capture('trace');
    console.log('  INFO ', 'LocalCursorRulesService load completed');
    console.info('info');
    console.debug('debug');
    console.warn('  WARN ', 'retrying');
    console.error(' ERROR ', 'failed');
    expect(lines.map(({ level, component, msg }) => ({ level, component, msg }))).toEqual([
      { level: 10, component: 'cursor-sdk', msg: '  INFO  LocalCursorRulesService load completed' },
      { level: 10, component: 'cursor-sdk', msg: 'info' },
      { level: 10, component: 'cursor-sdk', msg: 'debug' },
      { level: 20, component: 'cursor-sdk', msg: '  WARN  retrying' },
      { level: 40, component: 'cursor-sdk', msg: ' ERROR  failed' },
    ]);
  });

  it('shows nothing of the SDK but its errors at info', () => {
    const lines = capture('info');
    console.log('chatter');
    console.warn('warning');
    console.error('error');
    expect(lines.map(({ msg }) => msg)).toEqual(['error']);
  });
});
