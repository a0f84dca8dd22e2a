// Long CPU work on the one event loop (validating an import, rendering an export) runs in slices:
// after about `sliceMs` of work it yields with setImmediate, so requests waiting on the loop are
// served in between and no slice blocks it for long (SPEC §10: at most 100 ms at a time).
export class TimeSlices {
  private started = performance.now();

  constructor(readonly sliceMs = 10) {}

  /** Yields to the event loop when this slice has run its time; cheap to call often. */
  async pause(): Promise<void> {
    if (performance.now() - this.started < this.sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.started = performance.now();
  }
}
