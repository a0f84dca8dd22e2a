// The stored `last_active` of each participant (SPEC §6: after a restart presence starts from
// it, so an agent is online 90 s past it). Presence itself lives in memory (presence.ts); this
// keeps the stored value close behind it without a write per call:
// - after a call, stored when the stored value is more than CALL_PERSIST_MS old, together with
//   the other callers of the last CALL_BATCH_MS: one write (one journal line batch, one fsync)
//   for all of them, not one per caller. At 50 calls a second from different participants a
//   write per call doubled the server's fsyncs and put one beside nearly every call's own
//   commit on the disk (BENCHMARKS.md, "File store at scale");
// - while a WebSocket or a wait is open (an agent waiting for its turn makes no calls), stored
//   every SOCKET_PERSIST_MS by a sweep;
// - at shutdown, everything newer than what was stored (a restart then loses no activity at
//   all: a socket held until the shutdown counts to its last moment).
// A crash loses at most the last of these intervals (plus CALL_BATCH_MS after a call).
import type { Logger } from '../logger.js';
import type { Presence, Timers } from './presence.js';

export const CALL_PERSIST_MS = 5_000;
export const CALL_BATCH_MS = 250;
export const SOCKET_PERSIST_MS = 30_000;

export interface LastActiveStore {
  /** Stores the value unless the stored one is as new (Participants.recordLastActive). */
  recordLastActive(participantId: string, lastActive: string): Promise<void>;
}

export class LastActiveRecorder {
  /** Per participant: the last value this process stored (or asked to store). */
  private readonly stored = new Map<string, number>();
  /** Callers waiting for the next batch write, with the time of their call. */
  private readonly pending = new Map<string, number>();
  private batchTimer: unknown;
  private sweepTimer: unknown;
  private stopped = false;

  constructor(
    private readonly participants: LastActiveStore,
    private readonly presence: Presence,
    private readonly now: () => number,
    private readonly timers: Timers,
    private readonly logger: Logger,
  ) {}

  /** Starts the sweep of open sockets and waits. */
  start(): void {
    this.scheduleSweep();
  }

  /** A call of the participant ended. */
  called(participantId: string): void {
    const now = this.now();
    if (now - (this.stored.get(participantId) ?? 0) <= CALL_PERSIST_MS) return;
    // Counted as stored from now, so the calls until the batch is written add nothing.
    this.stored.set(participantId, now);
    this.pending.set(participantId, now);
    if (this.batchTimer === undefined && !this.stopped) {
      this.batchTimer = this.timers.setTimeout(() => {
        this.batchTimer = undefined;
        this.writePending();
      }, CALL_BATCH_MS);
    }
  }

  /** Writes every waiting caller in one event-loop turn: the store groups them in one write. */
  private writePending(): Promise<unknown> {
    const batch = [...this.pending];
    this.pending.clear();
    return Promise.all(batch.map(([participantId, at]) => this.record(participantId, at)));
  }

  /** Shutdown: stores every activity newer than what was stored, and stops the sweep. */
  async flush(): Promise<void> {
    this.stop();
    // Activity newer than what was stored, or counted as stored but still waiting for its batch.
    const newer = new Map(this.pending);
    this.pending.clear();
    for (const { participantId, at } of this.presence.activity()) {
      if (at > (this.stored.get(participantId) ?? 0) && at > (newer.get(participantId) ?? 0)) newer.set(participantId, at);
    }
    await Promise.all([...newer].map(([participantId, at]) => this.record(participantId, at)));
  }

  stop(): void {
    this.stopped = true;
    if (this.sweepTimer !== undefined) this.timers.clearTimeout(this.sweepTimer);
    if (this.batchTimer !== undefined) this.timers.clearTimeout(this.batchTimer);
    this.sweepTimer = undefined;
    this.batchTimer = undefined;
  }

  private record(participantId: string, at: number): Promise<void> {
    // Set first, so calls meanwhile do not write the same again; a failed write forgets it, so
    // the next call or sweep tries again instead of waiting out the interval.
    this.stored.set(participantId, Math.max(at, this.stored.get(participantId) ?? 0));
    return this.participants.recordLastActive(participantId, new Date(at).toISOString()).catch((err: unknown) => {
      if (this.stored.get(participantId) === at) this.stored.delete(participantId);
      this.logger.warn({ err, participant_id: participantId }, 'could not store last_active');
    });
  }

  private sweep(): void {
    const now = this.now();
    for (const participantId of this.presence.connected()) {
      if (now - (this.stored.get(participantId) ?? 0) >= SOCKET_PERSIST_MS) void this.record(participantId, now);
    }
    // Bounded memory: a participant quiet for a while needs no entry (its next call stores anew).
    for (const [participantId, at] of this.stored) if (now - at > 2 * SOCKET_PERSIST_MS) this.stored.delete(participantId);
  }

  private scheduleSweep(): void {
    if (this.stopped) return;
    this.sweepTimer = this.timers.setTimeout(() => {
      this.sweep();
      this.scheduleSweep();
    }, SOCKET_PERSIST_MS / 3);
  }
}
