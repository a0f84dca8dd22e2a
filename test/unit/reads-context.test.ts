// get_context reads the newest `limit` messages first and goes back further only when some of
// them are invisible (skip records) or the caller's last message is not reached.
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBus } from '../../src/events/bus.js';
import { Presence } from '../../src/identity/presence.js';
import { silentLogger } from '../../src/logger.js';
import { RoomReads } from '../../src/runtime/reads.js';
import { Rooms } from '../../src/runtime/rooms.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import type { Caller } from '../../src/types.js';
import { ManualClock } from '../helpers/clock.js';
import { makeMessage } from './storage-helpers.js';

let rooms: Rooms | undefined;
afterEach(() => rooms?.stop());

describe('get_context', () => {
  it('returns the newest visible messages after the caller\'s last one, across invisible records', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore();
    rooms = new Rooms({
      store,
      bus: new InProcessBus(),
      presence: new Presence(clock.now, clock),
      logger: silentLogger,
      now: clock.now,
      timers: clock,
      turnTimeoutMs: 60_000,
      maxMessageChars: 32_000,
      defaults: { language: 'zh-CN', timezone: 'Asia/Shanghai' },
    });
    const ann: Caller = { kind: 'user', id: 'id-ann', name: 'Ann', role: 'user', tokenHash: 'h' };
    const at = new Date(clock.now()).toISOString();
    const { room_id } = await rooms.create(ann, { room_name: 'Context' }, {
      name: 'Ann', role: 'user', introduce: '', status: 'online', last_active: at, is_host: true, skip_list: [],
      language_preference: 'zh-CN', timezone_preference: 'Asia/Shanghai', participant_id: ann.id, joined_at: at,
    });
    // 1,200 messages by someone else; from seq 601 on, two of every three are invisible records.
    const messages = Array.from({ length: 1200 }, (_, i) =>
      makeMessage(room_id, i + 1, { sender_id: 'id-bob', sender: 'Bob', visible: i < 600 || i % 3 === 0 }),
    );
    await store.commitRoom(room_id, { messages, expectedVersion: (await store.loadRoom(room_id))!.version });
    const reads = new RoomReads(rooms, store);
    const visibleSeqs = messages.filter((m) => m.visible).map((m) => m.seq);

    // Never posted: the newest 50 visible ones (the first page of 50 holds only ~17).
    expect((await reads.context(ann, room_id, 50)).messages.map((m) => m.seq)).toEqual(visibleSeqs.slice(-50));
    // 300 of them: reaches back past seq 601 into the all-visible part.
    expect((await reads.context(ann, room_id, 300)).messages.map((m) => m.seq)).toEqual(visibleSeqs.slice(-300));

    // Posted at seq 1,201: only what came after.
    await store.commitRoom(room_id, {
      messages: [makeMessage(room_id, 1201, { sender_id: ann.id, sender: 'Ann' }), makeMessage(room_id, 1202, { sender_id: 'id-bob', sender: 'Bob' })],
      expectedVersion: (await store.loadRoom(room_id))!.version,
    });
    expect((await reads.context(ann, room_id, 50)).messages.map((m) => m.seq)).toEqual([1202]);
  });
});
