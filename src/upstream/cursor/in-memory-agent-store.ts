/**
 * An in-memory `LocalAgentStore` for `@cursor/sdk`, so no conversation text reaches the disk (the
 * default SQLite store writes every stream delta and every checkpoint blob under `~/.cursor/projects/…`)
 * and no per-token I/O happens.
 *
 * What it keeps, and for how long:
 * - agent rows, run rows and checkpoint blobs (content-addressed conversation state) for as long as
 *   the agent exists — the SDK needs them to continue or `Agent.resume` an agent in this process;
 *   call {@link InMemoryAgentStore.dropAgent} when the bridge forgets a conversation;
 * - run events (one per stream message, i.e. per text delta) only for active runs and for the most
 *   recent {@link InMemoryAgentStoreOptions.maxFinishedRunsWithEvents} finished runs; each run exposes its
 *   newest {@link InMemoryAgentStoreOptions.maxEventsPerRun} events (it holds fewer than twice that: the
 *   oldest are dropped in batches). Live `run.stream()`
 *   and `onDelta` do not read them; only runs re-opened from the store (`Agent.getRun`) replay them.
 *
 * Semantics follow the SDK's own stores: list orders and opaque cursors as `paginate*` in the SDK,
 * run events numbered per run from 1 with `offset = String(seq)`, `afterOffset` exclusive, an
 * `idempotencyKey` appended twice returns the first event. Checkpoint `create`/`update` are upserts
 * (blob ids are content hashes, so concurrent writers store identical bytes).
 *
 * Only types are imported from `@cursor/sdk`, so importing this module does not load the SDK (which
 * reads `CURSOR_BACKEND_URL` when it loads).
 */

import type {
  LocalAgentAgentFilter,
  LocalAgentCheckpointFilter,
  LocalAgentDocument,
  LocalAgentListFilter,
  LocalAgentRunDocument,
  LocalAgentRunEventDocument,
  LocalAgentRunFilter,
  LocalAgentRunStatus,
  LocalAgentStore,
  LocalAgentStoreAgents,
  LocalAgentStoreCheckpoints,
  LocalAgentStoreListResult,
  LocalAgentStoreRunEvents,
  LocalAgentStoreRuns,
} from '@cursor/sdk';

export type InMemoryAgentStoreOptions = {
  /**
   * Finished runs whose events are kept (most recent first). Default 0: the bridge never re-opens a run
   * from the store, and a finished run's events are every delta of its answer.
   */
  maxFinishedRunsWithEvents?: number;
  /**
   * Events kept per run (held: under twice this); the oldest are dropped beyond it. Default 256: the live stream never reads
   * them, and a long answer's every delta was a structured clone held until the run was evicted.
   */
  maxEventsPerRun?: number;
  /**
   * Called when the SDK records the id of a run's backend request (its `request` event, appended before
   * the run's backend stream opens; the stream carries it as `x-request-id`).
   */
  onRunRequest?: (runId: string, requestId: string) => void;
  /**
   * Called when the SDK moves an agent's latest conversation checkpoint (it saved a checkpoint the backend
   * sent): the agent's history changed. `checkpoint` reads it back, synchronously: its root blob and
   * every blob of the agent (for as long as the call lasts; copy what is kept).
   */
  onCheckpoint?: (agentId: string, checkpoint: StoredCheckpoint) => void;
};

/** An agent's latest conversation checkpoint in the store: its root blob id and a reader of its blobs. */
export type StoredCheckpoint = {
  rootBlobId: string;
  /** The bytes of one of the agent's blobs (blob ids as the SDK keys them: lower-case hex). */
  readBlob: (blobId: string) => Uint8Array | undefined;
};

/** Counts, for tests and metrics. */
export type InMemoryAgentStoreStats = {
  agents: number;
  runs: number;
  checkpointBlobs: number;
  checkpointBytes: number;
  runsWithEvents: number;
  events: number;
};

