// Start-up (Rooms.restoreAll) loads only the rooms that need it: a running turn (restored with
// a fresh deadline, SPEC §6.1.10) before serving, and a member whose stored status disagrees
// with presence (corrected) in the background. The others are loaded on first use, as any room.
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBus } from '../../src/events/bus.js';
import { Presence } from '../../src/identity/presence.js';
import type { Rooms } from '../../src/runtime/rooms.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import type { RoomRuntime } from '../../src/runtime/room-runtime.js';
import type { Caller, Message, RoomRecord } from '../../src/types.js';
import { ManualClock } from '../helpers/clock.js';
import { caller, member, testRooms, TURN_MS } from '../helpers/runtime.js';

const running: Rooms[] = [];
afterEach(() => running.splice(0).forEach((r) => r.stop()));

function rooms(store: MemoryStore, clock: ManualClock, presence: Presence): Rooms {
  const r = testRooms(store, new InProcessBus(), presence, clock);
  running.push(r);
  return r;
}

describe('Rooms.restoreAll', () => {
  it('loads the rooms with a running turn or a status to correct, and no other', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore();
    const [ann, a, b, c] = [caller('Ann', 'user'), caller('Alpha', 'ai_agent'), caller('Beta', 'ai_agent'), caller('Gamma', 'ai_agent')];
    const before = new Presence(clock.now, clock);
    for (const p of [ann, a, b, c]) before.touch(p.id);
    const first = rooms(store, clock, before);
    const create = async (name: string, agents: Caller[]) => {
      const { room_id } = await first.create(ann, { room_name: name }, member(ann, clock));
      for (const agent of agents) await first.execute(room_id, { type: 'join', caller: agent, member: member(agent, clock), passwordHash: null });
      return room_id;
    };
    const withTurn = await create('Turn', [a, b]);
    await first.execute(withTurn, { type: 'post', caller: ann, input: { text_content: 'go' } });
    expect((await store.loadRoom(withTurn))!.room.current_round?.turn?.agent).toBe('Alpha');
    const stale = await create('Stale', [c]);
    const quiet = await create('Quiet', []);
    first.stop();

    // The restart: Gamma is no longer online, the others are.
    clock.advance(10_000);
    const after = new Presence(clock.now, clock);
    for (const p of [ann, a, b]) after.touch(p.id);
    const second = rooms(store, clock, after);
    await second.restoreAll();
    expect(second.loadedIds()).toEqual([withTurn]); // before serving: the running turn only
    await expect.poll(() => second.loadedIds().sort()).toEqual([withTurn, stale].sort()); // then, in the background

    // The turn holder keeps the turn with a fresh full deadline.
    await expect.poll(async () => (await store.loadRoom(withTurn))!.room.current_round?.turn?.deadline).toBe(
      new Date(clock.now() + TURN_MS).toISOString(),
    );
    // Gamma's stored status is corrected.
    await expect.poll(async () => (await store.loadRoom(stale))!.room.members.find((m) => m.name === 'Gamma')?.status).toBe('offline');
    // The quiet room loads on first use.
    expect((await second.room(quiet)).room_name).toBe('Quiet');
  });

});

describe('one runtime per room', () => {
  it('a room loaded while its creation was being written keeps that runtime (the feed of a shared store can load it)', async () => {
    const clock = new ManualClock();
    let r: Rooms | undefined;
    let loadedMeanwhile: Promise<RoomRuntime | undefined> | undefined;
    class RacingStore extends MemoryStore {
      override async createRoom(room: RoomRecord, messages?: readonly Message[]): Promise<number> {
        const version = await super.createRoom(room, messages);
        loadedMeanwhile = r!.runtime(room.room_id);
        await loadedMeanwhile;
        return version;
      }
    }
    const presence = new Presence(clock.now, clock);
    const ann = caller('Ann', 'user');
    presence.touch(ann.id);
    r = rooms(new RacingStore(), clock, presence);
    const { room_id } = await r.create(ann, { room_name: 'Race' }, member(ann, clock));
    const first = await loadedMeanwhile;
    expect(first).toBeDefined();
    expect(r.loaded(room_id)).toBe(first);
  });
});
