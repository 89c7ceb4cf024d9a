import { describe, expect, it } from 'vitest';
import { DeltaMerger } from '../../../src/upstream/cursor/delta-merger.js';
import { mapCursorRunError, mapCursorSdkError } from '../../../src/upstream/cursor/map-cursor-error.js';
import { mapCursorUsage } from '../../../src/upstream/cursor/map-cursor-usage.js';

describe('DeltaMerger', () => {
  it('emits each part of the shared sequence once, whichever source is ahead', () => {
    const merger = new DeltaMerger();
    expect(merger.accept('delta', 'Hel')).toBe('Hel');
    expect(merger.accept('stream', 'He')).toBe('');
    expect(merger.accept('stream', 'llo')).toBe('lo');
    expect(merger.accept('delta', 'lo')).toBe('');
    expect(merger.accept('delta', ' world')).toBe(' world');
    expect(merger.accept('stream', ' world')).toBe('');
    expect(merger.accept('stream', 'next')).toBe('next');
    expect(merger.position).toBe('Hello world'.length + 4);
  });

  it('after a rewind, swallows a replay up to what was emitted and passes on what is new', () => {
    const merger = new DeltaMerger();
    expect(merger.accept('delta', 'step one. ')).toBe('step one. ');
    const stepTwo = merger.position;
    expect(merger.accept('delta', 'partial')).toBe('partial');
    merger.rewind(stepTwo);
    expect(merger.accept('delta', 'part')).toBe('');
    expect(merger.accept('delta', 'ial answer')).toBe(' answer');
  });
});

describe('mapCursorUsage', () => {
  it('bounds cache reads by the input and takes them out of it', () => {
    expect(
      mapCursorUsage({
        inputTokens: 1200,
        outputTokens: 34,
        cacheReadTokens: 1000,
        cacheWriteTokens: 5,
        reasoningTokens: 7,
      }),
    ).toEqual({
      inputTokens: 200,
      outputTokens: 34,
      cacheReadTokens: 1000,
      cacheWriteTokens: 5,
      reasoningTokens: 7,
    });
    expect(
      mapCursorUsage({ inputTokens: 100, outputTokens: 1, cacheReadTokens: 5000, cacheWriteTokens: 0 }),
    ).toMatchObject({
      inputTokens: 0,
      cacheReadTokens: 100,
    });
  });
});

