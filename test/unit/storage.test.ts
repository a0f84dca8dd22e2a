// FileStore, what is particular to files (the Store semantics are in store-contract.ts): the
// layout on disk, snapshot coalescing, log lines, descriptors, and "visible only once durable".
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { createStore, FileStore } from '../../src/storage/index.js';
import { defaultFsOps } from '../../src/storage/fs-ops.js';
import type { Message } from '../../src/types.js';
import { heldFsyncOps, makeAgent, makeMessage, makeRoom, makeUser, tempDir } from './storage-helpers.js';
import { storeOpener } from '../helpers/store.js';

let dir: string;
let cleanup: () => Promise<void>;
const open: FileStore[] = [];

// Journal-only: the snapshots follow in the background (tests of small, synchronous snapshots set it).
const openStore = storeOpener({ dataDir: () => dir, track: (s) => open.push(s) });

async function reopen(store: FileStore): Promise<FileStore> {
  await store.close();
  return openStore();
}

const readJson = async <T>(file: string): Promise<T> => JSON.parse(await readFile(join(dir, file), 'utf8')) as T;

/** Creates a room and commits messages 1..n; returns the version. */
async function roomWith(store: FileStore, roomId: string, n: number): Promise<number> {
  const v = await store.createRoom(makeRoom(roomId));
  if (n === 0) return v;
  return store.commitRoom(roomId, { messages: Array.from({ length: n }, (_, i) => makeMessage(roomId, i + 1)), expectedVersion: v });
}

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close().catch(() => undefined)));
  await cleanup();
});

