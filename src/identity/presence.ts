// Presence (SPEC §6), the one place that decides who is online: a participant is online while it
// has an authenticated WebSocket, is held by a running `wait_for_turn` (any transport), or made
// an authenticated call within the last 90 s — except that once its last WebSocket closed and
// it made no other call since, it goes offline 15 s after the close (a reconnect inside that
// window keeps it online). After a restart presence starts from the stored last_active.
// Listeners (the room runtimes) turn changes into member status and member_status_change.

export const PRESENCE_WINDOW_MS = 90_000;
/** An agent whose last WebSocket closed goes offline this long after the close. */
export const SOCKET_GRACE_MS = 15_000;

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
  /** Open sockets plus running waits: each keeps the participant online. */
  sockets: number;
  /** When the last socket closed (0 = never, or a call came after it). */
  closedAt: number;
  online: boolean;
  /** Online only from the start-up seed: no call, socket or wait here since (see `served`). */
  seeded: boolean;
  /** Reported to the served listeners: online here from a call, socket or wait of this process. */
  served: boolean;
  expiry: unknown;
}

export class Presence {
  private readonly entries = new Map<string, Entry>();
  /**
   * The participants with a socket or wait open: the last_active sweep walks these every 10 s,
   * not every entry (there is one per participant seeded at start-up: on the bench's set of
   * 110,000, each sweep was one long task and ~14 MB of garbage, BENCHMARKS.md).
   */
  private readonly withSockets = new Set<string>();
  private readonly listeners = new Set<(change: PresenceChange) => void>();
  private readonly lastSocketListeners = new Set<(participantId: string, at: number) => void>();
  private readonly servedListeners = new Set<(participantId: string, served: boolean) => void>();

  constructor(
    private readonly now: () => number,
    private readonly timers: Timers = realTimers,
    private readonly windowMs = PRESENCE_WINDOW_MS,
    private readonly graceMs = SOCKET_GRACE_MS,
  ) {}

  /** Seeds presence from stored last_active at start-up (emits nothing). */
  seed(participantId: string, lastActive: number): void {
    const entry = this.entry(participantId);
    entry.lastActive = Math.max(entry.lastActive, lastActive);
    entry.online = this.compute(entry);
    entry.seeded = entry.online && !entry.served;
    this.scheduleExpiry(participantId, entry);
  }

  isOnline(participantId: string): boolean {
    return this.entries.get(participantId)?.online ?? false;
  }

  lastActive(participantId: string): number | undefined {
    return this.entries.get(participantId)?.lastActive;
  }

  /**
   * What this process saw of each participant's activity (its own calls, sockets and waits, not
   * the start-up seed): when it was last active, `now` while a socket or wait is open.
   */
  activity(): Array<{ participantId: string; at: number; connected: boolean }> {
    const now = this.now();
    const seen: Array<{ participantId: string; at: number; connected: boolean }> = [];
    for (const [participantId, entry] of this.entries) {
      if (entry.sockets > 0) seen.push({ participantId, at: now, connected: true });
      else if (!entry.seeded && entry.lastActive > 0) seen.push({ participantId, at: entry.lastActive, connected: false });
    }
    return seen;
  }

  /** Participants with a socket or a wait open in this process. */
  connected(): ReadonlySet<string> {
    return this.withSockets;
  }

  /** An authenticated call was made. */
  touch(participantId: string): void {
    const entry = this.entry(participantId);
    entry.seeded = false;
    entry.lastActive = this.now();
    entry.closedAt = 0;
    this.update(participantId, entry);
  }

  /** Keeps the participant online until the returned release is called (wait_for_turn). */
  hold(participantId: string): () => void {
    const entry = this.opened(participantId);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.setSockets(participantId, entry, entry.sockets - 1);
      // The end of a wait is the participant's last call: the 90 s window counts from here.
      entry.lastActive = this.now();
      this.update(participantId, entry);
    };
  }

  socketOpened(participantId: string): void {
    this.opened(participantId);
  }

  /** A socket or a wait began: online while it lasts (a socket and a wait count alike). */
  private opened(participantId: string): Entry {
    const entry = this.entry(participantId);
    entry.seeded = false;
    this.setSockets(participantId, entry, entry.sockets + 1);
    entry.lastActive = this.now();
    entry.closedAt = 0;
    this.update(participantId, entry);
    return entry;
  }

  socketClosed(participantId: string): void {
    const entry = this.entry(participantId);
    this.setSockets(participantId, entry, entry.sockets - 1);
    entry.lastActive = this.now();
    // The last socket closed: offline after the short grace unless a call or socket comes first.
    if (entry.sockets === 0) entry.closedAt = entry.lastActive;
    this.update(participantId, entry);
    if (entry.sockets === 0) for (const listener of this.lastSocketListeners) listener(participantId, entry.closedAt);
  }

  /**
   * The participant's last WebSocket on another node closed at `at` (several nodes, SPEC §11):
   * unless it has a socket or a wait here, or called here since, it goes offline after the
   * grace, as if the socket had been this node's — a call made here before the close no longer
   * keeps it online for the whole window.
   */
  closedElsewhere(participantId: string, at: number): void {
    const entry = this.entries.get(participantId);
    // Only an online participant can be taken offline by it (an offline one must not flip online).
    if (!entry || !entry.online || entry.sockets > 0 || entry.lastActive > at) return;
    entry.closedAt = Math.min(at, this.now());
    // The armed expiry is the window's (it only re-checks when it fires): arm the grace's instead.
    if (entry.expiry !== undefined) this.timers.clearTimeout(entry.expiry);
    entry.expiry = undefined;
    this.update(participantId, entry);
  }

  /**
   * Listeners learn whether this process serves the participant: online here because of its
   * own calls, sockets or waits, not only from the start-up seed (several nodes: the rows other
   * nodes read to know who is served where).
   */
  onServed(listener: (participantId: string, served: boolean) => void): () => void {
    this.servedListeners.add(listener);
    return () => this.servedListeners.delete(listener);
  }

  /** Listeners learn when a participant's last WebSocket here closed (other nodes are told). */
  onLastSocketClosed(listener: (participantId: string, at: number) => void): () => void {
    this.lastSocketListeners.add(listener);
    return () => this.lastSocketListeners.delete(listener);
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
      entry = { lastActive: 0, sockets: 0, closedAt: 0, online: false, seeded: false, served: false, expiry: undefined };
      this.entries.set(participantId, entry);
    }
    return entry;
  }

  private setSockets(participantId: string, entry: Entry, sockets: number): void {
    entry.sockets = Math.max(0, sockets);
    if (entry.sockets > 0) this.withSockets.add(participantId);
    else this.withSockets.delete(participantId);
  }

  private compute(entry: Entry): boolean {
    return entry.sockets > 0 || this.now() < this.expiresAt(entry);
  }

  private expiresAt(entry: Entry): number {
    return entry.closedAt > 0 ? entry.closedAt + this.graceMs : entry.lastActive + this.windowMs;
  }

  private update(participantId: string, entry: Entry): void {
    const online = this.compute(entry);
    const changed = online !== entry.online;
    entry.online = online;
    if (!online) entry.seeded = false;
    const served = online && !entry.seeded;
    if (served !== entry.served) {
      entry.served = served;
      for (const listener of this.servedListeners) listener(participantId, served);
    }
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
    const remaining = this.expiresAt(entry) - this.now();
    entry.expiry = this.timers.setTimeout(() => {
      entry.expiry = undefined;
      this.update(participantId, entry);
    }, Math.max(0, remaining) + 1);
  }
}