const DEFAULT_LIST_LIMIT = 50;
const DEFAULT_EVENT_LIMIT = 100;
/** How many evicted run ids are remembered so late appends to them are dropped too. */
const EVICTED_MEMORY = 4096;

const TERMINAL_STATUSES: ReadonlySet<LocalAgentRunStatus> = new Set([
  'finished',
  'error',
  'cancelled',
  'expired',
]);

type RunEvents = { nextSeq: number; events: LocalAgentRunEventDocument[] };

const encodeCursor = (value: object): string =>
  Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** Decodes an opaque cursor; invalid input throws like the SDK's own stores. */
const decodeCursor = (cursor: string): Record<string, unknown> => {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('Invalid list cursor');
  return value as Record<string, unknown>;
};

const page = <T>(sorted: readonly T[], limit: number | undefined, cursorOf: (last: T) => string) => {
  const size = limit ?? DEFAULT_LIST_LIMIT;
  const items = sorted.slice(0, size);
  const last = items.at(-1);
  return { items, ...(sorted.length > size && last !== undefined ? { nextCursor: cursorOf(last) } : {}) };
};

const compareAgents = (a: LocalAgentDocument, b: LocalAgentDocument): number =>
  b.updatedAt !== a.updatedAt
    ? b.updatedAt - a.updatedAt
    : b.agentId < a.agentId
      ? -1
      : b.agentId > a.agentId
        ? 1
        : 0;

const compareRuns = (a: LocalAgentRunDocument, b: LocalAgentRunDocument): number =>
  a.turnNumber !== b.turnNumber
    ? a.turnNumber - b.turnNumber
    : a.runId < b.runId
      ? -1
      : a.runId > b.runId
        ? 1
        : 0;

const matchesAgent = (agent: LocalAgentDocument, filter: LocalAgentAgentFilter): boolean =>
  (!filter.agentIds?.length || filter.agentIds.includes(agent.agentId)) &&
  (filter.cwd === undefined || agent.cwd === filter.cwd);

const matchesRun = (run: LocalAgentRunDocument, filter: LocalAgentRunFilter): boolean =>
  (!filter.agentIds?.length || filter.agentIds.includes(run.agentId)) &&
  (!filter.runIds?.length || filter.runIds.includes(run.runId));

const copyBytes = (data: Uint8Array): Uint8Array => new Uint8Array(data);

/** Stream messages are plain JSON; anything structuredClone rejects is handed out as stored. */
const clonePayload = (payload: unknown): unknown => {
  try {
    return structuredClone(payload);
  } catch {
    return payload;
  }
};

type StoreParts = LocalAgentStore & { dropAgent(agentId: string): void; stats(): InMemoryAgentStoreStats };

/** The backend request id of an SDK `request` message (`{ message: { type: 'request', request_id } }`). */
const runRequestIdOf = (payload: unknown): string | undefined => {
  const message = (payload as { message?: { type?: unknown; request_id?: unknown } } | null)?.message;
  return message?.type === 'request' && typeof message.request_id === 'string'
    ? message.request_id
    : undefined;
};

