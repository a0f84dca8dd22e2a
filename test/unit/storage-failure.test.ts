// Write failures of the file store (injected through the fsOps seam), beyond what the contract
// checks for every store: the bytes on disk after a failure are exactly the bytes before it,
// the state write of a commit failing after its log append, a failing cut-back, the order of a
// durable snapshot replacement.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { defaultFsOps, type FsOps } from '../../src/storage/fs-ops.js';
import { FileStore } from '../../src/storage/file-store.js';
import { dumpStore } from './store-contract.js';
import { faultyFsOps, FS_FAULT_KINDS, makeMessage, makeRoom, makeUser, memoryLogger, tempDir } from './storage-helpers.js';
import { storeOpener } from '../helpers/store.js';

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

const openStore = storeOpener({ dataDir: () => dir, track: (s) => stores.push(s) });

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
    let s = await openStore({ fsOps: faults.ops, logger });
    let v = await s.createRoom(makeRoom('r1'));
    v = await s.commitRoom('r1', { messages: [makeMessage('r1', 1)], expectedVersion: v });
    // 'open' only happens when a log is (re)opened: start from a closed descriptor.
    if (kind === 'open') {
      await s.close();
      s = await openStore({ fsOps: faults.ops, logger });
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
    expect(await s.findByClientMsgId('r1', retry[0]!.sender_id!, 'c2')).toBeUndefined();
    expect(lines.some((l) => l.level === 50)).toBe(true);

    await s.commitRoom('r1', { messages: retry, expectedVersion: v });
    expect((await s.readMessages('r1', { afterSeq: 0, limit: 10 })).map((m) => m.seq)).toEqual([1, 2, 3]);
    const after = await dumpStore(s);
    expect(await freshDump(s)).toEqual(after);
    expect((await readLog('r1')).split('\n').filter(Boolean)).toHaveLength(3);
  });

  it('a first commit whose new log file cannot be made durable leaves no messages', async () => {
    const faults = faultyFsOps();
    const s = await openStore({ fsOps: faults.ops });
    const v = await s.createRoom(makeRoom('r1'));
    faults.set('fsyncDir');
    await expect(s.commitRoom('r1', { messages: [makeMessage('r1', 1)], expectedVersion: v })).rejects.toThrow(/fsyncDir/);
    faults.set(null);
    expect(await s.loadRoom('r1')).toMatchObject({ lastSeq: 0, version: v });
    expect(await freshDump(s)).toMatchObject({ messageCount: 0 });
  });
});

/**
 * fsOps that fail the files whose path matches while a kind is set: open of such a path, write
 * and fsync of a handle opened on one, a directory fsync of its directory. Everything else works.
 */
function targetedFaults(match: (path: string) => boolean) {
  let kind: string | null = null;
  const handles = new WeakMap<object, string>();
  const boom = (code: string, what: string) => Object.assign(new Error(`injected ${what} failure`), { code });
  const ops: Partial<FsOps> = {
    async open(path, flags) {
      if (kind === 'open' && match(path)) throw boom('EMFILE', 'open');
      const handle = await defaultFsOps.open(path, flags);
      handles.set(handle, path);
      return handle;
    },
    async write(handle, data) {
      const hit = match(handles.get(handle) ?? '');
      if (hit && (kind === 'write' || kind === 'enospc')) {
        await defaultFsOps.write(handle, data.subarray(0, Math.floor(data.length / 2)));
        throw kind === 'write' ? boom('EIO', 'write') : boom('ENOSPC', 'write (disk full)');
      }
      return defaultFsOps.write(handle, data);
    },
    async fsync(handle) {
      if (kind === 'fsync' && match(handles.get(handle) ?? '')) throw boom('EIO', 'fsync');
      return defaultFsOps.fsync(handle);
    },
    async fsyncDir(d) {
      if (kind === 'fsyncDir' && match(join(d, 'x'))) throw boom('EIO', 'fsyncDir');
      return defaultFsOps.fsyncDir(d);
    },
  };
  return { ops, set: (k: string | null) => void (kind = k), pathOf: (handle: object) => handles.get(handle) ?? '' };
}
const isJournal = (path: string) => path.includes(`${join('journal')}/`) || path.includes('/journal/');

