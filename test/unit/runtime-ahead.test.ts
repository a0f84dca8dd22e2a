// The room runtime on a store only this node writes computes the next batch while the commit
// before it is on its way, and commits it once that one is durable (room-runtime.ts
// `drainAhead`). What it computed on a commit that then fails is computed again on the
// committed state: no answer rests on a state that never became durable (SPEC §5).
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBus } from '../../src/events/bus.js';
import { Presence } from '../../src/identity/presence.js';
import type { RoomEvent } from '../../src/protocol/events.js';
import type { Rooms } from '../../src/runtime/rooms.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import type { RoomCommit } from '../../src/storage/store.js';
import type { Message, Room } from '../../src/types.js';
import { ManualClock } from '../helpers/clock.js';
import { caller, member, testRooms } from '../helpers/runtime.js';

/** A memory store whose room commits can be held, then let through or failed one by one. */
class HeldStore extends MemoryStore {
  hold = false;
  calls = 0;
  readonly held: { release: () => void; fail: (err: Error) => void }[] = [];
  override async commitRoom(roomId: string, commit: RoomCommit): Promise<number> {
    this.calls++;
    if (this.hold) await new Promise<void>((release, fail) => this.held.push({ release, fail }));
    return super.commitRoom(roomId, commit);
  }
}

let rooms: Rooms | undefined;
afterEach(() => rooms?.stop());

async function world() {
  const clock = new ManualClock();
  const store = new HeldStore();
  const bus = new InProcessBus();
  const events: RoomEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const presence = new Presence(clock.now, clock);
  rooms = testRooms(store, bus, presence, clock);
  const ann = caller('Ann', 'user');
  const bob = caller('Bob', 'user');
  for (const c of [ann, bob]) presence.touch(c.id);
  const room: Room = await rooms.create(ann, { room_name: 'Ahead' }, member(ann, clock));
  await rooms.execute(room.room_id, { type: 'join', caller: bob, member: member(bob, clock), passwordHash: null });
  events.length = 0;
  store.calls = 0;
  return { store, events, rooms, roomId: room.room_id, ann, bob };
}

const settled = <T>(p: Promise<T>) => p.then((value) => ({ ok: true as const, value }), (err: unknown) => ({ ok: false as const, err }));

describe('room runtime: the next batch computed while a commit is on its way', () => {
  it('commits it only once the commit before is durable, and answers and publishes in order', async () => {
    const w = await world();
    w.store.hold = true;
    const first = w.rooms.execute(w.roomId, { type: 'post', caller: w.ann, input: { text_content: 'one' } });
    await expect.poll(() => w.store.held.length).toBe(1);
    const more = ['two', 'three', 'four'].map((text) => w.rooms.execute(w.roomId, { type: 'post', caller: w.bob, input: { text_content: text } }));
    // Computed meanwhile, not committed: the store saw one commit.
    await new Promise((r) => setImmediate(r));
    expect(w.store.calls).toBe(1);
    expect(w.events).toEqual([]);
    w.store.hold = false;
    w.store.held.shift()!.release();
    const sent = (await Promise.all([first, ...more])) as Message[];
    expect(sent.map((m) => [m.seq, m.text_content])).toEqual([[1, 'one'], [2, 'two'], [3, 'three'], [4, 'four']]);
    expect(w.store.calls).toBe(2);
    const published = w.events.filter((e) => e.event === 'message_new').map((e) => (e.data as { message: Message }).message.text_content);
    expect(published).toEqual(['one', 'two', 'three', 'four']);
  });

  it('a retry of a client_msg_id whose first commit fails is written anew, not answered with the lost message', async () => {
    const w = await world();
    w.store.hold = true;
    const first = settled(w.rooms.execute(w.roomId, { type: 'post', caller: w.ann, input: { text_content: 'hello', client_msg_id: 'k1' } }));
    await expect.poll(() => w.store.held.length).toBe(1);
    const retry = w.rooms.execute(w.roomId, { type: 'post', caller: w.ann, input: { text_content: 'hello', client_msg_id: 'k1' } });
    await new Promise((r) => setImmediate(r));
    w.store.hold = false;
    w.store.held.shift()!.fail(Object.assign(new Error('injected'), { code: 'EIO' }));
    expect((await first).ok).toBe(false);
    const written = (await retry) as Message;
    expect(written.seq).toBe(1);
    const stored = await w.store.readMessages(w.roomId, { afterSeq: 0, limit: 10 });
    expect(stored.map((m) => [m.seq, m.text_content])).toEqual([[1, 'hello']]);
  });

  it('a refusal judged on a commit that then fails is judged again on the committed state', async () => {
    const w = await world();
    w.store.hold = true;
    // Bob leaves (held, then failing); his post, computed meanwhile, would be refused on that state.
    const leave = settled(w.rooms.execute(w.roomId, { type: 'leave', caller: w.bob }));
    await expect.poll(() => w.store.held.length).toBe(1);
    const post = settled(w.rooms.execute(w.roomId, { type: 'post', caller: w.bob, input: { text_content: 'still here' } }));
    await new Promise((r) => setImmediate(r));
    w.store.hold = false;
    w.store.held.shift()!.fail(Object.assign(new Error('injected'), { code: 'EIO' }));
    expect((await leave).ok).toBe(false);
    const answer = await post;
    expect(answer.ok).toBe(true);
    expect((answer as { value: Message }).value).toMatchObject({ seq: 1, sender: 'Bob', text_content: 'still here' });
    expect(w.events.map((e) => e.event)).not.toContain('member_leave');
  });

  it('a refusal judged on a commit that becomes durable is answered after it', async () => {
    const w = await world();
    w.store.hold = true;
    const leave = w.rooms.execute(w.roomId, { type: 'leave', caller: w.bob });
    await expect.poll(() => w.store.held.length).toBe(1);
    const post = settled(w.rooms.execute(w.roomId, { type: 'post', caller: w.bob, input: { text_content: 'gone' } }));
    let answered = false;
    void post.then(() => (answered = true));
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    w.store.hold = false;
    w.store.held.shift()!.release();
    await leave;
    const refused = await post;
    expect(refused.ok).toBe(false);
    expect((refused as { err: { code?: string } }).err.code).toBe('not_a_member');
  });
});
