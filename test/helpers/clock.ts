// A manual clock with timers for unit tests: time moves only when the test says so.
import type { Timers } from '../../src/identity/presence.js';

export class ManualClock implements Timers {
  private time: number;
  private nextId = 1;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  constructor(start = Date.parse('2026-11-23T00:00:00.000Z')) {
    this.time = start;
  }

  now = (): number => this.time;

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.pending.set(id, { at: this.time + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** Moves time forward, running every timer that comes due, in order. */
  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.pending) if (entry[1].at <= until && (!next || entry[1].at < next[1].at)) next = entry;
      if (!next) break;
      this.pending.delete(next[0]);
      this.time = next[1].at;
      next[1].fn();
    }
    this.time = until;
  }

  get timers(): number {
    return this.pending.size;
  }
}
