/**
 * A session's `custom-user-tools` tool host: the MCP server that mirrors the client's tools, the broker its
 * calls park in, and the in-process link the SDK's custom tools call it through. Each run's calls are
 * owned by that run's {@link RunToolCalls}; this routes every parked call to the run that is current.
 */

import type { Logger } from 'pino';
import {
  connectInProcess,
  createCustomUserToolsServer,
  ParkedCallBroker,
  type CustomUserToolsServer,
  type InProcessClient,
  type ToolDefinition,
} from '../../../../mcp/index.js';
import type { TurnTool } from '../../../turn/turn-request.js';
import { RunToolCalls, type RunToolCallsOptions } from './run-tool-calls.js';

const toToolDefinition = (tool: TurnTool): ToolDefinition => ({
  name: tool.name,
  ...(tool.description === undefined ? {} : { description: tool.description }),
  inputSchema: tool.inputSchema,
});

export class SessionHostTools {
  readonly #broker: ParkedCallBroker;
  readonly #server: CustomUserToolsServer;
  #link: Promise<InProcessClient> | undefined;
  #connected: InProcessClient | undefined;
  #run: RunToolCalls | undefined;

  constructor(logger: Logger) {
    this.#broker = new ParkedCallBroker({ logger });
    this.#server = createCustomUserToolsServer({ tools: [], broker: this.#broker });
    this.#broker.onParked((call) => this.#run?.parked(call));
  }

  /**
   * Mirror the next run's tools on the server (an empty set when the mode hosts none) and make sure the
   * link is up. A failed connect is not cached: the next run tries again.
   */
  async mirror(tools: readonly TurnTool[]): Promise<void> {
    this.#server.setTools(tools.map(toToolDefinition));
    this.#connected = await (this.#link ??= connectInProcess(this.#server.server).catch((error: unknown) => {
      this.#link = undefined;
      throw error;
    }));
  }

  /**
   * The next run's tool calls, after {@link mirror}: its SDK custom tools are what the server lists now,
   * and every call parked from now on belongs to it.
   */
  beginRun(options: Omit<RunToolCallsOptions, 'broker' | 'server'>): RunToolCalls {
    const link = this.#connected;
    const run = new RunToolCalls({
      ...options,
      broker: this.#broker,
      ...(link === undefined ? {} : { server: { link, tools: this.#server.tools() } }),
    });
    this.#run = run;
    return run;
  }

  /** Settle every parked call with `reason`, refuse new ones, and close the server and its link. */
  async close(reason: string): Promise<void> {
    this.#run = undefined;
    this.#broker.close(reason);
    const link = await this.#link?.catch(() => undefined);
    await link?.close();
    await this.#server.close();
  }
}
