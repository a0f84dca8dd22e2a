// One room's runtime (the shape of tldraw's TLSyncRoom): the room's committed state, and one
// queue through which every change of the room passes.
//
// Commands run one after the other. Each runs against a private draft (a copy of the room); the
// commands queued while a commit is on its way form the next batch, which is committed in ONE
// store write (group commit: 64 senders into one room share fsyncs). Only once the store has
// made the batch durable does the runtime swap in the new state, arm the timer and publish the
// events; on a failed commit every command of the batch fails and nothing changed (SPEC §5).
import { AppError } from '../errors.js';
import type { AccessEvent, RoomEvent } from '../protocol/events.js';
import type { Timers } from '../identity/presence.js';
import type { Logger } from '../logger.js';
import { StaleRoomError, type CommitReads, type RoomChangesSince, type RoomCommit, type Store } from '../storage/store.js';
import type { Member, Message, RoomRecord } from '../types.js';
import { carriedChanges, changeEvents, lastPersonSeqIn, loadChanges } from './change-events.js';
import { encodeEventPlan, replayEventPlan, replayStoredPlans } from './event-plan.js';
import { handle, type Answer, type Command, type CommandEnv, type Draft } from './commands.js';

export interface RuntimeDeps {
  store: Store;
  logger: Logger;
  now: () => number;
  timers: Timers;
  turnTimeoutMs: number;
  maxMessageChars: number;
  isOnline(member: Member): boolean;
  /** Called after a batch is durable: access changes first, then the room's events in order. */
  publish(access: readonly AccessEvent[], events: readonly RoomEvent[]): void;
  /** Agents given a turn by a committed batch (wait_for_turn wakes them). */
  turnsIssued(roomId: string, names: readonly string[]): void;
}

/**
 * One commit another node made, as its notification carried it (shared store): the version it
 * made (the one before + 1), the room's last seq after it, its message rows in commit order, and
 * the new state when it changed one (absent: unchanged).
 */
export interface CarriedChange {
  version: number;
  lastSeq: number;
  messages: readonly Message[];
  room?: RoomRecord;
}

/** The events another node published for its commit `version` (runtime/event-plan.ts). */
export interface NotifiedEvents {
  version: number;
  plan: unknown;
}

interface Pending {
  /** A command, or null for a refresh from the store (another node committed). */
  cmd: Command | null;
  /** With a refresh: the change as notified, taken without reading the store when it applies. */
  carried?: CarriedChange;
  /** With a refresh: the committing node's events, replayed when this is the very next version. */
  notified?: NotifiedEvents;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * How long a batch keeps being recomputed after other nodes committed the room first (several
 * nodes writing one busy room take turns). Each retry waits a random time that grows with the
 * attempts (up to STALE_BACKOFF_MAX_MS), so nodes that keep colliding spread out; a batch fails
 * only after this long without once being first.
 */
const STALE_RETRY_MS = 15_000;
const STALE_BACKOFF_MAX_MS = 250;
/**
 * A shared store that can lock a room (`commitRoomLocked`): after a batch met another node's
 * commit, this runtime computes its batches under the room's lock for this long, so the nodes
 * writing a busy room take turns in the lock's queue instead of racing.
 */
const LOCKED_MODE_MS = 1_000;

/** Commands taken into one commit at most (bounds a batch's latency and size). */
const MAX_BATCH = 256;
/** A timeout whose commit failed is tried again after this long. */
const TIMEOUT_RETRY_MS = 1000;

export class RoomRuntime {
  private state: RoomRecord;
  private lastSeq: number;
  private lastPersonSeq: number;
  private version: number;
  private readonly queue: Pending[] = [];
  private draining = false;
  private timer: { handle: unknown; deadline: string } | undefined;
  private stopped = false;
  /** Until when batches are computed under the room's lock (see LOCKED_MODE_MS). */
  private lockedUntil = 0;

  constructor(
    loaded: { room: RoomRecord; lastSeq: number; version: number; lastPersonSeq: number },
    private readonly deps: RuntimeDeps,
  ) {
    this.state = loaded.room;
    this.lastSeq = loaded.lastSeq;
    this.lastPersonSeq = loaded.lastPersonSeq;
    this.version = loaded.version;
  }

  get roomId(): string {
    return this.state.room_id;
  }

  /** The committed state. Never mutate it: it is shared with readers until the next swap. */
  get room(): RoomRecord {
    return this.state;
  }

  get committedSeq(): number {
    return this.lastSeq;
  }

  /** The version of the committed state this runtime holds (a shared store: compare with the stored one). */
  get committedVersion(): number {
    return this.version;
  }

