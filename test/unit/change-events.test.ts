// What a node reads when another node committed a room (change-events.ts): the new messages up
// to the loaded seq, the rewritten older ones, and the room's last person seq after them; and
// the events it rebuilds from them, against those the committing node sent.
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBus } from '../../src/events/bus.js';
import { Presence } from '../../src/identity/presence.js';
import type { RoomEvent } from '../../src/protocol/events.js';
import { presentRoom } from '../../src/rooms/present.js';
import { changeEvents, lastPersonSeqAfter, readChanges } from '../../src/runtime/change-events.js';
import { RECENT_ROUND_ENDS } from '../../src/runtime/engine-step.js';
import type { Rooms } from '../../src/runtime/rooms.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import type { Caller, RoomRecord } from '../../src/types.js';
import { ManualClock } from '../helpers/clock.js';
import { caller, member, testRooms, TURN_MS } from '../helpers/runtime.js';
import { makeMessage, makeRoom } from './storage-helpers.js';

async function roomWithPeople() {
  const store = new MemoryStore();
  let version = await store.createRoom(makeRoom('r'));
  const first = [makeMessage('r', 1, { role: 'user' }), makeMessage('r', 2, { role: 'ai_agent', sender_id: 'a1' })];
  version = await store.commitRoom('r', { messages: first, expectedVersion: version });
  return { store, version, first };
}

describe('readChanges and lastPersonSeqAfter', () => {
  it('reads the new messages through the loaded seq, and takes the last person seq from them', async () => {
    const { store, version } = await roomWithPeople();
    const from = { version, lastSeq: 2 };
    const later = [makeMessage('r', 3, { role: 'ai_agent', sender_id: 'a1' }), makeMessage('r', 4, { role: 'user' }), makeMessage('r', 5, { role: 'ai_agent', sender_id: 'a1' })];
    const to = await store.commitRoom('r', { messages: later, expectedVersion: version });
    const loaded = (await store.loadRoom('r'))!;
    // A commit after the load is left for the next refresh.
    await store.commitRoom('r', { messages: [makeMessage('r', 6, { role: 'user' })], expectedVersion: to });
    const changes = await readChanges(store, 'r', from, loaded);
    expect(changes.added.map((m) => m.seq)).toEqual([3, 4, 5]);
    expect(await lastPersonSeqAfter(store, 'r', 1, changes)).toBe(4);
    expect(await lastPersonSeqAfter(store, 'r', 1, { added: changes.added.slice(2), updated: [] })).toBe(1);
  });

  it('asks the store when a person message was rewritten (a deletion moves it back)', async () => {
    const { store, version, first } = await roomWithPeople();
    await store.commitRoom('r', { messages: [{ ...first[0]!, deleted: true }], expectedVersion: version });
    const deletion = { added: [], updated: [{ ...first[0]!, deleted: true }] };
    expect(await lastPersonSeqAfter(store, 'r', 1, deletion)).toBe(0);
  });
});

