// How a node takes a commit another node made (Rooms.remoteChange, SPEC §11), with the commit
// carried by its notification (feed.ts `commitPayload`): two Rooms ("nodes") on one store, the
// feed played by hand. A node holding the room at the version before publishes the carried
// messages without reading the store; one further behind reads, and still publishes every
// message once, in seq order; a node that has not loaded the room loads it only when the
// carried state has a running turn (a deadline it may have to fire) or a member who is a client
// of that node (whose sockets there must subscribe to it).
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBus, type RoomEvent } from '../../src/events/bus.js';
import type { AccessEvent } from '../../src/protocol/events.js';
import { Presence } from '../../src/identity/presence.js';
import type { CarriedChange } from '../../src/runtime/room-runtime.js';
import type { Rooms } from '../../src/runtime/rooms.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import type { Store } from '../../src/storage/store.js';
import type { Caller } from '../../src/types.js';
import { ManualClock } from '../helpers/clock.js';
import { caller, member, testRooms } from '../helpers/runtime.js';

const running: Rooms[] = [];
afterEach(() => running.splice(0).forEach((r) => r.stop()));

/** The store as one node sees it, counting the reads that node makes. */
function countingStore(store: MemoryStore): { store: Store; reads: string[] } {
  const reads: string[] = [];
  const proxy = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (['loadRoom', 'readMessages', 'readChangesSince', 'lastPersonSeq'].includes(String(key))) reads.push(String(key));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, reads };
}

/** A node of a shared store whose clients (online here) are `people`. */
function node(store: Store, clock: ManualClock, people: Caller[]): { rooms: Rooms; events: RoomEvent[]; access: AccessEvent[]; presence: Presence } {
  const bus = new InProcessBus();
  const presence = new Presence(clock.now, clock);
  for (const p of people) presence.touch(p.id);
  const rooms = testRooms(store, bus, presence, clock, { shared: true });
  running.push(rooms);
  const events: RoomEvent[] = [];
  const access: AccessEvent[] = [];
  bus.subscribe((e) => events.push(e));
  bus.subscribeAccess((e) => access.push(e));
  return { rooms, events, access, presence };
}

/**
 * Runs one command on the committing node and returns what its notification carries: the new
 * messages, and the state only when the command changed it (read back from the store).
 */
async function commitOn(rooms: Rooms, store: MemoryStore, roomId: string, command: Parameters<Rooms['execute']>[1]): Promise<CarriedChange> {
  const before = (await store.loadRoom(roomId))!;
  await rooms.execute(roomId, command);
  const after = (await store.loadRoom(roomId))!;
  const messages = await store.readMessages(roomId, { afterSeq: before.lastSeq, limit: 100 });
  const changed = JSON.stringify(after.room) !== JSON.stringify(before.room);
  return { version: after.version, lastSeq: after.lastSeq, messages, ...(changed ? { room: after.room } : {}) };
}

/** The room's round and turn events and new messages as lines (round ids cut short). */
const roundLines = (events: RoomEvent[]): string[] =>
  events.flatMap((e) => {
    switch (e.event) {
      case 'message_new':
        return [`msg#${e.data.message.seq}${e.data.message.skip_reason ? `:${e.data.message.skip_reason}` : ''}`];
      case 'round_start':
        return [`round_start:${e.data.round_id.slice(0, 8)}`];
      case 'round_end':
        return [`round_end:${e.data.round_id.slice(0, 8)}:${e.data.reason}`];
      case 'agent_turn':
        return [`turn:${e.data.agent_name}`];
      default:
        return [];
    }
  });

const texts = (events: RoomEvent[]): string[] =>
  events.flatMap((e) => (e.event === 'message_new' ? [`${e.data.message.seq}:${e.data.message.text_content}`] : []));

