// FileStore: snapshots (durable puts, coalescing, ownership) and message logs (group commit,
// versions, seq order, indexes) — all against real temp directories.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { createStore, FileStore } from '../../src/storage/index.js';
import type { Message } from '../../src/types.js';
import { makeAgent, makeMessage, makeRoom, makeUser, tempDir } from './storage-helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
const open: FileStore[] = [];

async function openStore(): Promise<FileStore> {
  const store = new FileStore({ dataDir: dir, logger: silentLogger });
  await store.open();
  open.push(store);
  return store;
}

async function reopen(store: FileStore): Promise<FileStore> {
  await store.close();
  return openStore();
}

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close().catch(() => undefined)));
  await cleanup();
});

describe('open', () => {
  it('creates the layout, starts empty, and createStore returns a FileStore', async () => {
    const store = createStore(join(dir, 'nested', 'data'), silentLogger);
    expect(store).toBeInstanceOf(FileStore);
    await store.open();
    open.push(store as FileStore);
    const entries = await readdir(join(dir, 'nested', 'data'));
    expect(entries.sort()).toEqual(['exports', 'room_messages', 'server.lock', 'uploads']);
    expect(store.listRooms()).toEqual([]);
    expect(store.messageCount()).toBe(0);
    expect(store.nextSeq('nope')).toBe(1);
    expect(store.roomMessages('nope')).toEqual([]);
  });

  it('ignores and removes a leftover .tmp snapshot', async () => {
    const store = await openStore();
    await store.putRoom(makeRoom('r1'));
    await store.close();
    await writeFile(join(dir, 'rooms.json.tmp'), '[{"room_id":"half-writ');
    const again = await openStore();
    expect(again.listRooms().map((r) => r.room_id)).toEqual(['r1']);
    await expect(stat(join(dir, 'rooms.json.tmp'))).rejects.toThrow(/ENOENT/);
  });

  it('close waits for pending appends and puts, and they survive a reopen', async () => {
    const store = await openStore();
    const pending: Promise<void>[] = [];
    for (let i = 1; i <= 50; i++) pending.push(store.appendMessages('r1', [makeMessage('r1', i)]));
    pending.push(store.putRoom(makeRoom('r1')));
    await store.close();
    await Promise.all(pending); // all settled successfully before close finished
    const again = await openStore();
    expect(again.roomMessages('r1')).toHaveLength(50);
    expect(again.getRoom('r1')).toBeDefined();
  });

  it('refuses writes before open and after close; close is idempotent', async () => {
    const store = new FileStore({ dataDir: dir, logger: silentLogger });
    await expect(store.putRoom(makeRoom('r1'))).rejects.toThrow(/not open/);
    await store.open();
    await store.close();
    await store.close();
    await expect(store.appendMessages('r1', [makeMessage('r1', 1)])).rejects.toThrow(/not open/);
    await expect(stat(join(dir, 'server.lock'))).rejects.toThrow(/ENOENT/);
  });
});

