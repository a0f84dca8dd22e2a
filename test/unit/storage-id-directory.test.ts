// get_full_message names a message by id alone: the file store finds its room through the id
// directory (id-directory.ts), filled by the warm-up from each room's id table and by every
// commit, and keeps only the indexes of rooms in use, within INDEX_CACHE_BYTES.
import { describe, expect, it } from 'vitest';
import { open as openFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../src/logger.js';
import type { FileStoreOptions } from '../../src/storage/file-store.js';
import { MessageIdDirectory } from '../../src/storage/id-directory.js';
import { hash32 } from '../../src/storage/seq-table.js';
import type { Message } from '../../src/types.js';
import { fileStoresPerTest, makeMessage, makeRoom, memoryLogger } from './storage-helpers.js';

const scratch = fileStoresPerTest();
const ROOMS = 24;
const PER_ROOM = 40;

const roomName = (i: number) => `idr-${String(i).padStart(2, '0')}`;

async function opened(options: Partial<FileStoreOptions> = {}, logger?: Logger) {
  const s = scratch.store(logger, { compactEveryMs: 0, ...options });
  await s.open();
  return s;
}

/** ROOMS rooms of PER_ROOM messages (every other with a client id), then a clean shutdown. */
async function seed(): Promise<Map<string, Message[]>> {
  const s = await opened();
  const rooms = new Map<string, Message[]>();
  for (let r = 0; r < ROOMS; r++) {
    const roomId = roomName(r);
    const messages = Array.from({ length: PER_ROOM }, (_, i) => makeMessage(roomId, i + 1, { client_msg_id: i % 2 ? `c${i + 1}` : undefined, text_content: `room ${r} line ${i + 1}` }));
    await s.createRoom(makeRoom(roomId), messages);
    rooms.set(roomId, messages);
  }
  await s.close();
  return rooms;
}

const everyMessage = (rooms: Map<string, Message[]>) => [...rooms.values()].flat();

async function warmedUp(options: Partial<FileStoreOptions> = {}, logger?: Logger, rooms = ROOMS) {
  const s = await opened({ warmIndexes: true, ...options }, logger);
  await expect.poll(() => s.stats().idDirectoryRooms).toBe(rooms);
  return s;
}

describe('the message id directory', () => {
  it('names every room that added a hash, each once, through buffer flushes and run merges', () => {
    const dir = new MessageIdDirectory();
    const expected = new Map<number, Set<string>>();
    const put = (hash: number, roomId: string) => {
      const h = hash >>> 0;
      if (!expected.has(h)) expected.set(h, new Set());
      expected.get(h)!.add(roomId);
    };
    // Whole id tables (sparse hash slots, as SeqTable keeps them) and single adds, interleaved.
    for (let r = 0; r < 300; r++) {
      const slots = new Int32Array(256);
      for (let i = 0; i < 90; i++) {
        const h = hash32(`room ${r} id ${i}`);
        slots[(i * 7) % 256] = h;
        put(h, `r${r}`);
      }
      dir.addRoom(`r${r}`, slots);
      for (let i = 0; i < 40; i++) {
        const h = i === 0 ? 0x8000_0001 : hash32(`room ${r} new ${i}`); // one hash shared by every room
        dir.add(h, `r${r}`);
        put(h, `r${r}`);
      }
    }
    dir.add(0x8000_0001, 'r0'); // a duplicate pair: still named once
    expect(dir.size).toBe(300 * 130 + 1);
    for (const [h, rooms] of expected) expect(new Set(dir.roomsOf(h))).toEqual(rooms);
    expect(dir.roomsOf(0x8000_0001)).toHaveLength(300);
    expect(dir.roomsOf(hash32('never added'))).toEqual([]);
    // 4096-pair buffer + 6 bytes a pair (16-bit room ordinals) once merged.
    expect(dir.bytes).toBeLessThanOrEqual(32_768 * 8 + dir.size * 6);
  });

  it('reads a big id table a slice at a time (yielding) into the same answers', async () => {
    const slots = new Int32Array(300_000);
    for (let i = 0; i < 150_000; i++) slots[(i * 2 + 1) % slots.length] = hash32(`big ${i}`);
    const atOnce = new MessageIdDirectory();
    const sliced = new MessageIdDirectory();
    atOnce.addRoom('big', slots);
    await sliced.addRoomYielding('big', slots);
    expect(sliced.size).toBe(150_000);
    expect(sliced.bytes).toBe(atOnce.bytes);
    for (let i = 0; i < 150_000; i += 997) expect(sliced.roomsOf(hash32(`big ${i}`))).toEqual(['big']);
    expect(sliced.roomsOf(hash32('big -1'))).toEqual([]);
  });

  it('sorts its buffer of recent pairs with or without packing hash and room into one number', () => {
    for (const dir of [new MessageIdDirectory(), new MessageIdDirectory(4)]) {
      for (let i = 0; i < 100_000; i++) dir.add(i % 1000 === 0 ? 0xffff_ffff : hash32(`m${i}`), `room-${i % 9}`);
      for (let i = 1; i < 100_000; i += 1013) if (i % 1000 !== 0) expect(dir.roomsOf(hash32(`m${i}`))).toContain(`room-${i % 9}`);
      expect(new Set(dir.roomsOf(0xffff_ffff))).toEqual(new Set(Array.from({ length: 9 }, (_, r) => `room-${r}`)));
    }
  });

  it('merges its runs in the background, a bounded slice of work a turn, answering the same before and after', async () => {
    const dir = new MessageIdDirectory();
    for (let i = 0; i < 300_000; i++) dir.add(hash32(`m${i}`), `room-${i % 7}`);
    // Nine buffer flushes of 64 shards each, none merged yet: adding never waits for a merge.
    const unmerged = dir.runCount;
    expect(unmerged).toBeGreaterThanOrEqual(9 * 64);
    const check = () => {
      for (let i = 0; i < 300_000; i += 1009) expect(dir.roomsOf(hash32(`m${i}`))).toContain(`room-${i % 7}`);
    };
    check();
    expect(dir.mergeFor(0)).toBe(false); // one merge, and the budget is spent
    expect(dir.runCount).toBe(unmerged - 1);
    await expect.poll(() => dir.runCount).toBeLessThanOrEqual(2 * 64);
    expect(dir.mergeFor(0)).toBe(true);
    check();
  });

  it('switches to 32-bit room ordinals past 65,536 rooms', () => {
    const dir = new MessageIdDirectory();
    for (let r = 0; r < 70_000; r++) dir.add(hash32(`m${r}`), `room-${r}`);
    for (const r of [0, 65_535, 65_536, 69_999]) expect(dir.roomsOf(hash32(`m${r}`))).toContain(`room-${r}`);
  });
});

describe('getMessage through the id directory', () => {
  it('finds every message of many rooms after a restart, with the warm-up done (keeping no index) and without it', async () => {
    const rooms = await seed();
    const warm = await warmedUp();
    expect(warm.stats().indexBytes).toBe(0); // the warm-up dropped every index it loaded
    expect(warm.stats().idDirectoryBytes).toBeGreaterThan(0);
    for (const m of everyMessage(rooms)) expect(await warm.getMessage(m.message_id)).toEqual(m);
    expect(await warm.getMessage('no-such-id')).toBeUndefined();
    await warm.close();

    const cold = await opened({ warmIndexes: false });
    expect(cold.stats().idDirectoryRooms).toBe(0);
    const all = everyMessage(rooms);
    expect(await cold.getMessage(all[all.length - 1]!.message_id)).toEqual(all[all.length - 1]); // waits for every room's ids
    expect(cold.stats().idDirectoryRooms).toBe(ROOMS);
    for (const m of all) expect(await cold.getMessage(m.message_id)).toEqual(m);
    expect(await cold.getMessage('no-such-id')).toBeUndefined();
  });

  it('follows commits: edits (same id), new messages, rooms created since start; across restarts, with and without persisted indexes', async () => {
    const rooms = await seed();
    const s = await warmedUp({ indexCacheBytes: 0 });
    const [r0, r1] = [roomName(0), roomName(1)];
    const edited = { ...rooms.get(r0)![5]!, text_content: 'edited' };
    await s.commitRoom(r0, { messages: [edited], expectedVersion: 1 });
    rooms.get(r0)![5] = edited;
    const added = makeMessage(r1, PER_ROOM + 1);
    await s.commitRoom(r1, { messages: [added], expectedVersion: 1 });
    rooms.get(r1)!.push(added);
    const fresh = Array.from({ length: 5 }, (_, i) => makeMessage('idr-new', i + 1));
    await s.createRoom(makeRoom('idr-new'), fresh);
    rooms.set('idr-new', fresh);
    const check = async (store: typeof s) => {
      for (const m of everyMessage(rooms)) expect(await store.getMessage(m.message_id)).toEqual(m);
    };
    await check(s);
    await s.close();

    const again = await warmedUp({}, undefined, ROOMS + 1);
    await check(again);
    await again.close();

    // No manifest, no .idx: every log scanned at start (its ids learned then).
    for (const f of await readdir(join(scratch.dir, 'indexes'))) {
      if (f.endsWith('.idx') || f === 'indexes.json') await rm(join(scratch.dir, 'indexes', f));
    }
    const scanned = await opened({ warmIndexes: false });
    expect(scanned.stats().idDirectoryRooms).toBe(ROOMS + 1);
    await check(scanned);
  });

  it('with a small index budget, indexes are dropped and read again: every read path answers the same, and the loaded bytes stay under the budget', async () => {
    const rooms = await seed();
    const budget = 8 * 1024; // a room of 40 messages holds about 2–3 KB of index
    // What every room's index takes when all are loaded (no budget to speak of).
    const unbounded = await opened();
    for (const [roomId, messages] of rooms) await unbounded.findByClientMsgId(roomId, messages[3]!.sender_id!, 'c4');
    const allLoaded = unbounded.stats().indexBytes;
    expect(allLoaded).toBeGreaterThan(budget * 4);
    await unbounded.close();
    const { logger, lines } = memoryLogger();
    const s = await warmedUp({ indexCacheBytes: budget, cacheMessages: 0 }, logger);
    let peak = 0;
    const within = () => {
      peak = Math.max(peak, s.stats().indexBytes);
      expect(s.stats().indexBytes).toBeLessThanOrEqual(budget);
    };
    for (let pass = 0; pass < 2; pass++) {
      for (const [roomId, messages] of rooms) {
        expect(await s.readMessages(roomId, { afterSeq: 0, limit: 100 })).toEqual(messages);
        within();
        expect(await s.searchMessages(roomId, 'line 7', 10)).toEqual([messages[6]]);
        within();
        expect(await s.findByClientMsgId(roomId, messages[3]!.sender_id!, 'c4')).toEqual(messages[3]);
        within();
        expect(await s.lastPersonSeq(roomId)).toBe(PER_ROOM);
        expect(await s.lastSeqBySender(roomId, messages[0]!.sender_id!)).toBe(PER_ROOM);
        expect(await s.getMessage(messages[PER_ROOM - 1 - pass]!.message_id)).toEqual(messages[PER_ROOM - 1 - pass]);
        within();
      }
    }
    expect(peak).toBeGreaterThan(budget / 2); // several rooms loaded at once, never all
    expect(lines.some((l) => l.msg === 'persisted message index not used; scanning the log')).toBe(false);

    // Rooms written since start keep their index (no valid .idx for them until shutdown).
    const r2 = roomName(2);
    const more = makeMessage(r2, PER_ROOM + 1);
    await s.commitRoom(r2, { messages: [more], expectedVersion: 1 });
    for (const roomId of rooms.keys()) await s.readMessages(roomId, { limit: 1 });
    expect(await s.readMessages(r2, { afterSeq: PER_ROOM, limit: 5 })).toEqual([more]);
    expect(await s.getMessage(more.message_id)).toEqual(more);
    await s.close();

    // The manifest still vouches for every room (dropped ones included): the next start is lazy.
    const { logger: l2, lines: lines2 } = memoryLogger();
    const next = await opened({ indexCacheBytes: budget }, l2);
    expect(lines2.find((l) => l.msg === 'storage opened')).toMatchObject({ indexes_loaded_on_use: ROOMS, persisted_indexes_used: 0 });
    expect(await next.getMessage(more.message_id)).toEqual(more);
    expect(await next.readMessages(r2, { afterSeq: PER_ROOM - 1, limit: 5 })).toEqual([rooms.get(r2)![PER_ROOM - 1], more]);
  });

  it('the warm-up reads a room whose index header is long (hundreds of senders) and one whose .idx tables are damaged', async () => {
    const s = await opened();
    const senders = Array.from({ length: 300 }, (_, i) => makeMessage('idr-wide', i + 1, { sender_id: `agent-with-a-long-identifier-${i}` }));
    await s.createRoom(makeRoom('idr-wide'), senders);
    const plain = Array.from({ length: 50 }, (_, i) => makeMessage('idr-plain', i + 1));
    await s.createRoom(makeRoom('idr-plain'), plain);
    await s.close();
    const idx = join(scratch.dir, 'indexes', 'idr-plain.idx');
    const handle = await openFile(idx, 'r+');
    const { size } = await handle.stat();
    await handle.write(Buffer.from([0xff, 0xfe]), 0, 2, size - 6); // in the tables
    await handle.close();
    const { logger, lines } = memoryLogger();
    const warm = await warmedUp({}, logger, 2);
    for (const m of [...senders, ...plain]) expect(await warm.getMessage(m.message_id)).toEqual(m);
    expect(lines.some((l) => l.msg === 'persisted message index not used; scanning the log' && l.room_id === 'idr-plain')).toBe(true);
  });

  it('a room damaged after the warm-up dropped its index fails only the lookups of its own messages', async () => {
    const rooms = await seed();
    const { logger, lines } = memoryLogger();
    const s = await warmedUp({}, logger);
    const r0 = roomName(0);
    const r0Messages = rooms.get(r0)!;
    // r0's index file goes away and its second line is no message line any more (in place).
    await rm(join(scratch.dir, 'indexes', `${r0}.idx`));
    const handle = await openFile(join(scratch.dir, 'room_messages', `${r0}.jsonl`), 'r+');
    await handle.write(Buffer.from('{"message_ix"'), 0, 13, Buffer.byteLength(JSON.stringify(r0Messages[0])) + 1);
    await handle.close();

    await expect(s.getMessage(r0Messages[3]!.message_id)).rejects.toThrow(new RegExp(`${r0}\\.jsonl is corrupt at line 2`));
    for (const [roomId, messages] of rooms) if (roomId !== r0) for (const m of messages.slice(0, 5)) expect(await s.getMessage(m.message_id)).toEqual(m);
    // An id in no room: the directory knows every room's ids, so this is a certain "not found".
    expect(await s.getMessage('no-such-id')).toBeUndefined();
    await expect(s.getMessage(r0Messages[9]!.message_id)).rejects.toThrow(/corrupt at line 2/);
    const errors = lines.filter((l) => l.level === 50 && l.msg === "a room's messages cannot be found by id; the other rooms are still searched");
    expect(errors.map((l) => l.room_id)).toEqual([r0]); // logged once, naming the room
  });
});
