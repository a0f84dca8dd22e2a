// The rounds driver on a real file store with a hand-driven clock and timers: one timer per
// room, stale timers do nothing, pause cancels the timer, a timer that fires early re-arms.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InProcessBus } from '../../src/events/bus.js';
import { Presence, type Timers } from '../../src/identity/presence.js';
import { Committer } from '../../src/rooms/commit.js';
import { RoundsDriver } from '../../src/rounds/driver.js';
import type { EngineAction } from '../../src/rounds/types.js';
import { createStore } from '../../src/storage/index.js';
import type { Store } from '../../src/storage/store.js';
import type { Member, Message, RoomRecord } from '../../src/types.js';
import { makeMessage, makeRoom, memoryLogger, tempDir } from './storage-helpers.js';

const T0 = Date.UTC(2026, 0, 1);
const TIMEOUT = 60_000;

interface Scheduled {
  at: number;
  fn: () => void;
  cancelled: boolean;
}

/** Timers on a manual clock: `advance` runs what falls due; cancelled timers stay inspectable. */
class ManualTimers implements Timers {
  now = T0;
  readonly all: Scheduled[] = [];

  setTimeout(fn: () => void, ms: number): unknown {
    const t: Scheduled = { at: this.now + ms, fn, cancelled: false };
    this.all.push(t);
    return t;
  }

  clearTimeout(handle: unknown): void {
    (handle as Scheduled).cancelled = true;
  }

  get pending(): Scheduled[] {
    return this.all.filter((t) => !t.cancelled);
  }

  /** Moves the clock, running every live timer that falls due, in deadline order. */
  advance(ms: number): void {
    const end = this.now + ms;
    for (;;) {
      const due = this.pending.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.now = Math.max(this.now, due.at);
      this.run(due);
    }
    this.now = end;
  }

  /** Runs a timer's callback now, whatever the clock says (a stale or early callback). */
  run(t: Scheduled): void {
    t.cancelled = true;
    t.fn();
  }
}

function member(name: string, role: 'ai_agent' | 'user'): Member {
  return {
    name,
    role,
    introduce: '',
    status: 'online',
    last_active: new Date(T0).toISOString(),
    is_host: false,
    skip_list: [],
    language_preference: 'en',
    timezone_preference: 'UTC',
    participant_id: `id-${name}`,
    joined_at: new Date(T0).toISOString(),
  };
}

let store: Store;
let timers: ManualTimers;
let driver: RoundsDriver;
let cleanup: () => Promise<void>;
let dataDir: string;

beforeEach(async () => {
  const dir = await tempDir();
  cleanup = dir.cleanup;
  dataDir = dir.dir;
  store = createStore(dir.dir, memoryLogger().logger);
  await store.open();
  timers = new ManualTimers();
  const now = () => timers.now;
  // Presence keeps its own timers so that `timers` holds only the driver's.
  const presence = new Presence(now, new ManualTimers());
  for (const name of ['A', 'B']) presence.socketOpened(`id-${name}`);
  driver = new RoundsDriver({
    store,
    committer: new Committer(store, new InProcessBus()),
    presence,
    turnTimeoutMs: TIMEOUT,
    now,
    timers,
    logger: memoryLogger().logger,
  });
});

afterEach(async () => {
  driver.stop();
  await store.close();
  await cleanup();
});

/** A room with agents A, B and person U, stored, with a round started (A holds the turn). */
async function startedRoom(roomId: string): Promise<RoomRecord> {
  const room = makeRoom(roomId, { members: [member('A', 'ai_agent'), member('B', 'ai_agent'), member('U', 'user')] });
  await store.putRoom(room);
  await apply(room, { type: 'start_round', by: 'U', byPerson: true });
  expect(room.current_round?.turn?.agent).toBe('A');
  return room;
}

async function apply(room: RoomRecord, action: EngineAction, lead: Message[] = []): Promise<void> {
  const outcome = driver.apply(room, action, { lead, roomChanged: true });
  if (!outcome.ok) throw new Error(`refused: ${outcome.code}`);
  await outcome.done;
}

/** The holder posts without ending its turn. */
function postKeepingTurn(room: RoomRecord, sender: string): Promise<void> {
  const m = makeMessage(room.room_id, store.nextSeq(room.room_id), { sender, sender_id: `id-${sender}`, role: 'ai_agent' });
  return apply(room, { type: 'message', sender, role: 'ai_agent', isAdmin: false, seq: m.seq, mentions: [], endTurn: false }, [m]);
}

function setStatus(room: RoomRecord, status: 'active' | 'paused'): Promise<void> {
  room.system_status = status;
  return apply(room, { type: 'status_changed' });
}

const timeouts = (room: RoomRecord) => store.roomMessages(room.room_id).filter((m) => m.skip_reason === 'timeout');
const deadlineOf = (room: RoomRecord) => Date.parse(room.current_round!.turn!.deadline!);