describe('open', () => {
  it('creates the complete layout at first start, snapshots as [] (SPEC §5); createStore returns a FileStore', async () => {
    const store = createStore(join(dir, 'nested', 'data'), silentLogger);
    expect(store).toBeInstanceOf(FileStore);
    await store.open();
    open.push(store as FileStore);
    const data = join(dir, 'nested', 'data');
    expect((await readdir(data)).sort()).toEqual([
      'agents.json',
      'exports',
      'indexes',
      'journal',
      'room_messages',
      'rooms.json',
      'server.lock',
      'uploads',
      'users.json',
    ]);
    for (const f of ['agents.json', 'users.json', 'rooms.json']) {
      expect(JSON.parse(await readFile(join(data, f), 'utf8'))).toEqual([]);
    }
  });

  it('ignores and removes a leftover .tmp snapshot', async () => {
    const store = await openStore();
    await store.createRoom(makeRoom('r1'));
    await store.close();
    await writeFile(join(dir, 'rooms.json.tmp'), '[{"room_id":"half-writ');
    const again = await openStore();
    expect(await again.listRoomIds()).toEqual(['r1']);
    await expect(stat(join(dir, 'rooms.json.tmp'))).rejects.toThrow(/ENOENT/);
  });

  it('close waits for commits in flight, and they survive a reopen', async () => {
    const store = await openStore();
    const versions = await Promise.all(['r1', 'r2', 'r3'].map((r) => store.createRoom(makeRoom(r))));
    const pending = ['r1', 'r2', 'r3'].map((r, i) =>
      store.commitRoom(r, { room: makeRoom(r, { room_description: 'x' }), messages: [makeMessage(r, 1)], expectedVersion: versions[i]! }),
    );
    await store.close();
    await Promise.all(pending); // all settled successfully before close finished
    const again = await openStore();
    for (const r of ['r1', 'r2', 'r3']) expect(await again.loadRoom(r)).toMatchObject({ lastSeq: 1, room: { room_description: 'x' } });
  });

  it('refuses writes before open and after close; close releases the lock', async () => {
    const store = new FileStore({ dataDir: dir, logger: silentLogger });
    await expect(store.createRoom(makeRoom('r1'))).rejects.toThrow(/not open/);
    await store.open();
    await store.close();
    await expect(store.commitRoom('r1', { messages: [], expectedVersion: 1 })).rejects.toThrow(/not open/);
    await expect(store.putParticipant({ kind: 'agent', record: makeAgent('a1') }, 'a')).rejects.toThrow(/not open/);
    await expect(stat(join(dir, 'server.lock'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses a room id that cannot name a log file', async () => {
    const store = await openStore();
    await expect(store.createRoom(makeRoom('../etc'))).rejects.toThrow(/cannot name a log file/);
    await expect(store.createRoom(makeRoom('.hidden'))).rejects.toThrow(/cannot name a log file/);
  });
});

describe('state journal and snapshots', () => {
  const journalFiles = async () => (await readdir(join(dir, 'journal'))).sort();
  const journalLines = async () => {
    const lines: string[] = [];
    for (const f of await journalFiles()) lines.push(...(await readFile(join(dir, 'journal', f), 'utf8')).split('\n').filter(Boolean));
    return lines.map((l) => JSON.parse(l) as { t: string; r: { room_id?: string } });
  };

  it('journals each change as one line, durable when the call resolves; snapshots are compacted later', async () => {
    const store = await openStore();
    const agent = makeAgent('a1', { rooms: ['kept-as-is'] });
    const user = makeUser('u1', { password_hash: 'scrypt$x' });
    await store.putParticipant({ kind: 'agent', record: agent }, 'agent-a1');
    await store.putParticipant({ kind: 'user', record: user }, 'user-u1');
    await store.createRoom(makeRoom('r1', { room_name: 'First' }));
    expect(await journalLines()).toEqual([
      { t: 'agent', r: agent },
      { t: 'user', r: user },
      { t: 'room', r: makeRoom('r1', { room_name: 'First' }) },
    ]);
    expect(await readJson('rooms.json')).toEqual([]); // not rewritten per change

    await store.compact();
    expect(await readJson('agents.json')).toEqual([agent]); // today's record shapes
    expect(await readJson('users.json')).toEqual([user]);
    expect(await readJson('rooms.json')).toEqual([makeRoom('r1', { room_name: 'First' })]);
    expect(await journalLines()).toEqual([]);
    const again = await reopen(store);
    expect((await again.getParticipant('a1'))?.record).toEqual(agent);
    expect((await again.loadRoom('r1'))?.room.room_name).toBe('First');
  });

  it('costs one journal line per change, whatever the number of rooms', async () => {
    const store = await openStore();
    await Promise.all(Array.from({ length: 300 }, (_, i) => store.createRoom(makeRoom(`room-${i}`))));
    await store.compact();
    const before = store.stats();
    const loaded = (await store.loadRoom('room-7'))!;
    const changed = makeRoom('room-7', { system_status: 'paused' });
    await store.commitRoom('room-7', { room: changed, messages: [], expectedVersion: loaded.version });
    const after = store.stats();
    expect(after.snapshotWrites).toBe(before.snapshotWrites);
    expect(after.logWrites - before.logWrites).toBe(1);
    const [file] = await journalFiles();
    expect((await stat(join(dir, 'journal', file!))).size).toBe(JSON.stringify({ t: 'room', r: changed }).length + 1);
  });

  it('group-commits 100 concurrent room creations into a few journal fsyncs', async () => {
    const store = await openStore();
    const before = store.stats();
    await Promise.all(Array.from({ length: 100 }, (_, i) => store.createRoom(makeRoom(`room-${i}`))));
    const fsyncs = store.stats().logFsyncs - before.logFsyncs;
    expect(fsyncs).toBeGreaterThanOrEqual(1);
    expect(fsyncs).toBeLessThanOrEqual(5);
    expect(await journalLines()).toHaveLength(100);
    expect(store.stats().snapshotWrites).toBe(before.snapshotWrites);
  });

  it('compacts on its own once the journal outgrows the threshold, and on close', async () => {
    const store = await openStore({ compactBytes: 4_000 });
    for (let i = 0; i < 40; i++) await store.createRoom(makeRoom(`room-${i}`));
    await expect.poll(() => store.stats().snapshotWrites).toBeGreaterThan(3); // the first-start ones, then compactions
    await store.close();
    expect(await readJson<unknown[]>('rooms.json')).toHaveLength(40);
    expect(await journalLines()).toEqual([]);
  });

  it('replays journal files over the snapshots at start, in order, also after a crash mid-compaction', async () => {
    // A snapshot already holding a change and the journal files that also hold it (a crash
    // after the snapshot rename and before the old journal was deleted), plus a newer file.
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'journal'), { recursive: true });
    const v1 = makeRoom('r1', { room_description: 'v1' });
    const v2 = makeRoom('r1', { room_description: 'v2' });
    const v3 = makeRoom('r1', { room_description: 'v3' });
    const other = makeRoom('r2', { room_description: 'only in the old journal' });
    await writeFile(join(dir, 'rooms.json'), JSON.stringify([v2, other]));
    const line = (r: object) => JSON.stringify({ t: 'room', r }) + '\n';
    await writeFile(join(dir, 'journal', 'state-000001.jsonl'), line(v1) + line(other) + line(v2));
    await writeFile(join(dir, 'journal', 'state-000002.jsonl'), line(v3) + '{"t":"room","r":{"room_id":"r1","tor');
    const store = await openStore();
    expect((await store.loadRoom('r1'))?.room).toEqual(v3);
    expect((await store.loadRoom('r2'))?.room).toEqual(other);
    // The torn tail was cut; the changes are compacted into rooms.json in the background.
    await store.compact();
    expect(await readJson<{ room_description: string }[]>('rooms.json')).toEqual([v3, other]);
    expect(await journalFiles()).toEqual([]);
  });

  it('refuses to start on a corrupt line in the middle of a journal, naming it', async () => {
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'journal'), { recursive: true });
    const line = JSON.stringify({ t: 'room', r: makeRoom('r1') }) + '\n';
    await writeFile(join(dir, 'journal', 'state-000001.jsonl'), line + 'garbage\n' + line);
    await expect(openStore()).rejects.toThrow(/state-000001\.jsonl is corrupt at line 2/);
  });
});

