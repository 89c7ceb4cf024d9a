/**
 * The real `@musistudio/llms@1.0.53` (the transformer library of CCR 1.0.73 and 2.0.0), from the CCR 1.0.73
 * install in the e2e client cache (installed from npm on first use). Its package exports only the server
 * class, so its built-in transformers and its provider resolution are reached through a `Server` that never
 * listens.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ensureClient } from '../e2e/install-clients.js';
import { sleep } from '../../../lib/sleep.js';

/** The members of an llms transformer the tests call. */
export type LlmsTransformer = {
  name?: string;
  transformRequestIn?: (request: unknown, provider: unknown, context: unknown) => Promise<unknown>;
  transformRequestOut?: (request: unknown) => Promise<unknown>;
  transformResponseIn?: (response: Response, context?: unknown) => Promise<Response>;
};

type LlmsServer = {
  transformerService: {
    hasTransformer(name: string): boolean;
    getTransformer(name: string): unknown;
  };
  providerService?: { getProvider(name: string): { transformer?: { use?: unknown[] } } | undefined };
};

type LlmsServerClass = new (options: Record<string, unknown>) => LlmsServer;

/** Install timeout for `beforeAll`. */
export const llmsInstallTimeoutMs = 10 * 60_000;

const importServerClass = async (): Promise<LlmsServerClass> => {
  const ccr = await ensureClient('ccr-1');
  // The CommonJS build, through Node's own require (as CCR 1.0.73 loads it): its ESM build's bundled
  // `require` shim does not survive vitest's module runner.
  const entry = join(ccr.prefix, 'node_modules', '@musistudio', 'llms', 'dist', 'cjs', 'server.cjs');
  const module = createRequire(import.meta.url)(entry) as LlmsServerClass | { default: LlmsServerClass };
  return 'default' in module ? module.default : module;
};

/**
 * An llms server (not listening) built from `initialConfig` (`providers`, `transformers`), once its
 * transformer service and provider service are initialised.
 */
export const createLlmsServer = async (initialConfig: Record<string, unknown>): Promise<LlmsServer> => {
  const Server = await importServerClass();
  const server = new Server({ useJsonFile: false, logger: false, initialConfig });
  // 3000 polls of 10 ms or more: a safety net against a hang (30 s at least), never a speed claim.
  for (let attempt = 0; server.providerService === undefined; attempt += 1) {
    if (attempt > 3_000) throw new Error('llms: the provider service never initialised');
    await sleep(10);
  }
  return server;
};

/** llms' own AnthropicTransformer instance (registered under `Anthropic`). */
export const loadAnthropicTransformer = async (): Promise<LlmsTransformer> => {
  const server = await createLlmsServer({ providers: [] });
  const transformer = server.transformerService.getTransformer('Anthropic') as LlmsTransformer | undefined;
  if (transformer?.transformResponseIn === undefined) throw new Error('llms: no Anthropic transformer');
  return transformer;
};
