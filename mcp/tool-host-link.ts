/**
 * One attached tool host, seen from mcp-host: an MCP `Client` over the host's link (roles reversed: the
 * host is the MCP server). Lists the host's tools, follows its `notifications/tools/list_changed`, and
 * forwards calls to it.
 *
 * Contracts:
 * - `connect()` resolves after `initialize` and the first complete `tools/list` (all pages); it rejects
 *   (and closes the link) when either fails.
 * - `onToolsChanged` runs with the complete new list after every list_changed, in order; refreshes never
 *   overlap (a change during a refresh runs one more refresh after it).
 * - `callTool()` sends one `tools/call` (with a progress token when given a listener) and never retries it. Its request timeout is the longest Node
 *   timer: the caller bounds calls (the broker's deadline). Aborting `signal` sends the host
 *   `notifications/cancelled` for that request (the SDK does this) and rejects.
 * - `onClose` runs once when the link ends, by either side.
 */

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResultSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Implementation, Progress, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { MAX_TIMER_DELAY_MS } from './parked-call-broker.js';
import { toToolCallResult } from './tool-call-result.js';
import type { ToolCallResult } from './tool-call-result.js';

export type ToolHostLinkOptions = {
  /** mcp-host's `clientInfo` in `initialize`. */
  clientInfo: Implementation;
  logger: Pick<Logger, 'warn' | 'debug'>;
  onToolsChanged: (tools: Tool[]) => void;
  onClose: () => void;
};

/** Pages of one `tools/list` a host may return before it is considered broken. */
const maxToolPages = 100;

export class ToolHostLink {
  readonly #client: Client;
  readonly #options: ToolHostLinkOptions;
  #refreshing: Promise<void> | undefined;
  #refreshAgain = false;
  #closed = false;

  private constructor(client: Client, options: ToolHostLinkOptions) {
    this.#client = client;
    this.#options = options;
  }

  /** Initializes the host over `transport` and lists its tools. */
  static async connect(
    transport: Transport,
    options: ToolHostLinkOptions,
  ): Promise<{ link: ToolHostLink; tools: Tool[] }> {
    const client = new Client(options.clientInfo, { capabilities: {} });
    const link = new ToolHostLink(client, options);
    client.onclose = () => link.#finish();
    client.onerror = (error) => options.logger.debug({ err: error }, 'tool host link error');
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => link.#refresh());
    try {
      await client.connect(transport);
      const tools = await link.#listTools();
      return { link, tools };
    } catch (error) {
      await link.close();
      throw error;
    }
  }

  /** The host's `serverInfo` from `initialize`. */
  get serverInfo(): Implementation | undefined {
    return this.#client.getServerVersion();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Calls the host's tool once; an `isError` result is a result, a JSON-RPC error rejects. */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    onProgress?: (progress: Progress) => void,
  ): Promise<ToolCallResult> {
    const result = await this.#client.callTool({ name, arguments: args }, CallToolResultSchema, {
      signal,
      timeout: MAX_TIMER_DELAY_MS,
      // With a listener the SDK sends a progress token, so the host may report progress.
      ...(onProgress === undefined ? {} : { onprogress: onProgress }),
    });
    return toToolCallResult(result);
  }

  /** Sends a notification outside the MCP method set (mcp-host's own, e.g. refused tools). */
  async notify(method: string, params: Record<string, unknown>): Promise<void> {
    await this.#client.transport?.send({ jsonrpc: '2.0', method, params });
  }

  /** Closes the link; pending calls reject. Idempotent. */
  async close(): Promise<void> {
    await this.#client.close();
    this.#finish();
  }

  async #listTools(): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < maxToolPages; page += 1) {
      const result = await this.#client.listTools(cursor === undefined ? {} : { cursor });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (cursor === undefined) return tools;
    }
    throw new Error(`The tool host returned more than ${maxToolPages} pages of tools/list.`);
  }

  #refresh(): void {
    if (this.#closed) return;
    if (this.#refreshing) {
      this.#refreshAgain = true;
      return;
    }
    this.#refreshing = this.#listTools()
      .then(
        (tools) => {
          if (!this.#closed) this.#options.onToolsChanged(tools);
        },
        (error: unknown) => {
          if (!this.#closed)
            this.#options.logger.warn({ err: error }, 'tool host: tools/list failed after list_changed');
        },
      )
      .finally(() => {
        this.#refreshing = undefined;
        if (this.#refreshAgain) {
          this.#refreshAgain = false;
          this.#refresh();
        }
      });
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#options.onClose();
  }
}