describe('visible only once durable', () => {
  it('serves neither the messages nor the state of a commit before it is fsynced', async () => {
    const gate = heldFsyncOps();
    const store = await openStore({ fsOps: gate.ops });
    const v = await roomWith(store, 'r1', 1);
    gate.hold();
    const m2 = makeMessage('r1', 2, { client_msg_id: 'c2' });
    const commit = store.commitRoom('r1', { room: makeRoom('r1', { room_description: 'new' }), messages: [m2], expectedVersion: v });
    // The log's fsync and the journal's wait together: the room line is written beside the append.
    await expect.poll(() => gate.waiting()).toBe(2);
    expect(await store.loadRoom('r1')).toMatchObject({ lastSeq: 1, version: v, room: { room_description: 'test' } });
    expect(await store.getMessage(m2.message_id)).toBeUndefined();
    expect(await store.findByClientMsgId('r1', m2.sender_id!, 'c2')).toBeUndefined();
    expect(await store.readMessages('r1', { afterSeq: 0, limit: 10 })).toHaveLength(1);
    expect(await store.messageCount()).toBe(1);
    gate.release();
    await commit;
    expect(await store.loadRoom('r1')).toMatchObject({ lastSeq: 2, room: { room_description: 'new' } });
    expect(await store.getMessage(m2.message_id)).toEqual(m2);
  });

  it('does not serve a participant before its snapshot is durable, but holds its name', async () => {
    const gate = heldFsyncOps();
    const store = await openStore({ fsOps: gate.ops });
    gate.hold();
    const put = store.putParticipant({ kind: 'user', record: makeUser('u1', { name: 'Zed' }) }, 'zed');
    await expect.poll(() => gate.waiting()).toBe(1);
    expect(await store.getParticipant('u1')).toBeUndefined();
    expect(await store.findParticipantByNameKey('zed')).toBeUndefined();
    // The name is reserved meanwhile: nobody else can take it.
    await expect(store.putParticipant({ kind: 'agent', record: makeAgent('a1', { name: 'zed' }) }, 'zed')).rejects.toThrow(/taken/);
    gate.release();
    await put;
    expect((await store.findParticipantByNameKey('zed'))?.record).toMatchObject({ user_id: 'u1' });
  });
});

