// Write failures of the file store (injected through the fsOps seam), beyond what the contract
// checks for every store: the bytes on disk after a failure are exactly the bytes before it,
// the state write of a commit failing after its log append, a failing cut-back, the order of a
// durable snapshot replacement.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { defaultFsOps, type FsOps } from '../../src/storage/fs-ops.js';
import { FileStore } from '../../src/storage/file-store.js';
import { dumpStore } from './store-contract.js';
import { faultyFsOps, FS_FAULT_KINDS, makeMessage, makeRoom, makeUser, memoryLogger, tempDir } from './storage-helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
const stores: FileStore[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
  await cleanup();
});

async function openStore(fsOps?: Partial<FsOps>, logger = silentLogger): Promise<FileStore> {
  const s = new FileStore({ dataDir: dir, logger, fsOps });
  stores.push(s);
  await s.open();
  return s;
}

/** Closes `s` and returns what a fresh store on the directory serves. */
async function freshDump(s: FileStore) {
  await s.close();
  const fresh = await openStore();
  const dump = await dumpStore(fresh);
  await fresh.close();
  return dump;
}

const logFile = (roomId: string) => join(dir, 'room_messages', `${roomId}.jsonl`);
const readLog = (roomId: string) => readFile(logFile(roomId), 'utf8').catch(() => '<none>');

describe('room log write failures', () => {
  // A log append renames nothing and fsyncs no directory (new logs: next test).
  it.each(FS_FAULT_KINDS.filter((k) => k !== 'rename' && k !== 'fsyncDir'))('a commit failing by %s leaves the log byte for byte as it was, and a retry lands once', async (kind) => {
    const faults = faultyFsOps();
    const { logger, lines } = memoryLogger();
    let s = await openStore(faults.ops, logger);
    let v = await s.createRoom(makeRoom('r1'));
    v = await s.commitRoom('r1', { messages: [makeMessage('r1', 1)], expectedVersion: v });
    // 'open' only happens when a log is (re)opened: start from a closed descriptor.
    if (kind === 'open') {
      await s.close();
      s = await openStore(faults.ops, logger);
      v = (await s.loadRoom('r1'))!.version;
    }
    const bytes = await readLog('r1');
    const before = await dumpStore(s);
    const retry = [makeMessage('r1', 2, { client_msg_id: 'c2' }), makeMessage('r1', 3)];
    faults.set(kind);
    await expect(s.commitRoom('r1', { messages: retry, expectedVersion: v })).rejects.toThrow(/injected/);
    faults.set(null);
    expect(faults.injected()).toBeGreaterThan(0);
    expect(await readLog('r1')).toBe(bytes);
    expect(await dumpStore(s)).toEqual(before);
    expect(await s.findByClientMsgId('r1', retry[0]!.sender_id, 'c2')).toBeUndefined();
    expect(lines.some((l) => l.level === 50)).toBe(true);

    await s.commitRoom('r1', { messages: retry, expectedVersion: v });
    expect((await s.readMessages('r1', { afterSeq: 0, limit: 10 })).map((m) => m.seq)).toEqual([1, 2, 3]);
    const after = await dumpStore(s);
    expect(await freshDump(s)).toEqual(after);
    expect((await readLog('r1')).split('\n').filter(Boolean)).toHaveLength(3);
  });

  it('a first commit whose new log file cannot be made durable leaves no messages', async () => {
    const faults = faultyFsOps();
    const s = await openStore(faults.ops);
    const v = await s.createRoom(makeRoom('r1'));
    faults.set('fsyncDir');
    await expect(s.commitRoom('r1', { messages: [makeMessage('r1', 1)], expectedVersion: v })).rejects.toThrow(/fsyncDir/);
    faults.set(null);
    expect(await s.loadRoom('r1')).toMatchObject({ lastSeq: 0, version: v });
    expect(await freshDump(s)).toMatchObject({ messageCount: 0 });
  });
});