describe('a commit whose state write fails after its messages are durable', () => {
  it.each(['write', 'enospc', 'fsync', 'open', 'fsyncDir'] as const)(
    'cuts the room log back when the journal append fails by %s',
    async (kind) => {
      const faults = targetedFaults(isJournal);
      const s = await openStore({ fsOps: faults.ops });
      let v = await s.createRoom(makeRoom('r1'));
      v = await s.commitRoom('r1', { messages: [makeMessage('r1', 1)], expectedVersion: v });
      // open and fsyncDir only happen for a new journal file: start one.
      if (kind === 'open' || kind === 'fsyncDir') await s.compact();
      const bytes = await readLog('r1');
      const before = await dumpStore(s);
      faults.set(kind);
      const commit = { room: makeRoom('r1', { room_description: 'new' }), messages: [makeMessage('r1', 2)], expectedVersion: v };
      await expect(s.commitRoom('r1', commit)).rejects.toThrow(/injected/);
      faults.set(null);
      expect(await readLog('r1')).toBe(bytes);
      expect(await dumpStore(s)).toEqual(before);
      await s.commitRoom('r1', commit);
      const after = await dumpStore(s);
      expect(after).toMatchObject({ messageCount: 2 });
      expect(await freshDump(s)).toEqual(after);
    },
  );

  it('retries a cut-back that failed before the next append, so the failed messages never load', async () => {
    let failTruncate = 0;
    const faults = targetedFaults(isJournal);
    const ops: Partial<FsOps> = {
      ...faults.ops,
      truncate: async (handle, len) => {
        if (failTruncate > 0 && faults.pathOf(handle).endsWith('r1.jsonl')) {
          failTruncate--;
          throw Object.assign(new Error('injected truncate failure'), { code: 'EIO' });
        }
        return defaultFsOps.truncate(handle, len);
      },
    };
    const { logger, lines } = memoryLogger();
    const s = await openStore({ fsOps: ops, logger });
    let v = await s.createRoom(makeRoom('r1'));
    v = await s.commitRoom('r1', { messages: [makeMessage('r1', 1)], expectedVersion: v });
    // The journal append fails by a torn write (and is cut back), then the room log's cut fails.
    faults.set('write');
    failTruncate = 1;
    const lost = makeMessage('r1', 2);
    await expect(
      s.commitRoom('r1', { room: makeRoom('r1', { room_description: 'x' }), messages: [lost], expectedVersion: v }),
    ).rejects.toThrow(/injected write/);
    faults.set(null);
    expect(failTruncate).toBe(0);
    expect(lines.some((l) => /cutting a room log back failed/.test(l.msg) && String(l.file).endsWith('r1.jsonl'))).toBe(true);
    // Until then the log holds the failed message's line; nothing serves it.
    expect((await readLog('r1')).split('\n').filter(Boolean)).toHaveLength(2);
    expect(await s.getMessage(lost.message_id)).toBeUndefined();
    // The next commit cuts first, then appends its own seq 2.
    const kept = makeMessage('r1', 2);
    await s.commitRoom('r1', { messages: [kept], expectedVersion: v });
    const ids = (await readLog('r1')).split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { message_id: string }).message_id);
    expect(ids).toEqual([(await s.readMessages('r1', { afterSeq: 0, limit: 1 }))[0]!.message_id, kept.message_id]);
  });
});

