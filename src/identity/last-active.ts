// The stored `last_active` of each participant (SPEC §6: after a restart presence starts from
// it, so an agent is online 90 s past it). Presence itself lives in memory (presence.ts); this
// keeps the stored value close behind it without a write per call:
// - after a call, stored when the stored value is more than CALL_PERSIST_MS old;
// - while a WebSocket or a wait is open (an agent waiting for its turn makes no calls), stored
//   every SOCKET_PERSIST_MS by a sweep;
// - at shutdown, everything newer than what was stored (a restart then loses no activity at
//   all: a socket held until the shutdown counts to its last moment).
// A crash loses at most the last of these intervals.
import type { Logger } from '../logger.js';
import type { Presence, Timers } from './presence.js';

export const CALL_PERSIST_MS = 5_000;
export const SOCKET_PERSIST_MS = 30_000;

export interface LastActiveStore {
  /** Stores the value unless the stored one is as new (Participants.recordLastActive). */
  recordLastActive(participantId: string, lastActive: string): Promise<void>;
}

export class LastActiveRecorder {
  /** Per participant: the last value this process stored (or asked to store). */
  private readonly stored = new Map<string, number>();
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
    this.record(participantId, now);
  }

  /** Shutdown: stores every activity newer than what was stored, and stops the sweep. */
  async flush(): Promise<void> {
    this.stop();
    await Promise.all(
      this.presence
        .activity()
        .filter(({ participantId, at }) => at > (this.stored.get(participantId) ?? 0))
        .map(({ participantId, at }) => this.record(participantId, at)),
    );
  }

  stop(): void {
    this.stopped = true;
    if (this.sweepTimer !== undefined) this.timers.clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  private record(participantId: string, at: number): Promise<void> {
    // Set first, so calls meanwhile do not write the same again; a failed write forgets it, so
    // the next call or sweep tries again instead of waiting out the interval.
    this.stored.set(participantId, at);
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
