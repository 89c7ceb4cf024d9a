/**
 * A gate the test opens: what waits on `opened` goes on only after `open()`, however fast or slow the
 * machine is. Use it instead of a delay wherever a test needs "not yet" followed by "now".
 */
export type Gate = {
  /** Settles (fulfilled) once `open()` ran. */
  readonly opened: Promise<void>;
  readonly isOpen: boolean;
  /** Idempotent. */
  open(): void;
};

export const createGate = (): Gate => {
  let resolve!: () => void;
  let isOpen = false;
  const opened = new Promise<void>((done) => (resolve = done));
  return {
    opened,
    get isOpen() {
      return isOpen;
    },
    open: () => {
      isOpen = true;
      resolve();
    },
  };
};

/** A promise that never settles: a script step that only a cancel ends. */
export const never: Promise<never> = new Promise<never>(() => undefined);

/** A {@link Gate} that also opens by itself once `safetyNetMs` passed; `bySafetyNet` tells which opened it. */
export type GateWithSafetyNet = Gate & {
  /** Whether the safety net, not the test, opened the gate (then what the test waited for never came). */
  readonly bySafetyNet: boolean;
  /** Stops the safety net's timer (after the test, whether or not the gate opened). */
  dispose(): void;
};

/**
 * A gate for "hold until the client has seen X": a broken implementation then fails an assertion on
 * `bySafetyNet` instead of hanging the test. The safety net is not a speed claim: keep it far above any
 * machine's latency.
 */
export const createGateWithSafetyNet = (safetyNetMs: number): GateWithSafetyNet => {
  const gate = createGate();
  let bySafetyNet = false;
  const timer = setTimeout(() => {
    if (gate.isOpen) return;
    bySafetyNet = true;
    gate.open();
  }, safetyNetMs);
  return {
    opened: gate.opened,
    get isOpen() {
      return gate.isOpen;
    },
    get bySafetyNet() {
      return bySafetyNet;
    },
    open: gate.open,
    dispose: () => clearTimeout(timer),
  };
};