describe('a room created with a long history (an import): written and indexed in slices', () => {
  const isLog = (path: string) => path.includes('room_messages');
  /** Enough messages and text that serialising and indexing them spans several slices. */
  const history = (roomId: string) => Array.from({ length: 3000 }, (_, i) => makeMessage(roomId, i + 1, { text_content: `${'长消息 long message '.repeat(60)}${i}` }));

  it.each([
    ['log append', isLog, 'write'],
    ['log fsync', isLog, 'fsync'],
    ['journal append', isJournal, 'write'],
    ['journal fsync', isJournal, 'fsync'],
  ] as const)('a failing %s leaves no trace; the retry lands whole', async (_, target, kind) => {
    const faults = targetedFaults(target);
    const s = await openStore({ fsOps: faults.ops });
    await s.createRoom(makeRoom('other'), [makeMessage('other', 1)]);
    const before = await dumpStore(s);
    const messages = history('big');
    faults.set(kind);
    await expect(s.createRoom(makeRoom('big'), messages)).rejects.toThrow(/injected/);
    faults.set(null);
    // Nothing of it is served: not the room, not a message by id, not a page of its log.
    expect(await s.loadRoom('big')).toBeUndefined();
    expect(await s.getMessage(messages[0]!.message_id)).toBeUndefined();
    expect(await s.getMessage(messages[2999]!.message_id)).toBeUndefined();
    expect(await s.readMessages('big', { afterSeq: 0, limit: 10 })).toEqual([]);
    expect(await dumpStore(s)).toEqual(before);
    expect(['', '<none>']).toContain(await readLog('big'));

    await s.createRoom(makeRoom('big'), messages);
    expect(await s.readMessages('big', { afterSeq: 2990, limit: 20 })).toEqual(messages.slice(2990));
    expect(await s.readMessages('big', { afterSeq: 0, limit: 5 })).toEqual(messages.slice(0, 5));
    expect(await s.getMessage(messages[7]!.message_id)).toEqual(messages[7]);
    expect((await s.loadRoom('big'))!.lastSeq).toBe(3000);
    const after = await dumpStore(s);
    expect(await freshDump(s)).toEqual(after);
  });

  it('a commit to the room while it is being created is refused, and leaves the log to the history', async () => {
    const s = await openStore();
    const messages = history('big');
    const creating = s.createRoom(makeRoom('big'), messages);
    await expect(s.commitRoom('big', { messages: [makeMessage('big', 1)], expectedVersion: 1 })).rejects.toThrow(/does not exist/);
    await expect(s.createRoom(makeRoom('big'), [makeMessage('big', 1)])).rejects.toThrow(/exists/);
    const version = await creating;
    const log = (await readLog('big')).split('\n').filter(Boolean);
    expect(log.map((line) => JSON.parse(line).message_id)).toEqual(messages.map((m) => m.message_id));
    await s.commitRoom('big', { messages: [makeMessage('big', 3001)], expectedVersion: version });
    expect((await s.loadRoom('big'))!.lastSeq).toBe(3001);
  });
});

describe('participant write failures', () => {
  it.each(['open', 'write', 'enospc', 'fsync', 'fsyncDir'] as const)(
    'a put failing by %s leaves the journal and users.json byte for byte as they were',
    async (kind) => {
      const faults = targetedFaults(isJournal);
      const s = await openStore({ fsOps: faults.ops });
      await s.putParticipant({ kind: 'user', record: makeUser('u1', { token_hashes: ['old'] }) }, 'user-u1');
      if (kind === 'open' || kind === 'fsyncDir') await s.compact(); // a new journal file comes next
      const snapshot = await readFile(join(dir, 'users.json'), 'utf8');
      const journal = await journalBytes();
      faults.set(kind);
      await expect(
        s.putParticipant({ kind: 'user', record: makeUser('u1', { token_hashes: ['new'] }) }, 'user-u1'),
      ).rejects.toThrow(/injected/);
      faults.set(null);
      expect(await readFile(join(dir, 'users.json'), 'utf8')).toBe(snapshot);
      expect(await journalBytes()).toBe(journal);
      expect((await s.findParticipantByTokenHash('old'))?.record).toMatchObject({ user_id: 'u1' });
      expect(await s.findParticipantByTokenHash('new')).toBeUndefined();
    },
  );
});

