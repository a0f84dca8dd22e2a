// get_context reads the newest `limit` messages first and goes back further only when some of
// them are invisible (skip records) or the caller's last message is not reached; exports and
// stats read a whole room a page at a time.
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

/** Rooms over a memory store, and a room of Ann's. */
async function roomOfAnn(store: MemoryStore): Promise<{ ann: Caller; room_id: string }> {
  const clock = new ManualClock();
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
  return { ann, room_id };
}

/**
 * 1,200 messages by someone else; from seq 601 on, two of every three are invisible records
 * (600 + 200 = 800 visible).
 */
async function storeBobsMessages(store: MemoryStore, room_id: string) {
  const messages = Array.from({ length: 1200 }, (_, i) =>
    makeMessage(room_id, i + 1, { sender_id: 'id-bob', sender: 'Bob', visible: i < 600 || i % 3 === 0 }),
  );
  await store.commitRoom(room_id, { messages, expectedVersion: (await store.loadRoom(room_id))!.version });
  return messages;
}

describe('get_context', () => {
  it('returns the newest visible messages after the caller\'s last one, across invisible records', async () => {
    const store = new MemoryStore();
    const { ann, room_id } = await roomOfAnn(store);
    const messages = await storeBobsMessages(store, room_id);
    const reads = new RoomReads(rooms!, store);
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

describe('get_context omitted', () => {
  it('counts the visible unread messages left out without reading them from the store', async () => {
    const store = new MemoryStore();
    const { ann, room_id } = await roomOfAnn(store);
    await storeBobsMessages(store, room_id); // 800 visible
    let read = 0;
    const readMessages = store.readMessages.bind(store);
    store.readMessages = async (id, page) => {
      const got = await readMessages(id, page);
      read += got.length;
      return got;
    };
    const reads = new RoomReads(rooms!, store);

    const newest50 = await reads.context(ann, room_id, 50);
    expect(newest50.messages).toHaveLength(50);
    expect(newest50.omitted).toBe(750);
    // Only the pages holding the 50 returned were read, not the room down to its first message.
    expect(read).toBeLessThan(1200);
    expect((await reads.context(ann, room_id, 200)).omitted).toBe(600);

    // Posted at seq 1,201: one message after it, nothing left out.
    await store.commitRoom(room_id, {
      messages: [makeMessage(room_id, 1201, { sender_id: ann.id, sender: 'Ann' }), makeMessage(room_id, 1202, { sender_id: 'id-bob', sender: 'Bob' })],
      expectedVersion: (await store.loadRoom(room_id))!.version,
    });
    const after = await reads.context(ann, room_id, 50);
    expect(after.messages.map((m) => m.seq)).toEqual([1202]);
    expect(after.omitted).toBe(0);
  });
});

describe('reading a whole room (exports, stats)', () => {
  it('reads the store a page at a time as the consumer asks, never the whole room at once', async () => {
    const store = new MemoryStore();
    const { room_id } = await roomOfAnn(store);
    const messages = Array.from({ length: 1234 }, (_, i) => makeMessage(room_id, i + 1, { sender_id: 'id-bob', sender: 'Bob' }));
    await store.commitRoom(room_id, { messages, expectedVersion: (await store.loadRoom(room_id))!.version });
    const pages: number[] = [];
    const read = store.readMessages.bind(store);
    store.readMessages = async (id, page) => {
      pages.push(page.afterSeq ?? 0);
      return read(id, page);
    };
    const reads = new RoomReads(rooms!, store);
    const seqs: number[] = [];
    for await (const m of reads.messagesOf(room_id)) {
      seqs.push(m.seq);
      // The next page is read only once this one has been consumed.
      if (m.seq === 1) expect(pages).toEqual([0]);
      if (m.seq === 500) expect(pages).toEqual([0]);
      if (m.seq === 501) expect(pages).toEqual([0, 500]);
    }
    expect(seqs).toEqual(messages.map((m) => m.seq));
    expect(pages).toEqual([0, 500, 1000]);
  });
});
