import { readFileSync } from 'node:fs';
import type { TurnProtocol } from '../../../src/turn/turn-request.js';

/** The text of `test/fixtures/<protocol>/<fileName>` (recorded requests, expected `.sse` streams). */
export const readFixture = (protocol: TurnProtocol, fileName: string): string =>
  readFileSync(new URL(`../../fixtures/${protocol}/${fileName}`, import.meta.url), 'utf8');

/** A JSON fixture, parsed (checked-in test data, so a bare JSON.parse is fine here). */
export const readJsonFixture = (protocol: TurnProtocol, fileName: string): unknown =>
  JSON.parse(readFixture(protocol, fileName)) as unknown;
