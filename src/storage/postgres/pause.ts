// A retry pause that a stopping component can cut short: `wait(ms)` resolves after ms, or at
// once when `wake()` is called (a store closing, a node stopping), so shutdown never waits for
// a backoff.
export class Pause {
  private readonly wakers = new Set<() => void>();

  wait(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref?.();
      this.wakers.add(done);
    });
  }

  wake(): void {
    for (const done of [...this.wakers]) done();
  }
}

/** Backoff before try n + 1 after n failures in a row: 100 ms doubling, at most 2 s. */
export const retryDelayMs = (failures: number): number => Math.min(2_000, 100 * 2 ** Math.max(0, failures - 1));