describe('snapshots', () => {
  it('round-trips agents, users and rooms through a reopen', async () => {
    const store = await openStore();
    await Promise.all([
      store.putAgent(makeAgent('a1')),
      store.putUser(makeUser('u1', { password_hash: 'scrypt$x' })),
      store.putRoom(makeRoom('r1', { members: [] })),
    ]);
    await store.putAgent(makeAgent('a2', { status: 'online' }));
    const again = await reopen(store);
    expect(again.listAgents().map((a) => a.agent_id)).toEqual(['a1', 'a2']);
    expect(again.getAgent('a2')).toEqual(makeAgent('a2', { status: 'online' }));
    expect(again.getUser('u1')?.password_hash).toBe('scrypt$x');
    expect(again.getRoom('r1')).toEqual(makeRoom('r1'));
    expect(again.getRoom('missing')).toBeUndefined();
  });

  it('has valid JSON with the change on disk as soon as put resolves', async () => {
    const store = await openStore();
    await store.putRoom(makeRoom('r1', { room_name: 'First' }));
    const onDisk = JSON.parse(await readFile(join(dir, 'rooms.json'), 'utf8')) as unknown[];
    expect(onDisk).toEqual([makeRoom('r1', { room_name: 'First' })]);
  });

  it('writes the latest state of a record mutated and put again (records are owned)', async () => {
    const store = await openStore();
    await store.putRoom(makeRoom('r1'));
    const room = store.getRoom('r1')!;
    room.system_status = 'paused';
    room.processed_through_seq = 7;
    await store.putRoom(room);
    expect(store.getRoom('r1')).toBe(room);
    const onDisk = JSON.parse(await readFile(join(dir, 'rooms.json'), 'utf8')) as Array<{ system_status: string; processed_through_seq: number }>;
    expect(onDisk[0]).toMatchObject({ system_status: 'paused', processed_through_seq: 7 });
  });

  it('coalesces 100 concurrent putRoom calls into a few writes', async () => {
    const store = await openStore();
    const before = store.stats().snapshotWrites;
    await Promise.all(Array.from({ length: 100 }, (_, i) => store.putRoom(makeRoom(`room-${i}`))));
    const writes = store.stats().snapshotWrites - before;
    expect(writes).toBeGreaterThanOrEqual(1);
    expect(writes).toBeLessThanOrEqual(5);
    const onDisk = JSON.parse(await readFile(join(dir, 'rooms.json'), 'utf8')) as Array<{ room_id: string }>;
    expect(onDisk).toHaveLength(100);
  });

  it('gives callers arriving during a write a follow-up write that includes them', async () => {
    const store = await openStore();
    const first = store.putRoom(makeRoom('r1'));
    await new Promise((r) => setImmediate(r)); // the first write is now in flight
    const late = Array.from({ length: 20 }, (_, i) => store.putRoom(makeRoom(`late-${i}`)));
    await first;
    await Promise.all(late);
    const onDisk = JSON.parse(await readFile(join(dir, 'rooms.json'), 'utf8')) as unknown[];
    expect(onDisk).toHaveLength(21);
    expect(store.stats().snapshotWrites).toBeLessThanOrEqual(3);
  });

  it('writes touchRoom changes without anyone waiting, and on close at the latest', async () => {
    const store = await openStore();
    await store.putRoom(makeRoom('r1'));
    const room = store.getRoom('r1')!;
    room.members.push({
      name: 'bot', role: 'ai_agent', introduce: '', status: 'online', last_active: '2026-01-01T00:00:00.000Z',
      is_host: false, skip_list: [], language_preference: 'en', timezone_preference: 'UTC', participant_id: 'a1',
      joined_at: '2026-01-01T00:00:00.000Z',
    });
    store.touchRoom(room);
    const again = await reopen(store);
    expect(again.getRoom('r1')!.members.map((m) => m.name)).toEqual(['bot']);
  });
});