describe('a room line written beside its log append', () => {
  /** What a kill -9 now would leave: a copy of the directory (the page cache survives a kill). */
  async function storeOnCopy(logger = silentLogger, fsOps?: Partial<FsOps>): Promise<FileStore> {
    const copy = `${dir}-copy-${stores.length}`;
    copies.push(copy);
    await cp(dir, copy, { recursive: true, filter: (src) => !src.endsWith('server.lock') });
    const fresh = new FileStore({ dataDir: copy, logger, fsOps, compactEveryMs: 0, syncSnapshotBytes: 0 });
    stores.push(fresh);
    await fresh.open();
    return fresh;
  }
  const copies: string[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
    await Promise.all(copies.splice(0).map((c) => rm(c, { recursive: true, force: true })));
  });

  it.each(['write', 'enospc', 'fsync'] as const)('is dropped at start when the log append beside it failed by %s; the retry counts', async (kind) => {
    const faults = targetedFaults((path) => path.endsWith('r1.jsonl'));
    const s = await openStore({ fsOps: faults.ops });
    let v = await s.createRoom(makeRoom('r1'));
    v = await s.commitRoom('r1', { messages: [makeMessage('r1', 1)], expectedVersion: v });
    const before = await dumpStore(s);
    faults.set(kind);
    const commit = { room: makeRoom('r1', { room_description: 'new' }), messages: [makeMessage('r1', 2)], expectedVersion: v };
    await expect(s.commitRoom('r1', commit)).rejects.toThrow(/injected/);
    faults.set(null);
    // The journal append succeeded beside the failed log append: its line is on disk, marked.
    expect(await journalBytes()).toContain(`"after":{"seq":2,"id":"${commit.messages[0]!.message_id}"}`);
    expect(await dumpStore(s)).toEqual(before);
    const { logger, lines } = memoryLogger();
    expect(await dumpStore(await storeOnCopy(logger))).toEqual(before);
    expect(lines.some((l) => l.level === 40 && /never reached the room log/.test(String(l.msg)))).toBe(true);

    await s.commitRoom('r1', commit);
    const after = await dumpStore(s);
    expect(after).toMatchObject({ messageCount: 2 });
    expect(await dumpStore(await storeOnCopy())).toEqual(after);
    expect(await freshDump(s)).toEqual(after);
  });

  it('stops the start when the log cannot be read to check a mark, rather than drop an acknowledged change', async () => {
    const s = await openStore();
    const v = await s.createRoom(makeRoom('r1'));
    const message = makeMessage('r1', 1);
    await s.commitRoom('r1', { room: makeRoom('r1', { room_description: 'new' }), messages: [message], expectedVersion: v });
    expect(await journalBytes()).toContain(`"after":{"seq":1,"id":"${message.message_id}"}`);
    const served = await dumpStore(s);
    // A read that fails (EIO) is not a corrupt line: the line may well be the room's state.
    const failingReads: Partial<FsOps> = {
      read: async () => {
        throw Object.assign(new Error('injected read failure'), { code: 'EIO' });
      },
    };
    await expect(storeOnCopy(silentLogger, failingReads)).rejects.toThrow(/injected read failure/);
    // Once the log reads again, the change is there.
    expect(await dumpStore(await storeOnCopy())).toEqual(served);
  });

  it('a commit that only rewrites stored messages writes its line after the append, unmarked', async () => {
    const s = await openStore();
    let v = await s.createRoom(makeRoom('r1'));
    const m1 = makeMessage('r1', 1);
    v = await s.commitRoom('r1', { messages: [m1], expectedVersion: v });
    await s.commitRoom('r1', { room: makeRoom('r1', { room_description: 'edited' }), messages: [{ ...m1, text_content: 'edited' }], expectedVersion: v });
    const lastLine = (await journalBytes()).trim().split('\n').at(-1)!;
    expect(lastLine).toContain('"room_description":"edited"');
    expect(lastLine).not.toContain('"after"');
    expect(await dumpStore(await storeOnCopy())).toEqual(await dumpStore(s));
  });
});

