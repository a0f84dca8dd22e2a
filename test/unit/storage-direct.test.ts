// FileStore with small state below syncSnapshotBytes (an option; the default, 0, sends every
// change through the journal): a change is made durable by rewriting the snapshot files it
// touches (state-writer.ts), with no journal line; a room commit's snapshot is renamed into
// place only after its log append is fsync'd.
import { describe, expect, it } from 'vitest';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileStore } from '../../src/storage/file-store.js';
import { defaultFsOps, type FsOps } from '../../src/storage/fs-ops.js';
import type { RoomRecord } from '../../src/types.js';
import { fileStoresPerTest, heldFsyncOps, makeAgent, makeMessage, makeRoom, makeUser, memoryLogger } from './storage-helpers.js';
import { storeOpener } from '../helpers/store.js';

const files = fileStoresPerTest();

const openStore = storeOpener({ dataDir: () => files.dir, small: true, track: files.track });

const roomsOnDisk = async (): Promise<RoomRecord[]> => JSON.parse(await readFile(join(files.dir, 'rooms.json'), 'utf8')) as RoomRecord[];
const journalBytes = async (): Promise<number> => {
  let bytes = 0;
  for (const f of await readdir(join(files.dir, 'journal'))) bytes += (await stat(join(files.dir, 'journal', f))).size;
  return bytes;
};

/**
 * fsOps that can hold the fsync of files whose path matches (heldFsyncOps), or fail one kind of
 * operation on paths that match: the log and the snapshot are told apart by path.
 */
function pathOps() {
  const held = heldFsyncOps();
  let fail: { op: keyof FsOps; path: RegExp } | undefined;
  const check = (op: keyof FsOps, path: string): void => {
    if (fail && fail.op === op && fail.path.test(path)) throw Object.assign(new Error(`injected ${op} failure`), { code: 'EIO' });
  };
  const ops: Partial<FsOps> = {
    open: held.ops.open!,
    write: async (handle, data) => {
      check('write', held.pathOf(handle));
      return defaultFsOps.write(handle, data);
    },
    fsync: async (handle) => {
      await held.wait(handle);
      check('fsync', held.pathOf(handle));
      return defaultFsOps.fsync(handle);
    },
    rename: async (from, to) => {
      check('rename', to);
      return defaultFsOps.rename(from, to);
    },
  };
  return {
    ...held,
    ops,
    fail: (op: keyof FsOps, path: RegExp) => void (fail = { op, path }),
    heal: () => void (fail = undefined),
  };
}