describe('message logs', () => {
  it('writes one human-readable JSON line per message, new versions appended, never rewritten', async () => {
    const store = await openStore();
    const v = await store.createRoom(makeRoom('r1'));
    const m1 = makeMessage('r1', 1);
    const m2 = makeMessage('r1', 2);
    const v2 = await store.commitRoom('r1', { messages: [m1, m2], expectedVersion: v });
    const edited: Message = { ...m1, text_content: 'edited' };
    await store.commitRoom('r1', { messages: [edited], expectedVersion: v2 });
    expect(await readFile(join(dir, 'room_messages', 'r1.jsonl'), 'utf8')).toBe(
      [m1, m2, edited].map((m) => JSON.stringify(m) + '\n').join(''),
    );
    const again = await reopen(store);
    expect(await again.readMessages('r1', { afterSeq: 0, limit: 5 })).toEqual([edited, m2]);
  });

  it('commits 5 rooms × 40 concurrently with one log fsync per commit at most, and reloads them', async () => {
    const store = await openStore();
    const rooms = ['r0', 'r1', 'r2', 'r3', 'r4'];
    const versions = new Map<string, number>();
    for (const r of rooms) versions.set(r, await store.createRoom(makeRoom(r)));
    const before = store.stats();
    await Promise.all(
      rooms.map(async (r) => {
        for (let seq = 1; seq <= 40; seq++) {
          versions.set(r, await store.commitRoom(r, { messages: [makeMessage(r, seq)], expectedVersion: versions.get(r)! }));
        }
      }),
    );
    const after = store.stats();
    expect(after.logFsyncs - before.logFsyncs).toBeLessThanOrEqual(200);
    expect(after.dirFsyncs - before.dirFsyncs).toBe(5); // one per new log file
    const again = await reopen(store);
    expect(await again.messageCount()).toBe(200);
    for (const r of rooms) {
      expect((await again.readMessages(r, { afterSeq: 0, limit: 100 })).map((m) => m.seq)).toEqual(
        Array.from({ length: 40 }, (_, i) => i + 1),
      );
    }
  });

  it('caps open log descriptors and reopens closed logs on demand', async () => {
    const store = await openStore({ maxOpenLogs: 3 });
    const versions: number[] = [];
    for (let r = 0; r < 10; r++) versions[r] = await store.createRoom(makeRoom(`r${r}`));
    for (let seq = 1; seq <= 2; seq++) {
      for (let r = 0; r < 10; r++) {
        versions[r] = await store.commitRoom(`r${r}`, { messages: [makeMessage(`r${r}`, seq)], expectedVersion: versions[r]! });
        expect(store.stats().openLogFiles).toBeLessThanOrEqual(3);
      }
    }
    const again = await reopen(store);
    for (let r = 0; r < 10; r++) expect((await again.readMessages(`r${r}`, { afterSeq: 0, limit: 5 })).map((m) => m.seq)).toEqual([1, 2]);
  });

  it('refuses a new message that reuses the id of one stored in the room', async () => {
    const store = await openStore();
    const v = await roomWith(store, 'r1', 2);
    const [m1] = await store.readMessages('r1', { afterSeq: 0, limit: 1 });
    await expect(store.commitRoom('r1', { messages: [{ ...m1!, seq: 3 }], expectedVersion: v })).rejects.toThrow(/stored at seq 1/);
  });
});