describe('a node taking another node\'s commit from its notification', () => {
  it('publishes a carried commit that follows its version without reading, and reads when it is further behind', async () => {
    const clock = new ManualClock();
    const shared = new MemoryStore();
    const ann = caller('Ann', 'user');
    const a = node(shared, clock, [ann]);
    const seen = countingStore(shared);
    const b = node(seen.store, clock, [ann]);
    const { room_id } = await a.rooms.create(ann, { room_name: 'Two nodes' }, member(ann, clock));
    await b.rooms.runtime(room_id); // B serves someone in the room

    const first = await commitOn(a.rooms, shared, room_id, { type: 'post', caller: ann, input: { text_content: 'one' } });
    expect(first.version).toBe((await shared.loadRoom(room_id))!.version);
    seen.reads.length = 0;
    b.rooms.remoteChange(room_id, first.version, first);
    await expect.poll(() => texts(b.events)).toEqual(['1:one']);
    expect(seen.reads).toEqual([]);

    // B misses the next notification; the one after cannot be taken as it came.
    await commitOn(a.rooms, shared, room_id, { type: 'post', caller: ann, input: { text_content: 'two' } });
    const third = await commitOn(a.rooms, shared, room_id, { type: 'post', caller: ann, input: { text_content: 'three' } });
    b.rooms.remoteChange(room_id, third.version, third);
    await expect.poll(() => texts(b.events)).toEqual(['1:one', '2:two', '3:three']);
    expect(seen.reads).toContain('loadRoom');
    // A late notification of a version already read changes nothing.
    b.rooms.remoteChange(room_id, first.version, first);
    b.rooms.remoteChange(room_id, third.version, third);
    await b.rooms.runtime(room_id).then((r) => r!.refresh());
    expect(texts(b.events)).toEqual(['1:one', '2:two', '3:three']);
    expect((await b.rooms.runtime(room_id))!.committedSeq).toBe(3);
  });

  it('leaves an unloaded room alone for carried changes without a running turn, and loads it for one with', async () => {
    const clock = new ManualClock();
    const shared = new MemoryStore();
    const [ann, bob, alpha] = [caller('Ann', 'user'), caller('Bob', 'user'), caller('Alpha', 'ai_agent')];
    const a = node(shared, clock, [ann, bob, alpha]);
    const seen = countingStore(shared);
    // None of them is a client of node b.
    const b = node(seen.store, clock, []);
    const { room_id } = await a.rooms.create(ann, { room_name: 'Quiet here' }, member(ann, clock));
    // A load would start synchronously (its first read): none may start for these two.
    const post = await commitOn(a.rooms, shared, room_id, { type: 'post', caller: ann, input: { text_content: 'no agent yet' } });
    b.rooms.remoteChange(room_id, post.version, post);
    const join = await commitOn(a.rooms, shared, room_id, { type: 'join', caller: bob, member: member(bob, clock), passwordHash: null });
    expect(join.room).toBeDefined();
    expect(join.room!.current_round).toBeFalsy();
    b.rooms.remoteChange(room_id, join.version, join);
    expect(seen.reads).toEqual([]);
    expect(b.rooms.loadedIds()).toEqual([]);

    // An agent's join starts a round for Ann's waiting message: a deadline now runs.
    const turn = await commitOn(a.rooms, shared, room_id, { type: 'join', caller: alpha, member: member(alpha, clock), passwordHash: null });
    expect(turn.room!.current_round?.turn?.agent).toBe('Alpha');
    b.rooms.remoteChange(room_id, turn.version, turn);
    expect(seen.reads).toContain('loadRoom');
    await expect.poll(() => b.rooms.loadedIds()).toEqual([room_id]);
    expect((await b.rooms.runtime(room_id))!.room.current_round?.turn?.agent).toBe('Alpha');
  });

  it('loads an unloaded room when a client of this node joins it through another node, and subscribes that client', async () => {
    const clock = new ManualClock();
    const shared = new MemoryStore();
    const [ann, bob] = [caller('Ann', 'user'), caller('Bob', 'user')];
    const a = node(shared, clock, [ann, bob]);
    // Bob's socket is on node b; Ann is a client of node a only.
    const b = node(shared, clock, [bob]);
    const { room_id } = await a.rooms.create(ann, { room_name: 'Joined elsewhere' }, member(ann, clock));
    const created = await commitOn(a.rooms, shared, room_id, { type: 'post', caller: ann, input: { text_content: 'before Bob' } });
    b.rooms.remoteChange(room_id, created.version, created);
    expect(b.rooms.loadedIds()).toEqual([]);
    // Bob joins through node a (his REST call went there): node b must take the room up.
    const join = await commitOn(a.rooms, shared, room_id, { type: 'join', caller: bob, member: member(bob, clock), passwordHash: null });
    b.rooms.remoteChange(room_id, join.version, join);
    await expect.poll(() => b.rooms.loadedIds()).toEqual([room_id]);
    expect(b.access).toContainEqual({ type: 'joined', room_id, participant_id: bob.id });
    // From then on node b publishes the room's messages to its subscribers.
    const next = await commitOn(a.rooms, shared, room_id, { type: 'post', caller: ann, input: { text_content: 'hello Bob' } });
    b.rooms.remoteChange(room_id, next.version, next);
    await expect.poll(() => texts(b.events)).toContain(`${next.lastSeq}:hello Bob`);
  });

  it('sends the round_end reasons and the order of the committing node: a follow-up round after `completed`, a host round after `superseded`', async () => {
    const clock = new ManualClock();
    const shared = new MemoryStore();
    const [ann, gamma, alpha, beta] = [caller('Ann', 'user'), caller('Gamma', 'ai_agent'), caller('Alpha', 'ai_agent'), caller('Beta', 'ai_agent')];
    // Gamma, first in join order, is offline: each round starts with its offline record.
    const a = node(shared, clock, [ann, alpha, beta]);
    const b = node(shared, clock, [ann]);
    // Node c gets every notification in the plain form: it reads the store.
    const c = node(shared, clock, [ann]);
    const { room_id } = await a.rooms.create(ann, { room_name: 'Rounds everywhere' }, member(ann, clock));
    await b.rooms.runtime(room_id);
    await c.rooms.runtime(room_id);
    const step = async (command: Parameters<Rooms['execute']>[1]) => {
      const change = await commitOn(a.rooms, shared, room_id, command);
      b.rooms.remoteChange(room_id, change.version, change);
      c.rooms.remoteChange(room_id, change.version);
      await expect.poll(async () => (await b.rooms.runtime(room_id))!.committedSeq).toBe(change.lastSeq);
      await expect.poll(async () => (await c.rooms.runtime(room_id))!.committedSeq).toBe(change.lastSeq);
    };
    await step({ type: 'join', caller: gamma, member: { ...member(gamma, clock), status: 'offline' }, passwordHash: null });
    await step({ type: 'join', caller: alpha, member: member(alpha, clock), passwordHash: null });
    await step({ type: 'join', caller: beta, member: member(beta, clock), passwordHash: null });
    await step({ type: 'post', caller: ann, input: { text_content: 'Plan the release.' } });
    await step({ type: 'post', caller: alpha, input: { text_content: 'Alpha: tests first.' } });
    // Beta's answer ends the round (completed) and starts the follow-up in one commit.
    await step({ type: 'post', caller: beta, input: { text_content: 'Beta: then docs.' } });
    // Host mode: the host's mention supersedes the running round.
    await step({ type: 'update_settings', caller: ann, change: { interaction_mode: 'host' } });
    await step({ type: 'post', caller: ann, input: { text_content: '@Alpha go' } });
    await step({ type: 'post', caller: ann, input: { text_content: '@Beta instead' } });

    const committed = roundLines(a.events);
    const reasons = committed.filter((l) => l.startsWith('round_end')).map((l) => l.split(':')[2]);
    expect(reasons).toEqual(['completed', 'superseded', 'superseded']);
    // After the follow-up's round_start comes Gamma's offline record of the new round.
    const followUp = committed.findIndex((l, i) => i > 0 && committed[i - 1]!.endsWith(':completed'));
    expect(committed.slice(followUp, followUp + 3)).toEqual([expect.stringMatching(/^round_start:/), expect.stringMatching(/^msg#\d+:offline$/), 'turn:Alpha']);
    expect(roundLines(b.events)).toEqual(committed);
    expect(roundLines(c.events)).toEqual(committed);
  });
});