describe('compaction', () => {
  it('replaces a snapshot in the durable order: write the temp file, fsync it, rename, fsync the directory', async () => {
    const ops: string[] = [];
    const record = <K extends keyof FsOps>(op: K, describe: (...args: never[]) => string): FsOps[K] =>
      (async (...args: unknown[]) => {
        ops.push(`${op}${describe(...(args as never[]))}`);
        return (defaultFsOps[op] as (...a: unknown[]) => Promise<unknown>)(...args);
      }) as FsOps[K];
    const name = (p: string) => (p.endsWith('rooms.json') ? ' rooms.json' : p.includes('rooms.json') ? ' temp' : ` ${p}`);
    const s = await openStore({
      fsOps: {
        open: record('open', (p: string) => name(p)),
        write: record('write', () => ''),
        fsync: record('fsync', () => ''),
        close: record('close', () => ''),
        rename: record('rename', (from: string, to: string) => `${name(from)} →${name(to)}`),
        fsyncDir: record('fsyncDir', (d: string) => (d === dir ? ' data dir' : d.endsWith('journal') ? ' journal dir' : ` ${d}`)),
      },
    });
    await s.createRoom(makeRoom('r1'));
    ops.length = 0;
    await s.compact();
    const from = ops.indexOf('open temp');
    expect(ops.slice(from)).toEqual([
      'open temp',
      'write',
      'fsync',
      'close',
      'rename temp → rooms.json',
      'fsyncDir data dir',
      'fsyncDir journal dir', // the folded journal file is deleted only after that
    ]);
  });

  it.each(['open', 'write', 'enospc', 'fsync', 'rename', 'fsyncDir'] as const)(
    'a compaction failing by %s keeps the journal; nothing is lost and the next compaction succeeds',
    async (kind) => {
      const faults = faultyFsOps();
      const { logger, lines } = memoryLogger();
      const s = await openStore({ fsOps: faults.ops, logger });
      const v = await s.createRoom(makeRoom('r1'));
      await s.commitRoom('r1', { room: makeRoom('r1', { room_description: 'changed' }), messages: [makeMessage('r1', 1)], expectedVersion: v });
      const before = await dumpStore(s);
      faults.set(kind);
      await s.compact(); // never rejects
      faults.set(null);
      expect(lines.some((l) => l.level === 50 && /compacting the state journal failed/.test(l.msg))).toBe(true);
      expect(await dumpStore(s)).toEqual(before);
      expect(await freshDump(s)).toEqual(before);
      const again = await openStore();
      await again.compact();
      expect(JSON.parse(await readFile(join(dir, 'rooms.json'), 'utf8'))).toEqual([makeRoom('r1', { room_description: 'changed' })]);
    },
  );

  it('a failed journal batch fails every commit in it; each room\'s log is cut back', async () => {
    const faults = targetedFaults(isJournal);
    const s = await openStore({ fsOps: faults.ops });
    const rooms = ['r1', 'r2', 'r3'];
    const versions = await Promise.all(rooms.map((r) => s.createRoom(makeRoom(r))));
    const before = await dumpStore(s);
    faults.set('fsync');
    const results = await Promise.allSettled(
      rooms.map((r, i) =>
        s.commitRoom(r, { room: makeRoom(r, { archived: true }), messages: [makeMessage(r, 1)], expectedVersion: versions[i]! }),
      ),
    );
    faults.set(null);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(await dumpStore(s)).toEqual(before);
    for (const r of rooms) expect(await readLog(r)).toBe('');
    expect(await freshDump(s)).toEqual(before);
  });
});

async function journalBytes(): Promise<string> {
  const { readdir } = await import('node:fs/promises');
  let out = '';
  for (const f of (await readdir(join(dir, 'journal'))).sort()) {
    const text = await readFile(join(dir, 'journal', f), 'utf8');
    if (text !== '') out += `${f}:${text}`; // an empty file (a creation that failed) holds nothing
  }
  return out;
}