describe('a commit whose state write fails after its messages are durable', () => {
  it.each(['rename', 'fsyncDir', 'fsync', 'write'] as const)('cuts the log back when rooms.json fails by %s', async (kind) => {
    // Fail only the snapshot write, not the log append.
    const faults = faultyFsOps();
    let failing = false;
    const ops: Partial<FsOps> = {
      ...faults.ops,
      open: async (path, flags) => {
        const handle = await defaultFsOps.open(path, flags);
        if (failing) faults.set(path.endsWith('.tmp') ? kind : null);
        return handle;
      },
    };
    const s = await openStore(ops);
    let v = await s.createRoom(makeRoom('r1'));
    v = await s.commitRoom('r1', { messages: [makeMessage('r1', 1)], expectedVersion: v });
    const bytes = await readLog('r1');
    const rooms = await readFile(join(dir, 'rooms.json'), 'utf8');
    const before = await dumpStore(s);
    failing = true;
    const commit = { room: makeRoom('r1', { room_description: 'new' }), messages: [makeMessage('r1', 2)], expectedVersion: v };
    await expect(s.commitRoom('r1', commit)).rejects.toThrow(/injected/);
    failing = false;
    faults.set(null);
    expect(await readLog('r1')).toBe(bytes);
    expect(await readFile(join(dir, 'rooms.json'), 'utf8')).toBe(rooms);
    expect(await dumpStore(s)).toEqual(before);
    await s.commitRoom('r1', commit);
    const after = await dumpStore(s);
    expect(after).toMatchObject({ messageCount: 2 });
    expect(await freshDump(s)).toEqual(after);
  });

  it('retries a cut-back that failed before the next append, so the failed messages never load', async () => {
    let failTruncate = 0;
    let failRename = false;
    const ops: Partial<FsOps> = {
      truncate: async (handle, len) => {
        if (failTruncate > 0) {
          failTruncate--;
          throw Object.assign(new Error('injected truncate failure'), { code: 'EIO' });
        }
        return defaultFsOps.truncate(handle, len);
      },
      rename: async (from, to) => {
        if (failRename) throw Object.assign(new Error('injected rename failure'), { code: 'EIO' });
        return defaultFsOps.rename(from, to);
      },
    };
    const { logger, lines } = memoryLogger();
    const s = await openStore(ops, logger);
    let v = await s.createRoom(makeRoom('r1'));
    v = await s.commitRoom('r1', { messages: [makeMessage('r1', 1)], expectedVersion: v });
    failRename = true;
    failTruncate = 1;
    const lost = makeMessage('r1', 2);
    await expect(
      s.commitRoom('r1', { room: makeRoom('r1', { room_description: 'x' }), messages: [lost], expectedVersion: v }),
    ).rejects.toThrow(/rename/);
    failRename = false;
    expect(lines.some((l) => /cutting a room log back failed/.test(l.msg))).toBe(true);
    expect(await s.getMessage(lost.message_id)).toBeUndefined();
    // The next commit cuts first, then appends its own seq 2.
    const kept = makeMessage('r1', 2);
    await s.commitRoom('r1', { messages: [kept], expectedVersion: v });
    const seqs = (await readLog('r1')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { message_id: string });
    expect(seqs.map((m) => m.message_id)).toEqual([(await s.readMessages('r1', { afterSeq: 0, limit: 1 }))[0]!.message_id, kept.message_id]);
  });
});

describe('snapshot write failures', () => {
  it.each(['open', 'write', 'enospc', 'fsync', 'rename', 'fsyncDir'] as const)(
    'a put failing by %s leaves users.json byte for byte as it was',
    async (kind) => {
      const faults = faultyFsOps();
      const s = await openStore(faults.ops);
      await s.putParticipant({ kind: 'user', record: makeUser('u1', { token_hashes: ['old'] }) }, 'user-u1');
      const bytes = await readFile(join(dir, 'users.json'), 'utf8');
      faults.set(kind);
      await expect(
        s.putParticipant({ kind: 'user', record: makeUser('u1', { token_hashes: ['new'] }) }, 'user-u1'),
      ).rejects.toThrow(/injected/);
      faults.set(null);
      expect(await readFile(join(dir, 'users.json'), 'utf8')).toBe(bytes);
      expect((await s.findParticipantByTokenHash('old'))?.record).toMatchObject({ user_id: 'u1' });
      expect(await s.findParticipantByTokenHash('new')).toBeUndefined();
      await expect(readFile(join(dir, 'users.json.tmp'))).rejects.toThrow(/ENOENT/);
    },
  );

  it('replaces a snapshot in the durable order: write the temp file, fsync it, rename, fsync the directory', async () => {
    const ops: string[] = [];
    const record = <K extends keyof FsOps>(op: K, describe: (...args: never[]) => string): FsOps[K] =>
      (async (...args: unknown[]) => {
        ops.push(`${op}${describe(...(args as never[]))}`);
        return (defaultFsOps[op] as (...a: unknown[]) => Promise<unknown>)(...args);
      }) as FsOps[K];
    const name = (p: string) => (p.endsWith('rooms.json') ? ' rooms.json' : p.includes('rooms.json') ? ' temp' : ` ${p}`);
    const s = await openStore({
      open: record('open', (p: string) => name(p)),
      write: record('write', () => ''),
      fsync: record('fsync', () => ''),
      close: record('close', () => ''),
      rename: record('rename', (from: string, to: string) => `${name(from)} →${name(to)}`),
      fsyncDir: record('fsyncDir', (d: string) => (d === dir ? ' data dir' : ` ${d}`)),
    });
    ops.length = 0;
    await s.createRoom(makeRoom('r1'));
    expect(ops).toEqual(['open temp', 'write', 'fsync', 'close', 'rename temp → rooms.json', 'fsyncDir data dir']);
  });

  it('a failed batch fails every commit in it; each room\'s log is cut back; the next batch succeeds', async () => {
    const faults = faultyFsOps();
    let failSnapshots = false;
    const ops: Partial<FsOps> = {
      ...faults.ops,
      open: async (path, flags) => {
        faults.set(failSnapshots && path.endsWith('.tmp') ? 'rename' : null);
        return defaultFsOps.open(path, flags);
      },
    };
    const s = await openStore(ops);
    const rooms = ['r1', 'r2', 'r3'];
    const versions = await Promise.all(rooms.map((r) => s.createRoom(makeRoom(r))));
    const before = await dumpStore(s);
    failSnapshots = true;
    const results = await Promise.allSettled(
      rooms.map((r, i) =>
        s.commitRoom(r, { room: makeRoom(r, { archived: true }), messages: [makeMessage(r, 1)], expectedVersion: versions[i]! }),
      ),
    );
    failSnapshots = false;
    faults.set(null);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(await dumpStore(s)).toEqual(before);
    for (const r of rooms) expect(await readLog(r)).toBe('');
    expect(await freshDump(s)).toEqual(before);
  });
});
