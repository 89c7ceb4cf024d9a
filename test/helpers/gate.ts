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
