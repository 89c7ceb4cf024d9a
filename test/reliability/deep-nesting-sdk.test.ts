/**
 * The depth limit against the real `@cursor/sdk` (the fake Cursor backend on 127.0.0.1): a tool schema and a
 * tool_use input nested right up to the limit go through the tool mirror, the transcript and the SDK
 * without overflowing the stack, and a 1,000-level schema is refused before any run reaches the backend.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../lib/json-depth.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

/** An object schema of exactly `containers` nested objects. */
const deepSchema = (containers: number): string => {
  const pairs = Math.floor((containers - 1) / 2);
  const leaf = containers % 2 === 1 ? '{"type":"string"}' : '{"type":"array","items":{"type":"string"}}';
  return '{"type":"object","properties":{"a":'.repeat(pairs) + leaf + '}}'.repeat(pairs);
};

/** Body → tools → tool: the schema's own containers start at level 4; the input's at level 6. */
const body = (schema: string, input: string): string =>
  `{"model":"composer-2","max_tokens":100,"messages":[{"role":"user","content":"hi"},` +
  `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Deep","input":${input}}]},` +
  `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}]}],` +
  `"tools":[{"name":"Deep","description":"A deep tool","input_schema":${schema}}]}`;

const post = (url: string, text: string) =>
  fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text,
  });

describe('deep nesting over the real SDK', () => {
  it(`serves a tool schema and a tool input nested to the ${MAX_JSON_DEPTH}-level limit`, async () => {
    wire = await startWireBridge({ scenario: (run) => void run.text('deep ok') });
    const input = `{"x":${'['.repeat(MAX_JSON_DEPTH - 6)}${']'.repeat(MAX_JSON_DEPTH - 6)}}`;
    const response = await post(wire.url, body(deepSchema(MAX_JSON_DEPTH - 3), input));
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect(text).toContain('deep ok');
    expect(wire.runRequests()).toHaveLength(1);
  });

  it('refuses a 1,000-level tool schema before any run reaches the backend', async () => {
    wire = await startWireBridge({ scenario: (run) => void run.text('never') });
    const response = await post(wire.url, body(deepSchema(1000), '{}'));
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/tools\.0\.input_schema\.properties\.a\..*nested deeper than 64/);
    expect(wire.runRequests()).toHaveLength(0);
  });
});
