/**
 * Acceptance of `cursor-bridge mcp-host` with a real agent: the pinned Claude Code CLI, offline in its
 * network namespace, runs on `cursor-bridge serve` (the fake Cursor backend plays the model) and has
 * mcp-host as its MCP server `custom-user-tools` (Streamable HTTP, bearer token). The tool really runs in
 * an official-SDK tool host attached to mcp-host over WebSocket, in this test process; its answer holds
 * a code the model cannot know, and Claude Code's final answer must contain it.
 */

import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import type { ClientDriver } from '../helpers/e2e/client-driver.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';
import { startMcpHostProcess, type McpHostProcess } from '../helpers/e2e/mcp-host-process.js';
import { quoteToolResults, type ModelStep } from '../helpers/e2e/model-scenario.js';

const toolName = 'lookup_order';
/** The name Claude Code gives the tool of its MCP server `custom-user-tools`. */
const claudeToolName = `mcp__custom-user-tools__${toolName}`;

type AttachedHost = { executions: Array<Record<string, unknown>>; close(): Promise<void> };

/** The user's tool host: the official SDK, `McpServer` over `WebSocketClientTransport`, nothing else. */
const attachToolHost = async (mcpHost: McpHostProcess, trackingCode: string): Promise<AttachedHost> => {
  const executions: Array<Record<string, unknown>> = [];
  const server = new McpServer({ name: 'e2e-orders', version: '1.0.0' });
  server.registerTool(
    toolName,
    { description: 'Look up an order by its id.', inputSchema: { order_id: z.string() } },
    (args) => {
      executions.push(args);
      return {
        content: [{ type: 'text', text: `Order ${args.order_id} shipped; tracking ${trackingCode}.` }],
      };
    },
  );
  await server.connect(
    new WebSocketClientTransport(new URL(`ws://127.0.0.1:${mcpHost.port}/host?token=${mcpHost.token}`)),
  );
  return { executions, close: () => server.close() };
};

/** Claude Code with mcp-host as `custom-user-tools` (`--mcp-config`, strict), the MCP tool allowed. */
const withMcpHost = (mcpHost: McpHostProcess, env: Record<string, string>): ClientDriver => ({
  ...claudeCodeDriver,
  configure: async (sandbox) => {
    const config = {
      mcpServers: {
        'custom-user-tools': {
          type: 'http',
          url: `${mcpHost.url}/mcp`,
          headers: { Authorization: `Bearer ${mcpHost.token}` },
        },
      },
    };
    await writeFile(join(sandbox.home, 'mcp.json'), JSON.stringify(config));
  },
  invocation: (target, prompt, options) => {
    const base = claudeCodeDriver.invocation(target, prompt, options);
    const args = [...base.args];
    // `--allowedTools` takes several values: the MCP tool joins Bash.
    args.splice(args.indexOf('Bash') + 1, 0, claudeToolName);
    args.push('--mcp-config', join(target.sandbox.home, 'mcp.json'), '--strict-mcp-config');
    return { ...base, args, env: { ...base.env, ...env } };
  },
});

const startScenario = async (turns: ModelStep[][], env: Record<string, string>) => {
  const mcpHost = await startMcpHostProcess();
  onTestFinished(() => mcpHost.close());
  const trackingCode = `TRK-${randomBytes(4).toString('hex')}`;
  const host = await attachToolHost(mcpHost, trackingCode);
  onTestFinished(() => host.close());
  const e2e = await startE2e(
    withMcpHost(mcpHost, env),
    { turns: turns.map((steps) => ({ steps })) },
    { forwards: [mcpHost.forward] },
  );
  onTestFinished((context) => {
    if (context.task.result?.state === 'fail') console.error(mcpHost.describe());
  });
  return { e2e, host, trackingCode, mcpHost };
};

const callStep: ModelStep = {
  text: 'Looking the order up.',
  toolCalls: [{ tool: claudeToolName, input: { order_id: 'A-17' } }],
};
const answerStep: ModelStep = { text: (context) => `The tool host says: ${quoteToolResults(context)}` };

describe('Claude Code with cursor-bridge mcp-host as its MCP server', { timeout: scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('claude-code'), installTimeoutMs);

  it('calls a tool a WebSocket host executes, and answers with its result (ENABLE_TOOL_SEARCH=false)', async () => {
    const { e2e, host, trackingCode, mcpHost } = await startScenario([[callStep, answerStep]], {
      ENABLE_TOOL_SEARCH: 'false',
    });

    const run = await e2e.turn('Where is order A-17?');

    expect(run.exitCode).toBe(0);
    expect(claudeCodeResult(run.stdout)?.result).toContain(`tracking ${trackingCode}`);
    // It ran once, on the host, with the model's arguments.
    expect(host.executions).toEqual([{ order_id: 'A-17' }]);
    const [mainRun] = e2e.bridge.mainRuns();
    expect(mainRun?.toolNames).toContain(claudeToolName);
    expect(mainRun?.toolResults).toEqual([
      expect.objectContaining({ text: `Order A-17 shipped; tracking ${trackingCode}.`, isError: false }),
    ]);
    expectReachedOverHttp(mcpHost);
  });

  it("with Claude Code's defaults: loads the deferred MCP tool with ToolSearch, then calls it", async () => {
    // Tool search on (the default): the MCP tool is offered only after the model loads it. The run that
    // called ToolSearch is retired when the tool set grows, and the turn goes on in a new run that offers it.
    const searchStep: ModelStep = {
      text: 'Loading the order tool.',
      toolCalls: [{ tool: 'ToolSearch', input: { query: `select:${claudeToolName}`, max_results: 1 } }],
    };
    const { e2e, host, trackingCode, mcpHost } = await startScenario(
      [
        [searchStep, answerStep],
        [callStep, answerStep],
      ],
      {},
    );

    const run = await e2e.turn('Where is order A-17?');

    expect(run.exitCode).toBe(0);
    expect(claudeCodeResult(run.stdout)?.result).toContain(`tracking ${trackingCode}`);
    expect(host.executions).toEqual([{ order_id: 'A-17' }]);
    const runs = e2e.bridge.mainRuns();
    // Deferred at first; offered once ToolSearch loaded it.
    expect(runs[0]?.toolNames).toContain('ToolSearch');
    expect(runs[0]?.toolNames).not.toContain(claudeToolName);
    expect(runs.at(-1)?.toolNames).toContain(claudeToolName);
    expect(runs.at(-1)?.toolResults).toEqual([
      expect.objectContaining({ text: `Order A-17 shipped; tracking ${trackingCode}.`, isError: false }),
    ]);
    expectReachedOverHttp(mcpHost);
  });
});

/** Claude Code reached mcp-host from its namespace (through the recording proxy), over Streamable HTTP. */
const expectReachedOverHttp = (mcpHost: McpHostProcess): void => {
  const posts = mcpHost.exchanges.filter((exchange) => exchange.method === 'POST' && exchange.url === '/mcp');
  expect(posts.length).toBeGreaterThan(1);
};