  /** Queues a command; resolves with its answer once its batch is durable and published. */
  execute(cmd: Command): Promise<unknown> {
    if (this.stopped) return Promise.reject(new AppError('internal_error', 'The server is shutting down'));
    return new Promise((resolve, reject) => {
      this.queue.push({ cmd, resolve, reject });
      if (this.draining) return;
      // A presence change comes from a call that is about to queue its own command here (a
      // person's first call in a while marks them online, then runs; Rooms.execute holds that
      // command until the presence change is queued): started one event-loop turn later, the
      // two share one commit instead of waiting for two in a row.
      if (cmd.type === 'presence') {
        this.draining = true;
        setImmediate(() => void this.drain());
      } else void this.drain();
    });
  }

  /**
   * Re-reads the room from the store when it holds a newer version (another node committed),
   * and publishes what changed; in the room's queue, so it never interleaves with a command.
   */
  refresh(version?: number, carried?: CarriedChange, notified?: NotifiedEvents): Promise<void> {
    if (this.stopped || (version !== undefined && version <= this.version)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ cmd: null, resolve: () => resolve(), reject, ...(carried ? { carried } : {}), ...(notified ? { notified } : {}) });
      if (!this.draining) void this.drain();
    });
  }

  /** Arms the timer for the stored turn (start-up), without a command. */
  armFromState(): void {
    const turn = this.state.current_round && !this.state.current_round.completed ? this.state.current_round.turn : null;
    this.arm(turn?.deadline ?? null);
  }

  stop(): void {
    this.stopped = true;
    this.arm(null);
  }

  private env(): CommandEnv {
    return {
      now: this.deps.now(),
      turnTimeoutMs: this.deps.turnTimeoutMs,
      maxMessageChars: this.deps.maxMessageChars,
      isOnline: this.deps.isOnline,
    };
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      if (!this.deps.store.roomVersion && !this.deps.store.commitRoomLocked) return await this.drainAhead();
      while (this.queue.length > 0) {
        const head = this.queue[0]!;
        if (head.cmd === null) {
          this.queue.shift();
          await this.reload(head.carried, head.notified).then(head.resolve, head.reject);
          continue;
        }
        const end = this.queue.findIndex((p) => p.cmd === null);
        await this.runBatch(this.queue.splice(0, Math.min(MAX_BATCH, end < 0 ? this.queue.length : end)));
      }
    } finally {
      this.draining = false;
      // A command queued after the loop's last look (while draining still said so) is not left.
      if (this.queue.length > 0) void this.drain();
    }
  }

  /**
   * The queue of a store only this node writes (the file store): the next batch is computed
   * while the commit before it is on its way to the disk, on the state that commit will make,
   * and committed once it is durable. Computing and fsyncing one after the other cost a busy
   * room a third of its throughput against the server before the runtime (issue 40). What the
   * computation refused is answered only once the state it was judged on is durable; if that
   * commit fails, the batch is computed again on the committed state, so no answer, event or
   * duplicate check ever rests on a state that did not become durable (SPEC §5).
   */
  private async drainAhead(): Promise<void> {
    let inFlight: { durable: Promise<boolean>; base: Draft } | undefined;
    while (this.queue.length > 0 || inFlight) {
      const head = this.queue[0];
      if (!head || head.cmd === null) {
        // Nothing to compute ahead, or a refresh, which waits for the commit on its way.
        if (inFlight) {
          await inFlight.durable;
          inFlight = undefined;
          continue;
        }
        this.queue.shift();
        await this.reload(head!.carried, head!.notified).then(head!.resolve, head!.reject);
        continue;
      }
      const end = this.queue.findIndex((p) => p.cmd === null);
      const batch = this.queue.splice(0, Math.min(MAX_BATCH, end < 0 ? this.queue.length : end));
      const ahead = inFlight;
      let computed = await this.compute(batch, this.readsAfter(ahead?.base), true, ahead?.base);
      if (ahead) {
        inFlight = undefined;
        if (!(await ahead.durable)) computed = await this.compute(batch, this.readsAfter(undefined), true);
      }
      for (const { pending, err } of computed.refused) pending.reject(err);
      if (computed.done.length === 0) continue;
      if (!writes(computed.base)) {
        this.publishDurable(computed.base, computed.done);
        continue;
      }
      inFlight = { durable: this.commitLocal(computed.base, computed.done), base: computed.base };
    }
  }

  /** Commits a computed batch (local store) and publishes it; false when it failed (answered so). */
  private async commitLocal(base: Draft, done: readonly Done[]): Promise<boolean> {
    try {
      this.version = await this.deps.store.commitRoom(this.roomId, commitOf(base, this.version));
    } catch (err) {
      if (err instanceof StaleRoomError) {
        // Another writer committed the room first after all: the retrying path takes the batch
        // (computed again on the stored state), and what was computed on this one is redone.
        await this.reload();
        await this.runBatch(done.map((d) => d.pending), 1);
      } else this.fail(done, err);
      return false;
    }
    this.publishDurable(base, done);
    return true;
  }

  /**
   * The store's reads for a batch computed on `ahead` (a commit not yet durable): the messages of
   * that commit are found as the store will hold them once it is (a retried client_msg_id, a
   * reply to or an edit of one of them).
   */
  private readsAfter(ahead: Draft | undefined): CommitReads {
    const store = this.deps.store;
    const pending = ahead?.messages ?? [];
    const latest = (test: (m: Message) => boolean): Message | undefined => {
      for (let i = pending.length - 1; i >= 0; i--) if (test(pending[i]!)) return pending[i];
      return undefined;
    };
    return {
      getMessage: async (id: string) => latest((m) => m.message_id === id) ?? store.getMessage(id),
      findByClientMsgId: async (sender: string, key: string) =>
        latest((m) => m.sender_id === sender && m.client_msg_id === key) ?? store.findByClientMsgId(this.roomId, sender, key),
    };
  }

  private async runBatch(batch: Pending[], attempt = 0, firstTry = this.deps.now()): Promise<void> {
    if (this.deps.store.commitRoomLocked && this.deps.now() < this.lockedUntil) return this.runBatchLocked(batch);
    const { base, done, refused } = await this.compute(batch, {
      getMessage: (id: string) => this.deps.store.getMessage(id),
      findByClientMsgId: (sender: string, key: string) => this.deps.store.findByClientMsgId(this.roomId, sender, key),
    }, Boolean(this.deps.store.roomVersion));
    if (refused.length > 0) {
      // Shared store: a command refused (not your turn, not a member, …) on a copy that other
      // nodes' commits have left behind is judged again on the stored room, with the whole
      // batch (nothing of it is committed yet): a client given the turn through another node is
      // not refused because this node's notification is late.
      const stored = await this.deps.store.roomVersion!(this.roomId);
      if (stored !== undefined && stored > this.version && this.deps.now() - firstTry < STALE_RETRY_MS) {
        await this.reload();
        return this.runBatch(batch, attempt + 1, firstTry);
      }
      for (const { pending, err } of refused) pending.reject(err);
    }
    if (done.length === 0) return;
    if (writes(base)) {
      try {
        this.version = await this.deps.store.commitRoom(this.roomId, commitOf(base, this.version));
      } catch (err) {
        if (err instanceof StaleRoomError && this.deps.now() - firstTry < STALE_RETRY_MS) {
          const again = done.map((d) => d.pending);
          if (this.deps.store.commitRoomLocked) {
            // Another node writes this room too: take turns through the room's lock for a while
            // (optimistic retries let the node that keeps winning starve the others' clients).
            this.lockedUntil = this.deps.now() + LOCKED_MODE_MS;
            return this.runBatchLocked(again);
          }
          // Another node wrote the room: take its state, then compute the batch again on it.
          await this.reload();
          const backoff = Math.random() * Math.min(STALE_BACKOFF_MAX_MS, 2 ** attempt);
          await new Promise<void>((resolve) => this.deps.timers.setTimeout(resolve, backoff));
          return this.runBatch(again, attempt + 1, firstTry);
        }
        return this.fail(done, err);
      }
    }
    this.publishDurable(base, done);
  }

  /**
   * The batch computed and committed while the room's lock is held (shared store): on the room
   * as stored, so no other node can commit in between and the batch is never stale. What other
   * nodes committed before is taken (and published) first, as a refresh would.
   */
  private async runBatchLocked(batch: Pending[]): Promise<void> {
    let computed: { base: Draft; done: Done[] } | undefined;
    try {
      const version = await this.deps.store.commitRoomLocked!(this.roomId, { version: this.version, lastSeq: this.lastSeq }, async (changes, reads) => {
        this.take(changes);
        computed = await this.compute(batch, reads);
        return computed.done.length > 0 && writes(computed.base) ? commitOf(computed.base, this.version) : null;
      });
      if (version !== undefined) this.version = version;
    } catch (err) {
      // Commands the computation refused were answered already; the rest fail with the commit.
      return this.fail(computed?.done ?? batch.map((pending) => ({ pending, answer: () => undefined })), err);
    }
    if (computed && computed.done.length > 0) this.publishDurable(computed.base, computed.done);
  }

  /**
   * Runs the batch's commands in turn on drafts of the current state (or of `after`, a batch
   * whose commit is on its way). Refused ones are answered at once, or with `holdRefusals`
   * returned unanswered (the caller first checks the state was current, or durable).
   */
  private async compute(
    batch: Pending[],
    reads: CommitReads,
    holdRefusals = false,
    after?: Draft,
  ): Promise<{ base: Draft; done: Done[]; refused: Refused[] }> {
    let base: Draft = {
      room: after?.room ?? this.state,
      lastSeq: after?.lastSeq ?? this.lastSeq,
      lastPersonSeq: after?.lastPersonSeq ?? this.lastPersonSeq,
      messages: [],
      events: [],
      access: [],
      roomChanged: false,
      timer: undefined,
      turnsIssued: [],
    };
    const done: Done[] = [];
    const refused: Refused[] = [];
    for (const pending of batch) {
      try {
        // Most commands run synchronously (commands.ts `handle`): awaited only when they read.
        const step = inDraft(base, (d) => handle(d, pending.cmd!, this.env(), reads));
        const { draft, result } = step instanceof Promise ? await step : step;
        base = draft;
        done.push({ pending, answer: result });
      } catch (err) {
        if (holdRefusals && err instanceof AppError) refused.push({ pending, err });
        else pending.reject(err);
      }
    }
    return { base, done, refused };
  }

  /** A commit that failed: nothing of it is kept, and every command of it fails. */
  private fail(done: readonly Done[], err: unknown): void {
    this.deps.logger.error({ err, room_id: this.roomId, commands: done.length }, 'room commit failed; nothing of it is kept');
    // The cause stays in the log; callers get internal_error without detail.
    for (const { pending } of done) pending.reject(err);
    if (done.some(({ pending }) => pending.cmd?.type === 'timeout')) this.retryTimeout();
  }

  /** The batch is durable: now it becomes visible (state, timer, events, answers). */
  private publishDurable(base: Draft, done: readonly Done[]): void {
    this.state = base.room;
    this.lastSeq = base.lastSeq;
    this.lastPersonSeq = base.lastPersonSeq;
    if (base.timer !== undefined) this.arm(base.timer);
    try {
      this.deps.publish(base.access, base.events);
      if (base.turnsIssued.length > 0) this.deps.turnsIssued(this.roomId, base.turnsIssued);
    } catch (err) {
      this.deps.logger.error({ err, room_id: this.roomId }, 'publishing room events failed');
    }
    for (const { pending, answer } of done) {
      try {
        pending.resolve(answer(this.state));
      } catch (err) {
        pending.reject(err);
      }
    }
  }

  /**
   * Takes the stored state (newer than ours), publishing the difference as events. A carried
   * change that follows our version directly is taken as it came (no reads); otherwise (ours is
   * older, or the notification was plain) the store is read.
   */
  private async reload(carried?: CarriedChange, notified?: NotifiedEvents): Promise<void> {
    // Already read past it (a stale retry of our own batch reloaded meanwhile).
    if (carried && carried.version <= this.version) return;
    // A rewritten person message may move the last person seq back: only the store knows where
    // to, so such a commit is read like any other.
    const taken = carried && carriedChanges(carried, this.version, this.lastSeq);
    const usable = taken && !taken.updated.some((m) => m.role === 'user') ? taken : undefined;
    // Otherwise the state, the messages and the last person seq come from one snapshot: never a
    // newer state with older messages, or the reverse.
    const read = carried && usable
      ? {
          loaded: { room: carried.room ?? this.state, lastSeq: carried.lastSeq, version: carried.version },
          ...usable,
          lastPersonSeq: lastPersonSeqIn(usable.added, this.lastPersonSeq),
        }
      : await loadChanges(this.deps.store, this.roomId, { version: this.version, lastSeq: this.lastSeq, lastPersonSeq: this.lastPersonSeq });
    if (read) this.take(read, notified);
  }

  /**
   * Takes a newer stored state and its new and rewritten messages (read from the store or
   * carried by a notification), and publishes what changed: the committing nodes' own events
   * (notified for exactly the next version, or kept by the store for each version since ours),
   * else the difference.
   */
  private take(read: RoomChangesSince, notified?: NotifiedEvents): void {
    if (read.loaded.version === this.version) return;
    const { loaded, added, updated, lastPersonSeq } = read;
    const before = this.state;
    // The committing nodes' own events, commit by commit: notified for exactly this commit, or
    // kept by the store for every commit since ours; else the difference.
    const notifiedOne = notified && notified.version === loaded.version && loaded.version === this.version + 1
      ? replayEventPlan(notified.plan, loaded.room, added, updated)
      : undefined;
    const commits = (notifiedOne ? [notifiedOne] : undefined)
      ?? replayStoredPlans(read.plans, this.version, loaded.version, loaded.room, added, updated)
      ?? [changeEvents(before, loaded.room, added, this.deps.turnTimeoutMs, updated)];
    this.state = loaded.room;
    this.lastSeq = loaded.lastSeq;
    this.version = loaded.version;
    this.lastPersonSeq = lastPersonSeq;
    this.armFromState();
    try {
      for (const { events, access, turnsIssued } of commits) {
        this.deps.publish(access, events);
        if (turnsIssued.length > 0) this.deps.turnsIssued(this.roomId, turnsIssued);
      }
    } catch (err) {
      this.deps.logger.error({ err, room_id: this.roomId }, 'publishing room events failed');
    }
  }

  private arm(deadline: string | null): void {
    if (this.timer && this.timer.deadline === deadline) return;
    if (this.timer) this.deps.timers.clearTimeout(this.timer.handle);
    this.timer = undefined;
    if (deadline === null || this.stopped) return;
    const delay = Math.max(0, Date.parse(deadline) - this.deps.now());
    const handle = this.deps.timers.setTimeout(() => this.fire(deadline), delay);
    this.timer = { handle, deadline };
  }

  private fire(deadline: string): void {
    if (this.timer?.deadline === deadline) this.timer = undefined;
    if (this.stopped) return;
    // A clock that has not reached the deadline yet (fake clocks, early timers) re-arms.
    if (this.deps.now() < Date.parse(deadline)) return this.arm(deadline);
    this.execute({ type: 'timeout', deadline }).catch((err: unknown) => this.deps.logger.error({ err, room_id: this.roomId }, 'timeout failed'));
  }

  private retryTimeout(): void {
    const turn = this.state.current_round && !this.state.current_round.completed ? this.state.current_round.turn : null;
    const deadline = turn?.deadline;
    if (!deadline || this.stopped) return;
    this.timer = undefined;
    const handle = this.deps.timers.setTimeout(() => this.fire(deadline), TIMEOUT_RETRY_MS);
    this.timer = { handle, deadline };
  }
}