describe('message logs', () => {
  function appendOne(store: FileStore, roomId: string, over: Partial<Message> = {}): { msg: Message; done: Promise<void> } {
    const msg = makeMessage(roomId, store.nextSeq(roomId), over);
    return { msg, done: store.appendMessages(roomId, [msg]) };
  }

  it('group-commits 500 concurrent appends to 5 rooms and reloads them in seq order', async () => {
    const store = await openStore();
    const rooms = ['r0', 'r1', 'r2', 'r3', 'r4'];
    const before = store.stats();
    const sent = Array.from({ length: 500 }, (_, i) => appendOne(store, rooms[i % 5]!));
    // Indexes reflect the appends before any fsync.
    expect(store.messageCount()).toBe(500);
    expect(store.nextSeq('r3')).toBe(101);
    await Promise.all(sent.map((s) => s.done));
    const after = store.stats();
    expect(after.logFsyncs - before.logFsyncs).toBeLessThan(50);
    expect(after.logFsyncs - before.logFsyncs).toBeGreaterThanOrEqual(5);
    expect(after.dirFsyncs - before.dirFsyncs).toBe(5); // one per new log file

    const again = await reopen(store);
    expect(again.messageCount()).toBe(500);
    for (const room of rooms) {
      const list = again.roomMessages(room);
      expect(list.map((m) => m.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      expect(again.nextSeq(room)).toBe(101);
    }
    for (const s of sent) expect(again.getMessage(s.msg.message_id)).toEqual(s.msg);
  });

  it('lets the latest version of a message_id win, in its original position', async () => {
    const store = await openStore();
    const a = appendOne(store, 'r1');
    const b = appendOne(store, 'r1');
    const c = appendOne(store, 'r1');
    await Promise.all([a.done, b.done, c.done]);
    const edited = { ...b.msg, text_content: 'edited', edited_at: new Date().toISOString() };
    await store.appendMessages('r1', [edited]);
    const retracted = { ...edited, text_content: '', deleted: true };
    await store.appendMessages('r1', [retracted]);

    for (const s of [store, await reopen(store)]) {
      expect(s.getMessage(b.msg.message_id)).toEqual(retracted);
      expect(s.roomMessages('r1').map((m) => m.message_id)).toEqual([a.msg.message_id, b.msg.message_id, c.msg.message_id]);
      expect(s.roomMessages('r1')[1]).toEqual(retracted);
      expect(s.messageCount()).toBe(3);
      expect(s.nextSeq('r1')).toBe(4);
    }
    const lines = (await readFile(join(dir, 'room_messages', 'r1.jsonl'), 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(5); // log lines are never rewritten
  });

  it('appends several messages in one call and keeps seqs across the call', async () => {
    const store = await openStore();
    const batch = [makeMessage('r1', 1), makeMessage('r1', 2), makeMessage('r1', 3)];
    await store.appendMessages('r1', batch);
    expect(store.roomMessages('r1')).toEqual(batch);
    expect(store.nextSeq('r1')).toBe(4);
    await store.appendMessages('r1', []);
  });

  it('rejects appends that break the room invariants, changing nothing', async () => {
    const store = await openStore();
    const first = appendOne(store, 'r1');
    await first.done;
    await expect(store.appendMessages('r1', [makeMessage('r1', 1)])).rejects.toThrow(/seq 1/);
    await expect(store.appendMessages('r1', [makeMessage('r2', 2)])).rejects.toThrow(/room_id r2/);
    await expect(store.appendMessages('r1', [{ ...first.msg, seq: 9 }])).rejects.toThrow(/keep seq 1/);
    await expect(store.appendMessages('../etc', [makeMessage('../etc', 1)])).rejects.toThrow(/cannot name a log file/);
    // A bad message in the middle of a batch leaves the good ones before it out too.
    await expect(store.appendMessages('r1', [makeMessage('r1', 2), makeMessage('r1', 2)])).rejects.toThrow();
    expect(store.messageCount()).toBe(1);
    expect(store.nextSeq('r1')).toBe(2);
  });

  it('writes one human-readable JSON line per message', async () => {
    const store = await openStore();
    const m = makeMessage('r1', 1);
    await store.appendMessages('r1', [m]);
    expect(await readFile(join(dir, 'room_messages', 'r1.jsonl'), 'utf8')).toBe(JSON.stringify(m) + '\n');
  });

  it('caps open log descriptors and reopens closed logs on demand', async () => {
    const store = new FileStore({ dataDir: dir, logger: silentLogger, maxOpenLogs: 3 });
    await store.open();
    open.push(store);
    for (let round = 0; round < 2; round++) {
      for (let r = 0; r < 10; r++) {
        await store.appendMessages(`r${r}`, [makeMessage(`r${r}`, store.nextSeq(`r${r}`))]);
        expect(store.stats().openLogFiles).toBeLessThanOrEqual(3);
      }
    }
    const again = await reopen(store);
    for (let r = 0; r < 10; r++) expect(again.roomMessages(`r${r}`).map((m) => m.seq)).toEqual([1, 2]);
  });
});