describe('small state: the snapshots are the durable record', () => {
  it('has every acknowledged change in the snapshot files, and writes no journal line', async () => {
    const store = await openStore();
    const v = await store.createRoom(makeRoom('r1'));
    expect((await roomsOnDisk()).map((r) => r.room_id)).toEqual(['r1']);
    await store.commitRoom('r1', {
      room: makeRoom('r1', { room_description: 'after one message' }),
      messages: [makeMessage('r1', 1)],
      expectedVersion: v,
    });
    expect((await roomsOnDisk())[0]!.room_description).toBe('after one message');
    await store.putParticipant({ kind: 'user', record: makeUser('u1', { name: 'Ann' }) }, 'ann');
    expect(JSON.parse(await readFile(join(files.dir, 'users.json'), 'utf8'))).toMatchObject([{ user_id: 'u1' }]);
    expect(await journalBytes()).toBe(0);
  });

  it('renames the room state into place only after the log append is fsync\'d', async () => {
    const io = pathOps();
    const store = await openStore({ fsOps: io.ops });
    const v = await store.createRoom(makeRoom('r1'));
    io.hold(/\.jsonl$/);
    const commit = store.commitRoom('r1', {
      room: makeRoom('r1', { room_description: 'new' }),
      messages: [makeMessage('r1', 1)],
      expectedVersion: v,
    });
    await expect.poll(() => io.waiting()).toBe(1);
    // The snapshot's temp file is written meanwhile (the two writes overlap), but not renamed.
    await expect.poll(() => stat(join(files.dir, 'rooms.json.tmp')).then(() => true, () => false)).toBe(true);
    expect((await roomsOnDisk())[0]!.room_description).toBe('test');
    expect((await store.loadRoom('r1'))!.room.room_description).toBe('test');
    io.release();
    await commit;
    expect((await roomsOnDisk())[0]!.room_description).toBe('new');
    expect(await store.loadRoom('r1')).toMatchObject({ lastSeq: 1, room: { room_description: 'new' } });
  });

  it('drops a commit whose log append failed from the batch; the others of the batch are written', async () => {
    const io = pathOps();
    const store = await openStore({ fsOps: io.ops });
    const v1 = await store.createRoom(makeRoom('r1'));
    const v2 = await store.createRoom(makeRoom('r2'));
    io.fail('write', /r1\.jsonl$/);
    const [bad, good] = await Promise.allSettled([
      store.commitRoom('r1', { room: makeRoom('r1', { room_description: 'lost' }), messages: [makeMessage('r1', 1)], expectedVersion: v1 }),
      store.commitRoom('r2', { room: makeRoom('r2', { room_description: 'kept' }), messages: [makeMessage('r2', 1)], expectedVersion: v2 }),
    ]);
    expect(bad).toMatchObject({ status: 'rejected', reason: { message: 'injected write failure' } });
    expect(good.status).toBe('fulfilled');
    const disk = new Map((await roomsOnDisk()).map((r) => [r.room_id, r.room_description]));
    expect(disk).toEqual(new Map([['r1', 'test'], ['r2', 'kept']]));
    expect(await store.loadRoom('r1')).toMatchObject({ lastSeq: 0, version: v1, room: { room_description: 'test' } });
    io.heal();
    await store.commitRoom('r1', { room: makeRoom('r1', { room_description: 'retried' }), messages: [makeMessage('r1', 1)], expectedVersion: v1 });
    await store.close();
    const again = await openStore();
    expect(await again.loadRoom('r1')).toMatchObject({ lastSeq: 1, room: { room_description: 'retried' } });
    expect(await again.loadRoom('r2')).toMatchObject({ lastSeq: 1, room: { room_description: 'kept' } });
  });

  it.each([
    ['the snapshot write', 'write'],
    ['the snapshot fsync', 'fsync'],
    ['the rename', 'rename'],
  ] as const)('leaves no trace when %s fails: the log is cut back, the retry succeeds', async (_what, op) => {
    const io = pathOps();
    const store = await openStore({ fsOps: io.ops });
    const v = await store.createRoom(makeRoom('r1'));
    const logPath = join(files.dir, 'room_messages', 'r1.jsonl');
    io.fail(op, /rooms\.json(\.tmp)?$/);
    await expect(
      store.commitRoom('r1', { room: makeRoom('r1', { room_description: 'lost' }), messages: [makeMessage('r1', 1)], expectedVersion: v }),
    ).rejects.toThrow(`injected ${op} failure`);
    expect(await store.loadRoom('r1')).toMatchObject({ lastSeq: 0, version: v, room: { room_description: 'test' } });
    expect((await roomsOnDisk())[0]!.room_description).toBe('test');
    expect((await stat(logPath)).size).toBe(0);
    io.heal();
    await store.commitRoom('r1', { room: makeRoom('r1', { room_description: 'ok' }), messages: [makeMessage('r1', 1)], expectedVersion: v });
    expect((await roomsOnDisk())[0]!.room_description).toBe('ok');
  });

  it('group-commits 100 concurrent room creations into a few snapshot writes', async () => {
    const store = await openStore();
    const before = store.stats().snapshotWrites;
    await Promise.all(Array.from({ length: 100 }, (_, i) => store.createRoom(makeRoom(`r${i}`))));
    expect(store.stats().snapshotWrites - before).toBeLessThanOrEqual(5);
    expect(await roomsOnDisk()).toHaveLength(100);
  });

  it('goes to the journal once the snapshots outgrow syncSnapshotBytes, and back after a compaction', async () => {
    const store = await openStore({ syncSnapshotBytes: 2_000 });
    for (let i = 0; i < 8; i++) await store.createRoom(makeRoom(`r${i}`));
    expect(await journalBytes()).toBeGreaterThan(0); // the later rooms went to the journal
    expect((await roomsOnDisk()).length).toBeLessThan(8);
    await store.compact();
    expect(await journalBytes()).toBe(0);
    expect(await roomsOnDisk()).toHaveLength(8);
    await store.close();
    const big = await openStore({ syncSnapshotBytes: 1_000_000 });
    await big.createRoom(makeRoom('r8'));
    expect(await roomsOnDisk()).toHaveLength(9);
    expect(await journalBytes()).toBe(0);
  });

  it('after a start on snapshots past syncSnapshotBytes, the first change goes to the journal', async () => {
    // Their size as loaded counts: a store that took them for empty until its first write
    // rewrote every snapshot to make that first change durable (1.7 s on 80 MB).
    const first = await openStore({ syncSnapshotBytes: 0 });
    for (let i = 0; i < 8; i++) await first.createRoom(makeRoom(`r${i}`));
    await first.close(); // compacted: the snapshots hold everything, the journal is empty
    expect(await journalBytes()).toBe(0);
    const rooms = (await stat(join(files.dir, 'rooms.json'))).size;
    const store = await openStore({ syncSnapshotBytes: rooms - 1 });
    const writes = store.stats().snapshotWrites;
    await store.createRoom(makeRoom('r8'));
    expect(store.stats().snapshotWrites).toBe(writes);
    expect(await journalBytes()).toBeGreaterThan(0);
    expect((await roomsOnDisk()).map((r) => r.room_id)).not.toContain('r8');
    await store.close();
  });

  it('refuses to create a room over a log left by a create that was killed before its state write', async () => {
    // What a kill between createRoom's log append and its snapshot write leaves: a log, no room.
    const { mkdir, writeFile } = await import('node:fs/promises');
    await mkdir(join(files.dir, 'room_messages'), { recursive: true });
    const orphan = JSON.stringify(makeMessage('r9', 1)) + '\n';
    await writeFile(join(files.dir, 'room_messages', 'r9.jsonl'), orphan);
    const store = await openStore();
    await expect(store.createRoom(makeRoom('r9'), [makeMessage('r9', 1)])).rejects.toThrow(/no stored room/);
    expect(await readFile(join(files.dir, 'room_messages', 'r9.jsonl'), 'utf8')).toBe(orphan);
    expect((await roomsOnDisk()).map((r) => r.room_id)).not.toContain('r9');
    // Another id is created as usual.
    await store.createRoom(makeRoom('r10'), [makeMessage('r10', 1)]);
    expect((await roomsOnDisk()).map((r) => r.room_id)).toContain('r10');
    await store.close();
  });
});