/** A computed command: the answer it gives once its batch is durable. */
interface Done {
  pending: Pending;
  answer: Answer;
}

/** A command the computation refused, not answered yet. */
interface Refused {
  pending: Pending;
  err: AppError;
}

/** The batch writes something (new or changed messages, or a changed state). */
const writes = (base: Draft): boolean => base.messages.length > 0 || base.roomChanged;

/** The store write of a computed batch, with the events it will publish (other nodes replay them). */
function commitOf(base: Draft, expectedVersion: number): RoomCommit {
  return {
    messages: base.messages,
    expectedVersion,
    ...(base.roomChanged ? { room: base.room } : {}),
    events: () => encodeEventPlan(base.access, base.events),
  };
}

/**
 * Runs one command of a batch on its own copy of the room: one that throws leaves the batch as
 * it was. The lists (messages, events, access, turns) are shared, not copied — that cost grew
 * with the batch (64 sends copied them 64 times) — and commands only append to them, so a
 * failed command's entries are cut off again. Synchronous when `run` is (no promise per command).
 */
export function inDraft<T>(base: Draft, run: (draft: Draft) => T | Promise<T>): InDraft<T> | Promise<InDraft<T>> {
  const draft: Draft = { ...base, room: draftOf(base.room) };
  const lengths = [base.messages.length, base.events.length, base.access.length, base.turnsIssued.length] as const;
  const undo = (err: unknown): never => {
    [base.messages.length, base.events.length, base.access.length, base.turnsIssued.length] = lengths;
    throw err;
  };
  let result: T | Promise<T>;
  try {
    result = run(draft);
  } catch (err) {
    return undo(err);
  }
  return result instanceof Promise ? result.then((r) => ({ draft, result: r }), undo) : { draft, result };
}

export interface InDraft<T> {
  draft: Draft;
  result: T;
}

/**
 * A private copy of a room for one command: a shallow one. Commands replace what they change —
 * top-level fields, `settings`, `announcement`, the engine's round state (engine-core.ts copies
 * it) — and never change a nested object in place; a member they change is copied first
 * (`writableMember` in commands.ts), and the members list is the draft's own, so a push or a
 * replaced entry stays private. A deep copy of every member per command was the largest cost of
 * a send in a room of 64 (BENCHMARKS.md, issue 40).
 */
function draftOf(room: RoomRecord): RoomRecord {
  return { ...room, members: room.members.slice() };
}
