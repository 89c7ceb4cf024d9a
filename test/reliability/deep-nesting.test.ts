/**
 * Over-deep JSON is a 400 in the protocol's envelope naming the field, before anything reaches the engine
 * (before the limit, a 1,000-level tool schema or a 5,000-level tool input overflowed the stack in the
 * tool mirror, the transcript renderer or the SDK and ended as a retryable 500).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CcrFacade } from '../../src/hosts/ccr/ccr-facade.js';
import { MAX_JSON_DEPTH } from '../../lib/json-depth.js';
import { ScriptedUpstream, type ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';
import { startScriptedBridgeServer } from '../helpers/scripted-bridge-server.js';

const textTurn: ScriptSource = [
  { type: 'text-delta', text: 'ok' },
  { type: 'end', status: 'finished' },
];

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An object schema of exactly `containers` nested objects (`properties.a.properties.a…`). */
const deepSchema = (containers: number): string => {
  const pairs = Math.floor((containers - 1) / 2);
  const leaf = containers % 2 === 1 ? '{"type":"string"}' : '{"type":"array","items":{"type":"string"}}';
  return '{"type":"object","properties":{"a":'.repeat(pairs) + leaf + '}}'.repeat(pairs);
};
/** `{"x":[[[…]]]}` with `levels` containers in all. */
const deepValue = (levels: number): string => `{"x":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;

type Case = {
  path: string;
  /** A body whose one tool schema is `schema` (JSON text). */
  withSchema: (schema: string) => string;
  /** A body whose history holds a tool call with `input` (JSON text) as its input. */
  withInput: (input: string) => string;
  schemaPath: RegExp;
  inputPath: RegExp;
  errorOf: (body: unknown) => { type: unknown; message: unknown; param?: unknown };
};

const anthropic: Case = {
  path: '/v1/messages',
  withSchema: (schema) =>
    `{"model":"composer-2","max_tokens":100,"messages":[{"role":"user","content":"hi"}],` +
    `"tools":[{"name":"A","input_schema":{"type":"object"}},{"name":"B","input_schema":${schema}}]}`,
  withInput: (input) =>
    `{"model":"composer-2","max_tokens":100,"messages":[{"role":"user","content":"hi"},` +
    `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"A","input":${input}}]},` +
    `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}]}],` +
    `"tools":[{"name":"A","input_schema":{"type":"object"}}]}`,
  schemaPath: /^tools\.1\.input_schema\.properties\.a\.properties\.a\./,
  inputPath: /^messages\.1\.content\.0\.input\.x\.0\.0\./,
  errorOf: (body) => {
    const envelope = body as { type: unknown; error: { type: unknown; message: unknown } };
    expect(envelope.type).toBe('error');
    return envelope.error;
  },
};

const openaiChat: Case = {
  path: '/v1/chat/completions',
  withSchema: (schema) =>
    `{"model":"composer-2","messages":[{"role":"user","content":"hi"}],"tools":[` +
    `{"type":"function","function":{"name":"A","parameters":{"type":"object"}}},` +
    `{"type":"function","function":{"name":"B","parameters":${schema}}}]}`,
  withInput: (input) =>
    `{"model":"composer-2","messages":[{"role":"user","content":"hi"},` +
    `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",` +
    `"function":{"name":"A","arguments":${JSON.stringify(input)}}}]},` +
    `{"role":"tool","tool_call_id":"call_1","content":"done"}]}`,
  schemaPath: /^tools\.1\.function\.parameters\.properties\.a\./,
  inputPath: /^messages\.1\.tool_calls\.0\.function\.arguments$/,
  errorOf: (body) => (body as { error: { type: unknown; message: unknown; param: unknown } }).error,
};

const openaiResponses: Case = {
  path: '/v1/responses',
  withSchema: (schema) =>
    `{"model":"composer-2","input":"hi","tools":[{"type":"function","name":"A","parameters":{"type":"object"}},` +
    `{"type":"function","name":"B","parameters":${schema}}]}`,
  withInput: (input) =>
    `{"model":"composer-2","input":[{"role":"user","content":"hi"},` +
    `{"type":"function_call","call_id":"call_1","name":"A","arguments":${JSON.stringify(input)}},` +
    `{"type":"function_call_output","call_id":"call_1","output":"done"}]}`,
  schemaPath: /^tools\.1\.parameters\.properties\.a\./,
  inputPath: /^input\.1\.arguments$/,
  errorOf: (body) => (body as { error: { type: unknown; message: unknown; param: unknown } }).error,
};

const post = async (url: string, body: string): Promise<{ status: number; body: unknown }> => {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { status: response.status, body: await response.json() };
};

describe.each([
  ['Anthropic Messages', anthropic],
  ['OpenAI Chat', openaiChat],
  ['OpenAI Responses', openaiResponses],
])('deep nesting over %s', (_name, protocol) => {
  const start = async () => {
    const bridge = await startScriptedBridgeServer(textTurn);
    cleanups.push(bridge.close);
    return bridge;
  };

  /** A 400 in the protocol's envelope refusing over-deep JSON, and the field path its message names. */
  const depthRefusalOf = (answer: Awaited<ReturnType<typeof post>>) => {
    expect(answer.status).toBe(400);
    const error = protocol.errorOf(answer.body);
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toMatch(/JSON nested deeper than 64 levels/);
    const path =
      String(error.message)
        .replace(/^Invalid request: /, '')
        .split(': ')[0] ?? '';
    return { error, path };
  };

  it('refuses a tool schema nested 1,000 levels with a 400 naming the field; nothing reaches the engine', async () => {
    const { url, upstream } = await start();
    const answer = await post(`${url}${protocol.path}`, protocol.withSchema(deepSchema(1000)));
    const { error, path } = depthRefusalOf(answer);
    expect(path).toMatch(protocol.schemaPath);
    if (protocol !== anthropic) expect(error.param).toBe(path);
    expect(upstream.sessions).toHaveLength(0);
  });

  it('refuses a tool call input nested 5,000 levels with a 400 naming the field', async () => {
    const { url, upstream } = await start();
    const answer = await post(`${url}${protocol.path}`, protocol.withInput(deepValue(5000)));
    expect(depthRefusalOf(answer).path).toMatch(protocol.inputPath);
    expect(upstream.sessions).toHaveLength(0);
  });

  it(`accepts a body nested exactly ${MAX_JSON_DEPTH} levels and refuses one level more`, async () => {
    const { url } = await start();
    // A tool schema sits 3 containers deep (body, tools, tool), 4 in Chat (…, function).
    const used = protocol === openaiChat ? 4 : 3;
    const atLimit = protocol.withSchema(deepSchema(MAX_JSON_DEPTH - used));
    expect((await post(`${url}${protocol.path}`, atLimit)).status).toBe(200);
    const over = protocol.withSchema(deepSchema(MAX_JSON_DEPTH - used + 1));
    expect((await post(`${url}${protocol.path}`, over)).status).toBe(400);
  });
});

describe('deep nesting through the CCR facade', () => {
  it('refuses an already-parsed Anthropic body nested 5,000 levels with a 400 naming the field', async () => {
    const home = await mkdtemp(join(tmpdir(), 'cb-deep-ccr-'));
    const upstream = new ScriptedUpstream(textTurn);
    const facade = new CcrFacade({
      env: { CURSOR_API_KEY: 'crsr_test', LOG_LEVEL: 'silent' },
      homedir: home,
      upstream,
    });
    cleanups.push(async () => {
      await facade.close();
      await rm(home, { recursive: true, force: true });
    });
    const body = JSON.parse(anthropic.withInput(deepValue(5000))) as Record<string, unknown>;
    const result = await facade.transformRequestIn(
      {},
      { model: 'composer-2', messages: [{ role: 'user', content: 'hi' }] },
      { name: 'cursor', baseUrl: 'https://cursor.invalid', apiKey: 'crsr_test', models: ['composer-2'] },
      { req: { url: '/v1/messages', headers: {}, body } },
    );
    const response = result.config.__providerResponse;
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).toMatch(/messages\.1\.content\.0\.input\.x\.0\.0\..*JSON nested deeper than 64 levels/);
    expect(upstream.sessions).toHaveLength(0);
  });
});