describe('rounds driver timers', () => {
  it('arms one timer per room at the deadline; it passes the turn with an invisible timeout record', async () => {
    const one = await startedRoom('room-1');
    const two = await startedRoom('room-2');
    expect(timers.pending.map((t) => t.at)).toEqual([T0 + TIMEOUT, T0 + TIMEOUT]);

    // A change in room 1 re-arms room 1's timer only.
    timers.advance(1_000);
    await postKeepingTurn(one, 'A');
    expect(timers.pending.map((t) => t.at).sort()).toEqual([T0 + TIMEOUT, T0 + 1_000 + TIMEOUT]);

    timers.advance(TIMEOUT - 1_000);
    expect(timeouts(one)).toEqual([]);
    expect(timeouts(two)).toMatchObject([{ sender: 'A', sender_id: 'id-A', role: 'ai_agent', visible: false }]);
    expect(two.current_round?.turn?.agent).toBe('B');
    expect(timers.pending).toHaveLength(2);
  });

  // The last column: timeout records written when the live timer fires (none after a visible
  // post: the turn then ends as answered).
  it.each([
    ['extend_turn', (room: RoomRecord) => apply(room, { type: 'extend_turn', agent: 'A' }), 1],
    ['a post with end_turn: false', (room: RoomRecord) => postKeepingTurn(room, 'A'), 0],
    ['pause + resume', async (room: RoomRecord) => {
      await setStatus(room, 'paused');
      await setStatus(room, 'active');
    }, 1],
  ])('a timer made stale by %s does not time the turn out', async (_label, renew, records) => {
    const room = await startedRoom('room-1');
    const [stale] = timers.pending;
    timers.advance(10_000);
    await renew(room);
    expect(deadlineOf(room)).toBe(T0 + 10_000 + TIMEOUT);
    expect(timers.pending).toHaveLength(1);
    expect(stale!.cancelled).toBe(true);

    // Even if the old callback still ran at its deadline, it would find a newer deadline.
    timers.advance(TIMEOUT - 10_000);
    timers.run(stale!);
    expect(timeouts(room)).toEqual([]);
    expect(room.current_round?.turn?.agent).toBe('A');

    // The live timer still times the turn out at the new deadline.
    timers.advance(10_000);
    expect(timeouts(room)).toHaveLength(records);
    expect(room.current_round?.turn?.agent).toBe('B');
  });

  it('pause cancels the timer: past the deadline nothing times out until the room resumes', async () => {
    const room = await startedRoom('room-1');
    await setStatus(room, 'paused');
    expect(timers.pending).toEqual([]);
    timers.advance(3 * TIMEOUT);
    expect(timeouts(room)).toEqual([]);
    expect(room.current_round?.turn).toMatchObject({ agent: 'A', deadline: null });

    await setStatus(room, 'active');
    expect(timers.pending.map((t) => t.at)).toEqual([timers.now + TIMEOUT]);
  });

  it('a timer that fires before the deadline re-arms for the rest instead of timing out', async () => {
    const room = await startedRoom('room-1');
    const [first] = timers.pending;
    timers.now = T0 + TIMEOUT - 5_000;
    timers.run(first!);
    expect(timeouts(room)).toEqual([]);
    expect(timers.pending.map((t) => t.at)).toEqual([T0 + TIMEOUT]);

    timers.advance(5_000);
    expect(timeouts(room)).toHaveLength(1);
    expect(room.current_round?.turn?.agent).toBe('B');
  });
});

describe('rounds driver state', () => {
  it("remembers a person's mentions posted into a paused idle room with the room, across a store reopen (SPEC §6.1.9)", async () => {
    const room = makeRoom('room-p', {
      system_status: 'paused',
      members: [member('A', 'ai_agent'), member('B', 'ai_agent'), member('U', 'user')],
    });
    await store.putRoom(room);
    const m = makeMessage(room.room_id, store.nextSeq(room.room_id), { sender: 'U', sender_id: 'id-U', role: 'user', mentions: ['B'] });
    await apply(room, { type: 'message', sender: 'U', role: 'user', isAdmin: false, seq: m.seq, mentions: ['B'], endTurn: true }, [m]);
    expect(room.paused_mentions).toEqual(['B']);
    expect(room.current_round).toBeNull();

    driver.stop();
    await store.close();
    store = createStore(dataDir, memoryLogger().logger);
    await store.open();
    const reloaded = store.getRoom('room-p')!;
    expect(reloaded.paused_mentions).toEqual(['B']);
    const presence = new Presence(() => timers.now, new ManualTimers());
    for (const name of ['A', 'B']) presence.socketOpened(`id-${name}`);
    driver = new RoundsDriver({
      store,
      committer: new Committer(store, new InProcessBus()),
      presence,
      turnTimeoutMs: TIMEOUT,
      now: () => timers.now,
      timers,
      logger: memoryLogger().logger,
    });
    await setStatus(reloaded, 'active');
    expect(reloaded.current_round).toMatchObject({ agent_queue: ['B', 'A'], pending_mentions: ['B'], turn: { agent: 'B', can_skip: false } });
    expect(reloaded.paused_mentions).toBeUndefined();
    expect(store.getRoom('room-p')?.paused_mentions).toBeUndefined();
  });
});
