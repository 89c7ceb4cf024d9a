/**
 * The Codex setup for `cursor-bridge mcp-host` in docs/mcp-host.md, checked against the pinned Codex CLI (offline, in
 * its network namespace, on `cursor-bridge serve` with the fake backend): `[mcp_servers.custom-user-tools]`
 * with `url` and `bearer_token_env_var` connects, authenticates and lists the tools of a WebSocket host.
 *
 * Calling the tool is not part of it: Codex 0.171 defers MCP tools behind its client-executed Responses
 * `tool_search` tool, which `serve` does not carry yet (see the Claude Code suite for a call end to end).
 */

import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import { codexAgentMessages, codexDriver, codexWebSearchNote } from '../helpers/e2e/codex-driver.js';
import type { ClientDriver } from '../helpers/e2e/client-driver.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';
import { startMcpHostProcess } from '../helpers/e2e/mcp-host-process.js';

describe('Codex with cursor-bridge mcp-host as an MCP server', { timeout: scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('codex'), installTimeoutMs);

  it('connects with the documented config.toml (url + bearer_token_env_var) and lists the tools', async () => {
    const mcpHost = await startMcpHostProcess();
    onTestFinished(() => mcpHost.close());
    const server = new McpServer({ name: 'e2e-orders', version: '1.0.0' });
    server.registerTool(
      'lookup_order',
      { description: 'Look up an order.', inputSchema: { order_id: z.string() } },
      (args) => ({ content: [{ type: 'text', text: `Order ${args.order_id} shipped.` }] }),
    );
    await server.connect(
      new WebSocketClientTransport(new URL(`ws://127.0.0.1:${mcpHost.port}/host?token=${mcpHost.token}`)),
    );
    onTestFinished(() => server.close());
    const driver: ClientDriver = {
      ...codexDriver,
      configure: async (sandbox, endpoint) => {
        await codexDriver.configure(sandbox, endpoint);
        const section = [
          '[mcp_servers.custom-user-tools]',
          `url = "${mcpHost.url}/mcp"`,
          'bearer_token_env_var = "CURSOR_BRIDGE_MCP_TOKEN"',
        ];
        await appendFile(join(sandbox.home, '.codex', 'config.toml'), `\n${section.join('\n')}\n`);
      },
      invocation: (target, prompt, options) => {
        const base = codexDriver.invocation(target, prompt, options);
        return { ...base, env: { ...base.env, CURSOR_BRIDGE_MCP_TOKEN: mcpHost.token } };
      },
    };
    const e2e = await startE2e(
      driver,
      { turns: [{ steps: [{ text: 'Plain answer.' }] }] },
      { forwards: [mcpHost.forward] },
    );
    onTestFinished((context) => {
      if (context.task.result?.state === 'fail') console.error(mcpHost.describe());
    });

    const run = await e2e.turn('Say something.');

    expect(run.exitCode).toBe(0);
    // The first answer opens with the note on web_search, which the bridge cannot offer.
    expect(codexAgentMessages(run.stdout)).toEqual([
      expect.stringMatching(codexWebSearchNote),
      'Plain answer.',
    ]);
    const exchanges = mcpHost.exchanges.map((exchange) => `${exchange.method} ${String(exchange.status)}`);
    // initialize authenticated (200, not 401), then more requests of the session (tools/list); Codex ends
    // it with DELETE on exit.
    expect(exchanges[0]).toBe('POST 200');
    expect(exchanges.filter((exchange) => exchange === 'POST 200').length).toBeGreaterThanOrEqual(2);
    expect(mcpHost.exchanges.map((exchange) => exchange.method)).toContain('DELETE');
    expect(mcpHost.describe()).toContain('"msg":"agent session started"');
    expect(mcpHost.describe()).toMatch(/"methods":\["tools\/list"\],"msg":"agent request"/);
  });
});