const buildStore = (options: InMemoryAgentStoreOptions): StoreParts => {
  const maxFinishedRuns = Math.max(0, options.maxFinishedRunsWithEvents ?? 0);
  const maxEventsPerRun = Math.max(1, options.maxEventsPerRun ?? 256);
  const onRunRequest = options.onRunRequest;
  const onCheckpoint = options.onCheckpoint;
  const agentRows = new Map<string, LocalAgentDocument>();
  /** runId → run (run ids are globally unique `run-<uuid>`). */
  const runRows = new Map<string, LocalAgentRunDocument>();
  const blobs = new Map<string, Map<string, Uint8Array>>();
  const runEvents = new Map<string, RunEvents>();
  /** Finished runs that still have events, oldest first. */
  const finishedWithEvents = new Set<string>();
  /** Runs whose events were evicted → their next seq (late appends are numbered, not stored). */
  const evictedNextSeq = new Map<string, number>();

  const forgetEvents = (runId: string): void => {
    runEvents.delete(runId);
    finishedWithEvents.delete(runId);
  };

  const evict = (runId: string): void => {
    evictedNextSeq.set(runId, runEvents.get(runId)?.nextSeq ?? 1);
    forgetEvents(runId);
    if (evictedNextSeq.size > EVICTED_MEMORY) {
      const oldest = evictedNextSeq.keys().next();
      if (!oldest.done) evictedNextSeq.delete(oldest.value);
    }
  };

  const noteRunStatus = (run: LocalAgentRunDocument): void => {
    if (!TERMINAL_STATUSES.has(run.status) || finishedWithEvents.has(run.runId)) return;
    finishedWithEvents.add(run.runId);
    while (finishedWithEvents.size > maxFinishedRuns) {
      const oldest = finishedWithEvents.values().next();
      if (oldest.done) break;
      evict(oldest.value);
    }
  };

  const deleteRuns = (predicate: (run: LocalAgentRunDocument) => boolean): void => {
    for (const run of [...runRows.values()]) {
      if (!predicate(run)) continue;
      runRows.delete(run.runId);
      forgetEvents(run.runId);
    }
  };

  const agents: LocalAgentStoreAgents = {
    get: async ({ agentId }) => {
      const agent = agentRows.get(agentId);
      return agent ? structuredClone(agent) : null;
    },
    create: async ({ agent }) => {
      if (agentRows.has(agent.agentId)) throw new Error(`Agent ${agent.agentId} already exists`);
      agentRows.set(agent.agentId, structuredClone(agent));
      return structuredClone(agent);
    },
    update: async ({ agent }) => {
      const previous = agentRows.get(agent.agentId);
      if (previous === undefined) throw new Error(`Agent ${agent.agentId} not found`);
      agentRows.set(agent.agentId, structuredClone(agent));
      const rootBlobId = agent.latestCheckpoint?.rootBlobId;
      if (previous.latestCheckpoint?.rootBlobId !== rootBlobId && rootBlobId !== undefined)
        onCheckpoint?.(agent.agentId, {
          rootBlobId,
          readBlob: (blobId) => blobs.get(agent.agentId)?.get(blobId),
        });
      return structuredClone(agent);
    },
    delete: async ({ filter }) => {
      for (const agent of [...agentRows.values()])
        if (matchesAgent(agent, filter)) agentRows.delete(agent.agentId);
    },
    list: async (input?: { filter?: LocalAgentListFilter }) => {
      const filter = input?.filter ?? {};
      let sorted = [...agentRows.values()].filter(
        (agent) => filter.cwd === undefined || agent.cwd === filter.cwd,
      );
      sorted.sort(compareAgents);
      if (filter.cursor) {
        const after = decodeCursor(filter.cursor);
        if (typeof after.updatedAt !== 'number' || typeof after.agentId !== 'string') {
          throw new Error('Invalid agent list cursor');
        }
        const boundary = { updatedAt: after.updatedAt, agentId: after.agentId } as LocalAgentDocument;
        sorted = sorted.filter((agent) => compareAgents(boundary, agent) < 0);
      }
      const result = page(sorted, filter.limit, (last) =>
        encodeCursor({ updatedAt: last.updatedAt, agentId: last.agentId }),
      );
      return { ...result, items: result.items.map((agent) => structuredClone(agent)) };
    },
  };

  const runs: LocalAgentStoreRuns = {
    get: async ({ agentId, runId }) => {
      const run = runRows.get(runId);
      return run && run.agentId === agentId ? structuredClone(run) : null;
    },
    create: async ({ run }) => {
      if (runRows.has(run.runId)) throw new Error(`Run ${run.runId} already exists for agent ${run.agentId}`);
      runRows.set(run.runId, structuredClone(run));
      noteRunStatus(run);
      return structuredClone(run);
    },
    update: async ({ run }) => {
      const existing = runRows.get(run.runId);
      if (!existing || existing.agentId !== run.agentId) {
        throw new Error(`Run ${run.runId} not found for agent ${run.agentId}`);
      }
      runRows.set(run.runId, structuredClone(run));
      noteRunStatus(run);
      return structuredClone(run);
    },
    delete: async ({ filter }) => deleteRuns((run) => matchesRun(run, filter)),
    list: async (input?: { filter?: LocalAgentRunFilter }) => {
      const filter = input?.filter ?? {};
      let sorted = [...runRows.values()].filter((run) => matchesRun(run, { ...filter }));
      sorted.sort(compareRuns);
      if (filter.cursor) {
        const after = decodeCursor(filter.cursor);
        if (typeof after.turnNumber !== 'number' || typeof after.runId !== 'string') {
          throw new Error('Invalid run list cursor');
        }
        const boundary = { turnNumber: after.turnNumber, runId: after.runId } as LocalAgentRunDocument;
        sorted = sorted.filter((run) => compareRuns(boundary, run) < 0);
      }
      const result = page(sorted, filter.limit, (last) =>
        encodeCursor({ turnNumber: last.turnNumber, runId: last.runId }),
      );
      return { ...result, items: result.items.map((run) => structuredClone(run)) };
    },
  };

  const putBlob = ({
    agentId,
    blobId,
    data,
  }: {
    agentId: string;
    blobId: string;
    data: Uint8Array;
  }): void => {
    let agentBlobs = blobs.get(agentId);
    if (!agentBlobs) blobs.set(agentId, (agentBlobs = new Map()));
    agentBlobs.set(blobId, copyBytes(data));
  };

  const blobMatches = (agentId: string, blobId: string, filter: LocalAgentCheckpointFilter): boolean =>
    (!filter.agentIds?.length || filter.agentIds.includes(agentId)) &&
    (!filter.blobIds?.length || filter.blobIds.includes(blobId));

  const checkpoints: LocalAgentStoreCheckpoints = {
    get: async ({ agentId, blobId }) => {
      const data = blobs.get(agentId)?.get(blobId);
      return data ? copyBytes(data) : null;
    },
    create: async (input) => putBlob(input),
    update: async (input) => putBlob(input),
    delete: async ({ filter }) => {
      for (const [agentId, agentBlobs] of blobs) {
        for (const blobId of [...agentBlobs.keys()]) {
          if (blobMatches(agentId, blobId, filter)) agentBlobs.delete(blobId);
        }
        if (agentBlobs.size === 0) blobs.delete(agentId);
      }
    },
    list: async (input?: {
      filter?: LocalAgentCheckpointFilter;
    }): Promise<LocalAgentStoreListResult<string>> => {
      const filter = input?.filter ?? {};
      const ids = new Set<string>();
      for (const [agentId, agentBlobs] of blobs) {
        for (const blobId of agentBlobs.keys()) if (blobMatches(agentId, blobId, filter)) ids.add(blobId);
      }
      const cursor = filter.cursor;
      const sorted = [...ids].sort().filter((blobId) => cursor === undefined || blobId > cursor);
      return page(sorted, filter.limit, (last) => last);
    },
  };

  /** A run's events as the store exposes them: the newest `maxEventsPerRun`. */
  const kept = (log: RunEvents | undefined): LocalAgentRunEventDocument[] =>
    log === undefined
      ? []
      : log.events.length > maxEventsPerRun
        ? log.events.slice(-maxEventsPerRun)
        : log.events;

  const events: LocalAgentStoreRunEvents = {
    append: async ({ runId, eventType, payload, payloadRef, idempotencyKey }) => {
      if (onRunRequest !== undefined) {
        const requestId = runRequestIdOf(payload);
        if (requestId !== undefined) onRunRequest(runId, requestId);
      }
      const log = runEvents.get(runId);
      if (idempotencyKey) {
        const previous = kept(log).find((event) => event.idempotencyKey === idempotencyKey);
        if (previous) return { ...previous, payload: clonePayload(previous.payload) };
      }
      const evictedSeq = evictedNextSeq.get(runId);
      const seq = evictedSeq ?? log?.nextSeq ?? 1;
      const event: LocalAgentRunEventDocument = {
        runId,
        seq,
        offset: String(seq),
        eventType,
        // Kept as given, copied when read: the SDK appends a message object it built for this event and
        // never changes afterwards (`sendUpdate` in dist/esm/index.js), and only a run re-opened from the
        // store reads it back — a clone per append would cost CPU and garbage per streamed delta.
        payload: payload === undefined ? null : payload,
        payloadRef: payloadRef ?? null,
        idempotencyKey: idempotencyKey ?? null,
        createdAt: Date.now(),
      };
      if (evictedSeq !== undefined) {
        evictedNextSeq.set(runId, seq + 1);
        return event;
      }
      const target = log ?? { nextSeq: 1, events: [] };
      if (!log) runEvents.set(runId, target);
      target.nextSeq = seq + 1;
      target.events.push(event);
      // Trimmed in batches (one splice per `maxEventsPerRun` appends, not one per streamed delta);
      // readers only ever see the newest `maxEventsPerRun` (see `kept`).
      if (target.events.length >= 2 * maxEventsPerRun)
        target.events.splice(0, target.events.length - maxEventsPerRun);
      return event;
    },
    list: async ({ runId, afterOffset, limit }) => {
      const after = afterOffset ? Number.parseInt(afterOffset, 10) : 0;
      const pending = kept(runEvents.get(runId)).filter(
        (event) => event.seq > (Number.isNaN(after) ? 0 : after),
      );
      const items = pending
        .slice(0, limit ?? DEFAULT_EVENT_LIMIT)
        .map((event) => ({ ...event, payload: clonePayload(event.payload) }));
      const last = items.at(-1);
      return { items, ...(pending.length > items.length && last ? { nextOffset: last.offset } : {}) };
    },
    delete: async ({ filter }) => {
      if (!filter.runIds?.length) {
        runEvents.clear();
        finishedWithEvents.clear();
        return;
      }
      for (const runId of filter.runIds) forgetEvents(runId);
    },
  };

  return {
    agents,
    runs,
    checkpoints,
    runEvents: events,
    dropAgent: (agentId) => {
      agentRows.delete(agentId);
      blobs.delete(agentId);
      deleteRuns((run) => run.agentId === agentId);
    },
    stats: () => {
      let checkpointBlobs = 0;
      let checkpointBytes = 0;
      for (const agentBlobs of blobs.values()) {
        checkpointBlobs += agentBlobs.size;
        for (const data of agentBlobs.values()) checkpointBytes += data.byteLength;
      }
      let eventCount = 0;
      for (const log of runEvents.values()) eventCount += kept(log).length;
      return {
        agents: agentRows.size,
        runs: runRows.size,
        checkpointBlobs,
        checkpointBytes,
        runsWithEvents: runEvents.size,
        events: eventCount,
      };
    },
  };
};

/**
 * An empty in-memory store. Pass it as `local.store` to `Agent.create` / `Agent.resume`; it must outlive
 * the agent (the SDK reads checkpoints back on every send).
 */
export class InMemoryAgentStore implements LocalAgentStore {
  readonly agents: LocalAgentStoreAgents;
  readonly runs: LocalAgentStoreRuns;
  readonly checkpoints: LocalAgentStoreCheckpoints;
  readonly runEvents: LocalAgentStoreRunEvents;
  readonly #parts: StoreParts;

  constructor(options: InMemoryAgentStoreOptions = {}) {
    this.#parts = buildStore(options);
    this.agents = this.#parts.agents;
    this.runs = this.#parts.runs;
    this.checkpoints = this.#parts.checkpoints;
    this.runEvents = this.#parts.runEvents;
  }

  /** Removes an agent with its runs, run events and checkpoint blobs. Unknown ids are ignored. */
  dropAgent(agentId: string): void {
    this.#parts.dropAgent(agentId);
  }

  /** Current counts (agents, runs, blobs and bytes, runs with events, events). */
  stats(): InMemoryAgentStoreStats {
    return this.#parts.stats();
  }
}
