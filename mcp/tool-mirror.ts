/**
 * The mirrored tool set of one `custom-user-tools` server: answers `tools/list` and announces changes.
 *
 * Uses the low-level `Server` request handlers: `McpServer.registerTool` in SDK 1.32 only takes zod
 * schemas, while host tools arrive as arbitrary JSON Schema.
 */

import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { mirrorToolDefinition } from './mirror-tool-definition.js';
import type { MirroredTool, ToolDefinition } from './mirror-tool-definition.js';

export class ToolMirror {
  readonly #server: Server;
  #tools = new Map<string, MirroredTool>();
  #fingerprint = '';

  /**
   * Installs the `tools/list` handler on `server` (which must declare the `tools` capability and not be
   * connected yet, or the handler is still installed but capabilities cannot change).
   */
  constructor(server: Server, tools: readonly ToolDefinition[]) {
    this.#server = server;
    this.#replace(tools);
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.list() }));
  }

  /** The mirrored tools in definition order. Pagination is not used: one page holds every tool. */
  list(): MirroredTool[] {
    return [...this.#tools.values()];
  }

  /** The mirrored tool with this exact name. */
  get(name: string): MirroredTool | undefined {
    return this.#tools.get(name);
  }

  /**
   * Replaces the whole set. When the mirrored result differs from the current one and the server is
   * connected, sends `notifications/tools/list_changed`. Returns whether the set changed. Definitions with
   * an empty name are skipped; of duplicate names the last one wins.
   */
  setTools(tools: readonly ToolDefinition[]): boolean {
    if (!this.#replace(tools)) return false;
    if (this.#server.transport) {
      // A peer that has gone away cannot be told; the next tools/list still answers correctly.
      this.#server.sendToolListChanged().catch(() => {});
    }
    return true;
  }

  #replace(definitions: readonly ToolDefinition[]): boolean {
    const tools = new Map<string, MirroredTool>();
    for (const definition of definitions) {
      if (typeof definition.name !== 'string' || definition.name === '') continue;
      tools.set(definition.name, mirrorToolDefinition(definition));
    }
    const fingerprint = JSON.stringify([...tools.values()]);
    if (fingerprint === this.#fingerprint) return false;
    this.#tools = tools;
    this.#fingerprint = fingerprint;
    return true;
  }
}
