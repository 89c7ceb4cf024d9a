import { createCustomUserToolsServer } from '../../../mcp/custom-user-tools-server.js';
import type {
  CustomUserToolsServer,
  CustomUserToolsServerOptions,
} from '../../../mcp/custom-user-tools-server.js';
import { connectInProcess } from '../../../mcp/in-process-client.js';
import type { InProcessClient, InProcessClientOptions } from '../../../mcp/in-process-client.js';
import type { ToolDefinition } from '../../../mcp/mirror-tool-definition.js';
import { ParkedCallBroker } from '../../../mcp/parked-call-broker.js';
import type { ParkedCall } from '../../../mcp/parked-call-broker.js';

export const hostTools: ToolDefinition[] = [
  {
    name: 'Read',
    description: 'Read a file from the local filesystem.',
    inputSchema: {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { file_path: { type: 'string' }, limit: { type: 'number' } },
      required: ['file_path'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'Bash',
    description: 'Run a shell command.',
    inputSchema: { properties: { command: { type: 'string' } } },
  },
  { name: 'Screenshot', inputSchema: {} },
];

export type McpFixture = {
  broker: ParkedCallBroker;
  host: CustomUserToolsServer;
  client: InProcessClient;
  /** Every call announced by the broker, in order. */
  announced: ParkedCall[];
  close(): Promise<void>;
};

/** A broker, a `custom-user-tools` server and an in-process client linked to it. */
export async function createMcpFixture(
  options: {
    tools?: ToolDefinition[];
    server?: Partial<CustomUserToolsServerOptions>;
    client?: InProcessClientOptions;
  } = {},
): Promise<McpFixture> {
  const broker = options.server?.broker ?? new ParkedCallBroker();
  const host = createCustomUserToolsServer({ ...options.server, tools: options.tools ?? hostTools, broker });
  const client = await connectInProcess(host.server, options.client);
  const announced: ParkedCall[] = [];
  broker.onParked((call) => announced.push(call));
  return {
    broker,
    host,
    client,
    announced,
    async close() {
      try {
        await client.close();
      } finally {
        broker.close();
        await host.close();
      }
    },
  };
}

/** Waits until `predicate` holds, polling on the macrotask queue (the in-memory link is asynchronous). */
export async function until(predicate: () => boolean, attempts = 200): Promise<void> {
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    if (predicate()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition not reached');
}
