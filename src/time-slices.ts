// Long CPU work on the one event loop (parsing a large request body, validating and writing an
// import, rendering an export) runs in slices: after about `sliceMs` of work it yields, so
// requests waiting on the loop are served in between and no slice blocks it for long (SPEC §10:
// at most 100 ms at a time).
//
// Yielding with a plain setImmediate per task was not enough once several ran at once (four
// imports: four bodies parsed, two files checked and written): every task waiting on an
// immediate resumed in the same check phase, one slice after the other, and the loop was held
// for the sum of their slices. So the yielded tasks wait in one queue, first come first served,
// and one resumes per turn of the event loop: timers and I/O run between any two slices,
// whatever the number of tasks.
export class TimeSlices {
  private started = performance.now();

  constructor(readonly sliceMs = 10) {}

  /** Whether this slice has run its time (the next `pause` yields). */
  due(): boolean {
    return performance.now() - this.started >= this.sliceMs;
  }

  /** Yields to the event loop when this slice has run its time; cheap to call often. */
  async pause(): Promise<void> {
    if (!this.due()) return;
    await nextTurn();
    this.started = performance.now();
  }
}

/** Tasks that yielded, in order; a `resumeNext` is scheduled exactly while this is not empty. */
const waiting: Array<() => void> = [];

/** Resolves in a later turn of the event loop, after the tasks that yielded before. */
function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    if (waiting.length === 1) setImmediate(resumeNext);
  });
}

/** Resumes one waiting task (it runs once this returns) and schedules the next in the next turn. */
function resumeNext(): void {
  waiting.shift()!();
  if (waiting.length > 0) setImmediate(resumeNext);
}
