// Presence (SPEC §6): a participant is online while it has an authenticated WebSocket or made
// an authenticated call within the last 90 s. After a restart presence starts from the stored
// last_active, so an agent that called just before the restart is still online.

export const PRESENCE_WINDOW_MS = 90_000;

export interface PresenceChange {
  participantId: string;
  online: boolean;
  lastActive: number;
}

export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

interface Entry {
  lastActive: number;
  sockets: number;
  online: boolean;
  expiry: unknown;
}

export class Presence {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<(change: PresenceChange) => void>();

  constructor(
    private readonly now: () => number,
    private readonly timers: Timers = realTimers,
    private readonly windowMs = PRESENCE_WINDOW_MS,
  ) {}

  /** Seeds presence from stored last_active at start-up (emits nothing). */
  seed(participantId: string, lastActive: number): void {
    const entry = this.entry(participantId);
    entry.lastActive = Math.max(entry.lastActive, lastActive);
    entry.online = this.compute(entry);
    this.scheduleExpiry(participantId, entry);
  }

  isOnline(participantId: string): boolean {
    return this.entries.get(participantId)?.online ?? false;
  }

  lastActive(participantId: string): number | undefined {
    return this.entries.get(participantId)?.lastActive;
  }

  /** An authenticated call was made. */
  touch(participantId: string): void {
    const entry = this.entry(participantId);
    entry.lastActive = this.now();
    this.update(participantId, entry);
  }

  socketOpened(participantId: string): void {
    const entry = this.entry(participantId);
    entry.sockets += 1;
    entry.lastActive = this.now();
    this.update(participantId, entry);
  }

  socketClosed(participantId: string): void {
    const entry = this.entry(participantId);
    entry.sockets = Math.max(0, entry.sockets - 1);
    entry.lastActive = this.now();
    // A closed socket does not end presence at once: the 90 s window still counts.
    this.update(participantId, entry);
  }

  onChange(listener: (change: PresenceChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    for (const entry of this.entries.values()) if (entry.expiry !== undefined) this.timers.clearTimeout(entry.expiry);
  }

  private entry(participantId: string): Entry {
    let entry = this.entries.get(participantId);
    if (!entry) {
      entry = { lastActive: 0, sockets: 0, online: false, expiry: undefined };
      this.entries.set(participantId, entry);
    }
    return entry;
  }

  private compute(entry: Entry): boolean {
    return entry.sockets > 0 || this.now() - entry.lastActive < this.windowMs;
  }

  private update(participantId: string, entry: Entry): void {
    const online = this.compute(entry);
    const changed = online !== entry.online;
    entry.online = online;
    // An armed expiry re-checks lastActive when it fires (and re-arms itself through here), so
    // a busy participant's calls need no timer work of their own.
    if (entry.expiry === undefined || entry.sockets > 0 || !online) this.scheduleExpiry(participantId, entry);
    if (!changed) return;
    const change = { participantId, online, lastActive: entry.lastActive };
    for (const listener of this.listeners) listener(change);
  }

  private scheduleExpiry(participantId: string, entry: Entry): void {
    if (entry.expiry !== undefined) this.timers.clearTimeout(entry.expiry);
    entry.expiry = undefined;
    if (entry.sockets > 0 || !entry.online) return;
    const remaining = entry.lastActive + this.windowMs - this.now();
    entry.expiry = this.timers.setTimeout(() => {
      entry.expiry = undefined;
      this.update(participantId, entry);
    }, Math.max(0, remaining) + 1);
  }
}
