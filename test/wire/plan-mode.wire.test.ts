import Anthropic from '@anthropic-ai/sdk';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

const planConfig = {
  Providers: [
    {
      name: 'cursor',
      api_base_url: 'https://cursor.com',
      api_key: '$CURSOR_API_KEY',
      models: ['composer-2'],
      transformer: { use: [['cursor-sdk', { cursorMode: 'plan' }]] },
    },
  ],
  Router: { default: 'cursor,composer-2' },
};

describe('plan mode', () => {
  it('runs text and reasoning only: no host tools reach the SDK and Cursor plan mode is requested', async () => {
    wire = await startWireBridge({
      config: planConfig,
      scenario: (run) => {
        run.text(`tools offered: ${run.toolNames.length}`);
        run.turnEnded();
      },
    });
    const client = new Anthropic({ baseURL: wire.url, apiKey: 'sk-test', maxRetries: 0 });
    const message = await client.messages.create({
      model: 'composer-2',
      max_tokens: 50,
      tools: [
        { name: 'Bash', input_schema: { type: 'object', properties: { command: { type: 'string' } } } },
      ],
      messages: [{ role: 'user', content: 'plan the refactor' }],
    });
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'tools offered: 0' })]);
    const request = wire.runRequests()[0];
    expect(request?.mcpTools).toEqual([]);
    expect(JSON.stringify(request?.json)).toMatch(/"mode":"(AGENT_MODE_)?PLAN"/);
    const runSse = wire.backend.requests.filter((entry) => entry.path.includes('RunSSE')).at(-1);
    expect(runSse?.headers['x-cursor-agent-allowed-tools'] ?? '').not.toContain('mcp_tool_call');
  });
});