describe('Cursor error mapping', () => {
  const named = (name: string, message: string): Error => Object.assign(new Error(message), { name });

  it.each([
    ['AuthenticationError', 'authentication', false],
    ['RateLimitError', 'rate-limit', true],
    ['ConfigurationError', 'invalid-request', false],
    ['NetworkError', 'overloaded', true],
    ['UnknownAgentError', 'api', true],
  ] as const)('%s → %s', (name, kind, retryable) => {
    const error = mapCursorSdkError(named(name, 'details'));
    expect(error).toMatchObject({ kind, retryable });
    expect(error.message).toContain('details');
  });

  it('tells the user how to fix a rejected key', () => {
    expect(mapCursorSdkError(named('AuthenticationError', 'Invalid API key')).message).toMatch(
      /crsr_.*CURSOR_API_KEY/,
    );
  });

  it.each([
    [{ message: '[unknown] Invalid API key (fake)' }, 'authentication'],
    [{ message: 'usage limit exceeded' }, 'usage-limit'],
    [{ message: '[unknown] Failed to connect to API key exchange endpoint: fetch failed' }, 'overloaded'],
    [{ message: 'fetch failed' }, 'overloaded'],
    // What the SDK reports after its transport retries against a backend that went away mid-run.
    [{ message: 'Connection failed repeatedly' }, 'overloaded'],
    [{ message: 'Connection stalled repeatedly' }, 'overloaded'],
    [{ message: 'model crashed', code: 'internal' }, 'api'],
    [{ message: '[permission_denied] not allowed for this team' }, 'permission'],
    [{ message: '[unauthenticated] token expired' }, 'authentication'],
    [{ message: '[resource_exhausted] slow down' }, 'rate-limit'],
    [{ message: '[invalid_argument] bad model params' }, 'invalid-request'],
    [{ message: '[internal] boom' }, 'api'],
  ] as const)('run error %j → %s', (runError, kind) => {
    expect(mapCursorRunError(runError).kind).toBe(kind);
  });

  describe('a conversation over the context window', () => {
    // What the SDK leaves of Cursor's CONVERSATION_TOO_LONG inside a run: `${title} ${detail}` (see the
    // fake backend's failConversationTooLong and test/fakes/cursor-backend-failures.test.ts).
    const inRun =
      'Conversation too long Your conversation is too long. Please try creating a new conversation or shortening your messages.';

    it.each([
      [{ message: inRun }],
      // Without details the Connect code prefix survives; the text decides over `resource_exhausted`.
      [{ message: '[resource_exhausted] Your conversation is too long.' }],
      [{ message: '[invalid_argument] prompt is too long: 210000 tokens > 200000 maximum' }],
      [{ message: 'Request exceeds the context window of this model' }],
      [{ message: 'anything', code: 'CONVERSATION_TOO_LONG' }],
    ])('run error %j → context-length, not retryable', (runError) => {
      const error = mapCursorRunError(runError);
      expect(error).toMatchObject({ kind: 'context-length', retryable: false });
      expect(error.message).toContain(runError.message);
      expect(error.message).toMatch(/maximum context length/);
    });

    it('maps a typed SDK error by its ErrorDetails code, whatever its class', () => {
      // convertConnectError's fallback: UnknownAgentError with the enum name as `code`.
      const typed = Object.assign(named('UnknownAgentError', 'Conversation too long'), {
        code: 'CONVERSATION_TOO_LONG',
      });
      expect(mapCursorSdkError(typed)).toMatchObject({ kind: 'context-length', retryable: false });
      expect(mapCursorSdkError(named('ConfigurationError', 'Your conversation is too long')).kind).toBe(
        'context-length',
      );
    });

    it('leaves network deadlines and a model parameter named "context window" alone', () => {
      expect(mapCursorRunError({ message: 'context deadline exceeded' }).kind).toBe('overloaded');
      expect(
        mapCursorSdkError(named('ConfigurationError', 'Invalid value 2m for parameter context window')).kind,
      ).toBe('invalid-request');
    });
  });

  describe("Cursor's rate and usage limits", () => {
    it.each([
      // What a running run keeps of Cursor's usage limit: `${title} ${detail}` (the Cursor app's text).
      ["You've hit your usage limit Get Cursor Pro for more Agent usage, unlimited Tab, and more."],
      // Cursor's abuse block, as its users reported it.
      [
        'Too many free trial accounts used on this machine. Please upgrade to pro. We have this limit in ' +
          'place to prevent abuse. Please let us know if you believe this is a mistake.',
      ],
      [
        'Too many computers used within the last 24 hours for the same Cursor account. Please try again ' +
          'later, use a different Cursor account, or contact us. We have this limit in place to prevent abuse.',
      ],
      ['[resource_exhausted] Usage-based pricing required to keep using this model'],
      ['Spend limit reached Raise your spending limit to continue.'],
      ['[permission_denied] Suspicious activity detected'],
    ])('run error %j → usage-limit, not retryable, naming the dashboard', (message) => {
      const error = mapCursorRunError({ message });
      expect(error).toMatchObject({ kind: 'usage-limit', retryable: false });
      expect(error.message).toContain(message);
      expect(error.message).toContain('https://cursor.com/dashboard');
    });

    it.each([
      ['Rate limit exceeded Please try again in 30 seconds.', 30],
      ['[resource_exhausted] Too many requests, retry in 2 minutes', 120],
      ['Rate limited try again in 1.5s', 2],
      ['Rate limited try again in 500ms', 1],
      ['[unknown] Rate limit exceeded. Please try again in 7 seconds.', 7],
    ])('run error %j → rate-limit, retry-after and reset %i s from its text', (message, seconds) => {
      expect(mapCursorRunError({ message })).toMatchObject({
        kind: 'rate-limit',
        retryable: true,
        retryAfterSeconds: seconds,
        resetSeconds: seconds,
      });
    });

    it.each([
      ['User API Key Rate limit exceeded'],
      // Cursor's overload refusal (ERROR_CUSTOM_MESSAGE "High Load"): it passes with time, so not final.
      [
        "High Load We're experiencing high demand for Claude 3.7 Sonnet right now. Please upgrade to Pro, " +
          "switch to the 'auto-select' model, another model, or try again in a few moments.",
      ],
      // After the SDK's own retries only the Connect code of Cursor's bare `Error` message is left.
      ['[resource_exhausted] Error'],
    ])('run error %j → rate-limit with the default retry-after', (message) => {
      expect(mapCursorRunError({ message })).toMatchObject({
        kind: 'rate-limit',
        retryable: true,
        retryAfterSeconds: 10,
      });
    });

    it('gives a rate limit without a time the default retry-after and no reset, and says it in the text', () => {
      const error = mapCursorRunError({ message: '[resource_exhausted] slow down' });
      expect(error).toMatchObject({ kind: 'rate-limit', retryable: true, retryAfterSeconds: 10 });
      expect(error).not.toHaveProperty('resetSeconds');
      // Codex reads a delay from "try again in Ns" where no header can go.
      expect(error.message).toMatch(/try again in 10s/);
    });

    it.each([
      ['PRO_USER_USAGE_LIMIT', 'usage-limit'],
      ['USAGE_PRICING_REQUIRED', 'usage-limit'],
      ['SUSPICIOUS_USAGE_BLOCKED', 'usage-limit'],
      ['RATE_LIMITED', 'rate-limit'],
      ['resource_exhausted', 'rate-limit'],
    ])('a typed RateLimitError with code %s → %s', (code, kind) => {
      const typed = Object.assign(named('RateLimitError', 'Limit'), { code });
      expect(mapCursorSdkError(typed).kind).toBe(kind);
    });

    it.each([
      ['USAGE_PRICING_REQUIRED'],
      ['USAGE_PRICING_REQUIRED_CHANGEABLE'],
      ['SUSPICIOUS_USAGE_BLOCKED'],
    ])(
      'a typed UnknownAgentError (as the SDK throws it) with code %s → usage-limit, not retryable',
      (code) => {
        const typed = Object.assign(named('UnknownAgentError', 'Blocked'), { code });
        expect(mapCursorSdkError(typed)).toMatchObject({ kind: 'usage-limit', retryable: false });
      },
    );
  });

  it('marks permission and request faults non-retryable, server faults retryable', () => {
    expect(mapCursorRunError({ message: '[permission_denied] no' }).retryable).toBe(false);
    expect(mapCursorRunError({ message: '[invalid_argument] no' }).retryable).toBe(false);
    expect(mapCursorRunError({ message: '[internal] no' }).retryable).toBe(true);
  });
});