// What the node that commits announces against what a node that did not rebuilds from the
// stored states (changeEvents): the same round_end reasons, and a new round's records after
// its round_start (SPEC §8, §11).
describe('changeEvents against the committing node', () => {
  let running: Rooms | undefined;
  afterEach(() => running?.stop());

  /** One node on a memory store; `online` are the participants it counts as online. */
  async function oneNode(people: Caller[], online: Caller[], options: { mode?: 'host' } = {}) {
    const clock = new ManualClock();
    const store = new MemoryStore();
    const bus = new InProcessBus();
    const events: RoomEvent[] = [];
    bus.subscribe((e) => events.push(e));
    const presence = new Presence(clock.now, clock);
    for (const c of online) presence.touch(c.id);
    const rooms = testRooms(store, bus, presence, clock);
    running = rooms;
    const [creator, ...others] = people;
    const { room_id } = await rooms.create(creator!, { room_name: 'Diff room', ...(options.mode ? { interaction_mode: options.mode } : {}) }, member(creator!, clock));
    for (const c of others) {
      const joined = { ...member(c, clock), ...(online.includes(c) ? {} : { status: 'offline' as const }) };
      await rooms.execute(room_id, { type: 'join', caller: c, member: joined, passwordHash: null });
    }
    /**
     * Runs `command` and returns the events this node published for it and the ones
     * changeEvents rebuilds from the states and messages before and after it.
     */
    const diff = async (command: Parameters<Rooms['execute']>[1]) => {
      const before = (await store.loadRoom(room_id))!;
      const from = events.length;
      await rooms.execute(room_id, command);
      const after = (await store.loadRoom(room_id))!;
      const added = await store.readMessages(room_id, { afterSeq: before.lastSeq, limit: 100 });
      return { committed: events.slice(from), rebuilt: changeEvents(before.room, after.room, added, TURN_MS).events, after: after.room };
    };
    return { room_id, store, diff };
  }

  /** An event as one line: messages by seq and kind, rounds with their reason, turns by holder. */
  const line = (e: RoomEvent): string => {
    switch (e.event) {
      case 'message_new':
        return `msg#${e.data.message.seq}${e.data.message.skip_reason ? `:${e.data.message.skip_reason}` : ''}`;
      case 'round_start':
        return `round_start:${e.data.round_id.slice(0, 8)}`;
      case 'round_end':
        return `round_end:${e.data.round_id.slice(0, 8)}:${e.data.reason}`;
      case 'agent_turn':
        return `turn:${e.data.agent_name}`;
      default:
        return e.event;
    }
  };

  it('a commit that ends a round completed and starts the follow-up: round_end completed, the new round\'s record after its round_start', async () => {
    const [ann, gamma, alpha, beta] = [caller('Ann', 'user'), caller('Gamma', 'ai_agent'), caller('Alpha', 'ai_agent'), caller('Beta', 'ai_agent')];
    // Gamma (first in join order) is offline: every round starts with its offline record.
    const { room_id, diff } = await oneNode([ann, gamma, alpha, beta], [ann, alpha, beta]);
    const rooms = running!;
    await rooms.execute(room_id, { type: 'post', caller: ann, input: { text_content: 'Plan the release.' } });
    await rooms.execute(room_id, { type: 'post', caller: alpha, input: { text_content: 'Alpha: tests first.' } });
    // Beta's answer ends R1 (two agents answered: a follow-up round starts at once).
    const { committed, rebuilt, after } = await diff({ type: 'post', caller: beta, input: { text_content: 'Beta: then docs.' } });
    const r1 = after.history_rounds.at(-1)!.slice(0, 8);
    const r2 = after.current_round!.round_id.slice(0, 8);
    expect(r2).not.toBe(r1);
    expect(committed.map(line)).toEqual(['msg#4', `round_end:${r1}:completed`, `round_start:${r2}`, 'msg#5:offline', 'turn:Alpha', 'room_update']);
    expect(rebuilt.map(line)).toEqual(committed.map(line));
    expect(after.recent_round_ends).toEqual([{ round_id: after.history_rounds.at(-1), reason: 'completed' }]);
  });

  it('a host message that supersedes the running round is still reported superseded', async () => {
    const [ann, alpha, beta] = [caller('Ann', 'user'), caller('Alpha', 'ai_agent'), caller('Beta', 'ai_agent')];
    const { room_id, diff } = await oneNode([ann, alpha, beta], [ann, alpha, beta], { mode: 'host' });
    await running!.execute(room_id, { type: 'post', caller: ann, input: { text_content: '@Alpha go' } });
    const { committed, rebuilt, after } = await diff({ type: 'post', caller: ann, input: { text_content: '@Beta instead' } });
    const r1 = after.history_rounds.at(-1)!.slice(0, 8);
    const r2 = after.current_round!.round_id.slice(0, 8);
    expect(committed.map(line)).toEqual(['msg#2', `round_end:${r1}:superseded`, `round_start:${r2}`, 'turn:Beta', 'room_update']);
    expect(rebuilt.map(line)).toEqual(committed.map(line));
  });

  it('an agent\'s post that opens a round in an idle room stays before its round_start', async () => {
    const [ann, alpha, beta] = [caller('Ann', 'user'), caller('Alpha', 'ai_agent'), caller('Beta', 'ai_agent')];
    const { room_id, diff } = await oneNode([ann, alpha, beta], [ann, alpha, beta]);
    expect((await running!.runtime(room_id))!.room.current_round).toBeNull();
    const { committed, rebuilt } = await diff({ type: 'post', caller: alpha, input: { text_content: 'Alpha opens.' } });
    expect(committed.map(line).slice(0, 2)).toEqual(['msg#1', expect.stringMatching(/^round_start:/)]);
    expect(rebuilt.map(line)).toEqual(committed.map(line));
  });

  it('keeps the last few round ends; a room stored without them reports a replaced round superseded', async () => {
    const [ann, alpha, beta] = [caller('Ann', 'user'), caller('Alpha', 'ai_agent'), caller('Beta', 'ai_agent')];
    const { room_id, diff } = await oneNode([ann, alpha, beta], [ann, alpha, beta]);
    const rooms = running!;
    await rooms.execute(room_id, { type: 'post', caller: ann, input: { text_content: 'go' } });
    let last: Awaited<ReturnType<typeof diff>> | undefined;
    for (let i = 0; i < 6; i++) {
      // A person's post keeps the loop guard from tripping (it would end a round with `guard`).
      await rooms.execute(room_id, { type: 'post', caller: ann, input: { text_content: `more ${i}` } });
      await rooms.execute(room_id, { type: 'post', caller: alpha, input: { text_content: `a${i}` } });
      last = await diff({ type: 'post', caller: beta, input: { text_content: `b${i}` } });
      expect(last.rebuilt.filter((e) => e.event === 'round_end').map((e) => e.data.reason)).toEqual(['completed']);
    }
    const ends = last!.after.recent_round_ends!;
    expect(ends).toHaveLength(RECENT_ROUND_ENDS);
    expect(ends.map((e) => e.round_id)).toEqual(last!.after.history_rounds.slice(-RECENT_ROUND_ENDS));
    // The same commit as a room stored before the list existed would give it.
    const { recent_round_ends: _, ...old } = last!.after;
    const follow = old.current_round!;
    if (follow.completed) throw new Error('the follow-up round runs');
    const before: RoomRecord = { ...old, current_round: { ...follow, round_id: ends.at(-1)!.round_id } };
    expect(changeEvents(before, old, [], TURN_MS).events.filter((e) => e.event === 'round_end').map((e) => e.data.reason)).toEqual(['superseded']);
    expect(changeEvents(before, last!.after, [], TURN_MS).events.filter((e) => e.event === 'round_end').map((e) => e.data.reason)).toEqual(['completed']);
  });

  it('a room stored without recent_round_ends loads and runs; its first round end starts the list', async () => {
    const [ann, alpha, beta] = [caller('Ann', 'user'), caller('Alpha', 'ai_agent'), caller('Beta', 'ai_agent')];
    const { room_id, store, diff } = await oneNode([ann, alpha, beta], [ann, alpha, beta]);
    await running!.execute(room_id, { type: 'post', caller: ann, input: { text_content: 'go' } });
    await running!.execute(room_id, { type: 'post', caller: alpha, input: { text_content: 'a' } });
    const stored = (await store.loadRoom(room_id))!;
    expect(stored.room.recent_round_ends).toBeUndefined();
    const { rebuilt, after } = await diff({ type: 'post', caller: beta, input: { text_content: 'b' } });
    expect(rebuilt.filter((e) => e.event === 'round_end').map((e) => e.data.reason)).toEqual(['completed']);
    expect(after.recent_round_ends).toHaveLength(1);
    // Not shown to clients.
    expect(presentRoom(after)).not.toHaveProperty('recent_round_ends');
  });
});