describe('a batch of two snapshot files that fails after the first is renamed', () => {
  /** fsOps whose `op` fails from its (n+1)th call on, until healed. */
  function failingFrom() {
    let fault: { op: 'rename' | 'fsyncDir'; left: number } | undefined;
    const check = (op: 'rename' | 'fsyncDir'): void => {
      if (!fault || fault.op !== op) return;
      if (fault.left-- <= 0) throw Object.assign(new Error(`injected ${op} failure`), { code: 'EIO' });
    };
    const ops: Partial<FsOps> = {
      rename: async (from, to) => {
        check('rename');
        return defaultFsOps.rename(from, to);
      },
      fsyncDir: async (dir) => {
        check('fsyncDir');
        return defaultFsOps.fsyncDir(dir);
      },
    };
    return { ops, failAfter: (op: 'rename' | 'fsyncDir', n: number) => void (fault = { op, left: n }), heal: () => void (fault = undefined) };
  }

  const served = async (store: FileStore) => (await store.listParticipants()).map((p) => p.record).sort((a, b) => a.name.localeCompare(b.name));
  const onDisk = async (file: string) => (JSON.parse(await readFile(join(files.dir, file), 'utf8')) as { name: string }[]).map((r) => r.name).sort();

  it.each([
    ['every rename after the first (agents.json) fails', 'rename', 1],
    ['the directory fsync after the first rename fails, and every one after it', 'fsyncDir', 0],
  ] as const)('%s: both changes fail; once healed the disk holds what is served, and a retry succeeds', async (_what, op, after) => {
    const io = failingFrom();
    const { logger, lines } = memoryLogger();
    const store = files.store(logger, { compactEveryMs: 0, syncSnapshotBytes: 256 * 1024, fsOps: io.ops });
    await store.open();
    await store.putParticipant({ kind: 'user', record: makeUser('u0', { name: 'zoe' }) }, 'zoe');
    io.failAfter(op, after);
    // One batch (same turn): agents.json first, then users.json.
    const results = await Promise.allSettled([
      store.putParticipant({ kind: 'agent', record: makeAgent('a1', { name: 'ada' }) }, 'ada'),
      store.putParticipant({ kind: 'user', record: makeUser('u1', { name: 'bob' }) }, 'bob'),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((await served(store)).map((r) => r.name)).toEqual(['zoe']);
    expect(lines.some((l) => l.level === 50 && /restoring it failed too/.test(l.msg))).toBe(true); // the fault outlasted the restore
    io.heal();
    // A retry of one of them: its batch also rewrites the file the failed restore left behind.
    await store.putParticipant({ kind: 'user', record: makeUser('u1', { name: 'bob' }) }, 'bob');
    expect(await onDisk('agents.json')).toEqual([]);
    expect(await onDisk('users.json')).toEqual(['bob', 'zoe']);
    const servedThen = await served(store);
    expect(servedThen.map((r) => r.name)).toEqual(['bob', 'zoe']);
    await store.close();
    const fresh = await openStore();
    expect(await served(fresh)).toEqual(servedThen);
    await fresh.putParticipant({ kind: 'agent', record: makeAgent('a1', { name: 'ada' }) }, 'ada');
    expect(await onDisk('agents.json')).toEqual(['ada']);
  });

  it('a restore that failed is done again at close when no later batch came', async () => {
    const io = failingFrom();
    const store = await openStore({ fsOps: io.ops });
    io.failAfter('rename', 1);
    await Promise.allSettled([
      store.putParticipant({ kind: 'agent', record: makeAgent('a1', { name: 'ada' }) }, 'ada'),
      store.putParticipant({ kind: 'user', record: makeUser('u1', { name: 'bob' }) }, 'bob'),
    ]);
    expect(await onDisk('agents.json')).toEqual(['ada']); // renamed before the fault; the restore failed
    io.heal();
    await store.close();
    expect(await onDisk('agents.json')).toEqual([]);
    const fresh = await openStore();
    expect(await fresh.listParticipants()).toEqual([]);
  });
});
