// At most N exports (and, in slots of their own, N imports) run at once server-wide (SPEC §10); the next few wait their turn in order,
// and once the waiting line is full a new export is refused with `rate_limited` at once. An
// export is CPU work on the one event loop (layout, fonts, compression): two of them already
// use the time the loop can spare between requests, and a third would only slow all three.
import { AppError } from '../errors.js';

export const MAX_RUNNING_EXPORTS = 2;
export const MAX_WAITING_EXPORTS = 8;

export class ExportSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  /** Most exports ever running at the same time (for tests and metrics). */
  peak = 0;

  constructor(
    readonly maxRunning = MAX_RUNNING_EXPORTS,
    readonly maxWaiting = MAX_WAITING_EXPORTS,
    /** What runs in the slots, for the refusal's message ('exports', 'imports'). */
    readonly what = 'exports',
  ) {}

  get stats(): { running: number; waiting: number; peak: number } {
    return { running: this.running, waiting: this.waiting.length, peak: this.peak };
  }

  /** Runs `work` once a slot is free; rejects with rate_limited when the line is full. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running < this.maxRunning) {
      this.running += 1;
    } else {
      if (this.waiting.length >= this.maxWaiting) {
        throw new AppError('rate_limited', `The server is busy with other ${this.what} (${this.maxRunning} running, ${this.waiting.length} waiting); try again shortly`, {
          running: this.running,
          waiting: this.waiting.length,
        });
      }
      // The slot is handed over by release(): `running` does not drop in between.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.peak = Math.max(this.peak, this.running);
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running -= 1;
  }
}
