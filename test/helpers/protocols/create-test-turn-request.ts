import type { TurnRequest } from '../../../src/turn/turn-request.js';

/** A minimal valid TurnRequest ("say hi", no tools, streaming) with `overrides` applied. */
export const createTestTurnRequest = (overrides: Partial<TurnRequest> = {}): TurnRequest => ({
  protocol: 'openai-responses',
  model: 'gpt-5.5',
  system: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'say hi' }] }],
  tools: [],
  toolChoice: { type: 'auto' },
  reasoning: { requested: false },
  stream: true,
  includeStreamUsage: true,
  identity: {},
  headers: {},
  warnings: [],
  ...overrides,
});
